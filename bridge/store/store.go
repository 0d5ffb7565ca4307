// Package store owns the engine's SQL: the snapshot's reads (rows, record
// state, intent from the audit trail, operations, replacements, modes) and
// the writes a cycle makes (conditional write-backs, record state,
// operations, replacement phases, unverified parts, the intent watermark).
// Every statement names its objects schema-qualified.
package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// WriteBack is an action's write-back, in one transaction: the feedback
// columns of got into row key.ID (FeedbackTx: on condition that they are
// still as the cycle read them, was), then the record's state: the
// resource it stands for, cloudID (Enact). It does not enact the intent:
// only a later read that shows the user's values does.
func WriteBack(ctx context.Context, tx pgx.Tx, spec module.Table, key snapshot.Key, was, got module.Record, cloudID string) error {
	if err := FeedbackTx(ctx, tx, spec, key.ID, was, got); err != nil {
		return err
	}
	return Enact(ctx, tx, Enacted{Record: key, CloudID: cloudID})
}

// Enacted is a record in sync: the resource it stands for, and the newest
// user change to it that is enacted.
type Enacted struct {
	Record  snapshot.Key // a row (snapshot.RowKey)
	CloudID string
	LSN     pglogrepl.LSN
}

// Enact records records in sync (iasql_records): their cloud identity,
// and their intent enacted up to their LSN (never moving back).
func Enact(ctx context.Context, db Execer, recs ...Enacted) error {
	tables, ids, cloudIDs, lsns := make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs))
	for i, e := range recs {
		tables[i], ids[i], cloudIDs[i], lsns[i] = e.Record.Table, e.Record.ID, e.CloudID, e.LSN.String()
	}
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_records AS r (table_name, record_id, cloud_id, enacted_lsn)
		SELECT t, i, c, l::pg_lsn FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(t, i, c, l)
		ON CONFLICT (table_name, record_id) DO UPDATE SET cloud_id = excluded.cloud_id,
		  enacted_lsn = greatest(r.enacted_lsn, excluded.enacted_lsn), enacted_at = pg_catalog.clock_timestamp()`,
		tables, ids, cloudIDs, lsns)
	if err != nil {
		return fmt.Errorf("record %d records in sync: %w", len(recs), err)
	}
	return nil
}

// FeedbackTx writes the feedback columns of got into the row, on condition
// that they are still as the cycle read them (was): users do not own them,
// so a user's concurrent change to other columns does not stop the write
// (a generated identity written back must never be lost: the resource would
// be created again). A user's change to a feedback column wins.
func FeedbackTx(ctx context.Context, tx pgx.Tx, spec module.Table, id string, was, got module.Record) error {
	if err := writeIfAsRead(ctx, tx, spec.Name, id, spec.Feedback, was, got); err != nil {
		return err
	}
	// A named reference's naming column, which the row leaves to the
	// reference (set): it shows the name the cloud has at once, and a
	// listing under it (a parent named there) finds the resource. Apart
	// from the feedback: the user owns it, and a concurrent change of it
	// must not stop the feedback's write.
	var named []string
	for ref, n := range spec.Named {
		if list, many := was[ref].([]any); was[ref] != nil && (!many || len(list) > 0) {
			named = append(named, n.Column)
		}
	}
	slices.Sort(named)
	return writeIfAsRead(ctx, tx, spec.Name, id, named, was, got)
}

// writeIfAsRead writes got's cols into row id of table where they are
// still as the cycle read them (was); nothing when they are the same.
func writeIfAsRead(ctx context.Context, tx pgx.Tx, table, id string, cols []string, was, got module.Record) error {
	if len(cols) == 0 || module.SameColumns(cols, was, got) {
		return nil
	}
	rec := Only(got, cols)
	list := ColumnList(rec)
	_, err := updateColumns(ctx, tx, table, id, rec,
		`ROW(`+list+`) IS NOT DISTINCT FROM (SELECT ROW(`+list+`) FROM pg_catalog.jsonb_populate_record(NULL::`+pgx.Identifier{"public", table}.Sanitize()+`, $3::jsonb))`,
		string(EncodeRecord(Only(was, cols))))
	return err
}

// UpdateRowTx writes rec's columns into the row, on condition that it is
// the version the cycle read (xmin); ErrConflict when it is not.
func UpdateRowTx(ctx context.Context, tx pgx.Tx, table, id string, xmin uint32, rec module.Record) error {
	ok, err := updateColumns(ctx, tx, table, id, rec, `xmin = $3::xid`, xmin)
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

// ReadDB reads the rows of every table in one REPEATABLE READ snapshot and
// the WAL position that covers every commit the snapshot sees.
func ReadDB(ctx context.Context, conn *pgx.Conn, specs []module.Table, s *snapshot.Scope) (pglogrepl.LSN, snapshot.Visibility, map[string]map[string]*snapshot.Row, error) {
	var lsn pglogrepl.LSN
	var vis snapshot.Visibility
	out := map[string]map[string]*snapshot.Row{}
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
		if vis, err = snapshot.ParseVisibility(snap); err != nil {
			return err
		}
		// Whole tables, then the tables read by record, children first (a
		// child's rows name the parent rows read for reference).
		for _, t := range specs {
			if !s.ByRecord(t.Name) {
				m, err := scanRows(ctx, tx, t, `SELECT id::text, xmin, pg_catalog.to_jsonb(t)::text FROM `+pgx.Identifier{"public", t.Name}.Sanitize()+` t`)
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
func scanRows(ctx context.Context, tx pgx.Tx, t module.Table, q string, args ...any) (map[string]*snapshot.Row, error) {
	rows, err := tx.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read table %s: %w", t.Name, err)
	}
	defer rows.Close()
	m := map[string]*snapshot.Row{}
	for rows.Next() {
		var id, js string
		var xmin uint32
		if err := rows.Scan(&id, &xmin, &js); err != nil {
			return nil, fmt.Errorf("read table %s: %w", t.Name, err)
		}
		rec, err := DecodeRecord(js)
		if err != nil {
			return nil, fmt.Errorf("decode row %s of %s: %w", id, t.Name, err)
		}
		m[id] = &snapshot.Row{ID: id, Xmin: xmin, DB: rec}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read table %s: %w", t.Name, err)
	}
	return m, nil
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

// ReadRecords reads iasql_records for the tables: every record of a table
// read whole, the records of the rows read of the others.
func ReadRecords(ctx context.Context, conn *pgx.Conn, tables []string, s *snapshot.Scope) (map[string]map[string]snapshot.RecordState, error) {
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
	out := map[string]map[string]snapshot.RecordState{}
	for rows.Next() {
		var t, id, cid string
		var lsn pglogrepl.LSN
		if err := rows.Scan(&t, &id, &cid, &lsn); err != nil {
			return nil, fmt.Errorf("read record state: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]snapshot.RecordState{}
		}
		out[t][id] = snapshot.RecordState{CloudID: cid, Enacted: lsn}
	}
	return out, rows.Err()
}

// ReadIntent reads the user changes from low on and keeps those the
// snapshot saw: per table and record, the newest one (seen) and, where it is
// newer than the record's enacted LSN, the pending intent. A TRUNCATE is a
// change to every record the table had. It also returns where the next
// cycle's query may start: below it every change is seen or enacted.
func ReadIntent(ctx context.Context, conn *pgx.Conn, tables []string, low, upto pglogrepl.LSN, vis snapshot.Visibility,
	recs map[string]map[string]snapshot.RecordState) (intent, seen map[string]map[string]pglogrepl.LSN, next pglogrepl.LSN, err error) {
	rows, err := conn.Query(ctx, `
		SELECT table_name, coalesce(record_id, ''), lsn::text, xid
		  FROM public.iasql_audit_log
		 WHERE origin = 'user' AND lsn >= $2::text::pg_lsn
		   AND table_name = ANY($1) AND change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		 ORDER BY lsn, seq`, tables, low)
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
		var t, id string
		var lsn pglogrepl.LSN
		var xid int64 // the audit trail's is 32 bits, as logical decoding gives it
		if err := rows.Scan(&t, &id, &lsn, &xid); err != nil {
			return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
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

// ReadActing reads the acting set from low on. Called once capture has
// recorded every change committed before the cycle began, it holds every
// record a change committed before then made pending.
func ReadActing(ctx context.Context, conn *pgx.Conn, tables []string, low pglogrepl.LSN) (snapshot.ActingSet, error) {
	s := snapshot.ActingSet{IDs: map[string]map[string]bool{}, Truncated: map[string]bool{}, NoRow: map[string]bool{},
		Replacing: map[string]bool{}, Unverified: map[string]bool{}, InFlight: map[string]int{}}
	rows, err := conn.Query(ctx, `
		SELECT a.table_name, coalesce(a.record_id, ''), 'intent'
		  FROM public.iasql_audit_log a
		  LEFT JOIN public.iasql_records r ON r.table_name = a.table_name AND r.record_id = a.record_id
		 WHERE a.origin = 'user' AND a.lsn >= $2::text::pg_lsn AND a.table_name = ANY($1)
		   AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		   AND (r.enacted_lsn IS NULL OR r.enacted_lsn < a.lsn)
		UNION
		SELECT table_name, coalesce(record_id, ''), CASE WHEN handle IS NULL THEN 'operation' ELSE 'in flight' END
		  FROM public.iasql_operations WHERE table_name = ANY($1)
		UNION
		SELECT table_name, record_id, 'replacement' FROM public.iasql_replacements WHERE table_name = ANY($1)
		UNION
		SELECT table_name, coalesce(record_id, ''), 'replacement' FROM public.iasql_operations WHERE action = 'replace' AND table_name = ANY($1)
		UNION
		SELECT table_name, '', 'unverified' FROM public.iasql_unverified WHERE table_name = ANY($1)`,
		tables, low)
	if err != nil {
		return s, fmt.Errorf("read the records a cycle acts on: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t, id, why string
		if err := rows.Scan(&t, &id, &why); err != nil {
			return s, fmt.Errorf("read the records a cycle acts on: %w", err)
		}
		switch {
		case why == "in flight" && id != "":
			s.InFlight[t]++
		case why == "replacement":
			s.Replacing[t] = true
		case why == "unverified":
			s.Unverified[t] = true
		case id == "" && why == "intent":
			s.Truncated[t] = true
		case id == "":
			s.NoRow[t] = true
		}
		if id != "" {
			if s.IDs[t] == nil {
				s.IDs[t] = map[string]bool{}
			}
			s.IDs[t][id] = true
		}
	}
	return s, rows.Err()
}

// RecordsByCloud finds the records of resources by cloud id: table ->
// cloud id -> record id, for those a record knows (an Event cycle's
// resources, by the index on (table_name, cloud_id)).
func RecordsByCloud[A any](ctx context.Context, db Reader, cloud map[string]map[string]A) (map[string]map[string]string, error) {
	var ts, cs []string
	for t, ids := range cloud {
		for cid := range ids {
			ts, cs = append(ts, t), append(cs, cid)
		}
	}
	out := map[string]map[string]string{}
	rows, err := db.Query(ctx, `
		SELECT r.table_name, r.cloud_id, r.record_id
		  FROM unnest($1::text[], $2::text[]) k(table_name, cloud_id)
		  JOIN public.iasql_records r ON r.table_name = k.table_name AND r.cloud_id = k.cloud_id`, ts, cs)
	if err != nil {
		return nil, fmt.Errorf("find the records of resources AWS reported: %w", err)
	}
	var t, cid, rid string
	if _, err := pgx.ForEachRow(rows, []any{&t, &cid, &rid}, func() error {
		if out[t] == nil {
			out[t] = map[string]string{}
		}
		out[t][cid] = rid
		return nil
	}); err != nil {
		return nil, fmt.Errorf("find the records of resources AWS reported: %w", err)
	}
	return out, nil
}

// ReadScoped reads, in the snapshot's transaction, the rows of a table the
// scope reads by record: the acting rows, the rows that reference them
// (what a replacement would move, for preview) and then, as the caller
// walks the tables children first, the rows they reference.
func ReadScoped(ctx context.Context, tx pgx.Tx, spec module.Table, s *snapshot.Scope) (map[string]*snapshot.Row, error) {
	q, args := scopedQuery(spec, s)
	m, err := scanRows(ctx, tx, spec, q, args...)
	if err != nil {
		return nil, err
	}
	for id, r := range m {
		if !s.Acting[spec.Name][id] {
			s.AddContext(spec.Name, id)
		}
		for _, ref := range module.RefsOf(spec) {
			if s.Whole[ref.Table] {
				continue
			}
			for _, v := range ref.Values(r.DB) {
				s.AddContext(ref.Table, v)
			}
		}
	}
	return m, nil
}

// scopedQuery is ReadScoped's query and its arguments. The rows read by
// record are found by id through the primary key: their ids go as numbers
// (a module table's id is a serial), since t.id::text = ANY(...) cannot use
// the index and reads the whole table, 100,000 rows for a commit of one.
// An id that is not a number names no row, as before.
func scopedQuery(spec module.Table, s *snapshot.Scope) (string, []any) {
	ids := []int64{}
	for _, id := range s.RowsOf(spec.Name) {
		if n, err := strconv.ParseInt(id, 10, 64); err == nil && strconv.FormatInt(n, 10) == id {
			ids = append(ids, n)
		}
	}
	args := []any{ids}
	conds := []string{"t.id = ANY($1::bigint[])"}
	for _, ref := range module.RefsOf(spec) {
		if len(s.Acting[ref.Table]) == 0 {
			continue
		}
		args = append(args, slices.Collect(maps.Keys(s.Acting[ref.Table])))
		if ref.Many {
			conds = append(conds, fmt.Sprintf("t.%s::text[] && $%d::text[]", pgx.Identifier{ref.Column}.Sanitize(), len(args)))
		} else {
			conds = append(conds, fmt.Sprintf("t.%s::text = ANY($%d)", pgx.Identifier{ref.Column}.Sanitize(), len(args)))
		}
	}
	q := `SELECT id::text, xmin, pg_catalog.to_jsonb(t)::text FROM ` + pgx.Identifier{"public", spec.Name}.Sanitize() + ` t WHERE ` + strings.Join(conds, " OR ")
	return q, args
}

func SetPhase(ctx context.Context, tx pgx.Tx, rp *replace.Replacement, phase string) error {
	_, err := tx.Exec(ctx, `UPDATE public.iasql_replacements SET phase = $3 WHERE table_name = $1 AND record_id = $2`, rp.Table, rp.Record, phase)
	if err != nil {
		return fmt.Errorf("record the replacement of %s %s as %s: %w", rp.Table, rp.Record, phase, err)
	}
	return nil
}

// ReadReplacements reads iasql_replacements for the tables.
func ReadReplacements(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]*replace.Replacement, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_id, old_cloud_id, coalesce(temp_cloud_id, ''), phase FROM public.iasql_replacements WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read replacements in progress: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]*replace.Replacement{}
	for rows.Next() {
		rp := &replace.Replacement{}
		if err := rows.Scan(&rp.Table, &rp.Record, &rp.Old, &rp.Temp, &rp.Phase); err != nil {
			return nil, fmt.Errorf("read replacements in progress: %w", err)
		}
		if out[rp.Table] == nil {
			out[rp.Table] = map[string]*replace.Replacement{}
		}
		out[rp.Table][rp.Record] = rp
	}
	return out, rows.Err()
}

// RetriesDue reports whether a failed operation's retry is due
// (iasql_operations.next_retry passed).
func RetriesDue(ctx context.Context, db Querier) (bool, error) {
	var due bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.iasql_operations
		WHERE state = 'failed' AND next_retry <= pg_catalog.clock_timestamp())`).Scan(&due); err != nil {
		return false, fmt.Errorf("read failed operations due for retry: %w", err)
	}
	return due, nil
}

