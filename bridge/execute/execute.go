// Package execute runs one pass's plan: a queue of actions over the
// per-object dependency graph, a bounded number of cloud calls at once per
// lane (module and region), failed actions retried with backoff while the
// set of failures keeps changing, and one failure holding up only what
// depends on it. What an action does is the caller's (a Doer: the cycle);
// this package decides what runs when.
//
// Database-only actions (imports, rows the cloud deleted, rows updated from
// the cloud) run first, one after another, in batched transactions: no
// cloud call happens while such a transaction is open. Cloud actions then
// run concurrently: each starts once the actions it depends on have ended,
// and its write-back is a short transaction of its own, committed before
// the action counts as done. So no database transaction is open across a
// cloud call, a user's write to a module row never waits for one, and a
// crash loses at most the write-back of the calls in flight.
package execute

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// ErrInFlight is what Doer.Cloud returns for an action whose operation runs
// on in the cloud (its handle persisted): not a failure, asked about later.
var ErrInFlight = errors.New("in progress in the cloud")

// Doer does the actions the executor schedules.
type Doer interface {
	// Begin opens a batch of database writes; Database runs one
	// database-only action in it (a savepoint: a failure undoes that action
	// only); Commit commits it.
	Begin(ctx context.Context) error
	Database(ctx context.Context, a *plan.Action) error
	Commit(ctx context.Context) error
	// Cloud runs one cloud action: it records the operation, makes the
	// call and writes back, and records a failure (store.ErrConflict: the
	// row changed, planned again; ErrInFlight: runs on in the cloud).
	Cloud(ctx context.Context, a *plan.Action) error
	// Held records that a cloud action waits for another record (why).
	Held(ctx context.Context, a *plan.Action, why string)
}

// Result is how an action that ran ended: Err nil when it was done,
// store.ErrConflict when its row changed (planned again), ErrInFlight when
// it runs on in the cloud, else its last failure.
type Result struct {
	Action *plan.Action
	Err    error
}

// BatchSize is the number of database-only actions to a transaction.
const BatchSize = 200

// Retries of failed actions within a pass wait retryBase, then twice as
// long each round, up to retryMax.
const (
	retryBase = 200 * time.Millisecond
	retryMax  = 5 * time.Second
	maxRounds = 20
	// maxTransientRepeats: the round that fails the same way for this
	// many rounds in a row ends the pass, even when a failure is transient
	// (five attempts in all, over about 3 s).
	maxTransientRepeats = 4
)

// Executor runs plans; one per engine (its lanes bound the cloud calls of
// every cycle).
type Executor struct {
	lanes *Lanes
}

// New returns an executor with at most limit cloud actions in flight per
// lane (DefaultCloudConcurrency when limit <= 0).
func New(limit int) *Executor { return &Executor{lanes: NewLanes(limit)} }

// Run runs the actions (in tableOrder: creates parents first, deletes
// children first), retrying the failed ones at increasing intervals while
// the set of failures keeps changing (dependencies between tasks settle
// that way) or a failure is transient (throttling, 5xx). An action whose parent (or, for a delete, whose child) failed
// is held, not tried, so one failure holds up only what depends on it.
// Conflicts are not failures: the record is planned again in the next
// pass. It returns the failures, one line each, and how each action that
// ran ended (in execution order), for the caller to record.
func (x *Executor) Run(ctx context.Context, actions []*plan.Action, tableOrder map[string]int, do Doer) (failures []string, ran []Result) {
	plan.Order(actions, tableOrder)
	deps := plan.Dependencies(actions)
	pending := actions
	var lastFailed []snapshot.Key
	repeats := 0 // rounds in a row whose failures were the last round's
	// given up: actions that failed for good (terminal, or a create whose
	// resource exists), not retried: what depends on them stays held in
	// every later round, and their failures are reported whatever the
	// last round brings.
	givenUp, final := map[snapshot.Key]string{}, []string{}
	ended := map[*plan.Action]error{}
	for n := 0; ; n++ {
		r := &round{x: x, do: do, deps: deps, down: maps.Clone(givenUp), moved: map[snapshot.Key]bool{}, ended: ended}
		r.run(ctx, pending)
		for _, k := range r.gaveUp {
			givenUp[k] = "failed"
		}
		final = append(final, r.final...)
		sort.Strings(r.errs)
		// Which tasks failed (not how: messages carry request ids that
		// differ on every attempt).
		now := make([]snapshot.Key, 0, len(r.failed))
		for _, a := range r.failed {
			now = append(now, a.Key)
		}
		slices.SortFunc(now, snapshot.CompareKeys)
		// The same failures again end the pass, unless one of them passes
		// by itself (throttling, a 5xx): those are tried again, later each
		// round, up to maxTransientRepeats (about 3 s beyond the SDK's own
		// retries); what still fails is left to the next cycle's backoff.
		if slices.Equal(now, lastFailed) {
			repeats++
		} else {
			repeats = 0
		}
		if len(r.failed) == 0 || (repeats > 0 && (!r.transient || repeats >= maxTransientRepeats)) || n+1 >= maxRounds || ctx.Err() != nil {
			out := append(final, r.errs...)
			sort.Strings(out)
			for _, a := range actions {
				if err, ok := ended[a]; ok {
					ran = append(ran, Result{Action: a, Err: err})
				}
			}
			return out, ran
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

// round is one attempt at a set of actions.
type round struct {
	x    *Executor
	do   Doer
	deps map[*plan.Action][]snapshot.Key

	mu   sync.Mutex
	down map[snapshot.Key]string // action key -> why it did not happen
	// moved: parents replaced under a new generated identity, actions that
	// run on in the cloud (ErrInFlight), and what waits for them: not done
	// in this pass, planned again in a later one (plan.Diff holds a delete
	// while a delete of something that may reference it runs on).
	moved  map[snapshot.Key]bool
	failed []*plan.Action // to retry in the next round
	errs   []string       // the failures of what is retried
	gaveUp []snapshot.Key // keys of actions that failed for good
	final  []string       // their failures
	// transient: a failure to retry passes by itself (module.Transient).
	transient bool
	// ended: how each action that ran ended, the last time it ran (the
	// Run's, shared by its rounds).
	ended map[*plan.Action]error
}

func (r *round) run(ctx context.Context, actions []*plan.Action) {
	var db, cloud []*plan.Action
	for _, a := range actions {
		if a.IsCloud {
			cloud = append(cloud, a)
		} else {
			db = append(db, a)
		}
	}
	r.runDB(ctx, db)
	r.runCloud(ctx, cloud)
}

// runDB runs database-only actions in order, BatchSize to a transaction.
// When a batch's commit fails, its actions failed (their effects are
// database writes only, idempotent to redo).
func (r *round) runDB(ctx context.Context, actions []*plan.Action) {
	var batch []*plan.Action
	open := false
	flush := func() {
		if !open {
			return
		}
		open = false
		if err := r.do.Commit(ctx); err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, fmt.Sprintf("commit a batch of %d writes: %v", len(batch), err))
			r.failed = append(r.failed, batch...)
			r.mu.Unlock()
		}
		batch = batch[:0]
	}
	for _, a := range actions {
		if run, _ := r.gate(ctx, a); !run {
			continue
		}
		if !open {
			if err := r.do.Begin(ctx); err != nil {
				r.settle(a, err)
				continue
			}
			open = true
		}
		err := r.do.Database(ctx, a)
		batch = append(batch, a)
		if len(batch) >= BatchSize {
			flush()
		}
		r.settle(a, err)
	}
	flush()
}

// runCloud runs cloud actions concurrently: each waits for the actions it
// depends on, then for room in its lane (Action.Lane).
func (r *round) runCloud(ctx context.Context, actions []*plan.Action) {
	done := make(map[*plan.Action]chan struct{}, len(actions))
	byKey := map[snapshot.Key][]*plan.Action{}
	for _, a := range actions {
		done[a] = make(chan struct{})
		byKey[a.Key] = append(byKey[a.Key], a)
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
					r.do.Held(ctx, a, "waiting for "+held)
				}
				return
			}
			release, err := r.x.lanes.Acquire(ctx, a.Lane)
			if err != nil {
				r.settle(a, err)
				return
			}
			err = r.do.Cloud(ctx, a)
			release()
			r.settle(a, err)
		})
	}
	wg.Wait()
}

