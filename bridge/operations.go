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
type Op struct {
	Action, State, Token string
	Attempts             int
	NextRetry            time.Time
	LastError            string
	Handle               string    // a long operation's handle, while it runs
	PollAfter            time.Time // when to ask about it
}

// Operation states, as iasql_operations spells them.
const (
	OpInProgress = "in progress"
	OpFailed     = "failed"
	OpWaiting    = "waiting"
)

// readOps reads iasql_operations for the tables: table -> record key -> op.
func ReadOps(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]Op, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_key, action, state, coalesce(token, ''), attempts,
		coalesce(next_retry, 'epoch'), coalesce(handle, ''), coalesce(poll_after, 'epoch'), coalesce(last_error, '')
		FROM public.iasql_operations WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]Op{}
	for rows.Next() {
		var t, k string
		var o Op
		if err := rows.Scan(&t, &k, &o.Action, &o.State, &o.Token, &o.Attempts, &o.NextRetry, &o.Handle, &o.PollAfter, &o.LastError); err != nil {
			return nil, fmt.Errorf("read operations: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]Op{}
		}
		out[t][k] = o
	}
	return out, rows.Err()
}

// opKey is the record_key of what an action is about: a row by its id, a
// resource with no row (deleted by the user, a replacement's old resource,
// a stray) by its cloud id.
func OpKey(a *Action) string {
	if a.Row != nil {
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
	prev, had := a.Tab.Ops[OpKey(a)]
	if (a.Kind == CloudCreate || a.Action == "replace") && a.Token == "" {
		// A replacement creates too: its new resource carries a token.
		if had && prev.Action == a.Action && prev.Token != "" {
			a.Token, a.Attempts = prev.Token, prev.Attempts
		} else {
			a.Token = newToken()
		}
	}
	retried = a.Token != "" && a.Attempts > 0
	a.Attempts++
	err = c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8)
			ON CONFLICT (table_name, record_key) DO UPDATE SET record_id = excluded.record_id, cloud_id = excluded.cloud_id,
			  action = excluded.action, state = excluded.state, token = excluded.token, attempts = excluded.attempts,
			  since = CASE WHEN o.action = excluded.action THEN o.since ELSE pg_catalog.clock_timestamp() END,
			  last_error = CASE WHEN o.action = excluded.action THEN o.last_error END,
			  next_retry = NULL, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, OpKey(a), a.ID, a.CloudID, a.Action, OpInProgress, a.Token, a.Attempts)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record the %s of %s %s before the cloud call: %w", a.Action, a.Table, OpKey(a), err)
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
	if state == OpFailed {
		next = time.Now().Add(retryAfter(a.Attempts))
	}
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts, last_error, next_retry)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8, $9, $10)
			ON CONFLICT (table_name, record_key) DO UPDATE SET state = excluded.state, action = excluded.action,
			  token = coalesce(excluded.token, o.token), attempts = greatest(o.attempts, excluded.attempts),
			  last_error = excluded.last_error, next_retry = excluded.next_retry, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, OpKey(a), a.ID, a.CloudID, a.Action, state, a.Token, a.Attempts, oneLine(why), next)
		return err
	})
	if err != nil {
		c.e.log.Warn("cannot record the state of an action", "table", a.Table, "record", OpKey(a), "state", state, "err", err)
	}
}

