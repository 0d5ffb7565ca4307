package reconcile

// Changes AWS reported, and who made them: an Event cycle reads the
// resources its events name (Request.Noticed) by record, as a commit reads
// what it acts on (scope.go), and plans them by the same rules (modes,
// pending intent, conditional writes); every change a cycle pulls from the
// cloud is recorded with who made it in AWS (snapshot.Table.Causes): what
// the event said, or, for a change a cycle found with no event, what
// CloudTrail's LookupEvents says (Reconciler.Trail), within a budget.

import (
	"cmp"
	"context"
	"time"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
)

// eventScope is how an Event cycle's events bear on its scope (scopeFor).
type eventScope struct {
	// events: the tables whose acting records only events name (no
	// pending intent, work or replacement): their records have rows and
	// resources, so a generated identity is got as any, and what they
	// reference is read for reference only.
	events map[string]bool
	// unknown: the tables where an event named a resource no record
	// knows: read whole, as a full read would (it may be new, to import, or
	// held by a row whose record does not know it yet).
	unknown map[string]bool
}

func (e *eventScope) only(table string) bool      { return e != nil && e.events[table] }
func (e *eventScope) unknownIn(table string) bool { return e != nil && e.unknown[table] }

// noticed adds to acting the records of the resources the cycle's events
// name (none: nil).
func (c *cycle) noticed(ctx context.Context, acting *snapshot.ActingSet) (*eventScope, error) {
	if len(c.req.Noticed) == 0 {
		return nil, nil
	}
	byCloud, err := store.RecordsByCloud(ctx, c.conn, c.req.Noticed)
	if err != nil {
		return nil, err
	}
	ev := &eventScope{events: map[string]bool{}, unknown: map[string]bool{}}
	for table, cids := range c.req.Noticed {
		if len(acting.IDs[table]) == 0 {
			ev.events[table] = true
		}
		for cid := range cids {
			rid, ok := byCloud[table][cid]
			if !ok {
				ev.unknown[table] = true
				continue
			}
			if acting.IDs[table] == nil {
				acting.IDs[table] = map[string]bool{}
			}
			acting.IDs[table][rid] = true
		}
	}
	return ev, nil
}

// causesOf is who changed a table's resources in AWS, as far as the cycle
// knows: its events, and its lookups so far.
func (c *cycle) causesOf(table string) map[string]*snapshot.Attribution {
	out := map[string]*snapshot.Attribution{}
	for cid, a := range c.req.Noticed[table] {
		if a != nil {
			out[cid] = a
		}
	}
	for cid, a := range c.found[table] {
		out[cid] = a
	}
	return out
}

// defaultLookupBudget is how many CloudTrail lookups a cycle makes at
// most when the Reconciler names none: AWS allows LookupEvents 2 requests
// a second per account and region, and a full read that finds more
// changes than that leaves the rest unattributed rather than slow down.
const defaultLookupBudget = 10

// attribute looks up, in CloudTrail, who made the changes the actions
// pull from the cloud that no event explained (Reconciler.Trail), within
// the cycle's budget: each is recorded with its row's change
// (pullTx). A lookup that fails or finds nothing leaves the change
// unattributed; the cycle goes on.
func (c *cycle) attribute(ctx context.Context, actions []*plan.Action) {
	if c.r.Trail == nil || !c.req.Trigger.attributes() {
		return
	}
	budget := cmp.Or(c.r.LookupBudget, defaultLookupBudget)
	for _, a := range actions {
		if a.Direction != "database" || a.Kind == plan.DBFeedback || a.CloudID == "" || a.Tab.Causes[a.CloudID] != nil {
			continue
		}
		if c.looked[snapshot.CloudKey(a.Table, a.CloudID)] {
			continue // looked up in an earlier pass: nothing found
		}
		if len(c.looked) >= budget {
			c.log().DebugContext(ctx, "CloudTrail lookup budget spent: the change is recorded without who made it", "cycle", c.id, "table", a.Table, "cloud_id", a.CloudID, "budget", budget)
			continue
		}
		if c.looked == nil {
			c.looked = map[snapshot.Key]bool{}
		}
		c.looked[snapshot.CloudKey(a.Table, a.CloudID)] = true
		found, err := c.r.Trail.Lookup(ctx, c.regionOf(a), a.CloudID, time.Now())
		if err != nil {
			c.log().Warn("cannot look up who changed a resource in CloudTrail; the change is recorded without", "table", a.Table, "cloud_id", a.CloudID, "err", err)
			continue
		}
		if found == nil {
			continue
		}
		if c.found == nil {
			c.found = map[string]map[string]*snapshot.Attribution{}
		}
		if c.found[a.Table] == nil {
			c.found[a.Table] = map[string]*snapshot.Attribution{}
		}
		c.found[a.Table][a.CloudID] = found
		if a.Tab.Causes == nil {
			a.Tab.Causes = map[string]*snapshot.Attribution{}
		}
		a.Tab.Causes[a.CloudID] = found
	}
}

// regionOf is the region of the resource an action is about ("" when its
// table has none: the Trail's default).
func (c *cycle) regionOf(a *plan.Action) string {
	col := a.Tab.Spec.Region
	if col == "" {
		return ""
	}
	if a.Cloud != nil {
		if r := a.Cloud.String(col); r != "" {
			return r
		}
	}
	if a.Row != nil && a.Row.DB != nil {
		return a.Row.DB.String(col)
	}
	return ""
}
