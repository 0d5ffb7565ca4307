package reconcile

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// newToken is a create's idempotency token.
func newToken() string { return randomHex(16) }

// randomHex is n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// beginOp persists, before a's cloud call, that the call is being made.
// For a create it settles the idempotency token first: the one an earlier
// attempt persisted (this cycle's or a crashed one's), else a new one. It
// reports whether an earlier attempt may have made the resource.
func (c *cycle) beginOp(ctx context.Context, a *plan.Action) (retried bool, err error) {
	prev, had := a.Tab.Ops[a.OpKey]
	if had && prev.Action == "replace" && a.Kind == plan.CloudCreate && a.Action == "create" {
		// The create of a replacement whose new resource is not there (it
		// deleted the old one first, module.DeleteFirst, and the create
		// failed, or is tried in a later cycle): still the replacement.
		// Recorded as such, what references the record keeps moving to
		// the new resource (snapshot.Table.Forced) in every cycle until a
		// read shows the record in sync; recorded as a create, a later
		// cycle took the listeners AWS deleted with the old load balancer
		// for deleted by someone else, and deleted their rows.
		a.Action = "replace"
	}
	if (a.Kind == plan.CloudCreate || a.Action == "replace") && a.Token == "" {
		// A replacement creates too: its new resource carries a token.
		if had && prev.Action == a.Action && prev.Token != "" {
			a.Token, a.Attempts = prev.Token, prev.Attempts
		} else {
			a.Token = newToken()
		}
	}
	retried = a.Token != "" && a.Attempts > 0
	a.Attempts++
	o := opRow(a, snapshot.OpInProgress)
	if err := c.dbTx(ctx, func(tx pgx.Tx) error { return store.BeginOp(ctx, tx, o) }); err != nil {
		return false, err
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
func (c *cycle) endOp(ctx context.Context, a *plan.Action, state, why string) {
	o := opRow(a, state)
	o.LastError = snapshot.OneLine(why)
	if state == snapshot.OpFailed {
		o.NextRetry = time.Now().Add(retryAfter(a.Attempts))
	}
	if err := c.dbTx(ctx, func(tx pgx.Tx) error { return store.EndOp(ctx, tx, o) }); err != nil {
		c.log().Warn("cannot record the state of an action", "table", a.Table, "record", a.OpKey, "state", state, "err", err)
	}
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

// maxPolledAttempts is how many times a cycle someone waits for makes an
// action whose long operation failed in a way the cloud says to retry
// before it reports the failure (automatic cycles retry later, backing
// off: dueOnly).
const maxPolledAttempts = 3

// Polls of an operation the cloud gave no advice on (module.Pending's
// RetryAfter 0) come soon at first, then less often: a quarter of the
// time it has run, between minPoll and maxPoll. An instance that is
// running after 5 s is seen within about a second, a load balancer that
// takes minutes is asked about every 15 s.
const (
	minPoll = time.Second
	maxPoll = 15 * time.Second
)

// pollDelay is when to ask next about an operation that has run for age:
// the cloud's advice when it gave one.
func pollDelay(advice, age time.Duration) time.Duration {
	if advice > 0 {
		return advice
	}
	return min(maxPoll, max(minPoll, age/4))
}

// startOp persists that a's operation runs on in the cloud under p's
// handle, and what the cloud already says of the resource (its identity).
func (c *cycle) startOp(ctx context.Context, a *plan.Action, p *module.Pending) error {
	after := pollDelay(p.RetryAfter, 0)
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		if p.Record != nil && a.Row != nil && a.Kind == plan.CloudCreate {
			if err := store.FeedbackTx(ctx, tx, a.Tab.Spec, a.ID, a.Row.DB, p.Record); err != nil {
				return err
			}
		}
		return store.SetHandle(ctx, tx, a.Table, a.OpKey, p.Handle, time.Now().Add(after))
	})
	if err != nil {
		return fmt.Errorf("record the operation %s of %s %s: %w", p.Handle, a.Table, a.OpKey, err)
	}
	c.log().Info("operation runs on in the cloud", "table", a.Table, "record", a.OpKey, "action", a.Action, "handle", p.Handle)
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
		ok := module.PartsOf(ts.Mapper).Poller != nil
		for key, o := range ts.Ops {
			if o.Handle == "" || o.PollAfter.After(now) {
				continue
			}
			if !ok {
				return false, fmt.Errorf("table %s has an operation in progress (%s) but its mapper cannot be asked about it", ts.Spec.Name, o.Handle)
			}
			got, err := ts.Poll(ctx, c.snap.Call, o.Handle)
			var p *module.Pending
			switch {
			case errors.As(err, &p):
				after := pollDelay(p.RetryAfter, now.Sub(o.Since))
				handle := cmp.Or(p.Handle, o.Handle)
				if err := c.dbTx(ctx, func(tx pgx.Tx) error {
					return store.SetHandle(ctx, tx, ts.Spec.Name, key, handle, now.Add(after))
				}); err != nil {
					return false, fmt.Errorf("record the progress of %s %s: %w", ts.Spec.Name, key, err)
				}
				o.Handle, o.PollAfter = handle, now.Add(after)
				ts.Ops[key] = o
			case err != nil:
				a := &plan.Action{Table: ts.Spec.Name, ID: key, Action: o.Action, Token: o.Token, Attempts: o.Attempts, Tab: ts, Row: ts.Rows[key]}
				if a.Row == nil {
					a.ID, a.CloudID = "", strings.TrimPrefix(key, "cloud ")
				}
				a.Fix(c.snap)
				if err := c.clearHandle(ctx, ts, key); err != nil {
					return false, err
				}
				c.endOp(ctx, a, snapshot.OpFailed, err.Error())
				var term *module.TerminalError
				if c.req.Trigger.Waited() && !errors.As(err, &term) && o.Attempts < maxPolledAttempts {
					// The cloud says to try again (throttled, an internal
					// error, not stabilized): someone waits, so the next
					// pass plans the action again, at once.
					c.log().Info("operation failed in the cloud; trying again", "table", ts.Spec.Name, "record", key, "action", o.Action, "attempts", o.Attempts, "err", err)
					c.pollRetry = true
				} else {
					c.polledFailures = append(c.polledFailures, fmt.Sprintf("%s %s %s cloud: %v", ts.Spec.Name, key, o.Action, err))
				}
				ended = true
				c.touch(ts.Spec.Name)
			default:
				if err := c.finishOp(ctx, ts, key, o, got); err != nil {
					return false, err
				}
				c.log().Info("operation done in the cloud", "table", ts.Spec.Name, "record", key, "action", o.Action)
				if cid := module.CloudIDOf(ts.Spec, got); got != nil && cid != "" {
					if c.fresh == nil {
						c.fresh = map[string]map[string]module.Record{}
					}
					if c.fresh[ts.Spec.Name] == nil {
						c.fresh[ts.Spec.Name] = map[string]module.Record{}
					}
					c.fresh[ts.Spec.Name][cid] = got
				}
				ended = true
				c.touch(ts.Spec.Name)
			}
		}
	}
	return ended, nil
}

