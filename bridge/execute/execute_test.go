package execute_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/iasql/iasql/bridge/execute"
	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// doer records what the executor asked of it; fail says how many times a
// record's cloud action fails (by id) before it succeeds, -1 for ever.
type doer struct {
	mu                    sync.Mutex
	fail                  map[string]int
	throttled             map[string]int // how many times AWS answers RequestLimitExceeded first
	terminal              map[string]bool
	conflict              map[string]bool
	running               map[string]bool // cloud actions answered ErrInFlight
	calls                 map[string]int
	held                  []string
	settled               map[string]error
	inFlight, maxInFlight atomic.Int32
	begun, committed      int
}

func newDoer() *doer {
	return &doer{fail: map[string]int{}, throttled: map[string]int{}, terminal: map[string]bool{}, conflict: map[string]bool{}, running: map[string]bool{}, calls: map[string]int{}, settled: map[string]error{}}
}

func (d *doer) Begin(context.Context) error  { d.mu.Lock(); d.begun++; d.mu.Unlock(); return nil }
func (d *doer) Commit(context.Context) error { d.mu.Lock(); d.committed++; d.mu.Unlock(); return nil }
func (d *doer) Database(_ context.Context, a *plan.Action) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.calls[a.Table+" "+a.ID]++
	return nil
}

func (d *doer) Cloud(_ context.Context, a *plan.Action) error {
	n := d.inFlight.Add(1)
	defer d.inFlight.Add(-1)
	for {
		m := d.maxInFlight.Load()
		if n <= m || d.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	key := a.Table + " " + a.ID
	d.calls[key]++
	switch {
	case d.conflict[key]:
		return store.ErrConflict
	case d.running[key]:
		return execute.ErrInFlight
	case d.terminal[key]:
		return &module.TerminalError{Err: errors.New("InvalidParameter")}
	case d.calls[key] <= d.throttled[key]:
		return fmt.Errorf("create: %w", &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "Rate exceeded"})
	case d.fail[key] < 0 || d.calls[key] <= d.fail[key]:
		return errors.New("Throttling")
	}
	return nil
}

func (d *doer) Held(_ context.Context, a *plan.Action, why string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held = append(d.held, a.Table+" "+a.ID+": "+why)
}

// settle notes how each action that ran ended (Run's results).
func (d *doer) settle(ran []execute.Result) {
	for _, r := range ran {
		d.settled[r.Action.Table+" "+r.Action.ID] = r.Err
	}
}

// A parent table and a child referencing it.
var (
	parentSpec = module.Table{Name: "parent", CloudID: []string{"name"}, Declarative: []string{"name"}}
	childSpec  = module.Table{Name: "child", CloudID: []string{"name"}, Declarative: []string{"name", "parent_id"}, Refs: map[string]string{"parent_id": "parent"}}
	order      = map[string]int{"parent": 0, "child": 1}
)

func create(spec module.Table, id string, db module.Record) *plan.Action {
	return (&plan.Action{Action: "create", Direction: "cloud", Table: spec.Name, ID: id, Kind: plan.CloudCreate,
		Tab: &snapshot.Table{Spec: spec}, Row: &snapshot.Row{ID: id, DB: db}}).Fix(nil)
}

