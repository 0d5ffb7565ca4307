package reconcile

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// cycle is one read-diff-execute run, on a connection that holds the cycle
// lock for its whole length.
type cycle struct {
	r    *Reconciler
	st   *State
	req  Request
	conn *pgx.Conn
	id   string
	snap *snapshot.Snapshot
	// unread: the tables this cycle leaves unread for their list budget
	// (budget.go), decided once, at its first read; empty when none.
	unread        map[string]error
	budgetDecided bool

	// batch, while open, holds the database writes of database-only
	// actions: one transaction per execute.BatchSize actions, a savepoint each.
	// It is never open across a cloud call.
	batch pgx.Tx
	// batchMark: the last marker emitted in batch (markedTx).
	batchMark string
	// dbMu is held by every use of conn (the engine's workMu): the write-backs of
	// concurrent cloud actions and the session's keep-alive share it.
	dbMu *sync.Mutex
	// pushed: records whose declarative state this cycle pushed to the
	// cloud (the cloud said yes), with the newest user change the push
	// carried. Only a later read that shows it enacts the intent.
	pushed map[plan.Push]pglogrepl.LSN
	// recreated: table -> records whose old resource this cycle deleted
	// to replace it (module.DeleteFirst), or relaunched under a new
	// generated identity, the old resource gone from the cloud (an
	// instance terminated elsewhere, under ENFORCE), and every record a
	// read of this cycle forced (snapshot.Table.Forced: being replaced or
	// relaunched, or referencing one). The cloud may delete what hangs
	// from it (a load balancer's listeners): what references them is
	// pushed to the cloud for the rest of the cycle (snapshot.Table.Forced),
	// created again, never taken for deleted by someone else.
	recreated   map[string]map[string]bool
	recreatedMu sync.Mutex // replacements and creates run concurrently
	// polledFailures: operations that ran long and failed, found by poll;
	// pollRetry: one failed in a way the cloud says to retry, and is
	// planned again (progress, not a loop).
	polledFailures []string
	pollRetry      bool
	// fresh: resources read fresh by poll since the last read (an ended
	// operation's read-back), by table and cloud id: the next read by
	// record takes them instead of reading them again.
	fresh map[string]map[string]module.Record
	// reads: the cloud as the last pass read it, by table; touched: the
	// tables this cycle changed in the cloud since (and their children,
	// which the cloud may change with them). The next pass reads only the
	// touched tables again.
	reads   map[string]*snapshot.Table
	touched map[string]bool
	// changed: the tables this cycle changed in the cloud (in any pass).
	changed map[string]bool

	// begin: the cycle's first read; first: the records with user changes
	// pending then (its work); carried: those failed for not converging
	// before it, unchanged since; acted: the records whose cloud action it
	// did (leaveNewer). same: per record, the work the last passes
	// planned; stuck, involved: the records failed for not converging, and
	// those of them the cycle is about (notConverging).
	begin           pglogrepl.LSN
	first, carried  map[snapshot.Key]bool // carried: by operation key (plan.OpKey)
	acted           map[snapshot.Key]bool
	same            map[snapshot.Key]sameWork
	stuck, involved []string

	// looked: the resources this cycle looked up in CloudTrail, with
	// lookups requests (its budget: attribute); found: who changed them,
	// where CloudTrail said.
	looked  map[snapshot.Key]bool
	lookups int
	found   map[string]map[string]*snapshot.Attribution
	// readStart: when the cycle's first read began; prevReads: State's
	// readAt then; prevCycle: when the cycle before began (the audit
	// trail's), once asked (prevAsked). What lookups start from
	// (lookupSince).
	readStart time.Time
	prevReads map[string]time.Time
	prevCycle time.Time
	prevAsked bool
	// events: the records an Event cycle's events name (noticed); got:
	// what its passes got of the tables read by record, by cloud id (nil:
	// not found), until the cycle changes them in the cloud (reuse).
	events *noticedRecords
	got    map[string]map[string]module.Record
}

