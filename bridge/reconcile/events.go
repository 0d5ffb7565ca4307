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
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
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
// name (none: nil). Which records those are is found once, at the first
// read: a later pass acts on the same ones, whatever the first did (a
// record forgotten with its deleted resource is not a new resource).
func (c *cycle) noticed(ctx context.Context, acting *snapshot.ActingSet) (*eventScope, error) {
	if len(c.req.Noticed) == 0 {
		return nil, nil
	}
	if c.events == nil {
		byCloud, err := store.RecordsByCloud(ctx, c.conn, c.req.Noticed)
		if err != nil {
			return nil, err
		}
		c.events = &noticedRecords{ids: map[string][]string{}, unknown: map[string]bool{}}
		for table, cids := range c.req.Noticed {
			for cid := range cids {
				if rid, ok := byCloud[table][cid]; ok {
					c.events.ids[table] = append(c.events.ids[table], rid)
				} else {
					c.events.unknown[table] = true
				}
			}
		}
	}
	ev := &eventScope{events: map[string]bool{}, unknown: c.events.unknown}
	for table := range c.req.Noticed {
		if len(acting.IDs[table]) == 0 {
			ev.events[table] = true
		}
		for _, rid := range c.events.ids[table] {
			if acting.IDs[table] == nil {
				acting.IDs[table] = map[string]bool{}
			}
			acting.IDs[table][rid] = true
		}
	}
	return ev, nil
}

// noticedRecords are the records an Event cycle's events name, by table,
// and the tables where one names a resource no record knows.
type noticedRecords struct {
	ids     map[string][]string
	unknown map[string]bool
}

// getCall is the Call a table read by record gets its resources with: in
// an Event cycle, the regions in scope are those of its events and of the
// rows it gets (a resource an event names is in the event's region, or in
// the one its row says), so that a Get that asks each region asks those
// alone. A table without a region column, or a row without a region, is
// asked in every region.
func (c *cycle) getCall(snap *snapshot.Snapshot, ts *snapshot.Table) module.Call {
	call := snap.Call
	regions := c.req.Regions[ts.Spec.Name]
	if c.req.Trigger != Event || ts.Spec.Region == "" || len(regions) == 0 || !call.Scope.Set() {
		return call
	}
	want := maps.Clone(regions)
	for id := range snap.Reading.Acting[ts.Spec.Name] {
		r := ts.Rows[id]
		if r == nil {
			continue
		}
		region := r.DB.String(ts.Spec.Region)
		if region == "" {
			return call
		}
		want[region] = true
	}
	var in []string
	for _, r := range call.Scope.Regions {
		if want[r] {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		return call
	}
	call.Scope.Regions = in
	if !slices.Contains(in, call.Scope.Default) {
		call.Scope.Default = in[0]
	}
	return call
}

// reuse is what a table read by record takes instead of getting it again
// (snapshot.Table.GetCloud's fresh): the read-backs of operations that
// ended and, in an Event cycle, what an earlier pass got and the cycle has
// not changed in the cloud since (nil: not found).
func (c *cycle) reuse(table string) map[string]module.Record {
	if c.touched[table] {
		delete(c.got, table)
	}
	if c.req.Trigger != Event || len(c.got[table]) == 0 {
		return c.fresh[table]
	}
	out := maps.Clone(c.got[table])
	maps.Copy(out, c.fresh[table])
	return out
}

// keepGot keeps what a pass got of a table (reuse).
func (c *cycle) keepGot(table string, got map[string]module.Record) {
	if c.req.Trigger != Event || len(got) == 0 {
		return
	}
	if c.got == nil {
		c.got = map[string]map[string]module.Record{}
	}
	if c.got[table] == nil {
		c.got[table] = map[string]module.Record{}
	}
	maps.Copy(c.got[table], got)
}

// readOnlyKept takes, for an Event cycle, a read-only table no event
// names from the last read of it in this leadership (State.keepReadOnly):
// what AWS lets no one change (the account's regions) is not read again
// for each event. It reports whether it did.
func (c *cycle) readOnlyKept(ts *snapshot.Table) bool {
	if c.req.Trigger != Event || c.req.Noticed[ts.Spec.Name] != nil {
		return false
	}
	c.st.mu.Lock()
	defer c.st.mu.Unlock()
	kept, ok := c.st.readOnly[ts.Spec.Name]
	if !ok {
		return false
	}
	ts.Cloud, ts.CloudWhole = maps.Clone(kept), true
	return true
}

// keepReadOnly keeps a read-only table's whole read, when nothing of it
// failed, for the Event cycles after it (readOnlyKept).
func (s *State) keepReadOnly(ts *snapshot.Table) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(ts.Unverified) > 0 {
		delete(s.readOnly, ts.Spec.Name)
		return
	}
	if s.readOnly == nil {
		s.readOnly = map[string]map[string]module.Record{}
	}
	s.readOnly[ts.Spec.Name] = maps.Clone(ts.Cloud)
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

// defaultLookupBudget is how many CloudTrail lookups (requests) a cycle makes at
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
		key := snapshot.CloudKey(a.Table, a.CloudID)
		if a.Direction != "database" || (a.Kind == plan.DBFeedback && (a.Row == nil || len(a.Row.Taken) == 0)) ||
			a.CloudID == "" || a.Tab.Causes[a.CloudID] != nil || c.looked[key] {
			continue // not pulled from the cloud (feedback is, when it takes a column the rules give the cloud), known, or looked up in an earlier pass
		}
		since := c.lookupSince(ctx, a.Table)
		if since.IsZero() {
			continue // no time it was seen in sync: nobody can be named
		}
		if c.looked == nil {
			c.looked = map[snapshot.Key]bool{}
		}
		c.looked[key] = true
		for _, name := range lookupNames(a) {
			if c.lookups >= budget {
				c.log().DebugContext(ctx, "CloudTrail lookup budget spent: the change is recorded without who made it", "cycle", c.id, "table", a.Table, "cloud_id", a.CloudID, "budget", budget)
				return
			}
			c.lookups++
			found, err := c.r.Trail.Lookup(ctx, c.regionOf(a), name, since, time.Now())
			if err != nil {
				c.log().Warn("cannot look up who changed a resource in CloudTrail; the change is recorded without", "table", a.Table, "cloud_id", a.CloudID, "err", err)
				break
			}
			if found != nil {
				c.noteCause(a, found)
				break
			}
		}
	}
}