// ReadOps reads iasql_operations for the tables: table -> record key -> op.
func ReadOps(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]snapshot.Op, error) {
	// changed: a user changed the record since the operation last changed
	// (the audit trail's commit times and updated_at are the server's clock).
	rows, err := conn.Query(ctx, `SELECT o.table_name, o.record_key, o.action, o.state, coalesce(o.token, ''), o.attempts,
		coalesce(o.next_retry, 'epoch'), coalesce(o.handle, ''), coalesce(o.poll_after, 'epoch'), coalesce(o.last_error, ''), o.since, coalesce(o.cloud_id, ''), o.updated_at,
		o.state = 'failed' AND starts_with(o.last_error, $2) -- only such an op is asked (Op.BackingOff)
		  AND EXISTS (SELECT 1 FROM public.iasql_audit_log a WHERE a.origin = 'user' AND a.table_name = o.table_name AND a.record_id = o.record_key AND a.ts > o.updated_at)
		FROM public.iasql_operations o WHERE o.table_name = ANY($1)`, tables, snapshot.NotConverging)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]snapshot.Op{}
	for rows.Next() {
		var t, k string
		var o snapshot.Op
		if err := rows.Scan(&t, &k, &o.Action, &o.State, &o.Token, &o.Attempts, &o.NextRetry, &o.Handle, &o.PollAfter, &o.LastError, &o.Since, &o.CloudID, &o.Updated, &o.Changed); err != nil {
			return nil, fmt.Errorf("read operations: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]snapshot.Op{}
		}
		out[t][k] = o
	}
	return out, rows.Err()
}