func TestRun(t *testing.T) {
	cases := []struct {
		name string
		// setup returns the actions and configures the doer.
		setup func(d *doer) []*plan.Action
		// failures: the lines Run returns must name these, in order.
		failures []string
		check    func(t *testing.T, d *doer)
	}{{
		name: "a throttled create is retried until it succeeds; its child waits for it",
		setup: func(d *doer) []*plan.Action {
			d.fail["parent 1"] = 1
			return []*plan.Action{create(childSpec, "5", module.Record{"name": "c", "parent_id": "1"}), create(parentSpec, "1", module.Record{"name": "p"})}
		},
		check: func(t *testing.T, d *doer) {
			if d.calls["parent 1"] != 2 || d.calls["child 5"] != 1 {
				t.Errorf("calls %v; want the parent twice, the child once (after it)", d.calls)
			}
		},
	}, {
		name: "throttling that repeats is retried, later each round, until it passes; the child waits",
		setup: func(d *doer) []*plan.Action {
			d.throttled["parent 1"] = 3
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"}), create(childSpec, "5", module.Record{"name": "c", "parent_id": "1"})}
		},
		check: func(t *testing.T, d *doer) {
			if d.calls["parent 1"] != 4 || d.calls["child 5"] != 1 {
				t.Errorf("calls %v; want the parent four times (three throttled), then the child once", d.calls)
			}
		},
	}, {
		name: "throttling that does not pass ends the pass after a few more rounds",
		setup: func(d *doer) []*plan.Action {
			d.throttled["parent 1"] = 100
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"})}
		},
		failures: []string{"parent 1 () create cloud: create: api error RequestLimitExceeded: Rate exceeded"},
		check: func(t *testing.T, d *doer) {
			if d.calls["parent 1"] != 5 {
				t.Errorf("calls %v; want the parent five times: once, then four rounds that fail the same way", d.calls)
			}
		},
	}, {
		name: "a failure that repeats ends the pass: the set of failures no longer changes",
		setup: func(d *doer) []*plan.Action {
			d.fail["parent 1"] = -1
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"}), create(childSpec, "5", module.Record{"name": "c", "parent_id": "1"})}
		},
		failures: []string{"child 5 () create cloud: waiting for parent 1 (failed)", "parent 1 () create cloud: Throttling"},
		check: func(t *testing.T, d *doer) {
			if d.calls["parent 1"] != 2 || d.calls["child 5"] != 0 {
				t.Errorf("calls %v; want the parent twice (the second failure repeats the first), the child never", d.calls)
			}
		},
	}, {
		name: "a terminal failure is not retried and holds up only its child",
		setup: func(d *doer) []*plan.Action {
			d.terminal["parent 1"] = true
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"}), create(childSpec, "5", module.Record{"name": "c", "parent_id": "1"}),
				create(parentSpec, "2", module.Record{"name": "q"})}
		},
		failures: []string{"child 5 () create cloud: waiting for parent 1 (failed)", "parent 1 () create cloud: InvalidParameter"},
		check: func(t *testing.T, d *doer) {
			if d.calls["parent 1"] != 1 || d.calls["child 5"] != 0 || d.calls["parent 2"] != 1 {
				t.Errorf("calls %v; want the failed parent once, its child never, the other parent once", d.calls)
			}
			if len(d.held) == 0 || !strings.HasPrefix(d.held[0], "child 5: waiting for parent 1") {
				t.Errorf("held %v; want the child held for its parent", d.held)
			}
		},
	}, {
		name: "a conflict is no failure: the record is planned again",
		setup: func(d *doer) []*plan.Action {
			d.conflict["parent 1"] = true
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"})}
		},
		check: func(t *testing.T, d *doer) {
			if !errors.Is(d.settled["parent 1"], store.ErrConflict) || d.calls["parent 1"] != 1 {
				t.Errorf("settled %v after %d calls; want a conflict, once", d.settled["parent 1"], d.calls["parent 1"])
			}
		},
	}, {
		name: "a delete that runs on in the cloud holds its parent's delete, which is no failure",
		setup: func(d *doer) []*plan.Action {
			d.running["child "] = true
			del := func(spec module.Table, cloud module.Record) *plan.Action {
				return (&plan.Action{Action: "delete", Direction: "cloud", Table: spec.Name, CloudID: cloud.String("name"), Kind: plan.CloudDelete,
					Tab: &snapshot.Table{Spec: spec}, Cloud: cloud}).Fix(nil)
			}
			return []*plan.Action{del(parentSpec, module.Record{"name": "p"}), del(childSpec, module.Record{"name": "c", "parent_id": "p"}),
				del(parentSpec, module.Record{"name": "q"})}
		},
		check: func(t *testing.T, d *doer) {
			// Row-less actions are keyed "table " (no row id): both
			// parents count under "parent ".
			if d.calls["child "] != 1 || d.calls["parent "] != 1 || len(d.held) != 0 {
				t.Errorf("calls %v, held %v; want the child's delete once, q's once, p's not yet (nor held as a failure)", d.calls, d.held)
			}
		},
	}, {
		name: "a create that runs on in the cloud holds its child for a later pass, which is no failure",
		setup: func(d *doer) []*plan.Action {
			d.running["parent 1"] = true
			return []*plan.Action{create(parentSpec, "1", module.Record{"name": "p"}), create(childSpec, "5", module.Record{"name": "c", "parent_id": "1"}),
				create(parentSpec, "2", module.Record{"name": "q"}), create(childSpec, "6", module.Record{"name": "d", "parent_id": "2"})}
		},
		check: func(t *testing.T, d *doer) {
			// An instance still pending takes no target (RegisterTargets:
			// InvalidTarget, terminal).
			if d.calls["parent 1"] != 1 || d.calls["child 5"] != 0 || d.calls["child 6"] != 1 || len(d.held) != 0 {
				t.Errorf("calls %v, held %v; want the running parent once, its child not yet (nor held as a failure), the other child once", d.calls, d.held)
			}
		},
	}, {
		name: "database actions run in batches before cloud actions",
		setup: func(d *doer) []*plan.Action {
			var out []*plan.Action
			for i := range execute.BatchSize + 1 {
				id := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
				out = append(out, (&plan.Action{Action: "create", Direction: "database", Table: "parent", ID: id, Kind: plan.DBInsert, Tab: &snapshot.Table{Spec: parentSpec}}).Fix(nil))
			}
			return out
		},
		check: func(t *testing.T, d *doer) {
			if d.begun != 2 || d.committed != 2 {
				t.Errorf("%d batches begun, %d committed; want 2 of each for %d actions", d.begun, d.committed, execute.BatchSize+1)
			}
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := newDoer()
			got, ran := execute.New(4).Run(context.Background(), tc.setup(d), order, d)
			d.settle(ran)
			if len(got) != len(tc.failures) {
				t.Fatalf("failures %q; want %q", got, tc.failures)
			}
			for i, f := range tc.failures {
				if !strings.HasPrefix(got[i], f) {
					t.Errorf("failure %q; want it to start %q", got[i], f)
				}
			}
			if tc.check != nil {
				tc.check(t, d)
			}
		})
	}
}

// TestLanesBound: no more cloud actions in flight per lane than the limit.
func TestLanesBound(t *testing.T) {
	d := newDoer()
	var actions []*plan.Action
	for i := range 40 {
		actions = append(actions, create(parentSpec, string(rune('A'+i)), module.Record{"name": string(rune('A' + i))}))
	}
	if got, _ := execute.New(3).Run(context.Background(), actions, order, d); len(got) != 0 {
		t.Fatalf("failures %q", got)
	}
	if m := d.maxInFlight.Load(); m > 3 || m < 1 {
		t.Errorf("%d in flight at once; want at most 3", m)
	}
}