// Outcome is how a cycle ended.
type Outcome struct {
	Cycle    string        `json:"cycle"`
	Actions  []plan.Action `json:"actions"`
	Failures []string      `json:"failures,omitempty"`
	Summary  string        `json:"summary"`
	// Unverified: the parts of the cloud whose reads failed, one line each
	// (table, region, error); nothing was done there (unverified.go).
	Unverified []string `json:"unverified,omitempty"`
	// Unread: the tables a scheduled cycle left unread for their list
	// budget (budget.go); unverified in this cycle, not failed.
	Unread []string `json:"unread,omitempty"`
	// RequeueAfter: operations run on in the cloud; the engine runs a
	// cycle that asks about them once it has passed (zero: nothing to come
	// back for).
	RequeueAfter time.Duration `json:"-"`
	// Discarded: a rollback's cycle recorded the user changes it discards
	// as no longer intent (cycle.discard), whatever else it did.
	Discarded bool `json:"-"`
	// Low: after a cycle that succeeded, every user change below it is
	// enacted or decided (the engine's intent watermark).
	Low pglogrepl.LSN `json:"-"`
}

// maxPasses bounds a cycle's passes; maxSame is how many passes in a row
// may plan a record the same work (the same action, with no new user
// change) before it is taken for not converging.
const (
	maxPasses = 10
	maxSame   = 2
)

// run is the double loop of the walkthrough: read both sides, diff
// (plan.Diff), admit (admit.go: what this pass does not execute), execute
// (execute_phase.go: retrying failed tasks while the set of failures keeps
// changing), and repeat until a pass finds nothing to do. A pass's creates and updates
// are enacted only by the next pass's read, when it shows them; so a pass
// with failures is followed by one more read that enacts what did succeed,
// and the cycle then ends failed.
//
// A cycle enacts the user changes committed before it began (its first
// read) and leaves newer ones to the next cycle (leaveNewer): users who
// keep writing are never taken for a loop. A record that keeps being
// planned the same work, or is still planned when the passes run out, is
// failed on its own (notConverging), backs off, and fails the cycle only
// when the cycle is about it (involved).
func (c *cycle) run(ctx context.Context) (*Outcome, error) {
	out := &Outcome{Cycle: c.id}
	c.pushed = map[plan.Push]pglogrepl.LSN{}
	c.acted, c.same = map[snapshot.Key]bool{}, map[snapshot.Key]sameWork{}
	for pass := 1; ; pass++ {
		if err := c.read(ctx); err != nil {
			return out, err
		}
		if ended, err := c.poll(ctx); err != nil {
			return out, err
		} else if ended {
			if err := c.read(ctx); err != nil { // the operations' results are in
				return out, err
			}
		}
		if pass == 1 {
			c.begun(c.snap)
		}
		if c.pollRetry {
			clear(c.same)
			c.pollRetry = false
		}
		if c.req.Options.Discard && c.req.Options.DiscardUpTo == 0 {
			// A rollback discards what its first read saw, in every pass
			// (a VPC deleted since begin is imported back in one pass,
			// its subnets in the next); what users write meanwhile is
			// intent as usual.
			c.req.Options.DiscardUpTo = c.snap.LSN
		}
		c.logRead(ctx, pass)
		p, err := plan.Diff(c.snap, c.req.Options)
		if err != nil {
			return out, err
		}
		c.logPlan(ctx, pass, p)
		c.attribute(ctx, p.Actions)
		if err := c.enact(ctx, p.Enact); err != nil {
			return out, err
		}
		if err := c.forgetGone(ctx); err != nil {
			return out, err
		}
		if err := c.settle(ctx, p); err != nil {
			return out, err
		}
		failures, left, err := c.admit(ctx, out, pass, p)
		if err != nil {
			return out, err
		}
		if len(out.Failures) > 0 {
			// The read after a failed pass: it enacted what the cloud shows.
			for _, f := range failures {
				if !slices.Contains(out.Failures, f) {
					out.Failures = append(out.Failures, f)
				}
			}
			out.Failures = append(out.Failures, c.involved...)
			out.Summary = summarize(out)
			return out, &CycleError{Failures: out.Failures}
		}
		if len(p.Actions) == 0 && len(failures) == 0 {
			at, what := c.snap.NextPoll()
			if !at.IsZero() && c.req.Trigger.Waited() {
				// Someone waits for this cycle: it returns once what it
				// started has settled (or at its timeout).
				c.progress(ctx, fmt.Sprintf("waiting for %d operation(s) in the cloud: %s", len(what), strings.Join(what, ", ")))
				select {
				case <-ctx.Done():
					return out, fmt.Errorf("waiting for %d operation(s) in the cloud: %w", len(what), ctx.Err())
				case <-time.After(time.Until(at)):
				}
				pass--
				continue
			}
			if !at.IsZero() {
				out.RequeueAfter = max(time.Until(at), time.Millisecond)
			}
			c.keepPending(p)
			out.Summary = summarize(out)
			if len(what) > 0 {
				out.Summary += fmt.Sprintf("; %d operation(s) still running in the cloud", len(what))
			}
			if left > 0 {
				out.Summary += fmt.Sprintf("; %d change(s) left for the next cycle: users changed their records after this cycle began", left)
			}
			if len(c.stuck) > 0 {
				out.Summary += fmt.Sprintf("; %d record(s) not converging, backing off (iasql_status): %s", len(c.stuck), strings.Join(c.stuck, "; "))
			}
			if involved := c.involved; len(involved) > 0 {
				out.Failures = involved
				return out, &CycleError{Failures: involved}
			}
			return out, nil
		}
		done := c.executeAll(ctx, p.Actions)
		c.log().DebugContext(ctx, "cycle executed", "cycle", c.id, "pass", pass, "actions", len(p.Actions), "failures", len(done))
		failures = append(failures, done...)
		for _, a := range p.Actions {
			out.Actions = append(out.Actions, *a)
			if a.IsCloud {
				c.touch(a.Table)
			}
		}
		if len(failures) > 0 {
			out.Failures = failures
			if len(p.Actions) == 0 {
				out.Failures = append(out.Failures, c.involved...)
				out.Summary = summarize(out)
				return out, &CycleError{Failures: out.Failures}
			}
		}
	}
}