// gate reports whether a may run now: not when the cycle is cancelled, when
// it was planned against a parent replaced under a new identity (the next
// pass plans it again), or when what it depends on did not happen: then it
// is held, and held names what it waits for.
func (r *round) gate(ctx context.Context, a *plan.Action) (run bool, held string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		r.errs = append(r.errs, fmt.Sprintf("%s %s: %v", a.Table, cmp.Or(a.ID, a.CloudID), ctx.Err()))
		return false, ""
	}
	if slices.ContainsFunc(r.deps[a], func(k snapshot.Key) bool { return r.moved[k] }) {
		r.moved[a.Key] = true
		return false, ""
	}
	if blocker := heldBy(r.deps[a], r.down); blocker != "" {
		r.errs = append(r.errs, a.Failure("waiting for "+blocker))
		r.failed = append(r.failed, a)
		r.down[a.Key] = "held"
		return false, blocker
	}
	return true, ""
}

// settle records how an action ended.
func (r *round) settle(a *plan.Action, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil && a.Action == "replace" && snapshot.Generated(a.Tab.Spec) {
		r.moved[a.Key] = true
	}
	if errors.Is(err, ErrInFlight) {
		// Not done yet, whatever the action: what waits for it waits for a
		// later pass, which holds it while the operation runs (plan.Diff:
		// parentInFlight). A resource still being made is not ready for
		// its children (RegisterTargets: an instance "must be in the
		// running state when you register it", and AWS's InvalidTarget is
		// terminal); one still being deleted (an instance shutting down)
		// may still hold what waits for its delete (DependencyViolation for
		// the security group or subnet it uses).
		r.moved[a.Key] = true
	}
	r.ended[a] = err
	switch {
	case err == nil, errors.Is(err, store.ErrConflict), errors.Is(err, ErrInFlight):
		// Done; planned again in the next pass; or asked about later.
	default:
		var term *module.TerminalError
		r.down[a.Key] = "failed"
		if errors.As(err, &term) || a.Identified {
			r.final = append(r.final, a.Failure(err.Error()))
			r.gaveUp = append(r.gaveUp, a.Key)
			return
		}
		r.errs = append(r.errs, a.Failure(err.Error()))
		r.failed = append(r.failed, a)
		r.transient = r.transient || module.Transient(err)
	}
}

// heldBy names the first of keys (the actions one depends on) that did
// not happen, and why ("" when all did).
func heldBy(keys []snapshot.Key, down map[snapshot.Key]string) string {
	for _, k := range keys {
		if why, ok := down[k]; ok {
			return k.String() + " (" + why + ")"
		}
	}
	return ""
}

// Lanes bounds the cloud calls in flight per lane.
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

// NewLanes returns lanes of limit calls each (DefaultCloudConcurrency when
// limit <= 0).
func NewLanes(limit int) *Lanes {
	if limit <= 0 {
		limit = DefaultCloudConcurrency
	}
	return &Lanes{limit: limit, sem: map[string]chan struct{}{}}
}

// Acquire waits for room in the lane; release gives it back.
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
