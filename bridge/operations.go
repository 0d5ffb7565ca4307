package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// op is a row of iasql_operations: cloud work under way or failed for one
// record.
type op struct {
	action, state, token string
	attempts             int
	nextRetry            time.Time
	lastError            string
	handle               string    // a long operation's handle, while it runs
	pollAfter            time.Time // when to ask about it
}

// Operation states, as iasql_operations spells them.
const (
	opInProgress = "in progress"
	opFailed     = "failed"
	opWaiting    = "waiting"
)

// readOps reads iasql_operations for the tables: table -> record key -> op.
func readOps(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]op, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_key, action, state, coalesce(token, ''), attempts,
		coalesce(next_retry, 'epoch'), coalesce(handle, ''), coalesce(poll_after, 'epoch'), coalesce(last_error, '')
		FROM public.iasql_operations WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]op{}
	for rows.Next() {
		var t, k string
		var o op
		if err := rows.Scan(&t, &k, &o.action, &o.state, &o.token, &o.attempts, &o.nextRetry, &o.handle, &o.pollAfter, &o.lastError); err != nil {
			return nil, fmt.Errorf("read operations: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]op{}
		}
		out[t][k] = o
	}
	return out, rows.Err()
}

// opKey is the record_key of what an action is about: a row by its id, a
// resource with no row (deleted by the user, a replacement's old resource,
// a stray) by its cloud id.
func opKey(a *Action) string {
	if a.row != nil {
		return a.ID
	}
	return "cloud " + a.CloudID
}

// newToken is a create's idempotency token.
func newToken() string { return randomHex(16) }

// beginOp persists, before a's cloud call, that the call is being made.
// For a create it settles the idempotency token first: the one an earlier
// attempt persisted (this cycle's or a crashed one's), else a new one. It
// reports whether an earlier attempt may have made the resource.
func (c *cycle) beginOp(ctx context.Context, a *Action) (retried bool, err error) {
	prev, had := a.ts.ops[opKey(a)]
	if (a.kind == cloudCreate || a.Action == "replace") && a.token == "" {
		// A replacement creates too: its new resource carries a token.
		if had && prev.action == a.Action && prev.token != "" {
			a.token, a.attempts = prev.token, prev.attempts
		} else {
			a.token = newToken()
		}
	}
	retried = a.token != "" && a.attempts > 0
	a.attempts++
	err = c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8)
			ON CONFLICT (table_name, record_key) DO UPDATE SET record_id = excluded.record_id, cloud_id = excluded.cloud_id,
			  action = excluded.action, state = excluded.state, token = excluded.token, attempts = excluded.attempts,
			  since = CASE WHEN o.action = excluded.action THEN o.since ELSE pg_catalog.clock_timestamp() END,
			  last_error = CASE WHEN o.action = excluded.action THEN o.last_error END,
			  next_retry = NULL, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, opKey(a), a.ID, a.CloudID, a.Action, opInProgress, a.token, a.attempts)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record the %s of %s %s before the cloud call: %w", a.Action, a.Table, opKey(a), err)
	}
	return retried, nil
}

// retryAfter is how long an automatic cycle leaves a failed action alone
// after its nth attempt: 10 s, doubling, at most 15 minutes (iasql_commit
// tries at once).
func retryAfter(attempts int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < attempts && d < 15*time.Minute; i++ {
		d *= 2
	}
	return min(d, 15*time.Minute)
}

// endOp records that a's cloud work failed, or waits for another record.
func (c *cycle) endOp(ctx context.Context, a *Action, state, why string) {
	var next any
	if state == opFailed {
		next = time.Now().Add(retryAfter(a.attempts))
	}
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts, last_error, next_retry)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8, $9, $10)
			ON CONFLICT (table_name, record_key) DO UPDATE SET state = excluded.state, action = excluded.action,
			  token = coalesce(excluded.token, o.token), attempts = greatest(o.attempts, excluded.attempts),
			  last_error = excluded.last_error, next_retry = excluded.next_retry, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, opKey(a), a.ID, a.CloudID, a.Action, state, a.token, a.attempts, oneLine(why), next)
		return err
	})
	if err != nil {
		c.e.log.Warn("cannot record the state of an action", "table", a.Table, "record", opKey(a), "state", state, "err", err)
	}
}