// clearHandle records that an operation ended without a result (it
// failed): no handle is asked about any more.
func (c *cycle) clearHandle(ctx context.Context, ts *snapshot.Table, key string) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		return store.SetHandle(ctx, tx, ts.Spec.Name, key, "", time.Time{})
	})
}

// writeResult writes what an operation ended with into the record's row
// (feedback columns) and state (its identity); nothing for a row-less key
// or no result.
func writeResult(ctx context.Context, tx pgx.Tx, ts *snapshot.Table, key string, got module.Record) error {
	r := ts.Rows[key]
	if r == nil || got == nil {
		return nil
	}
	if cid := module.CloudIDOf(ts.Spec, got); cid != "" {
		return store.WriteBack(ctx, tx, ts.Spec, snapshot.RowKey(ts.Spec.Name, key), r.DB, got, cid)
	}
	return store.FeedbackTx(ctx, tx, ts.Spec, key, r.DB, got)
}

// finishOp records, in one transaction, that an operation ended done: a
// create's or update's result is written back into its row (clearHandle's
// part), a delete's record no longer has the resource, and the work of a
// create, update or delete is over (forgotten, as when the cloud answers
// at once: execute's CloudDelete, and a create left in progress without a
// handle would read as one cut short). A replacement's operation stays
// until a read shows the record in sync: what references the record is
// pushed to the new resource meanwhile.
func (c *cycle) finishOp(ctx context.Context, ts *snapshot.Table, key string, o snapshot.Op, got module.Record) error {
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		if err := writeResult(ctx, tx, ts, key, got); err != nil {
			return err
		}
		switch o.Action {
		case "delete":
			// Forgotten with its row gone, detached where the row stands
			// for another resource now.
			cid, record := cmp.Or(o.CloudID, strings.TrimPrefix(key, "cloud ")), key
			if strings.HasPrefix(key, "cloud ") {
				record = ts.RecBy[cid]
			}
			if err := c.forgetResource(ctx, tx, ts, record, cid); err != nil {
				return err
			}
			fallthrough
		case "create", "update":
			return store.ForgetOps(ctx, tx, snapshot.RowKey(ts.Spec.Name, key))
		}
		return store.SetHandle(ctx, tx, ts.Spec.Name, key, "", time.Time{})
	})
	if err != nil {
		return fmt.Errorf("record the end of %s %s's %s: %w", ts.Spec.Name, key, o.Action, err)
	}
	if o.Action != "replace" {
		delete(ts.Ops, key)
	}
	if got != nil && o.Relaunches(ts.Spec, module.CloudIDOf(ts.Spec, got)) {
		// A relaunch ended (in a cycle after the one that began it): what
		// references the record moves to the new resource in this one.
		c.markRecreated(ts.Spec.Name, key)
	}
	return nil
}

// forgetResource records that record no longer has the resource cid, now
// deleted: its state is forgotten when its row is gone too, else detached
// from the resource (store.DetachResource).
func (c *cycle) forgetResource(ctx context.Context, tx pgx.Tx, ts *snapshot.Table, record, cid string) error {
	if record == "" || cid == "" {
		return nil
	}
	if ts.Rows[record] != nil {
		return store.DetachResource(ctx, tx, ts.Spec.Name, record, cid)
	}
	return store.ForgetResource(ctx, tx, ts.Spec.Name, record, cid)
}

// opRow is what iasql_operations records of an action's work, in state.
func opRow(a *plan.Action, state string) store.OpRow {
	return store.OpRow{Table: a.Table, Key: a.OpKey, RecordID: a.ID, CloudID: a.CloudID, Action: a.Action,
		State: state, Token: a.Token, Attempts: a.Attempts}
}