// ForgetOps removes the operations of records now in sync (keyed by
// table and record_key: plan.OpKey), in tx.
func ForgetOps(ctx context.Context, tx pgx.Tx, keys ...snapshot.Key) error {
	if len(keys) == 0 {
		return nil
	}
	tables, ids := make([]string, len(keys)), make([]string, len(keys))
	for i, k := range keys {
		tables[i], ids[i] = k.Table, k.ID
	}
	_, err := tx.Exec(ctx, `DELETE FROM public.iasql_operations o USING unnest($1::text[], $2::text[]) AS u(t, k)
		WHERE o.table_name = u.t AND o.record_key = u.k`, tables, ids)
	if err != nil {
		return fmt.Errorf("forget the operations of %d records: %w", len(keys), err)
	}
	return nil
}

// SetHandle records the handle of a record's long operation and when to
// ask about it next, or (handle "") that none runs any more. A handle set
// where none was starts the operation's clock (since).
func SetHandle(ctx context.Context, tx pgx.Tx, table, key, handle string, pollAfter time.Time) error {
	var at any
	if handle != "" {
		at = pollAfter
	}
	_, err := tx.Exec(ctx, `UPDATE public.iasql_operations SET handle = nullif($3, ''), poll_after = $4, updated_at = pg_catalog.clock_timestamp(),
		  since = CASE WHEN handle IS NULL AND $3 <> '' THEN pg_catalog.clock_timestamp() ELSE since END
		WHERE table_name = $1 AND record_key = $2`, table, key, handle, at)
	return err
}

