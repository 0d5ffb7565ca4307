package store

// The writes a cycle makes besides the conditional row writes of store.go:
// operations, record state, rows imported or deleted, unverified parts, the
// cycle's records, the intent watermark and the audit trail's pruning.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Querier runs statements and queries: a transaction or a connection.
type Querier interface {
	Execer
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// MarkEngine marks the transaction as the engine's (iasql_engine_mark), so
// that capture records its changes as the engine's, never as intent. A
// later marker in the transaction (a label, or a CloudMarker) says what
// the changes after it are.
func MarkEngine(ctx context.Context, tx pgx.Tx, label string) error {
	if _, err := tx.Exec(ctx, `SELECT public.iasql_engine_mark($1)`, label); err != nil {
		return fmt.Errorf("mark engine transaction: %w", err)
	}
	return nil
}

// CloudMarker is the marker (for Mark) of writes that put into rows what
// the cycle labelled read in the cloud: capture records the changes that
// follow it with origin cloud, and with who made them in AWS when a is
// known (logical.parseMark reads it).
func CloudMarker(label string, a *snapshot.Attribution) string {
	if a != nil {
		// What AWS says is bounded (an event is anyone's text), so that
		// the marker stays far below what capture reads of a message
		// (logical.MaxMessageBytes).
		a = a.Bounded()
	}
	b, err := json.Marshal(struct {
		Origin      string                `json:"origin"`
		Message     string                `json:"message"`
		Attribution *snapshot.Attribution `json:"attribution,omitempty"`
	}{"cloud", label, a})
	if err != nil { // strings only: cannot fail
		panic(err)
	}
	return string(b)
}

// WALInsertLSN is the server's current WAL insert position.
func WALInsertLSN(ctx context.Context, db Querier) (pglogrepl.LSN, error) {
	var lsn pglogrepl.LSN
	if err := db.QueryRow(ctx, `SELECT pg_catalog.pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return 0, fmt.Errorf("read WAL position: %w", err)
	}
	return lsn, nil
}

// OpRow is what a cycle writes of one record's work in iasql_operations.
type OpRow struct {
	Table, Key, RecordID, CloudID, Action, State, Token string
	Attempts                                            int
	LastError                                           string
	NextRetry                                           time.Time // zero: none
}

// BeginOp records, before a cloud call, that it is being made: the
// record's action, its client token and attempts; a new action starts its
// history over (since, last error).
func BeginOp(ctx context.Context, db Execer, o OpRow) error {
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts)
		VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8)
		ON CONFLICT (table_name, record_key) DO UPDATE SET record_id = excluded.record_id, cloud_id = excluded.cloud_id,
		  action = excluded.action, state = excluded.state, token = excluded.token, attempts = excluded.attempts,
		  since = CASE WHEN o.action = excluded.action THEN o.since ELSE pg_catalog.clock_timestamp() END,
		  last_error = CASE WHEN o.action = excluded.action THEN o.last_error END,
		  next_retry = NULL, updated_at = pg_catalog.clock_timestamp()`,
		o.Table, o.Key, o.RecordID, o.CloudID, o.Action, o.State, o.Token, o.Attempts)
	if err != nil {
		return fmt.Errorf("record the %s of %s %s before the cloud call: %w", o.Action, o.Table, o.Key, err)
	}
	return nil
}

// EndOp records how a record's work ended short of done: failed (with the
// error and the next retry) or waiting for another record.
func EndOp(ctx context.Context, db Execer, o OpRow) error {
	var next any
	if !o.NextRetry.IsZero() {
		next = o.NextRetry
	}
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts, last_error, next_retry)
		VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8, $9, $10)
		ON CONFLICT (table_name, record_key) DO UPDATE SET state = excluded.state, action = excluded.action,
		  token = coalesce(excluded.token, o.token), attempts = greatest(o.attempts, excluded.attempts),
		  last_error = excluded.last_error, next_retry = excluded.next_retry, updated_at = pg_catalog.clock_timestamp()`,
		o.Table, o.Key, o.RecordID, o.CloudID, o.Action, o.State, o.Token, o.Attempts, o.LastError, next)
	if err != nil {
		return fmt.Errorf("record the state of %s %s: %w", o.Table, o.Key, err)
	}
	return nil
}

// Discarded is a record whose user changes up to LSN a rollback discards.
type Discarded struct {
	Record snapshot.Key // a row (snapshot.RowKey)
	LSN    pglogrepl.LSN
}

// Discard records that a rollback discarded the user changes to records
// up to their LSN: they are no longer intent (their cloud identity, if
// recorded, is kept; a record without one is recorded without). What is
// not restored yet is then restored from the cloud by later cycles, as a
// record without intent is.
func Discard(ctx context.Context, db Execer, recs ...Discarded) error {
	tables, ids, lsns := make([]string, len(recs)), make([]string, len(recs)), make([]string, len(recs))
	for i, d := range recs {
		tables[i], ids[i], lsns[i] = d.Record.Table, d.Record.ID, d.LSN.String()
	}
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_records AS r (table_name, record_id, cloud_id, enacted_lsn)
		SELECT t, i, NULL, l::pg_lsn FROM unnest($1::text[], $2::text[], $3::text[]) AS u(t, i, l)
		ON CONFLICT (table_name, record_id) DO UPDATE SET
		  enacted_lsn = greatest(r.enacted_lsn, excluded.enacted_lsn), enacted_at = pg_catalog.clock_timestamp()`,
		tables, ids, lsns)
	if err != nil {
		return fmt.Errorf("discard the changes to %d records: %w", len(recs), err)
	}
	return nil
}

