package logical

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

const (
	oidPgLSN      = 3220
	oidPgLSNArray = 3221
)

// auditRow is one change on its way to iasql_audit_log.
type auditRow struct {
	lsn         pglogrepl.LSN // commit LSN of its transaction
	seq         int32
	xid         int64
	ts          time.Time
	table       string
	recordID    *string
	changeType  string
	oldRow      []byte
	newRow      []byte
	origin      string
	message     *string
	actor       *string
	attribution []byte // JSON
}

var auditColumns = []string{"lsn", "seq", "xid", "ts", "table_name", "record_id", "change_type", "old_row", "new_row", "origin", "message", "actor", "attribution"}

// writer writes audit rows and capture progress in one database transaction
// per batch of source transactions, so both commit together or not at all.
// Rows of a transaction too large to hold are spilled into the open
// transaction before its commit arrives.
//
// A batch with nothing spilled is committed in the background (send), while
// the stream goes on decoding the next one; at most one is in flight, and
// nothing else uses the connection meanwhile.
type writer struct {
	conn    *pgx.Conn
	slot    string
	tx      pgx.Tx
	rows    []auditRow
	spare   []auditRow // the rows of the last batch sent, to reuse
	changes int64      // changes in the open batch
}

// inflight is a batch being committed in the background.
type inflight struct {
	p    progress
	rows []auditRow
	done chan error // its outcome, once
}

func newWriter(conn *pgx.Conn, slot string) *writer {
	// pg_lsn's binary form is a big-endian 64-bit integer, as int8's is.
	lsn := &pgtype.Type{Name: "pg_lsn", OID: oidPgLSN, Codec: pgtype.Int8Codec{}}
	conn.TypeMap().RegisterType(lsn)
	conn.TypeMap().RegisterType(&pgtype.Type{Name: "_pg_lsn", OID: oidPgLSNArray, Codec: &pgtype.ArrayCodec{ElementType: lsn}})
	return &writer{conn: conn, slot: slot}
}

func (w *writer) add(r auditRow) { w.rows = append(w.rows, r) }

func (w *writer) begin(ctx context.Context) error {
	if w.tx != nil {
		return nil
	}
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin audit transaction: %w", err)
	}
	w.tx = tx
	return nil
}

// spill copies the held rows into the open audit transaction.
func (w *writer) spill(ctx context.Context) error {
	if len(w.rows) == 0 {
		return nil
	}
	if err := w.begin(ctx); err != nil {
		return err
	}
	n, err := w.tx.CopyFrom(ctx, pgx.Identifier{"public", "iasql_audit_log"}, auditColumns, pgx.CopyFromSlice(len(w.rows), func(i int) ([]any, error) {
		r := &w.rows[i]
		return []any{int64(r.lsn), r.seq, r.xid, r.ts, r.table, r.recordID, r.changeType, r.oldRow, r.newRow, r.origin, r.message, r.actor, jsonText(r.attribution)}, nil
	}))
	if err != nil {
		return fmt.Errorf("write %d audit rows: %w", len(w.rows), err)
	}
	w.changes += n
	w.rows = w.rows[:0]
	return nil
}

// markEngine records the rows of the transaction with commit LSN lsn as
// its first engine marker says, both those held and those already spilled.
func (w *writer) markEngine(ctx context.Context, lsn pglogrepl.LSN, m mark, spilled bool) error {
	for i := range w.rows {
		if r := &w.rows[i]; r.lsn == lsn {
			r.origin, r.message, r.attribution = m.origin, m.message, m.attribution
			if m.origin == "cloud" {
				r.actor = m.actor
			}
		}
	}
	if !spilled || w.tx == nil {
		return nil
	}
	if _, err := w.tx.Exec(ctx, `UPDATE public.iasql_audit_log SET origin = $2, message = $3, attribution = $4::jsonb,
		actor = CASE WHEN $2 = 'cloud' THEN $5 ELSE actor END WHERE lsn = $1::text::pg_lsn`,
		lsn.String(), m.origin, m.message, jsonText(m.attribution), m.actor); err != nil {
		return fmt.Errorf("mark engine changes at %s: %w", lsn, err)
	}
	return nil
}

// insertRows inserts audit rows given as one array per column, in array
// order (so ids follow it).
const insertRows = `
	INSERT INTO public.iasql_audit_log (lsn, seq, xid, ts, table_name, record_id, change_type, old_row, new_row, origin, message, actor, attribution)
	SELECT u.lsn, u.seq, u.xid, u.ts, u.table_name, u.record_id, u.change_type, u.old_row::jsonb, u.new_row::jsonb, u.origin, u.message, u.actor, u.attribution::jsonb
	  FROM unnest($1::pg_lsn[], $2::int4[], $3::int8[], $4::timestamptz[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[])
	       WITH ORDINALITY AS u (lsn, seq, xid, ts, table_name, record_id, change_type, old_row, new_row, origin, message, actor, attribution, n)
	 ORDER BY u.n`

