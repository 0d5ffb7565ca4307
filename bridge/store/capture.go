package store

// What capture, the status command and the metrics read and write of
// iasql's tables: the engine's mark key, capture progress, the cycle
// records of the audit trail, the records not in sync, refusals. (Capture's
// audit rows and progress, written per batch in one round trip, stay in
// logical/writer.go: see NOTES.md, "The store".)

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Reader runs queries: a transaction, a connection or a pool.
type Reader interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// EngineKey reads the key the engine's markers carry (iasql_engine_mark),
// and where WAL was when iasql was installed in the database. Only the
// sidecar's role may read it.
func EngineKey(ctx context.Context, db Reader) (key string, installed pglogrepl.LSN, err error) {
	if err := db.QueryRow(ctx, `SELECT mark_key, installed_lsn::text FROM iasql_private.iasql_engine_key`).Scan(&key, &installed); err != nil {
		return "", 0, fmt.Errorf("read the engine's mark key: %w", err)
	}
	return key, installed, nil
}

// Progress is how far capture has got through a slot
// (iasql_capture_progress).
type Progress struct {
	End        pglogrepl.LSN // the end of the last transaction captured
	CommitTime *time.Time    // its commit time (nil until one is captured)
	UpdatedAt  time.Time     // when capture last advanced
	Changes    int64         // changes captured through the slot so far
	// Here: the LSNs are this server's and database's (iasql_lsn_origin);
	// in a database restored from a dump they are its source's until
	// capture adopts it.
	Here bool
}

// ReadProgress reads capture's progress through slot (nil when it has
// none).
func ReadProgress(ctx context.Context, db Reader, slot string) (*Progress, error) {
	var p Progress
	err := db.QueryRow(ctx, `SELECT end_lsn::text, commit_ts, updated_at, changes, lsn_origin = public.iasql_lsn_origin()
		FROM public.iasql_capture_progress WHERE slot_name = $1`, slot).Scan(&p.End, &p.CommitTime, &p.UpdatedAt, &p.Changes, &p.Here)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read capture progress: %w", err)
	}
	return &p, nil
}

// StartProgress records that capture starts through slot at at, unless it
// has progress there already. The progress row names the slot: the SQL
// API finds the sidecar by it.
func StartProgress(ctx context.Context, db Execer, slot string, at pglogrepl.LSN) error {
	if _, err := db.Exec(ctx, `INSERT INTO public.iasql_capture_progress (slot_name, end_lsn) VALUES ($1, $2::text::pg_lsn) ON CONFLICT (slot_name) DO NOTHING`, slot, at); err != nil {
		return fmt.Errorf("record capture start: %w", err)
	}
	return nil
}

// ProgressSlots are the slots capture has recorded progress through.
func ProgressSlots(ctx context.Context, db Reader) ([]string, error) {
	return texts(ctx, db, "the capture's slots", `SELECT slot_name::text FROM public.iasql_capture_progress`)
}

// ModuleTables are the tables modules registered for capture
// (iasql_tables), by name.
func ModuleTables(ctx context.Context, db Reader) ([]string, error) {
	return texts(ctx, db, "the module tables", `SELECT table_name FROM public.iasql_tables WHERE module IS NOT NULL ORDER BY table_name`)
}

// InstalledTables are the tables of the installed modules, as
// iasql_modules lists them.
func InstalledTables(ctx context.Context, db Reader) ([]string, error) {
	return texts(ctx, db, "installed module tables", `SELECT pg_catalog.unnest(tables) FROM public.iasql_modules WHERE installed_at IS NOT NULL`)
}

// texts reads the one text column of q's rows (what names them in an
// error).
func texts(ctx context.Context, db Reader, what, q string, args ...any) ([]string, error) {
	rows, err := db.Query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	return out, nil
}