// DiscardSince records as discarded the user changes of the audit trail
// after after and up to upto (an expired iasql transaction's, while the
// engine cannot run the rollback's cycle), for the records that still have
// a row or a record: from then on they are no intent, and the cycles restore
// those rows from the cloud as any row without intent (a row never made in
// the cloud is deleted, one the user deleted is imported again). It returns
// how many records it discarded.
func DiscardSince(ctx context.Context, tx pgx.Tx, after, upto pglogrepl.LSN) (int, error) {
	rows, err := tx.Query(ctx, `
		SELECT a.table_name, a.record_id, max(a.lsn)::text
		FROM public.iasql_audit_log a
		WHERE a.origin = 'user' AND a.lsn > $1::text::pg_lsn AND a.lsn <= $2::text::pg_lsn
		  AND a.record_id IS NOT NULL AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE')
		GROUP BY a.table_name, a.record_id`, after, upto)
	if err != nil {
		return 0, fmt.Errorf("read the user changes to discard: %w", err)
	}
	type change struct {
		id  string
		lsn pglogrepl.LSN
	}
	byTable := map[string][]change{}
	for rows.Next() {
		var t string
		var c change
		if err := rows.Scan(&t, &c.id, &c.lsn); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read the user changes to discard: %w", err)
		}
		byTable[t] = append(byTable[t], c)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read the user changes to discard: %w", err)
	}
	var discard []Discarded
	for t, changes := range byTable {
		want := make([]string, len(changes))
		for i, c := range changes {
			want[i] = c.id
		}
		// A record whose row is gone and that has no record (inserted and
		// deleted since begin) leaves nothing to discard.
		var keep []string
		if err := tx.QueryRow(ctx, `
			SELECT coalesce(array_agg(r.record_id), '{}') FROM public.iasql_records r
			WHERE r.table_name = $1 AND r.record_id = ANY($2)`, t, want).Scan(&keep); err != nil {
			return 0, fmt.Errorf("read the records of %s: %w", t, err)
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.to_regclass($1) IS NOT NULL`, "public."+pgx.Identifier{t}.Sanitize()).Scan(&exists); err != nil {
			return 0, fmt.Errorf("look up table %s: %w", t, err)
		}
		if exists {
			var present []string
			if err := tx.QueryRow(ctx, `SELECT coalesce(array_agg(id::text), '{}') FROM `+pgx.Identifier{"public", t}.Sanitize()+` WHERE id::text = ANY($1)`, want).Scan(&present); err != nil {
				return 0, fmt.Errorf("read the rows of %s: %w", t, err)
			}
			keep = append(keep, present...)
		}
		for _, c := range changes {
			if slices.Contains(keep, c.id) {
				discard = append(discard, Discarded{Record: snapshot.RowKey(t, c.id), LSN: c.lsn})
			}
		}
	}
	if len(discard) == 0 {
		return 0, nil
	}
	return len(discard), Discard(ctx, tx, discard...)
}

// ForgetResource forgets that record stood for the resource cloudID (it
// was deleted from the cloud).
func ForgetResource(ctx context.Context, db Execer, table, record, cloudID string) error {
	_, err := db.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2 AND cloud_id = $3`, table, record, cloudID)
	if err != nil {
		return fmt.Errorf("forget %s %s's resource %s: %w", table, record, cloudID, err)
	}
	return nil
}

