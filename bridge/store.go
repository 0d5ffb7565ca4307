package bridge

// The engine's SQL on a cycle's session: reading rows, record state and
// intent in one snapshot, and the conditional writes that carry the
// engine's marker.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// feedbackTx writes the feedback columns of got into the row, on condition
// that they are still as the cycle read them (was): users do not own them,
// so a user's concurrent change to other columns does not stop the write
// (a generated identity written back must never be lost: the resource would
// be created again). A user's change to a feedback column wins.
func FeedbackTx(ctx context.Context, tx pgx.Tx, spec module.Table, id string, was, got module.Record) error {
	if len(spec.Feedback) == 0 || sameColumns(spec.Feedback, was, got) {
		return nil
	}
	rec := Only(got, spec.Feedback)
	cols := ColumnList(rec)
	_, err := updateColumns(ctx, tx, spec.Name, id, rec,
		`ROW(`+cols+`) IS NOT DISTINCT FROM (SELECT ROW(`+cols+`) FROM pg_catalog.jsonb_populate_record(NULL::`+pgx.Identifier{"public", spec.Name}.Sanitize()+`, $3::jsonb))`,
		string(EncodeRecord(Only(was, spec.Feedback))))
	return err
}

// updateRowTx writes rec's columns into the row, on condition that it is
// the version the cycle read (xmin); errConflict when it is not.
func UpdateRowTx(ctx context.Context, tx pgx.Tx, table, id, xmin string, rec module.Record) error {
	ok, err := updateColumns(ctx, tx, table, id, rec, `xmin = $3::text::xid`, xmin)
	if err == nil && !ok {
		return ErrConflict
	}
	return err
}

// updateColumns sets rec's columns of row id where cond (an SQL condition
// on the row whose parameter is $3) holds, and reports whether it did.
func updateColumns(ctx context.Context, tx pgx.Tx, table, id string, rec module.Record, cond string, arg any) (bool, error) {
	cols := ColumnList(rec)
	t := pgx.Identifier{"public", table}.Sanitize()
	tag, err := tx.Exec(ctx, `UPDATE `+t+` SET (`+cols+`) = (SELECT `+cols+` FROM pg_catalog.jsonb_populate_record(NULL::`+t+`, $1::jsonb))
		WHERE id = $2 AND `+cond, string(EncodeRecord(rec)), id, arg)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

func UpsertRecord(ctx context.Context, tx pgx.Tx, table, id, cid string, lsn pglogrepl.LSN) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO public.iasql_records AS r (table_name, record_id, cloud_id, enacted_lsn)
		VALUES ($1, $2, $3, $4::text::pg_lsn)
		ON CONFLICT (table_name, record_id) DO UPDATE SET cloud_id = excluded.cloud_id,
		  enacted_lsn = greatest(r.enacted_lsn, excluded.enacted_lsn), enacted_at = pg_catalog.clock_timestamp()`,
		table, id, cid, lsn.String())
	return err
}

func Only(r module.Record, cols []string) module.Record {
	out := module.Record{}
	for _, c := range cols {
		out[c] = r[c]
	}
	return out
}

func ColumnList(r module.Record) string {
	cols := make([]string, 0, len(r))
	for c := range r {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for i, c := range cols {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(cols, ", ")
}

// withConn runs fn while holding the cycle's connection.
func (c *cycle) withConn(fn func() error) error { return locked(c.dbMu, fn) }

// dbTx runs fn in a transaction marked as the engine's (a savepoint of
// the open batch, when there is one).
func (c *cycle) dbTx(ctx context.Context, fn func(pgx.Tx) error) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	if c.batch != nil {
		return pgx.BeginFunc(ctx, c.batch, fn) // a savepoint: a failure undoes this action only
	}
	return pgx.BeginFunc(ctx, c.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT public.iasql_engine_mark($1)`, "cycle "+c.id); err != nil {
			return fmt.Errorf("mark engine transaction: %w", err)
		}
		return fn(tx)
	})
}

