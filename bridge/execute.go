package bridge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/iasql/iasql/modules/module"
)

// Execution of one pass's plan.
//
// Database-only actions (imports, rows the cloud deleted, rows updated from
// the cloud) run first, one after another, in batched transactions: no
// cloud call happens while such a transaction is open. Cloud actions then
// run concurrently over the per-object dependency graph: each starts once
// the actions it depends on have ended, at most Engine.lanes' limit at a
// time per lane (module and region), and its write-back is a short
// transaction of its own, committed before the action counts as done. So
// no database transaction is open across a cloud call, a user's write to a
// module row never waits for one, and a crash loses at most the write-back
// of the calls in flight.

// executeAll runs the actions, retrying the failed ones at increasing
// intervals while the set of failures keeps changing (dependencies between
// tasks settle that way). An action whose parent (or, for a delete, whose
// child) failed is held, not tried, so one failure holds up only what
// depends on it. Conflicts are not failures: the record is planned again in
// the next pass.
func (c *cycle) executeAll(ctx context.Context, actions []*Action) []string {
	index := map[string]int{}
	for i, t := range c.tables {
		index[t.spec.Name] = i
	}
	Order(actions, index)
	deps := Dependencies(actions)
	pending := actions
	var lastFailed string
	for n := 0; ; n++ {
		r := &round{c: c, deps: deps, down: map[string]string{}, moved: map[string]bool{}}
		r.run(ctx, pending)
		sort.Strings(r.errs)
		// Which tasks failed (not how: messages carry request ids that
		// differ on every attempt).
		keys := make([]string, 0, len(r.failed))
		for _, a := range r.failed {
			keys = append(keys, ActionKey(a))
		}
		sort.Strings(keys)
		now := strings.Join(keys, "\n")
		if len(r.failed) == 0 || now == lastFailed || n+1 >= maxRounds || ctx.Err() != nil {
			return r.errs
		}
		lastFailed = now
		pending = r.failed
		wait := min(retryBase<<n, retryMax)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// Retries of failed actions within a pass wait retryBase, then twice as
// long each round, up to retryMax.
const (
	retryBase = 200 * time.Millisecond
	retryMax  = 5 * time.Second
	maxRounds = 20
)

// round is one attempt at a set of actions.
type round struct {
	c    *cycle
	deps map[*Action][]string

	mu     sync.Mutex
	down   map[string]string // action key -> why it did not happen
	moved  map[string]bool   // parents replaced under a new generated identity, and what waits for them
	failed []*Action         // to retry in the next round
	errs   []string
}

func (r *round) run(ctx context.Context, actions []*Action) {
	var db, cloud []*Action
	for _, a := range actions {
		if IsCloud(a) {
			cloud = append(cloud, a)
		} else {
			db = append(db, a)
		}
	}
	r.runDB(ctx, db)
	r.runCloud(ctx, cloud)
}

func IsCloud(a *Action) bool {
	return a.Kind == CloudCreate || a.Kind == CloudUpdate || a.Kind == CloudDelete
}

// runDB runs database-only actions in order, batchSize to a transaction,
// each in a savepoint (a conflict or failure undoes that action only).
func (r *round) runDB(ctx context.Context, actions []*Action) {
	c := r.c
	flush := func() {
		lost, err := c.commitBatch(ctx)
		if err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, err.Error())
			r.failed = append(r.failed, lost...)
			r.mu.Unlock()
		}
	}
	for _, a := range actions {
		if run, _ := r.gate(ctx, a); !run {
			continue
		}
		if c.batch == nil {
			if err := c.openBatch(ctx); err != nil {
				r.settle(a, err)
				continue
			}
		}
		err := c.execute(ctx, a)
		c.inBatch = append(c.inBatch, a)
		if len(c.inBatch) >= batchSize {
			flush()
		}
		r.settle(a, err)
	}
	flush()
}

// runCloud runs cloud actions concurrently: each waits for the actions it
// depends on, then for room in its lane.
func (r *round) runCloud(ctx context.Context, actions []*Action) {
	done := make(map[*Action]chan struct{}, len(actions))
	byKey := map[string][]*Action{}
	for _, a := range actions {
		done[a] = make(chan struct{})
		byKey[ActionKey(a)] = append(byKey[ActionKey(a)], a)
	}
	var wg sync.WaitGroup
	for _, a := range actions {
		wg.Go(func() {
			defer close(done[a])
			for _, k := range r.deps[a] {
				for _, d := range byKey[k] {
					select {
					case <-done[d]:
					case <-ctx.Done():
					}
				}
			}
			if run, held := r.gate(ctx, a); !run {
				if held != "" {
					r.c.endOp(ctx, a, OpWaiting, "waiting for "+held)
				}
				return
			}
			release, err := r.c.e.lanes.Acquire(ctx, r.c.laneOf(a))
			if err != nil {
				r.settle(a, err)
				return
			}
			if a.Retried, err = r.c.beginOp(ctx, a); err == nil {
				err = r.c.execute(ctx, a)
			}
			release()
			if p := (*module.Pending)(nil); errors.As(err, &p) {
				if err = r.c.startOp(ctx, a, p); err == nil {
					err = ErrInFlight
				}
			}
			if err != nil && !errors.Is(err, ErrConflict) && !errors.Is(err, ErrInFlight) && ctx.Err() == nil {
				r.c.endOp(ctx, a, OpFailed, err.Error())
			}
			r.settle(a, err)
		})
	}
	wg.Wait()
}