// DetachResource records that a record whose row still exists no longer
// has the resource cloudID (deleted: the row stands for another one now,
// or is to be created again). The record keeps how far its intent is
// enacted: the engine moving a row to a new resource on its own (a
// reference repointed to a replacement) is no change of the user's.
func DetachResource(ctx context.Context, db Execer, table, record, cloudID string) error {
	_, err := db.Exec(ctx, `UPDATE public.iasql_records SET cloud_id = NULL WHERE table_name = $1 AND record_id = $2 AND cloud_id = $3`, table, record, cloudID)
	if err != nil {
		return fmt.Errorf("detach %s %s from its resource %s: %w", table, record, cloudID, err)
	}
	return nil
}

// DeleteRow deletes a module row on condition that it is the version the
// cycle read (ErrConflict when it is not), and forgets its record.
func DeleteRow(ctx context.Context, tx pgx.Tx, table, id string, xmin uint32) error {
	tag, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{"public", table}.Sanitize()+` WHERE id = $1 AND xmin = $2::xid`, id, xmin)
	if err != nil {
		return fmt.Errorf("delete %s %s: %w", table, id, err)
	}
	if tag.RowsAffected() == 0 {
		return ErrConflict
	}
	if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2`, table, id); err != nil {
		return fmt.Errorf("forget %s %s: %w", table, id, err)
	}
	return nil
}

// InsertRow inserts a module row (an import) and returns its id. With
// rec["id"] set, the row takes that id only if it is free (ErrConflict
// otherwise).
func InsertRow(ctx context.Context, tx pgx.Tx, table string, rec map[string]any) (string, error) {
	cols, t := ColumnList(rec), pgx.Identifier{"public", table}.Sanitize()
	q := `INSERT INTO ` + t + ` (` + cols + `) SELECT ` + cols + ` FROM pg_catalog.jsonb_populate_record(NULL::` + t + `, $1::jsonb)`
	if _, ok := rec["id"]; ok {
		q += ` ON CONFLICT (id) DO NOTHING`
	}
	var id string
	if err := tx.QueryRow(ctx, q+` RETURNING id::text`, string(EncodeRecord(rec))).Scan(&id); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return "", ErrConflict
		}
		return "", fmt.Errorf("import into %s: %w", table, err)
	}
	return id, nil
}

// Unverified is a part of the cloud whose read failed: a table in a
// region ("" for the whole table), and the error in one line.
type Unverified struct {
	Table, Region, Error string
}

// SetUnverified records the parts of the cloud whose reads failed now,
// and forgets those of the tables read whole (and of uninstalled tables)
// that are verified again.
func SetUnverified(ctx context.Context, db Execer, parts []Unverified, readWhole []string) error {
	tables, regions, errs := make([]string, len(parts)), make([]string, len(parts)), make([]string, len(parts))
	for i, p := range parts {
		tables[i], regions[i], errs[i] = p.Table, p.Region, p.Error
	}
	_, err := db.Exec(ctx, `
		WITH cur (t, r, e) AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])),
		gone AS (
			DELETE FROM public.iasql_unverified v
			 WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.t = v.table_name AND cur.r = v.region)
			   AND (v.table_name = ANY($4) OR NOT EXISTS (SELECT 1 FROM public.iasql_tables t WHERE t.table_name = v.table_name)))
		INSERT INTO public.iasql_unverified AS v (table_name, region, error)
		SELECT t, r, e FROM cur
		ON CONFLICT (table_name, region) DO UPDATE SET error = excluded.error, checked_at = pg_catalog.clock_timestamp()`,
		tables, regions, errs, readWhole)
	if err != nil {
		return fmt.Errorf("record the unverified parts of the cloud: %w", err)
	}
	return nil
}

// CycleRecord writes one of a cycle's lifecycle rows (its start and end)
// into the audit trail.
func CycleRecord(ctx context.Context, db Execer, kind string, message []byte) error {
	_, err := db.Exec(ctx, `INSERT INTO public.iasql_audit_log (ts, change_type, origin, message) VALUES (pg_catalog.clock_timestamp(), $1, 'engine', $2)`, kind, string(message))
	if err != nil {
		return fmt.Errorf("write %s record: %w", kind, err)
	}
	return nil
}

// EngineState is iasql_engine_state: the persisted intent watermark and
// when the audit trail was last pruned.
type EngineState struct {
	Low      pglogrepl.LSN
	PrunedAt time.Time
}

// LoadEngineState reads iasql_engine_state (the zero state when it has no
// row yet).
func LoadEngineState(ctx context.Context, db Querier) (EngineState, error) {
	var s EngineState
	err := db.QueryRow(ctx, `SELECT intent_low::text, coalesce(pruned_at, 'epoch') FROM public.iasql_engine_state`).Scan(&s.Low, &s.PrunedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return EngineState{}, nil
	}
	if err != nil {
		return EngineState{}, fmt.Errorf("read the engine's state: %w", err)
	}
	return s, nil
}

// SaveLow persists the intent watermark (never moving it back).
func SaveLow(ctx context.Context, db Execer, low pglogrepl.LSN) error {
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_engine_state AS s (intent_low) VALUES ($1::text::pg_lsn)
		ON CONFLICT (singleton) DO UPDATE SET intent_low = greatest(s.intent_low, excluded.intent_low), updated_at = pg_catalog.clock_timestamp()`,
		low)
	if err != nil {
		return fmt.Errorf("persist the intent watermark: %w", err)
	}
	return nil
}