func (c *cycle) openBatch(ctx context.Context) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin a batch of writes: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT public.iasql_engine_mark($1)`, "cycle "+c.id); err != nil {
		_ = tx.Rollback(ctx)
		return fmt.Errorf("mark engine transaction: %w", err)
	}
	c.batch, c.inBatch = tx, c.inBatch[:0]
	return nil
}

// commitBatch commits the open batch; when that fails, the actions in it
// are returned as failed (their cloud side effects are idempotent to redo).
func (c *cycle) commitBatch(ctx context.Context) ([]*Action, error) {
	if c.batch == nil {
		return nil, nil
	}
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	err := c.batch.Commit(ctx)
	c.batch = nil
	if err != nil {
		return append([]*Action{}, c.inBatch...), fmt.Errorf("commit a batch of %d writes: %w", len(c.inBatch), err)
	}
	return nil, nil
}

// startRecord and endRecord write the cycle's lifecycle rows.
func (c *cycle) record(ctx context.Context, kind string, msg map[string]any) error {
	js, _ := json.Marshal(msg)
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	_, err := c.conn.Exec(ctx, `INSERT INTO public.iasql_audit_log (ts, change_type, origin, message) VALUES (pg_catalog.clock_timestamp(), $1, 'engine', $2)`, kind, string(js))
	if err != nil {
		return fmt.Errorf("write %s record: %w", kind, err)
	}
	return nil
}

// readDB reads the rows of every table in one REPEATABLE READ snapshot and
// the WAL position that covers every commit the snapshot sees.
func ReadDB(ctx context.Context, conn *pgx.Conn, specs []module.Table, s *Scope) (pglogrepl.LSN, Visibility, map[string]map[string]*Row, error) {
	var lsn pglogrepl.LSN
	var vis Visibility
	out := map[string]map[string]*Row{}
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The first statement takes the snapshot: every commit it sees was
		// inserted in the WAL before this position. (The converse does not
		// hold: a commit record is written before its transaction becomes
		// visible, so which changes the read saw is told by the snapshot's
		// transaction ids, not by LSNs.)
		var snap string
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.pg_current_wal_insert_lsn()::text, pg_catalog.pg_current_snapshot()::text`).Scan(&lsn, &snap); err != nil {
			return fmt.Errorf("read WAL position: %w", err)
		}
		var err error
		if vis, err = ParseVisibility(snap); err != nil {
			return err
		}
		// Whole tables, then the tables read by record, children first (a
		// child's rows name the parent rows read for reference).
		for _, t := range specs {
			if !s.ByRecord(t.Name) {
				m, err := scanRows(ctx, tx, t, `SELECT id::text, xmin::text, pg_catalog.to_jsonb(t)::text FROM `+pgx.Identifier{"public", t.Name}.Sanitize()+` t`)
				if err != nil {
					return err
				}
				out[t.Name] = m
			}
		}
		for i := len(specs) - 1; i >= 0; i-- {
			if t := specs[i]; s.ByRecord(t.Name) {
				m, err := ReadScoped(ctx, tx, t, s)
				if err != nil {
					return err
				}
				out[t.Name] = m
			}
		}
		return nil
	})
	return lsn, vis, out, err
}

// scanRows reads a module table's rows by q (id, xmin, the row as JSON).
func scanRows(ctx context.Context, tx pgx.Tx, t module.Table, q string, args ...any) (map[string]*Row, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", t.Name, err)
	}
	defer rows.Close()
	m := map[string]*Row{}
	for rows.Next() {
		var id, xmin, js string
		if err := rows.Scan(&id, &xmin, &js); err != nil {
			return nil, fmt.Errorf("read table %s: %w", t.Name, err)
		}
		rec, err := DecodeRecord(js)
		if err != nil {
			return nil, fmt.Errorf("decode row %s of %s: %w", id, t.Name, err)
		}
		m[id] = &Row{ID: id, Xmin: xmin, DB: rec}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read table %s: %w", t.Name, err)
	}
	return m, nil
}

// visibility is a pg_snapshot: which transactions a read saw.
type Visibility struct {
	xmin, xmax uint64
	inProgress map[uint64]bool
}

func ParseVisibility(s string) (Visibility, error) {
	v := Visibility{inProgress: map[uint64]bool{}}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return v, fmt.Errorf("unexpected snapshot %q", s)
	}
	if _, err := fmt.Sscan(parts[0], &v.xmin); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if _, err := fmt.Sscan(parts[1], &v.xmax); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	for _, x := range strings.Split(parts[2], ",") {
		if x == "" {
			continue
		}
		var id uint64
		if _, err := fmt.Sscan(x, &id); err != nil {
			return v, fmt.Errorf("snapshot %q: %w", s, err)
		}
		v.inProgress[id] = true
	}
	return v, nil
}