// forgetOps removes the operations of records now in sync, in tx.
func ForgetOps(ctx context.Context, tx pgx.Tx, tables, keys []string) error {
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
func (ts *Table) AdoptByToken(id string, cf module.Record) (module.Record, string) {
	o, ok := ts.Ops[id]
	if !ok || o.Token == "" {
		return cf, ""
	}
	return ts.adopt(id, cf, ts.ByToken[o.Token])
}

// adopt gives row id the first of the resources its token made (cids),
// and marks the others strays of it.
func (ts *Table) adopt(id string, cf module.Record, cids []string) (module.Record, string) {
	if len(cids) == 0 {
		return cf, ""
	}
	cids = slices.Sorted(slices.Values(cids))
	for _, stray := range cids[1:] {
		ts.Strays[stray] = id
	}
	return WithIdentity(ts.Spec, cf, cids[0]), cids[0]
}

// adoptReplacement is adoptByToken for a row being replaced by a resource
// whose identity the cloud generates: the row still names the old resource
// when a crash (or a 500 after the cloud acted) came between the new
// resource's create and its write-back; the resource the replacement's
// token made is the row's, and any other it made is a stray.
func (ts *Table) adoptReplacement(id string, cf module.Record, rp *Replacement) (module.Record, string) {
	o, ok := ts.Ops[id]
	if !ok || o.Token == "" || o.Action != "replace" {
		return cf, ""
	}
	var cids []string
	for _, cid := range ts.ByToken[o.Token] {
		if cid != rp.Old {
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
		if o, ok := a.Tab.Ops[OpKey(a)]; ok && IsCloud(a) && o.State == OpFailed && o.NextRetry.After(now) {
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
var ErrInFlight = errors.New("in progress in the cloud")

// defaultPoll is when to ask about an operation the cloud gave no advice on.
const defaultPoll = 2 * time.Second

// inFlight reports whether a record has an operation running in the cloud.
func (ts *Table) InFlight(key string) bool {
	o, ok := ts.Ops[key]
	return ok && o.Handle != ""
}

// startOp persists that a's operation runs on in the cloud under p's
// handle, and what the cloud already says of the resource (its identity).
func (c *cycle) startOp(ctx context.Context, a *Action, p *module.Pending) error {
	after := p.RetryAfter
	if after <= 0 {
		after = defaultPoll
	}
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		if p.Record != nil && a.Row != nil && a.Kind == CloudCreate {
			if err := FeedbackTx(ctx, tx, a.Tab.Spec, a.ID, a.Row.DB, p.Record); err != nil {
				return err
			}
		}
		return SetHandle(ctx, tx, a.Table, OpKey(a), p.Handle, time.Now().Add(after))
	})
	if err != nil {
		return fmt.Errorf("record the operation %s of %s %s: %w", p.Handle, a.Table, OpKey(a), err)
	}
	c.e.log.Info("operation runs on in the cloud", "table", a.Table, "record", OpKey(a), "action", a.Action, "handle", p.Handle)
	return nil
}

// poll asks about the operations whose time has come, and records the
// answers: still running (new handle and time), done (the operation is
// cleared, and a create's result is written back into its row) or failed.
// It reports whether any ended (the snapshot is then read again).
func (c *cycle) poll(ctx context.Context) (bool, error) {
	now := time.Now()
	ended := false
	for _, ts := range c.snap.Tables {
		poller, ok := ts.Mapper.(module.Poller)
		for key, o := range ts.Ops {
			if o.Handle == "" || o.PollAfter.After(now) {
				continue
			}
			if !ok {
				return false, fmt.Errorf("table %s has an operation in progress (%s) but its mapper cannot be asked about it", ts.Spec.Name, o.Handle)
			}
			got, err := poller.Poll(ctx, o.Handle)
			var p *module.Pending
			switch {
			case errors.As(err, &p):
				after := p.RetryAfter
				if after <= 0 {
					after = defaultPoll
				}
				handle := firstNonEmpty(p.Handle, o.Handle)
				if err := c.dbTx(ctx, func(tx pgx.Tx) error {
					return SetHandle(ctx, tx, ts.Spec.Name, key, handle, now.Add(after))
				}); err != nil {
					return false, fmt.Errorf("record the progress of %s %s: %w", ts.Spec.Name, key, err)
				}
				o.Handle, o.PollAfter = handle, now.Add(after)
				ts.Ops[key] = o
			case err != nil:
				a := &Action{Table: ts.Spec.Name, ID: key, Action: o.Action, Token: o.Token, Attempts: o.Attempts, Tab: ts, Row: ts.Rows[key]}
				if a.Row == nil {
					a.ID, a.CloudID = "", strings.TrimPrefix(key, "cloud ")
				}
				if err := c.clearHandle(ctx, ts, key, nil); err != nil {
					return false, err
				}
				c.endOp(ctx, a, OpFailed, err.Error())
				c.polledFailures = append(c.polledFailures, fmt.Sprintf("%s %s %s cloud: %v", ts.Spec.Name, key, o.Action, err))
				ended = true
				c.touch(ts.Spec.Name)
			default:
				if err := c.clearHandle(ctx, ts, key, got); err != nil {
					return false, err
				}
				c.e.log.Info("operation done in the cloud", "table", ts.Spec.Name, "record", key, "action", o.Action)
				ended = true
				c.touch(ts.Spec.Name)
			}
		}
	}
	return ended, nil
}

// clearHandle records that an operation ended; got, for a create, is the
// resource it made: its feedback (identity) goes into the row.
func (c *cycle) clearHandle(ctx context.Context, ts *Table, key string, got module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if r := ts.Rows[key]; r != nil && got != nil {
			if err := FeedbackTx(ctx, tx, ts.Spec, key, r.DB, got); err != nil {
				return err
			}
			if cid := module.CloudIDOf(ts.Spec, got); cid != "" {
				if err := UpsertRecord(ctx, tx, ts.Spec.Name, key, cid, 0); err != nil {
					return err
				}
			}
		}
		return SetHandle(ctx, tx, ts.Spec.Name, key, "", time.Time{})
	})
}

// setHandle records the handle of a record's long operation and when to
// ask about it next, or (handle "") that none runs any more.
func SetHandle(ctx context.Context, tx pgx.Tx, table, key, handle string, pollAfter time.Time) error {
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
func (s *Snapshot) NextPoll() (time.Time, []string) {
	var at time.Time
	var what []string
	for _, ts := range s.Tables {
		for key, o := range ts.Ops {
			if o.Handle == "" {
				continue
			}
			what = append(what, fmt.Sprintf("%s %s (%s, %s)", ts.Spec.Name, key, o.Action, o.Handle))
			if at.IsZero() || o.PollAfter.Before(at) {
				at = o.PollAfter
			}
		}
	}
	sort.Strings(what)
	return at, what
}

// withStatus adds to each action's description what iasql_status says of
// its record (the same source): the failures so far and when automatic
// cycles retry.
func WithStatus(actions []*Action) {
	for _, a := range actions {
		if a.Tab == nil {
			continue
		}
		o, ok := a.Tab.Ops[OpKey(a)]
		if !ok || o.State != OpFailed {
			continue
		}
		a.Description += fmt.Sprintf(" [failed %d time(s), last: %s; automatic cycles retry from %s]",
			o.Attempts, o.LastError, o.NextRetry.UTC().Format(time.RFC3339))
	}
}