// ReadModes asks iasql_effective_mode for every module table and for every
// record that has a rule of its own.
func ReadModes(ctx context.Context, conn *pgx.Conn) (snapshot.Modes, error) {
	m := snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{},
		Columns: map[string]map[string]snapshot.Resolved{}, RecordColumns: map[snapshot.Key]map[string]snapshot.Resolved{}}
	rows, err := conn.Query(ctx, `
		SELECT t.table_name, '', '', e.mode::text, e.rule
		  FROM public.iasql_tables t, public.iasql_effective_mode(t.table_name) e
		 WHERE t.module IS NOT NULL
		UNION ALL
		SELECT r.table_name, coalesce(r.record_id::text, ''), coalesce(r.column_name, ''), e.mode::text, e.rule
		  FROM public.iasql_mode r, public.iasql_effective_mode(r.table_name, r.record_id, r.column_name) e
		 WHERE r.record_id IS NOT NULL OR r.column_name IS NOT NULL`)
	if err != nil {
		return m, fmt.Errorf("read modes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, id, col string
		var r snapshot.Resolved
		if err := rows.Scan(&table, &id, &col, &r.Mode, &r.Rule); err != nil {
			return m, fmt.Errorf("read modes: %w", err)
		}
		switch {
		case col != "" && id != "":
			k := snapshot.RowKey(table, id)
			if m.RecordColumns[k] == nil {
				m.RecordColumns[k] = map[string]snapshot.Resolved{}
			}
			m.RecordColumns[k][col] = r
		case col != "":
			if m.Columns[table] == nil {
				m.Columns[table] = map[string]snapshot.Resolved{}
			}
			m.Columns[table][col] = r
		case id == "":
			m.Tables[table] = r
		default:
			m.Records[snapshot.RowKey(table, id)] = r
		}
	}
	return m, rows.Err()
}