// sees reports whether a committed transaction, by its 32-bit id (as
// logical decoding gives it), is visible to the snapshot.
func (v Visibility) Sees(xid32 uint32) bool {
	// Widen to 64 bits as the id nearest xmax (transaction ids compare
	// modulo 2^32 within half the space, as PostgreSQL's own do).
	full := uint64(int64(v.xmax) + int64(int32(xid32-uint32(v.xmax))))
	if full >= v.xmax {
		return false
	}
	return full < v.xmin || !v.inProgress[full]
}

func DecodeRecord(js string) (module.Record, error) {
	d := json.NewDecoder(strings.NewReader(js))
	d.UseNumber()
	var rec module.Record
	if err := d.Decode(&rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func EncodeRecord(r module.Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r)
	return bytes.TrimSpace(b.Bytes())
}

// readRecords reads iasql_records for the tables: every record of a table
// read whole, the records of the rows read of the others.
func ReadRecords(ctx context.Context, conn *pgx.Conn, tables []string, s *Scope) (map[string]map[string]RecordState, error) {
	var whole, pt, pid []string
	for _, t := range tables {
		ids := s.RowsOf(t)
		if ids == nil {
			whole = append(whole, t)
			continue
		}
		for _, id := range ids {
			pt, pid = append(pt, t), append(pid, id)
		}
	}
	rows, err := conn.Query(ctx, `
		SELECT table_name, record_id, coalesce(cloud_id, ''), enacted_lsn::text FROM public.iasql_records WHERE table_name = ANY($1)
		UNION ALL
		SELECT r.table_name, r.record_id, coalesce(r.cloud_id, ''), r.enacted_lsn::text
		  FROM unnest($2::text[], $3::text[]) k(table_name, record_id)
		  JOIN public.iasql_records r ON r.table_name = k.table_name AND r.record_id = k.record_id`, whole, pt, pid)
	if err != nil {
		return nil, fmt.Errorf("read record state: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]RecordState{}
	for rows.Next() {
		var t, id, cid string
		var lsn pglogrepl.LSN
		if err := rows.Scan(&t, &id, &cid, &lsn); err != nil {
			return nil, fmt.Errorf("read record state: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]RecordState{}
		}
		out[t][id] = RecordState{CloudID: cid, Enacted: lsn}
	}
	return out, rows.Err()
}

// readIntent reads the user changes from low on and keeps those the
// snapshot saw: per table and record, the newest one (seen) and, where it is
// newer than the record's enacted LSN, the pending intent. A TRUNCATE is a
// change to every record the table had. It also returns where the next
// cycle's query may start: below it every change is seen or enacted.
func ReadIntent(ctx context.Context, conn *pgx.Conn, tables []string, low, upto pglogrepl.LSN, vis Visibility,
	recs map[string]map[string]RecordState) (intent, seen map[string]map[string]pglogrepl.LSN, next pglogrepl.LSN, err error) {
	rows, err := conn.Query(ctx, `
		SELECT table_name, coalesce(record_id, ''), lsn::text, xid
		  FROM public.iasql_audit_log
		 WHERE origin = 'user' AND lsn >= $2::text::pg_lsn
		   AND table_name = ANY($1) AND change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		 ORDER BY lsn, seq`, tables, low.String())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
	}
	defer rows.Close()
	intent, seen = map[string]map[string]pglogrepl.LSN{}, map[string]map[string]pglogrepl.LSN{}
	next = upto
	note := func(m map[string]map[string]pglogrepl.LSN, t, id string, lsn pglogrepl.LSN) {
		if m[t] == nil {
			m[t] = map[string]pglogrepl.LSN{}
		}
		if lsn > m[t][id] {
			m[t][id] = lsn
		}
	}
	add := func(t, id string, lsn pglogrepl.LSN) {
		note(seen, t, id, lsn)
		if r, ok := recs[t][id]; !ok || r.Enacted < lsn {
			note(intent, t, id, lsn)
		}
	}
	for rows.Next() {
		var t, id, lsnText string
		var xid int64
		if err := rows.Scan(&t, &id, &lsnText, &xid); err != nil {
			return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
		}
		lsn, err := pglogrepl.ParseLSN(lsnText)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("parse LSN %q: %w", lsnText, err)
		}
		if !vis.Sees(uint32(xid)) {
			// Committed after the read: the next cycle's. Its LSN may be
			// below the read's position, so the next query starts there.
			if lsn < next {
				next = lsn
			}
			continue
		}
		if id == "" {
			for rid := range recs[t] {
				add(t, rid, lsn)
			}
			continue
		}
		add(t, id, lsn)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
	}
	return intent, seen, next, nil
}
