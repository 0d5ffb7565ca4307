package reconcile

// Reading a snapshot of both sides: the rows, the engine's state and the
// cloud (fresh for what a scoped cycle acts on), and the rows in cloud form.

import (
	"context"
	"time"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// read takes a snapshot of both sides: the database rows at one point, the
// intent committed before it (once capture has recorded all of it), the
// engine's record state, and the cloud.
func (c *cycle) read(ctx context.Context) error {
	specs := make([]module.Table, len(c.req.Tables))
	names := make([]string, len(c.req.Tables))
	for i, t := range c.req.Tables {
		specs[i], names[i] = t.Spec, t.Spec.Name
	}
	var lsn pglogrepl.LSN
	var vis snapshot.Visibility
	var rows map[string]map[string]*snapshot.Row
	var modes snapshot.Modes
	var reading *snapshot.Scope
	if c.req.Trigger.byRecord() {
		// What to read by record is known from the engine's state once
		// every change committed before now is in the audit trail.
		if err := c.withConn(func() (err error) {
			lsn, err = store.WALInsertLSN(ctx, c.conn)
			return err
		}); err != nil {
			return err
		}
		if err := c.r.Manager.WaitCovered(ctx, lsn); err != nil {
			return err
		}
		if err := c.withConn(func() (err error) {
			acting, err := store.ReadActing(ctx, c.conn, names, c.r.Manager.IntentLow())
			if err != nil {
				return err
			}
			if modes, err = store.ReadModes(ctx, c.conn); err != nil {
				return err
			}
			ev, err := c.noticed(ctx, &acting)
			if err != nil {
				return err
			}
			reading = c.scopeFor(acting, modes, ev)
			return nil
		}); err != nil {
			return err
		}
	}
	if err := c.withConn(func() (err error) {
		lsn, vis, rows, err = store.ReadDB(ctx, c.conn, specs, reading)
		return err
	}); err != nil {
		return err
	}
	if err := c.r.Manager.WaitCovered(ctx, lsn); err != nil {
		return err
	}
	var (
		recs         map[string]map[string]snapshot.RecordState
		intent, seen map[string]map[string]pglogrepl.LSN
		next         pglogrepl.LSN
		repls        map[string]map[string]*replace.Replacement
		ops          map[string]map[string]snapshot.Op
	)
	if err := c.withConn(func() (err error) {
		if recs, err = store.ReadRecords(ctx, c.conn, names, reading); err != nil {
			return err
		}
		if intent, seen, next, err = store.ReadIntent(ctx, c.conn, names, c.r.Manager.IntentLow(), lsn, vis, recs); err != nil {
			return err
		}
		if reading == nil {
			if modes, err = store.ReadModes(ctx, c.conn); err != nil {
				return err
			}
		}
		if repls, err = store.ReadReplacements(ctx, c.conn, names); err != nil {
			return err
		}
		ops, err = store.ReadOps(ctx, c.conn, names)
		return err
	}); err != nil {
		return err
	}
	if c.readStart.IsZero() {
		c.readStart, c.prevReads = time.Now(), c.st.readTimes()
	}
	leadSince := c.r.Manager.LeadSince()
	snap := &snapshot.Snapshot{LeaderSince: leadSince, LSN: lsn, Vis: vis, Low: next, Modes: modes, Reading: reading, ByName: map[string]*snapshot.Table{}}
	for _, t := range c.req.Tables {
		ts := &snapshot.Table{Spec: t.Spec, Mapper: t.Mapper, Module: t.Module, Rows: rows[t.Spec.Name], ByCloud: map[string]*snapshot.Row{},
			Records: recs[t.Spec.Name], RecBy: map[string]string{}, Intent: intent[t.Spec.Name], Seen: seen[t.Spec.Name],
			Cloud: map[string]module.Record{}, Repl: repls[t.Spec.Name], Retired: map[string]*replace.Replacement{}, Forced: forcedBy(c.recreated[t.Spec.Name]),
			Ops: ops[t.Spec.Name], ByToken: map[string][]string{}, Strays: map[string]snapshot.Stray{}, Causes: c.causesOf(t.Spec.Name)}
		if ts.Records == nil {
			ts.Records = map[string]snapshot.RecordState{}
		}
		if ts.Repl == nil {
			ts.Repl = map[string]*replace.Replacement{}
		}
		for id, r := range ts.Records {
			if r.CloudID != "" {
				ts.RecBy[r.CloudID] = id
			}
		}
		snap.Tables = append(snap.Tables, ts)
		snap.ByName[t.Spec.Name] = ts
	}
	var fresh map[string]bool
	if c.req.Trigger.byRecord() {
		fresh = snapshot.FreshNames(snap)
		for _, ids := range c.req.Noticed {
			for cid := range ids {
				fresh[cid] = true
			}
		}
	}
	// Read-only tables first: what modules derive from their tables (the
	// regions in scope) comes from them, and a row a user deleted from one
	// is restored from the cloud in this cycle, so it counts meanwhile.
	for _, ts := range snap.Tables {
		if ts.Spec.ReadOnly && !c.readOnlyKept(ts) {
			if err := c.readCloud(ctx, module.Call{Fresh: c.freshness(snap, ts, fresh)}, ts); err != nil {
				return err
			}
			c.st.keepReadOnly(ts)
		}
	}
	snap.Prepare()
	// The rest of the cloud, one mapper at a time (each may page and fan
	// out itself), with every mapper call of this snapshot in that scope;
	// and the rows in cloud form, parents before children (a child's
	// references are its parents' cloud ids, as the parents stand now). A
	// table read by record is asked for the identities its rows have in
	// cloud form.
	if !c.budgetDecided {
		c.unread, c.budgetDecided = c.budgeted(snap), true
	}
	for _, ts := range snap.Tables {
		byRecord := reading.ByRecord(ts.Spec.Name)
		if err, skip := c.unread[ts.Spec.Name]; skip {
			ts.Unverified = map[string]error{snapshot.WholeTable: err}
		} else if !ts.Spec.ReadOnly && !byRecord {
			call := snap.Call
			call.Fresh = c.freshness(snap, ts, fresh)
			if err := c.readCloud(ctx, call, ts); err != nil {
				return err
			}
		}
		ts.Link(snap)
		if err := ts.CloudForms(snap); err != nil {
			return err
		}
		for id := range ts.Forced {
			// Pushed for the rest of the cycle (cycle.recreated): what
			// waits for a parent's operation in the cloud is still moved
			// once it ends, though the parent's replace or relaunch
			// operation is over by then.
			c.markRecreated(ts.Spec.Name, id)
		}
		if byRecord {
			got, err := ts.GetCloud(ctx, c.getCall(snap, ts), reading, c.reuse(ts.Spec.Name))
			if err != nil {
				return err
			}
			c.keepGot(ts.Spec.Name, got)
			ts.Link(snap)
		}
		ts.MarkStrays()
		ts.TakeChoices(snap)
	}
	c.snap = snap
	c.reads, c.touched, c.fresh = snap.ByName, nil, nil
	return nil
}

// readCloud reads a table's cloud, or takes it from the previous pass of
// this cycle when the cycle has not changed it in the cloud since (touch).
func (c *cycle) readCloud(ctx context.Context, call module.Call, ts *snapshot.Table) error {
	if prev := c.reads[ts.Spec.Name]; prev != nil && !c.touched[ts.Spec.Name] && prev.CloudWhole {
		ts.Cloud, ts.ByToken, ts.Unverified, ts.CloudWhole = prev.Cloud, prev.ByToken, prev.Unverified, true
		return nil
	}
	ts.CloudWhole = true
	if err := ts.ReadCloud(ctx, call); err != nil {
		return err
	}
	if len(ts.Unverified) == 0 {
		c.st.noteSize(ts.Spec.Name, len(ts.Cloud))
		c.st.noteRead(ts.Spec.Name, c.readStart)
	}
	return nil
}

// freshness is how a cycle reads a table: full reads all fresh; a scoped
// cycle fresh for what it acts on (names), unless an ENFORCE or TRACK rule
// covers the table (those modes are about drift: the whole table is read
// as the cloud has it now); automatic cycles may reuse recent reads.
func (c *cycle) freshness(snap *snapshot.Snapshot, ts *snapshot.Table, names map[string]bool) module.Fresh {
	switch {
	case c.req.Trigger.FullRead() || (c.req.Trigger.byRecord() && snap.Modes.Drifty(ts.Spec.Name)):
		return module.Fresh{All: true}
	case c.req.Trigger.byRecord():
		return module.Fresh{Names: names}
	}
	return module.Fresh{}
}

// forcedBy is a table's forced records to begin with: those this cycle
// replaced by deleting first (cycle.recreated).
func forcedBy(recreated map[string]bool) map[string]bool {
	out := make(map[string]bool, len(recreated))
	for id := range recreated {
		out[id] = true
	}
	return out
}