// ErrConflict means a conditional write found the row changed since the
// cycle read it: the user's change wins and the record is planned again.
var ErrConflict = errors.New("row changed since it was read")

// Execer runs a statement: a transaction or a connection.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// StartReplacement records a replacement before its first cloud call (a
// replacement of the record already recorded is started again).
func StartReplacement(ctx context.Context, db Execer, rp *replace.Replacement) error {
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_replacements (table_name, record_id, old_cloud_id, temp_cloud_id, phase)
		VALUES ($1, $2, $3, nullif($4, ''), $5)
		ON CONFLICT (table_name, record_id) DO UPDATE SET old_cloud_id = excluded.old_cloud_id,
		  temp_cloud_id = excluded.temp_cloud_id, phase = excluded.phase, started_at = pg_catalog.clock_timestamp()`,
		rp.Table, rp.Record, rp.Old, rp.Temp, rp.Phase)
	if err != nil {
		return fmt.Errorf("record the replacement of %s %s: %w", rp.Table, rp.Record, err)
	}
	return nil
}

// FinishReplacement forgets a replacement that has ended.
func FinishReplacement(ctx context.Context, db Execer, rp *replace.Replacement) error {
	if _, err := db.Exec(ctx, `DELETE FROM public.iasql_replacements WHERE table_name = $1 AND record_id = $2`, rp.Table, rp.Record); err != nil {
		return fmt.Errorf("finish the replacement of %s %s: %w", rp.Table, rp.Record, err)
	}
	return nil
}