// lookupSince is when the resources of a table were last seen in sync, as
// far as the cycle knows, for a lookup to start from: the start of this
// leadership's last whole read of the table that verified it, else the
// start of the cycle before this one (the audit trail's newest cycle end,
// of any leadership), else zero (none: no lookup). A change found now
// was made after it: an event before it is an older caller's, never
// named.
func (c *cycle) lookupSince(ctx context.Context, table string) time.Time {
	if t := c.prevReads[table]; !t.IsZero() {
		return t
	}
	if !c.prevAsked {
		c.prevAsked = true
		var last *store.CycleEnd
		if err := c.withConn(func() (err error) {
			last, err = store.LastCycle(ctx, c.conn)
			return err
		}); err != nil {
			c.log().Warn("cannot read when the last cycle ran; changes found with no event are recorded without who made them", "err", err)
		} else if last != nil {
			c.prevCycle = last.Ended.Add(-last.Duration)
		}
	}
	return c.prevCycle
}

// noteRead notes that a whole read of table, which verified all of it,
// began at t (lookupSince).
func (s *State) noteRead(table string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.readAt == nil {
		s.readAt = map[string]time.Time{}
	}
	s.readAt[table] = t
}

// readTimes is a copy of readAt.
func (s *State) readTimes() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.readAt)
}

// noteCause records who made the change a pulls (attribute): for its
// write, and for the rest of the cycle's passes (causesOf).
func (c *cycle) noteCause(a *plan.Action, who *snapshot.Attribution) {
	if c.found == nil {
		c.found = map[string]map[string]*snapshot.Attribution{}
	}
	if c.found[a.Table] == nil {
		c.found[a.Table] = map[string]*snapshot.Attribution{}
	}
	c.found[a.Table][a.CloudID] = who
	if a.Tab.Causes == nil {
		a.Tab.Causes = map[string]*snapshot.Attribution{}
	}
	a.Tab.Causes[a.CloudID] = who
}

// awsIdentifier is what CloudTrail's resources are named by besides
// names: an ARN, or an id such as sg-0123456789abcdef0.
var awsIdentifier = regexp.MustCompile(`^(arn:aws[a-z-]*:.+|[a-z]+-[0-9a-f]{8,})$`)

// lookupNames are the names CloudTrail may know the resource an action
// pulls by (LookupEvents' ResourceName), in the order tried: the
// identifiers the cloud gave it (feedback columns: an instance's id, a
// group's sg-…, an ARN), then its cloud id (a bucket's name).
func lookupNames(a *plan.Action) []string {
	rec := a.Cloud
	if rec == nil && a.Row != nil {
		rec = a.Row.DB // a resource gone: its row says what it was
	}
	var out []string
	for _, col := range a.Tab.Spec.Feedback {
		if v := rec.String(col); awsIdentifier.MatchString(v) && !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	if !slices.Contains(out, a.CloudID) {
		out = append(out, a.CloudID)
	}
	return out
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