// gate reports whether a may run now: not when the cycle is cancelled, when
// it was planned against a parent replaced under a new identity (the next
// pass plans it again), or when what it depends on did not happen: then it
// is held, and held names what it waits for.
func (r *round) gate(ctx context.Context, a *Action) (run bool, held string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s %s: %v", a.Table, firstNonEmpty(a.ID, a.CloudID), ctx.Err()))
		return false, ""
	}
	if slices.ContainsFunc(r.deps[a], func(k string) bool { return r.moved[k] }) {
		r.moved[ActionKey(a)] = true
		return false, ""
	}
	if blocker := heldBy(r.deps[a], r.down); blocker != "" {
		r.errs = append(r.errs, a.Failure("waiting for "+blocker))
		r.failed = append(r.failed, a)
		r.down[ActionKey(a)] = "held"
		return false, blocker
	}
	return true, ""
}

// settle records how an action ended.
func (r *round) settle(a *Action, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && a.Action == "replace" && Generated(a.Tab.Spec) {
		r.moved[ActionKey(a)] = true
	}
	if err == nil && (a.Kind == CloudCreate || a.Kind == CloudUpdate) && (a.Action == "create" || a.Action == "update") {
		r.c.pushed[PushKey(a)] = a.Tab.Seen[a.ID]
	}
	switch {
	case err == nil:
	case errors.Is(err, ErrConflict):
		r.c.e.log.Info("row changed while the cycle worked on it; planning it again", "table", a.Table, "id", a.ID)
	case errors.Is(err, ErrInFlight):
		// Persisted; later passes or cycles ask about it.
	default:
		var term *module.TerminalError
		r.errs = append(r.errs, a.Failure(err.Error()))
		r.down[ActionKey(a)] = "failed"
		if !errors.As(err, &term) && !a.Identified {
			r.failed = append(r.failed, a)
		}
	}
}

// laneOf is the lane an action's cloud calls go through: its module and
// region (AWS's request quotas are per service, account and region), the
// region as the table declares it (module.Table.Region, else its parent's:
// rowRegion, cloudRegion).
func (c *cycle) laneOf(a *Action) string {
	name := a.Table
	if a.Tab.Module != nil {
		name = a.Tab.Module.Name
	}
	region := ""
	if a.Row != nil {
		region = c.snap.RowRegion(a.Tab, a.Row.DB, 0)
	}
	if region == "" && a.Cloud != nil {
		region = c.snap.CloudRegion(a.Tab, a.Cloud, 0)
	}
	return name + "/" + region
}

// lanes bounds the cloud calls in flight per lane.
type Lanes struct {
	limit int
	mu    sync.Mutex
	sem   map[string]chan struct{}
}

// DefaultCloudConcurrency is the default number of cloud actions in flight
// per module and region: below the burst of AWS's request-rate limits for
// mutating calls (EC2's token buckets, IAM's per-account rate), above what a
// few slow creates need to overlap.
const DefaultCloudConcurrency = 10

func NewLanes(limit int) *Lanes {
	if limit <= 0 {
		limit = DefaultCloudConcurrency
	}
	return &Lanes{limit: limit, sem: map[string]chan struct{}{}}
}

// acquire waits for room in the lane; release gives it back.
func (l *Lanes) Acquire(ctx context.Context, lane string) (release func(), err error) {
	l.mu.Lock()
	s := l.sem[lane]
	if s == nil {
		s = make(chan struct{}, l.limit)
		l.sem[lane] = s
	}
	l.mu.Unlock()
	select {
	case s <- struct{}{}:
		return func() { <-s }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// failure is the line a cycle reports for an action that did not happen:
// the record, its cloud identity, the action and why.
func (a *Action) Failure(why string) string {
	return fmt.Sprintf("%s %s (%s) %s %s: %s", a.Table, firstNonEmpty(a.ID, "-"), a.CloudID, a.Action, a.Direction, why)
}

// pushKey names a record whose declarative state a cycle pushed, and the
// resource it pushed it to: a record that references one being replaced
// is rightly pushed again to the replacement (the cloud id differs). Where
// the cloud generates the identity, the record alone: a create is never
// repeated because its resource does not show.
func PushKey(a *Action) string {
	if Generated(a.Tab.Spec) {
		return a.Table + "\x00#" + a.ID
	}
	return a.Table + "\x00#" + a.ID + "\x00" + a.CloudID
}

// notTaken takes out of a plan the creates and updates of records this
// cycle already pushed (the cloud said yes) and whose read-back still
// differs with no newer user change to explain it: the cloud did not take
// the change. Pushing again would loop; pulling the cloud's state would
// overwrite the user's row. They are failures, and the intent stays
// pending.
func (c *cycle) notTaken(p *Plan) []string {
	var out []string
	kept := p.Actions[:0]
	for _, a := range p.Actions {
		if a.Kind == CloudCreate || a.Kind == CloudUpdate {
			if at, ok := c.pushed[PushKey(a)]; ok && a.Tab.Seen[a.ID] <= at {
				what := "the cloud does not show the resource created for it; it is not created again in this cycle"
				if a.Cloud != nil {
					what = "the cloud did not take the change: " + notTakenColumns(a.Tab.Spec.Declarative, a.Row.Cloud, a.Cloud)
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
func notTakenColumns(cols []string, want, have module.Record) string {
	var out []string
	for _, col := range Differing(cols, want, have) {
		out = append(out, fmt.Sprintf("column %s wanted %s, has %s", col, Show(want[col]), Show(have[col])))
	}
	if len(out) == 0 {
		return "the resource still differs from the row"
	}
	return strings.Join(out, "; ")
}
