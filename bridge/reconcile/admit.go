package reconcile

// Admission: what happens to a pass's plan between plan.Diff and the
// executor, in one step (admit). Actions the cloud did not take are
// failures (notTaken); a failed action whose retry is not due waits
// (dueOnly); a record users changed after the cycle began waits for the
// next cycle (leaveNewer); a record planned the same work pass after pass
// is failed for not converging (sameAgain, notConverging).

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// admit takes out of a pass's plan what the cycle does not execute in this
// pass. It returns the failures so far (the actions the cloud did not
// take, the operations polled that failed, the records held in unverified
// parts: noteUnverified) and how many changes it left for the next cycle.
// After a failed pass (out has failures) it fails no record for not
// converging: the read after it executes nothing.
func (c *cycle) admit(ctx context.Context, out *Outcome, pass int, p *plan.Plan) (failures []string, left int, err error) {
	failures = append(c.notTaken(p), c.polledFailures...)
	c.polledFailures = nil
	if failures, err = c.noteUnverified(ctx, out, failures); err != nil {
		return nil, 0, err
	}
	p.Actions = c.dueOnly(p.Actions)
	left = c.leaveNewer(p)
	switch {
	case len(out.Failures) > 0:
		// The read after a failed pass executes nothing: what it plans
		// again is no sign of a loop, and a record that failed keeps
		// the cloud's reason (a create Cloud Control refused is planned
		// in three passes: made, retried, read after).
	case pass > maxPasses:
		// Still planned when the passes have run out, with no newer
		// user change to explain it.
		c.notConverging(ctx, p.Actions, fmt.Sprintf("still planned after %d passes: ", maxPasses))
		p.Actions = nil
	default:
		p.Actions = c.sameAgain(ctx, p.Actions)
	}
	return failures, left, nil
}

// notTaken takes out of a plan the creates and updates of records this
// cycle already pushed (the cloud said yes) and whose read-back still
// differs with no newer user change to explain it: the cloud did not take
// the change. Pushing again would loop; pulling the cloud's state would
// overwrite the user's row. They are failures, and the intent stays
// pending.
func (c *cycle) notTaken(p *plan.Plan) []string {
	var out []string
	kept := p.Actions[:0]
	for _, a := range p.Actions {
		if a.Kind == plan.CloudCreate || a.Kind == plan.CloudUpdate {
			if at, ok := c.pushed[a.Push]; ok && a.Tab.Seen[a.ID] <= at {
				what := "the cloud does not show the resource created for it; it is not created again in this cycle"
				if a.Cloud != nil {
					what = "the cloud did not take the change: " + notTakenColumns(a.Tab, a.Row.Cloud, a.Cloud)
				}
				out = append(out, a.Failure(what))
				continue
			}
		}
		kept = append(kept, a)
	}
	p.Actions = kept
	return out
}

// notTakenColumns names the declarative columns in which the cloud's
// record differs from the user's.
func notTakenColumns(ts *snapshot.Table, want, have module.Record) string {
	var out []string
	for _, col := range ts.Differing(ts.Spec.Declarative, want, have) {
		out = append(out, fmt.Sprintf("column %s wanted %s, has %s", col, plan.Show(want[col]), plan.Show(have[col])))
	}
	if len(out) == 0 {
		return "the resource still differs from the row"
	}
	return strings.Join(out, "; ")
}

// dueOnly drops, from an automatic cycle's actions, the cloud actions that
// failed before and whose retry is not due yet: each record backs off on
// its own. They stay failed in iasql_status. A record failed for not
// converging backs off in every cycle (iasql_commit too) until a user
// changes it (snapshot.Op.BackingOff).
func (c *cycle) dueOnly(actions []*plan.Action) []*plan.Action {
	now := time.Now()
	kept := actions[:0]
	for _, a := range actions {
		o, ok := a.Tab.Ops[a.OpKey]
		if ok && o.BackingOff(now) {
			continue
		}
		if !c.req.Trigger.Waited() && ok && a.IsCloud && o.State == snapshot.OpFailed && o.NextRetry.After(now) {
			continue
		}
		kept = append(kept, a)
	}
	return kept
}

// leaveNewer takes out of a plan, and leaves pending for the next cycle,
// the cloud actions on records that users changed after the cycle began
// (their newest change is past its first read) and that are not this
// cycle's work any more: it has acted on them already (what was committed
// before it is pushed), or they had no change pending when it began. A
// record recreated by this cycle (module.DeleteFirst) is finished in it.
// It returns how many it left.
func (c *cycle) leaveNewer(p *plan.Plan) int {
	kept, left := p.Actions[:0], 0
	for _, a := range p.Actions {
		key := a.RecordKey
		if a.ID != "" && a.IsCloud && !a.Tab.Forced[a.ID] && a.Tab.Seen[a.ID] > c.begin && (c.acted[key] || !c.first[key]) {
			left++
			continue
		}
		kept = append(kept, a)
	}
	p.Actions = kept
	return left
}

// sameAgain takes out of a pass's actions those that plan a record the
// same work as the passes before (maxSame of them in a row) with no new
// user change: the record is not converging (notConverging).
func (c *cycle) sameAgain(ctx context.Context, actions []*plan.Action) []*plan.Action {
	kept := actions[:0]
	var stuck []*plan.Action
	for _, a := range actions {
		key := a.Key
		what := fmt.Sprintf("%s %s @%s", a.Action, a.Direction, a.Tab.Seen[a.ID])
		s := c.same[key]
		if s.what == what {
			s.n++
		} else {
			s = sameWork{what: what, n: 1}
		}
		c.same[key] = s
		if s.n > maxSame {
			stuck = append(stuck, a)
			continue
		}
		kept = append(kept, a)
	}
	c.notConverging(ctx, stuck, "")
	return kept
}

// notConverging fails records that keep being planned: each is marked
// failed in iasql_operations with why (what still differs), backs off like
// any failure, and is left alone by the rest of the cycle.
func (c *cycle) notConverging(ctx context.Context, actions []*plan.Action, why string) {
	for _, a := range actions {
		if o, ok := a.Tab.Ops[a.OpKey]; ok && strings.HasPrefix(o.LastError, snapshot.NotConverging) {
			a.Attempts = max(a.Attempts, o.Attempts) // it backs off longer each time
		}
		a.Attempts++
		reason := snapshot.NotConverging + why + a.Description
		c.endOp(ctx, a, snapshot.OpFailed, reason)
		line := a.Failure(reason)
		c.stuck = append(c.stuck, line)
		// A resource being deleted from the cloud is its row's (a.ID), as
		// user intent goes; its operation is the resource's (OpKey).
		if c.first[snapshot.RowKey(a.Table, cmp.Or(a.ID, a.OpKey))] && !c.carried[snapshot.RowKey(a.Table, a.OpKey)] {
			c.involved = append(c.involved, line)
		}
		c.log().Warn("record not converging; it backs off", "cycle", c.id, "table", a.Table, "record", a.OpKey, "action", a.Action, "why", reason)
	}
}

// sameWork is the work a pass planned for a record, and how many passes in
// a row planned it.
type sameWork struct {
	what string
	n    int
}