// begun notes, at the cycle's first read, where the cycle begins: the user
// changes committed before it are its work (first, by record); newer ones
// are the next cycle's, once it has acted on the record (leaveNewer). A
// record failed for not converging, that no user changed since, is no work
// of this cycle's even when a retry is due (carried).
func (c *cycle) begun(snap *snapshot.Snapshot) {
	c.begin = snap.LSN
	c.first, c.carried = map[snapshot.Key]bool{}, map[snapshot.Key]bool{}
	for _, ts := range snap.Tables {
		for id := range ts.Intent {
			c.first[snapshot.RowKey(ts.Spec.Name, id)] = true
		}
		for key, o := range ts.Ops {
			if o.State == snapshot.OpFailed && strings.HasPrefix(o.LastError, snapshot.NotConverging) && !o.Changed {
				c.carried[snapshot.RowKey(ts.Spec.Name, key)] = true
			}
		}
	}
}

// logRead says, at debug level, what a pass read: per table, whether
// whole or by record (scope.go), and how many rows and resources.
func (c *cycle) logRead(ctx context.Context, pass int) {
	if !c.log().Enabled(ctx, slog.LevelDebug) {
		return
	}
	parts := make([]string, 0, len(c.snap.Tables))
	for _, ts := range c.snap.Tables {
		how := "whole"
		if c.snap.Reading.ByRecord(ts.Spec.Name) {
			how = "by record"
		}
		parts = append(parts, fmt.Sprintf("%s %s (%d rows, %d resources)", ts.Spec.Name, how, len(ts.Rows), len(ts.Cloud)))
	}
	c.log().DebugContext(ctx, "cycle read", "cycle", c.id, "reason", c.req.reason(), "pass", pass, "tables", strings.Join(parts, "; "))
}

// logPlan says, at debug level, each action a pass planned and the
// records it enacts.
func (c *cycle) logPlan(ctx context.Context, pass int, p *plan.Plan) {
	if !c.log().Enabled(ctx, slog.LevelDebug) {
		return
	}
	for _, a := range p.Actions {
		c.log().DebugContext(ctx, "cycle plans", "cycle", c.id, "pass", pass, "action", a.Action, "direction", a.Direction,
			"table", a.Table, "id", a.ID, "cloud_id", a.CloudID, "mode", a.Mode, "description", a.Description)
	}
	c.log().DebugContext(ctx, "cycle planned", "cycle", c.id, "pass", pass, "actions", len(p.Actions), "enacted", len(p.Enact))
}

// touch records that this pass changed the table in the cloud: the next
// pass reads it again, and every table that references it (recursively),
// since the cloud changes children with their parents (a VPC's default
// security group, a group's default egress rule).
func (c *cycle) touch(table string) {
	if c.changed == nil {
		c.changed = map[string]bool{}
	}
	c.changed[table] = true
	if c.touched[table] {
		return // and its children with it
	}
	if c.touched == nil {
		c.touched = map[string]bool{}
	}
	c.touched[table] = true
	// c.req.Tables are in dependency order: one sweep reaches every descendant.
	for _, t := range c.req.Tables {
		for _, ref := range module.RefsOf(t.Spec) {
			if c.touched[ref.Table] {
				c.touched[t.Spec.Name] = true
				break
			}
		}
	}
}