// PruneAudit deletes at most limit audit rows older than cutoff and below
// low (so never a change still needed as intent), and says how many. It
// keeps what iasql_as_of needs to answer for any time from cutoff on: the
// newest version older than cutoff of each record still alive then (not
// deleted, not truncated after it), and the newest TRUNCATE older than
// cutoff of each table (the versions before it stay gone).
func PruneAudit(ctx context.Context, db Execer, cutoff time.Time, low pglogrepl.LSN, limit int) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM public.iasql_audit_log WHERE id IN (
		SELECT a.id FROM public.iasql_audit_log a
		 WHERE a.ts < $1 AND (a.lsn IS NULL OR a.lsn < $2::text::pg_lsn)
		   AND NOT (a.change_type IN ('INSERT', 'UPDATE')
		        AND NOT EXISTS (SELECT 1 FROM public.iasql_audit_log b
		                         WHERE b.table_name = a.table_name AND b.record_id = a.record_id AND b.id > a.id AND b.ts < $1)
		        AND NOT EXISTS (SELECT 1 FROM public.iasql_audit_log b
		                         WHERE b.table_name = a.table_name AND b.record_id IS NULL AND b.change_type = 'TRUNCATE' AND b.id > a.id AND b.ts < $1))
		   AND NOT (a.change_type = 'TRUNCATE'
		        AND NOT EXISTS (SELECT 1 FROM public.iasql_audit_log b
		                         WHERE b.table_name = a.table_name AND b.record_id IS NULL AND b.change_type = 'TRUNCATE' AND b.id > a.id AND b.ts < $1))
		 LIMIT $3)`,
		cutoff, low, limit)
	if err != nil {
		return 0, fmt.Errorf("prune the audit trail: %w", err)
	}
	return tag.RowsAffected(), nil
}

// MarkPruned records that the audit trail was pruned now, of what was
// older than cutoff: from cutoff on it holds every version
// (iasql_history_start).
func MarkPruned(ctx context.Context, db Execer, cutoff time.Time) error {
	if _, err := db.Exec(ctx, `UPDATE public.iasql_engine_state
		SET pruned_at = pg_catalog.clock_timestamp(), history_from = greatest(history_from, $1)`, cutoff); err != nil {
		return fmt.Errorf("record the audit trail's pruning: %w", err)
	}
	return nil
}

// ForgetGone forgets the records of a table whose rows are gone and whose
// resources are not in the cloud: their state in iasql_records and their
// operations (a create that failed before the user deleted its row). Each
// is forgotten only while its row is still absent, so a row that takes
// the id again meanwhile keeps its record.
func ForgetGone(ctx context.Context, db Execer, table string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	absent := `NOT EXISTS (SELECT 1 FROM ` + pgx.Identifier{"public", table}.Sanitize() + ` x WHERE x.id::text = %s)`
	if _, err := db.Exec(ctx, `DELETE FROM public.iasql_operations o WHERE o.table_name = $1 AND o.record_key = ANY($2) AND `+
		fmt.Sprintf(absent, "o.record_key"), table, ids); err != nil {
		return fmt.Errorf("forget the operations of %d deleted %s rows: %w", len(ids), table, err)
	}
	if _, err := db.Exec(ctx, `DELETE FROM public.iasql_records r WHERE r.table_name = $1 AND r.record_id = ANY($2) AND `+
		fmt.Sprintf(absent, "r.record_id"), table, ids); err != nil {
		return fmt.Errorf("forget %d deleted %s rows: %w", len(ids), table, err)
	}
	return nil
}
