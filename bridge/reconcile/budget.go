package reconcile

// The list budget: a scheduled cycle with nothing to act on reads the
// tables whose mappers spend a shared budget (module.Budgeted: Cloud
// Control's request rate) within it. Tables with rows come first, the
// others in turn (the least recently read first), and a table not read
// for as many cycles as the budget needs to read them all (plus one)
// comes before all of them, so every table is read every few cycles. A
// table left out is unverified for the cycle, its reason naming the
// budget and when it was last read: nothing of it is imported or deleted,
// and iasql_status and the cycle record say so. Commits, refreshes and
// installs read as always.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// lastRead is when a budgeted table was last read whole: the budget
// cycle's number and the time.
type lastRead struct {
	cycle int
	at    time.Time
}

// budgeted is, for a scheduled cycle with nothing to act on, the tables
// of snap it leaves unread to keep within their budgets, each with the
// reason; nil for any other cycle.
func (c *cycle) budgeted(snap *snapshot.Snapshot) map[string]error {
	if c.req.Trigger != Schedule {
		return nil
	}
	for _, ts := range snap.Tables {
		if len(ts.Intent) > 0 || len(ts.Ops) > 0 || len(ts.Repl) > 0 {
			return nil // something to act on: read as always
		}
	}
	type member struct {
		ts   *snapshot.Table
		cost int
		last lastRead
	}
	groups := map[string][]member{}
	limits := map[string]int{}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	if c.st.reads == nil {
		c.st.reads = map[string]lastRead{}
	}
	c.st.budgetCycles++
	now := c.st.budgetCycles
	for _, ts := range snap.Tables {
		b := module.PartsOf(ts.Mapper).Budgeted
		if b == nil || ts.Spec.ReadOnly {
			continue
		}
		name, limit := b.ReadBudget()
		if limit <= 0 {
			continue
		}
		limits[name] = limit
		groups[name] = append(groups[name], member{ts, max(1, b.ReadCalls()), c.st.reads[ts.Spec.Name]})
	}
	out := map[string]error{}
	for name, ms := range groups {
		limit, total := limits[name], 0
		for _, m := range ms {
			total += m.cost
		}
		every := (total+limit-1)/limit + 1 // cycles in which every table is read at least once
		stale := func(m member) bool { return m.last.cycle == 0 || now-m.last.cycle >= every }
		slices.SortFunc(ms, func(a, b member) int {
			return cmp.Or(
				-cmp.Compare(b2i(stale(a)), b2i(stale(b))),                     // stale first
				-cmp.Compare(b2i(len(a.ts.Rows) > 0), b2i(len(b.ts.Rows) > 0)), // then with rows
				cmp.Compare(a.last.cycle, b.last.cycle),                        // then the least recently read
				strings.Compare(a.ts.Spec.Name, b.ts.Spec.Name))
		})
		spent := 0
		for _, m := range ms {
			if spent == 0 || spent+m.cost <= limit {
				spent += m.cost
				c.st.reads[m.ts.Spec.Name] = lastRead{now, time.Now()}
				continue
			}
			last := "never"
			if !m.last.at.IsZero() {
				last = m.last.at.UTC().Format(time.RFC3339)
			}
			out[m.ts.Spec.Name] = fmt.Errorf("not read in this cycle: the %s list budget (%d calls a scheduled cycle) went to other tables; last read %s", name, limit, last)
		}
	}
	return out
}

// b2i is 1 for true, 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