// keepPending keeps the next cycle's intent query (which starts at
// snap.low) from passing a user change that this cycle saw and left
// pending: a failed action whose retry is not due yet, a child whose parent
// it waits for. Enacted or not, every record the final pass read with
// intent and did not enact keeps its newest change in view.
func (c *cycle) keepPending(p *plan.Plan) {
	enacted := map[snapshot.Key]bool{}
	for _, e := range p.Enact {
		enacted[snapshot.RowKey(e.Table, e.ID)] = true
	}
	for _, ts := range c.snap.Tables {
		for id, lsn := range ts.Intent {
			if !enacted[snapshot.RowKey(ts.Spec.Name, id)] && !ts.Gone(c.snap, id) && lsn < c.snap.Low {
				c.snap.Low = lsn
			}
		}
	}
}

// discard records, for a rollback's cycle that read at least once, every
// user change its last read saw and the rollback discards as no longer
// intent (store.Discard), for the records that still have a row or a
// resource. Whether the cycle restored them all or not, none of those
// changes can reach the cloud once the transaction closes: a record the
// cycle could not restore is restored by later cycles, as any record
// without intent is (the direction table: the row is deleted, updated
// from the cloud, or imported again).
func (c *cycle) discard(ctx context.Context) error {
	if c.snap == nil || c.req.Options.DiscardUpTo == 0 {
		return nil // never read: nothing is known, nothing is discarded
	}
	var discard []store.Discarded
	for _, ts := range c.snap.Tables {
		for id, lsn := range ts.Intent {
			if !c.req.Options.Discards(lsn) || (ts.Rows[id] == nil && ts.Records[id].CloudID == "") {
				continue
			}
			discard = append(discard, store.Discarded{Record: snapshot.RowKey(ts.Spec.Name, id), LSN: lsn})
		}
	}
	if len(discard) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error { return store.Discard(ctx, tx, discard...) })
}

// CycleError lists the records a cycle could not bring in sync.
type CycleError struct{ Failures []string }

func (e *CycleError) Error() string {
	return fmt.Sprintf("%d change(s) failed: %s", len(e.Failures), strings.Join(e.Failures, "; "))
}

func summarize(o *Outcome) string {
	counts := map[string]int{}
	for _, a := range o.Actions {
		counts[a.Action+" "+a.Direction]++
	}
	if len(counts) == 0 {
		return "in sync, nothing to do" + unverifiedSummary(o)
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	s := strings.Join(parts, ", ")
	if len(o.Failures) > 0 {
		s += fmt.Sprintf("; %d failed", len(o.Failures))
	}
	return s + unverifiedSummary(o)
}

// enact records records that are in sync: first sightings and intent that
// needed no change.
func (c *cycle) enact(ctx context.Context, es []plan.Enactment) error {
	if len(es) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		recs := make([]store.Enacted, len(es))
		var ops []snapshot.Key // the records in sync that had work recorded
		for i, e := range es {
			ts := c.snap.ByName[e.Table]
			recs[i] = store.Enacted{Record: snapshot.RowKey(e.Table, e.ID), CloudID: e.CloudID, LSN: ts.Seen[e.ID]}
			if _, ok := ts.Ops[e.ID]; ok {
				ops = append(ops, recs[i].Record)
			}
		}
		if err := store.Enact(ctx, tx, recs...); err != nil {
			return err
		}
		return store.ForgetOps(ctx, tx, ops...)
	})
}

// forgetGone forgets the records that outlived their rows, with nothing
// left to do in the cloud (snapshot.Table.Forgotten): a create that failed
// and whose row the user then deleted is no longer failed in iasql_status.
func (c *cycle) forgetGone(ctx context.Context) error {
	for _, ts := range c.snap.Tables {
		ids := ts.Forgotten(c.snap)
		if len(ids) == 0 {
			continue
		}
		if err := c.dbTx(ctx, func(tx pgx.Tx) error { return store.ForgetGone(ctx, tx, ts.Spec.Name, ids) }); err != nil {
			return err
		}
		c.log().Info("forgot records whose rows are gone", "table", ts.Spec.Name, "ids", strings.Join(ids, ","))
		for _, id := range ids {
			delete(ts.Ops, id)
			delete(ts.Records, id)
		}
	}
	return nil
}

func (c *cycle) log() *slog.Logger { return c.r.Log }