// LockHeld reports whether a live session holds the sidecar's lock role
// (LockCapture: a sidecar captures).
func LockHeld(ctx context.Context, db Reader, role int) (bool, error) {
	var held bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.iasql_lock_holders WHERE lock_id = $1)`, role).Scan(&held); err != nil {
		return false, fmt.Errorf("read who holds lock %d: %w", role, err)
	}
	return held, nil
}

// CycleEnd is a cycle's end record in the audit trail (CYCLE_END), with
// what its start record says.
type CycleEnd struct {
	ID                      int64 // the audit row's
	Cycle, Reason           string
	Ended                   time.Time
	Outcome, Summary, Error string
	// Events: how the sidecar that ran it read the events queue ("" for
	// no queue: reconcile.Request.Events); QueueUnreadable begins it when
	// the queue could not be read.
	Events string
	// Duration: from its start record to its end (zero when the start
	// record is gone: retention).
	Duration time.Duration
	Started  bool // the start record was found
}

// QueueUnreadable begins a cycle's Events when its sidecar could not read
// the events queue.
const QueueUnreadable = "cannot read events queue"

// cycleEnds selects the cycle end records that rest (more conditions,
// an order and a limit on the audit trail's rows) picks, with their start,
// in order. Cycle records are the audit rows with no table: the index on
// (table_name, record_id, id) finds them at once.
func cycleEnds(rest string) string {
	return `
	SELECT e.id, coalesce(e.m->>'cycle', ''), coalesce(e.m->>'reason', ''), e.ts,
	       coalesce(e.m->>'outcome', ''), coalesce(e.m->>'summary', ''), coalesce(e.m->>'error', ''), coalesce(e.m->>'events', ''),
	       (SELECT s.ts FROM public.iasql_audit_log s
	         WHERE s.table_name IS NULL AND s.record_id IS NULL AND s.id < e.id
	           AND s.change_type = 'CYCLE_START' AND s.message::jsonb->>'cycle' = e.m->>'cycle'
	         ORDER BY s.id DESC LIMIT 1)
	  FROM (SELECT id, ts, message::jsonb AS m FROM public.iasql_audit_log
	         WHERE table_name IS NULL AND record_id IS NULL AND change_type = 'CYCLE_END'` + rest + `) e
	 ORDER BY e.id`
}

func scanCycleEnd(row pgx.CollectableRow) (CycleEnd, error) {
	var c CycleEnd
	var started *time.Time
	if err := row.Scan(&c.ID, &c.Cycle, &c.Reason, &c.Ended, &c.Outcome, &c.Summary, &c.Error, &c.Events, &started); err != nil {
		return c, err
	}
	if started != nil {
		c.Duration, c.Started = c.Ended.Sub(*started), true
	}
	return c, nil
}

// LastCycle reads the newest cycle end record (nil when there is none).
func LastCycle(ctx context.Context, db Reader) (*CycleEnd, error) {
	rows, err := db.Query(ctx, cycleEnds(` ORDER BY id DESC LIMIT 1`))
	if err != nil {
		return nil, fmt.Errorf("read the last cycle: %w", err)
	}
	ends, err := pgx.CollectRows(rows, scanCycleEnd)
	if err != nil {
		return nil, fmt.Errorf("read the last cycle: %w", err)
	}
	if len(ends) == 0 {
		return nil, nil
	}
	return &ends[0], nil
}

// CycleEnds reads the cycle end records after the audit row afterID and
// no older than since, in order (at most one cycle runs at a time, so they
// commit in id order).
func CycleEnds(ctx context.Context, db Reader, afterID int64, since time.Time) ([]CycleEnd, error) {
	rows, err := db.Query(ctx, cycleEnds(` AND id > $1 AND ts >= $2`), afterID, since)
	if err != nil {
		return nil, fmt.Errorf("read cycles: %w", err)
	}
	ends, err := pgx.CollectRows(rows, scanCycleEnd)
	if err != nil {
		return nil, fmt.Errorf("read cycles: %w", err)
	}
	return ends, nil
}

// RecordStates counts the records not in sync (iasql_status) by state.
// iasql_status reads the module tables with the caller's privileges.
func RecordStates(ctx context.Context, db Reader) (map[string]int64, error) {
	rows, err := db.Query(ctx, `SELECT state, count(*) FROM public.iasql_status GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("read iasql_status: %w", err)
	}
	out := map[string]int64{}
	var state string
	var n int64
	if _, err := pgx.ForEachRow(rows, []any{&state, &n}, func() error {
		out[state] = n
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read iasql_status: %w", err)
	}
	return out, nil
}

// RefusalTotals are the requests refused so far (iasql_request_refusals),
// for lacking the role they need and for exceeding their role's rate.
func RefusalTotals(ctx context.Context, db Reader) (role, rate int64, err error) {
	if err := db.QueryRow(ctx, `SELECT coalesce(sum(refused) FILTER (WHERE reason = 'role'), 0)::bigint, coalesce(sum(refused) FILTER (WHERE reason = 'rate'), 0)::bigint
		FROM public.iasql_request_refusals`).Scan(&role, &rate); err != nil {
		return 0, 0, fmt.Errorf("read refused requests: %w", err)
	}
	return role, rate, nil
}

// EngineSummary says, in a line each, the open iasql transaction ("open
// since ... by ...", or "none") and the calls of deprecated functions
// ("name calls, ...", or "none").
func EngineSummary(ctx context.Context, db Reader) (transaction, deprecated string, err error) {
	err = db.QueryRow(ctx, `
		SELECT coalesce((SELECT 'open since ' || to_char(opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' by ' || opened_by FROM public.iasql_transaction), 'none'),
		       coalesce((SELECT string_agg(function_name || ' ' || calls, ', ' ORDER BY function_name) FROM public.iasql_deprecated_calls), 'none')`).
		Scan(&transaction, &deprecated)
	if err != nil {
		return "", "", fmt.Errorf("read engine status: %w", err)
	}
	return transaction, deprecated, nil
}