const recordProgress = `
		INSERT INTO public.iasql_capture_progress AS p (slot_name, end_lsn, commit_lsn, commit_ts, changes, updated_at)
		VALUES ($1, $2::text::pg_lsn, $3::text::pg_lsn, $4, $5, pg_catalog.clock_timestamp())
		ON CONFLICT (slot_name) DO UPDATE SET end_lsn = excluded.end_lsn, commit_lsn = excluded.commit_lsn,
		  commit_ts = excluded.commit_ts, changes = p.changes + excluded.changes, updated_at = excluded.updated_at`

// columns is rows as one array per column (for insertRows).
func columns(rows []auditRow) []any {
	n := len(rows)
	lsn, seq, xid, ts := make([]int64, n), make([]int32, n), make([]int64, n), make([]time.Time, n)
	table, recordID, changeType := make([]string, n), make([]*string, n), make([]string, n)
	oldRow, newRow, origin, message := make([]*string, n), make([]*string, n), make([]string, n), make([]*string, n)
	actor, attribution := make([]*string, n), make([]*string, n)
	for i := range rows {
		r := &rows[i]
		lsn[i], seq[i], xid[i], ts[i] = int64(r.lsn), r.seq, r.xid, r.ts
		table[i], recordID[i], changeType[i] = r.table, r.recordID, r.changeType
		oldRow[i], newRow[i], origin[i], message[i] = jsonText(r.oldRow), jsonText(r.newRow), r.origin, r.message
		actor[i], attribution[i] = r.actor, jsonText(r.attribution)
	}
	return []any{lsn, seq, xid, ts, table, recordID, changeType, oldRow, newRow, origin, message, actor, attribution}
}

func jsonText(b []byte) *string {
	if b == nil {
		return nil
	}
	s := string(b)
	return &s
}

// send starts committing the held rows and the progress p (the last
// transaction in the batch) in the background, when nothing is spilled:
// one round trip, one implicit transaction (a pipeline up to its Sync). No
// context either (pgx watches one with a goroutine per statement): the
// session interrupts the connection when its context ends. done runs after
// a successful commit, before the outcome is delivered. The caller must
// receive the outcome (and pass the batch to recycle) before it uses the
// writer's connection again; only after a nil outcome may the position be
// acknowledged.
func (w *writer) send(p progress, done func()) *inflight {
	f := &inflight{p: p, rows: w.rows, done: make(chan error, 1)}
	w.rows, w.spare = w.spare[:0], nil
	go func() {
		b := &pgx.Batch{}
		if len(f.rows) > 0 {
			b.Queue(insertRows, columns(f.rows)...)
		}
		b.Queue(recordProgress, w.slot, p.endLSN.String(), p.commitLSN.String(), p.commitTime, int64(len(f.rows)))
		err := w.conn.SendBatch(context.Background(), b).Close()
		if err != nil {
			err = fmt.Errorf("write %d audit rows and capture progress: %w", len(f.rows), err)
		} else if done != nil {
			done()
		}
		f.done <- err
	}()
	return f
}

// recycle takes back the rows of a batch whose outcome was received.
func (w *writer) recycle(f *inflight) {
	clear(f.rows) // drop references to row data
	w.spare = f.rows[:0]
}

// commit writes what is held, spilled rows included, and the progress (the
// last transaction in the batch) and commits. Only after it returns may the
// position be acknowledged.
func (w *writer) commit(ctx context.Context, p progress) error {
	if err := w.spill(ctx); err != nil {
		return err
	}
	if err := w.begin(ctx); err != nil {
		return err
	}
	_, err := w.tx.Exec(ctx, recordProgress, w.slot, p.endLSN.String(), p.commitLSN.String(), p.commitTime, w.changes)
	if err != nil {
		return fmt.Errorf("record capture progress: %w", err)
	}
	if err := w.tx.Commit(ctx); err != nil {
		w.tx = nil
		return fmt.Errorf("commit audit rows: %w", err)
	}
	w.tx, w.changes = nil, 0
	return nil
}

// abort drops the open batch (the stream will be replayed from the last
// committed progress).
func (w *writer) abort(ctx context.Context) {
	if w.tx != nil {
		_ = w.tx.Rollback(ctx)
	}
	w.tx, w.rows, w.changes = nil, w.rows[:0], 0
}

// progress is the position a committed batch reaches.
type progress struct {
	endLSN     pglogrepl.LSN
	commitLSN  pglogrepl.LSN
	commitTime time.Time
}