// forgetOps removes the operations of records now in sync, in tx.
func forgetOps(ctx context.Context, tx pgx.Tx, tables, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM public.iasql_operations o USING unnest($1::text[], $2::text[]) AS u(t, k)
		WHERE o.table_name = u.t AND o.record_key = u.k`, tables, keys)
	if err != nil {
		return fmt.Errorf("forget the operations of %d records: %w", len(keys), err)
	}
	return nil
}

// adoptByToken matches rows yet to be created, whose create has a persisted
// client token, with the resources that token made (module.TokenTag): a
// crash after the cloud acted and before the write-back leaves the row
// without its identity, and the resource is its own, not one to import. A
// second resource with the same token (a create repeated by something that
// ignored the token) is a stray of the row, deleted from the cloud.
func (ts *tableState) adoptByToken(id string, cf module.Record) (module.Record, string) {
	o, ok := ts.ops[id]
	if !ok || o.token == "" {
		return cf, ""
	}
	return ts.adopt(id, cf, ts.byToken[o.token])
}

// adopt gives row id the first of the resources its token made (cids),
// and marks the others strays of it.
func (ts *tableState) adopt(id string, cf module.Record, cids []string) (module.Record, string) {
	if len(cids) == 0 {
		return cf, ""
	}
	cids = slices.Sorted(slices.Values(cids))
	for _, stray := range cids[1:] {
		ts.strays[stray] = id
	}
	return withIdentity(ts.spec, cf, cids[0]), cids[0]
}

// adoptReplacement is adoptByToken for a row being replaced by a resource
// whose identity the cloud generates: the row still names the old resource
// when a crash (or a 500 after the cloud acted) came between the new
// resource's create and its write-back; the resource the replacement's
// token made is the row's, and any other it made is a stray.
func (ts *tableState) adoptReplacement(id string, cf module.Record, rp *replacement) (module.Record, string) {
	o, ok := ts.ops[id]
	if !ok || o.token == "" || o.action != "replace" {
		return cf, ""
	}
	var cids []string
	for _, cid := range ts.byToken[o.token] {
		if cid != rp.old {
			cids = append(cids, cid)
		}
	}
	return ts.adopt(id, cf, cids)
}

// dueOnly drops, from an automatic cycle's actions, the cloud actions that
// failed before and whose retry is not due yet: each record backs off on
// its own. They stay failed in iasql_status.
func (c *cycle) dueOnly(actions []*Action) []*Action {
	if c.waited() {
		return actions
	}
	now := time.Now()
	kept := actions[:0]
	for _, a := range actions {
		if o, ok := a.ts.ops[opKey(a)]; ok && isCloud(a) && o.state == opFailed && o.nextRetry.After(now) {
			continue
		}
		kept = append(kept, a)
	}
	return kept
}

// Operations that run long.
//
// A mapper's Create, Update or Delete may answer *module.Pending: the cloud
// took the request and works on it. The engine persists the handle (before
// anything else happens to the record), leaves the record alone while the
// operation runs, and asks the mapper's Poll about it once poll_after has
// come, at the start of a pass: in this cycle if someone waits for it
// (iasql_commit returns only when what it started has settled), else in a
// later one (the engine schedules an automatic cycle for it).

// errInFlight: the action's operation runs on in the cloud (persisted).
var errInFlight = errors.New("in progress in the cloud")

// defaultPoll is when to ask about an operation the cloud gave no advice on.
const defaultPoll = 2 * time.Second

// inFlight reports whether a record has an operation running in the cloud.
func (ts *tableState) inFlight(key string) bool {
	o, ok := ts.ops[key]
	return ok && o.handle != ""
}

// startOp persists that a's operation runs on in the cloud under p's
// handle, and what the cloud already says of the resource (its identity).
func (c *cycle) startOp(ctx context.Context, a *Action, p *module.Pending) error {
	after := p.RetryAfter
	if after <= 0 {
		after = defaultPoll
	}
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		if p.Record != nil && a.row != nil && a.kind == cloudCreate {
			if err := feedbackTx(ctx, tx, a.ts.spec, a.ID, a.row.db, p.Record); err != nil {
				return err
			}
		}
		return setHandle(ctx, tx, a.Table, opKey(a), p.Handle, time.Now().Add(after))
	})
	if err != nil {
		return fmt.Errorf("record the operation %s of %s %s: %w", p.Handle, a.Table, opKey(a), err)
	}
	c.e.log.Info("operation runs on in the cloud", "table", a.Table, "record", opKey(a), "action", a.Action, "handle", p.Handle)
	return nil
}

// poll asks about the operations whose time has come, and records the
// answers: still running (new handle and time), done (the operation is
// cleared, and a create's result is written back into its row) or failed.
// It reports whether any ended (the snapshot is then read again).
func (c *cycle) poll(ctx context.Context) (bool, error) {
	now := time.Now()
	ended := false
	for _, ts := range c.snap.tables {
		poller, ok := ts.mapper.(module.Poller)
		for key, o := range ts.ops {
			if o.handle == "" || o.pollAfter.After(now) {
				continue
			}
			if !ok {
				return false, fmt.Errorf("table %s has an operation in progress (%s) but its mapper cannot be asked about it", ts.spec.Name, o.handle)
			}
			got, err := poller.Poll(ctx, o.handle)
			var p *module.Pending
			switch {
			case errors.As(err, &p):
				after := p.RetryAfter
				if after <= 0 {
					after = defaultPoll
				}
				handle := firstNonEmpty(p.Handle, o.handle)
				if err := c.dbTx(ctx, func(tx pgx.Tx) error {
					return setHandle(ctx, tx, ts.spec.Name, key, handle, now.Add(after))
				}); err != nil {
					return false, fmt.Errorf("record the progress of %s %s: %w", ts.spec.Name, key, err)
				}
				o.handle, o.pollAfter = handle, now.Add(after)
				ts.ops[key] = o
			case err != nil:
				a := &Action{Table: ts.spec.Name, ID: key, Action: o.action, token: o.token, attempts: o.attempts, ts: ts, row: ts.rows[key]}
				if a.row == nil {
					a.ID, a.CloudID = "", strings.TrimPrefix(key, "cloud ")
				}
				if err := c.clearHandle(ctx, ts, key, nil); err != nil {
					return false, err
				}
				c.endOp(ctx, a, opFailed, err.Error())
				c.polledFailures = append(c.polledFailures, fmt.Sprintf("%s %s %s cloud: %v", ts.spec.Name, key, o.action, err))
				ended = true
				c.touch(ts.spec.Name)
			default:
				if err := c.clearHandle(ctx, ts, key, got); err != nil {
					return false, err
				}
				c.e.log.Info("operation done in the cloud", "table", ts.spec.Name, "record", key, "action", o.action)
				ended = true
				c.touch(ts.spec.Name)
			}
		}
	}
	return ended, nil
}

// clearHandle records that an operation ended; got, for a create, is the
// resource it made: its feedback (identity) goes into the row.
func (c *cycle) clearHandle(ctx context.Context, ts *tableState, key string, got module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if r := ts.rows[key]; r != nil && got != nil {
			if err := feedbackTx(ctx, tx, ts.spec, key, r.db, got); err != nil {
				return err
			}
			if cid := module.CloudIDOf(ts.spec, got); cid != "" {
				if err := upsertRecord(ctx, tx, ts.spec.Name, key, cid, 0); err != nil {
					return err
				}
			}
		}
		return setHandle(ctx, tx, ts.spec.Name, key, "", time.Time{})
	})
}

// setHandle records the handle of a record's long operation and when to
// ask about it next, or (handle "") that none runs any more.
func setHandle(ctx context.Context, tx pgx.Tx, table, key, handle string, pollAfter time.Time) error {
	var at any
	if handle != "" {
		at = pollAfter
	}
	_, err := tx.Exec(ctx, `UPDATE public.iasql_operations SET handle = nullif($3, ''), poll_after = $4, updated_at = pg_catalog.clock_timestamp()
		WHERE table_name = $1 AND record_key = $2`, table, key, handle, at)
	return err
}

// nextPoll is the earliest time an operation in flight is to be asked
// about (zero when none is in flight), and what runs.
func (s *snapshot) nextPoll() (time.Time, []string) {
	var at time.Time
	var what []string
	for _, ts := range s.tables {
		for key, o := range ts.ops {
			if o.handle == "" {
				continue
			}
			what = append(what, fmt.Sprintf("%s %s (%s, %s)", ts.spec.Name, key, o.action, o.handle))
			if at.IsZero() || o.pollAfter.Before(at) {
				at = o.pollAfter
			}
		}
	}
	sort.Strings(what)
	return at, what
}

// withStatus adds to each action's description what iasql_status says of
// its record (the same source): the failures so far and when automatic
// cycles retry.
func withStatus(actions []*Action) {
	for _, a := range actions {
		if a.ts == nil {
			continue
		}
		o, ok := a.ts.ops[opKey(a)]
		if !ok || o.state != opFailed {
			continue
		}
		a.Description += fmt.Sprintf(" [failed %d time(s), last: %s; automatic cycles retry from %s]",
			o.attempts, o.lastError, o.nextRetry.UTC().Format(time.RFC3339))
	}
}
