// Package plan decides what a cycle does: Diff is a pure function of a
// snapshot (bridge/snapshot) that settles every difference between the
// database and the cloud by the direction table of DESIGN.md
// (TowardsCloud, tested as data without PostgreSQL), and Dependencies
// orders the actions it plans over the per-object dependency graph.
package plan

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
	"github.com/jackc/pglogrepl"
)

// Action is one planned step of a cycle, as iasql_preview shows it.
type Action struct {
	Action      string `json:"action"`    // create, update, replace, delete
	Direction   string `json:"direction"` // cloud or database
	Table       string `json:"table_name"`
	ID          string `json:"id"`       // the row's id ("" for a resource not yet imported)
	CloudID     string `json:"cloud_id"` // the resource's identity in the cloud
	Description string `json:"description"`
	Mode        string `json:"mode"` // the mode that decided it, and by which rule
	// Step and WaitsFor are a preview's (Whole): the pass of the commit's
	// cycle that takes the action (1: the first), and the actions it
	// waits for, each named as Name names it.
	Step     int      `json:"step,omitempty"`
	WaitsFor []string `json:"waits_for,omitempty"`

	Tab    *snapshot.Table      `json:"-"`
	Row    *snapshot.Row        `json:"-"`
	Cloud  module.Record        `json:"-"` // the resource as the cloud has it
	Record string               `json:"-"` // the record a cloud-only resource belonged to, if known
	Kind   Step                 `json:"-"`
	Retire *replace.Replacement `json:"-"` // a cloud delete of a replacement's old or temporary resource
	Stray  *snapshot.Stray      `json:"-"` // a cloud delete of a resource a create's client token made twice
	// Identified: a create whose resource's identity is written back;
	// retrying the create could make a second one, so a failure after it
	// is not retried in this pass (the next read sees the resource).
	Identified bool `json:"-"`
	// Token: a create's idempotency token; Attempts: the cloud calls made
	// for the action so far (persisted in iasql_operations); Retried: an
	// earlier attempt may have made the resource.
	Token    string `json:"-"`
	Attempts int    `json:"-"`
	Retried  bool   `json:"-"`

	// Facts fixed when the action is built (Fix: Diff sets them), which
	// the cycle and the executor read instead of working them out again.
	// Key: what the action acts on (a row by its id, a resource with no
	// row by its cloud id), as the executor orders actions by it;
	// RecordKey: the row as user intent goes (snapshot.RowKey of Table and
	// ID); OpKey: its record_key in iasql_operations; IsCloud: it calls
	// the cloud; Push: what a cloud create or update pushes; Lane (of an
	// action that calls the cloud): the
	// lane of its cloud calls, its module and region (AWS's request quotas
	// are per service, account and region); StandIn: the row stands for
	// its replacement's temporary stand-in, whose create writes back the
	// feedback columns only.
	Key       snapshot.Key `json:"-"`
	RecordKey snapshot.Key `json:"-"`
	OpKey     string       `json:"-"`
	IsCloud   bool         `json:"-"`
	Push      Push         `json:"-"`
	Lane      string       `json:"-"`
	StandIn   bool         `json:"-"`
}

// Fix sets the facts fixed when the action is built (Key, RecordKey,
// OpKey, IsCloud, Push, Lane, StandIn): Diff calls it for every action it
// plans; snap gives the region of the action's lane (the table's, else its
// parent's: RowRegion, CloudRegion), none when nil.
func (a *Action) Fix(snap *snapshot.Snapshot) *Action {
	// A row by its id; a resource with no row (deleted by the user, a
	// replacement's old resource, a stray) by its cloud id.
	a.RecordKey = snapshot.RowKey(a.Table, a.ID)
	a.Key, a.OpKey = a.RecordKey, a.ID
	if a.Row == nil {
		a.Key, a.OpKey = snapshot.CloudKey(a.Table, a.CloudID), "cloud "+a.CloudID
	}
	a.IsCloud = a.Kind == CloudCreate || a.Kind == CloudUpdate || a.Kind == CloudDelete
	if a.Kind == CloudCreate || a.Kind == CloudUpdate {
		want := map[string]any{}
		if a.Row != nil {
			for _, c := range a.Tab.Spec.Declarative {
				want[c] = a.Row.Cloud[c]
			}
		}
		js, _ := json.Marshal(want) // map keys sorted: the same state, the same text
		a.Push = Push{Record: a.RecordKey, State: string(js)}
		if !snapshot.Generated(a.Tab.Spec) {
			a.Push.CloudID = a.CloudID
		}
	}
	a.StandIn = a.Row != nil && a.Tab.StandingIn(a.ID)
	if !a.IsCloud {
		return a // no cloud call: no lane (database actions are most of a cycle's)
	}
	name, region := a.Table, ""
	if a.Tab.Module != nil {
		name = a.Tab.Module.Name
	}
	if snap != nil && a.Row != nil {
		region = snap.RowRegion(a.Tab, a.Row.DB, 0)
	}
	if snap != nil && region == "" && a.Cloud != nil {
		region = snap.CloudRegion(a.Tab, a.Cloud, 0)
	}
	a.Lane = name + "/" + region
	return a
}

type Step int

// Plan is the outcome of diffing one snapshot.
type Plan struct {
	Actions []*Action
	// enact: records in sync whose state must be recorded (first sighting,
	// or intent satisfied without a change).
	Enact []Enactment
	// promote: replacements whose old resource is gone (phase final now);
	// finished: replacements with nothing left to delete.
	Promote, Finished []*replace.Replacement
	// Held: records held back for a later pass because what they
	// reference (or, for a delete, what references them) is acted on in
	// this one; Whole plays the pass and plans them.
	Held int
}

type Enactment struct {
	Table, ID, CloudID string
}

// Options change how a cycle decides directions.
type Options struct {
	// Discard turns user intent newer than DiscardAfter (and no newer than
	// DiscardUpTo, when set) into "no intent" (iasql_rollback): those
	// records are restored from the cloud. DiscardUpTo is where the
	// rollback's first read stood: what users write while it runs is
	// intent as usual.
	Discard      bool
	DiscardAfter pglogrepl.LSN
	DiscardUpTo  pglogrepl.LSN
}

// Discards reports whether the options discard a user change at lsn.
func (o Options) Discards(lsn pglogrepl.LSN) bool {
	return o.Discard && lsn > o.DiscardAfter && (o.DiscardUpTo == 0 || lsn <= o.DiscardUpTo)
}

// TowardsCloud is the direction table of DESIGN.md as data: whether a
// difference is settled in the cloud (true) or in the database, by the
// record's mode and whether it has pending user intent. Each kind of
// difference then has its action in that direction: a row only in the
// database is created in the cloud or deleted; a resource only in the
// cloud is deleted there or imported; both but different, updated in the
// cloud or in the row. TestDirectionTable checks every cell.
var TowardsCloud = map[string]map[bool]bool{
	snapshot.ModeNormal:  {false: false, true: true},  // pending intent wins, else the cloud's state
	snapshot.ModeEnforce: {false: true, true: true},   // the database is the truth
	snapshot.ModeTrack:   {false: false, true: false}, // the cloud is the truth
}

// Diff decides, for every difference between database and cloud, what to
// do, by the direction table of DESIGN.md (every record NORMAL until modes
// land): pending intent pushes to the cloud, its absence pulls from it.
func Diff(snap *snapshot.Snapshot, opt Options) (*Plan, error) {
	p := &Plan{}
	// restoring: rows (RowKey) that take back the cloud identity their
	// record had (a rename undone); claimed: the cloud ids (CloudKey) they
	// take back. What references either waits for the next pass.
	restoring, claimed := map[snapshot.Key]bool{}, map[snapshot.Key]bool{}
	// relaunching: rows (RowKey) created anew in this pass under a new
	// identity the cloud generates (Relaunch). What references them reads
	// that identity in the next pass: planned now, it would register the
	// old one (a target of a terminated instance).
	relaunching := map[snapshot.Key]bool{}
	for _, ts := range snap.Tables {
		// Nothing at all is done in a part whose reads failed (unverified.go).
		unverified := snap.UnverifiedParts(ts)
		intent := func(id string) bool {
			if ts.Forced[id] {
				return true
			}
			lsn, ok := ts.Intent[id]
			if !ok {
				return false
			}
			return !opt.Discards(lsn)
		}
		// push decides the direction of a difference by the record's mode:
		// NORMAL follows pending intent, ENFORCE always pushes the database
		// to the cloud, TRACK always pulls the cloud into the database.
		push := func(id string) (toCloud bool, mode, label, note string) {
			if ts.Spec.ReadOnly {
				if intent(id) {
					note = " (the table is read-only: the cloud's state is restored)"
				}
				return false, snapshot.ModeTrack, "TRACK by the table being read-only", note
			}
			m, rule := snap.Modes.Of(ts.Spec.Name, id)
			label = m + " by " + rule
			has := intent(id)
			toCloud = TowardsCloud[m][has]
			switch {
			case m == snapshot.ModeEnforce && !has:
				note = " (ENFORCE by " + rule + ": reverting a change made in the cloud)"
			case m == snapshot.ModeTrack && has:
				note = " (WARNING: TRACK by " + rule + ": the user's change is undone from the cloud)"
			}
			return toCloud, m, label, note
		}
		// Rows (in database, maybe in cloud).
		ids := make([]string, 0, len(ts.Rows))
		for id := range ts.Rows {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return snapshot.NumLess(ids[i], ids[j]) })
		for _, id := range ids {
			r := ts.Rows[id]
			if snap.Reading.IsContext(ts.Spec.Name, id) {
				continue // read for reference only (scope.go)
			}
			if ts.InFlight(id) {
				continue // its operation runs on in the cloud: asked about later
			}
			if unverified.Row(r) {
				continue
			}
			if r.Cloud == nil && !intent(id) && unmadeParents(snap, ts.Spec, r.DB, opt) {
				// A row without intent (or whose intent a rollback
				// discards) that references rows never made in the cloud
				// and going too (a subnet in a VPC inserted since begin):
				// it is restored, or deleted, in the same pass as what it
				// references, children first (Order), so that no
				// reference is left dangling.
				if toCloud, _, label, note := push(id); !toCloud {
					p.Actions = append(p.Actions, unmade(ts, id, r, label, note, claimed))
				}
				continue
			}
			if r.Cloud == nil || refersTo(ts.Spec, r.DB, restoring, snapshot.RowKey) || refersTo(ts.Spec, r.DB, relaunching, snapshot.RowKey) {
				// A reference that cannot be resolved yet: its parent is
				// planned in this pass; the next pass handles the child.
				p.Held++
				continue
			}
			c, inCloud := ts.Cloud[r.CloudID]
			// Column rules: the columns that go the other way than the
			// record are taken from the cloud into the row's cloud form
			// (Owned), so that what remains different goes the record's
			// way, or, for ENFORCE columns of a record that follows the
			// cloud, to the cloud (enforced).
			var enforced []string
			rules := snap.Modes.ColumnRules(ts.Spec.Name, id)
			if len(rules) > 0 && inCloud && !ts.Spec.ReadOnly {
				var taken []string
				toCloud, _, _, _ := push(id)
				taken, enforced = Owned(ts.Spec, rules, toCloud, intent(id))
				r = ts.Owned(snap, r, c, taken)
			}
			equal := inCloud && ts.Equal(r.Cloud, c)
			if inCloud && ts.CreateCutShort(id, snap.LeaderSince) {
				// A long create whose answer was never recorded (a crash
				// between the call and its handle): the resource exists,
				// maybe still on its way (an instance pending). Asked
				// again with its token, the cloud answers for the same
				// resource, and the engine waits for it as for any.
				p.Actions = append(p.Actions, &Action{Table: ts.Spec.Name, ID: id, CloudID: r.CloudID, Mode: "client token", Tab: ts, Row: r, Cloud: c,
					Kind: CloudCreate, Action: "create", Direction: "cloud",
					Description: "resume the create of " + Describe(ts.Spec, r.Cloud) + " (cut short before the cloud's answer was recorded)"})
				continue
			}
			if equal && !r.Adopted && module.SameColumns(ts.Spec.Feedback, r.Cloud, c) && len(r.Fill) == 0 {
				// In sync (the common case: no mode or action is worked out).
				if ts.StandingIn(id) {
					continue // the stand-in is in sync, not the record
				}
				rec, known := ts.Records[id]
				_, working := ts.Ops[id]
				if !known || rec.CloudID != r.CloudID || intent(id) || working || (opt.Discard && ts.Intent[id] != 0) {
					p.Enact = append(p.Enact, Enactment{ts.Spec.Name, id, r.CloudID})
				}
				continue
			}
			toCloud, _, label, note := push(id)
			if !toCloud && !equal && len(enforced) > 0 {
				// What still differs is in the columns the database owns.
				rule := rules[enforced[0]].Rule
				toCloud, label = true, snapshot.ModeEnforce+" by "+rule
				note = " (ENFORCE by " + rule + ": reverting a change made in the cloud to " + strings.Join(enforced, ", ") + ")"
			}
			if toCloud && (!inCloud || !equal) && parentInFlight(snap, ts.Spec, r.DB) {
				// What it references is still being made or changed in the
				// cloud (an instance not yet running takes no target, AWS
				// says): pushed in a later pass, once that is done.
				continue
			}
			a := &Action{Table: ts.Spec.Name, ID: id, CloudID: r.CloudID, Mode: label, Tab: ts, Row: r, Cloud: c}
			switch {
			case !inCloud && toCloud:
				a.Action, a.Direction, a.Kind = "create", "cloud", CloudCreate
				a.Description = "create " + Describe(ts.Spec, r.Cloud) + " in the cloud" + note
				if Relaunch(a) {
					relaunching[snapshot.RowKey(ts.Spec.Name, id)] = true
					a.Description += dependents(snap, ts, id)
				}
			case !inCloud && restorable(ts, id, r):
				// The row's identity changed without intent (a rename rolled
				// back, or TRACK): the row takes back the resource its record
				// stood for, under its own id, and what references it stays.
				old := ts.Records[id].CloudID
				a.Action, a.Direction, a.Kind, a.Cloud, a.CloudID = "update", "database", DBUpdate, ts.Cloud[old], old
				a.Description = "restore the row from " + Describe(ts.Spec, a.Cloud) + ": " + r.CloudID + " is not in the cloud" + note
				restoring[snapshot.RowKey(ts.Spec.Name, id)], claimed[snapshot.CloudKey(ts.Spec.Name, old)] = true, true
			case !inCloud:
				a.Action, a.Direction, a.Kind = "delete", "database", DBDelete
				a.Description = "delete the row: " + r.CloudID + " is not in the cloud" + note
			case !equal && toCloud:
				a.Action, a.Direction, a.Kind = "update", "cloud", CloudUpdate
				a.Description = "update " + r.CloudID + " in the cloud"
				if why := changes(ts, ts.Spec.CreateOnly, c, r.Cloud); why != "" {
					a.Action = "replace"
					a.Description = "replace " + r.CloudID + " with a new resource (create-only: " + why + ")" + dependents(snap, ts, id)
				}
				if intent(id) {
					a.Description += " (the user's change wins)"
				}
				a.Description += ": " + changes(ts, ts.Spec.Declarative, c, r.Cloud) + note
				if len(r.Taken) > 0 {
					a.Description += " (keeps the cloud's " + strings.Join(r.Taken, ", ") + " (" + columnLabel(rules, r.Taken, label) + "), written into the row next)"
				}
			case !equal:
				a.Action, a.Direction, a.Kind = "update", "database", DBUpdate
				a.Description = "update the row from the cloud: " + changes(ts, ts.Spec.Declarative, r.Cloud, c) + note
			case r.Adopted:
				// An earlier create made it (a crash, or a lost answer, came
				// before its identity was written back): the row takes it,
				// and is in sync only once it holds its identity.
				a.Action, a.Direction, a.Kind = "update", "database", DBFeedback
				a.Description = "adopt " + Describe(ts.Spec, c) + ", made for the row by an earlier create (same client token): write back " + strings.Join(ts.Spec.Feedback, ", ")
			case len(r.Taken) > 0:
				// Column rules give them to the cloud (snapshot.Owned).
				a.Action, a.Direction, a.Kind = "update", "database", DBFeedback
				a.Mode = columnLabel(rules, r.Taken, label)
				a.Description = "take " + changes(ts, r.Taken, ts.Rows[id].Cloud, c) + " from the cloud (" + a.Mode + ")"
			case len(r.Fill) > 0:
				// The row left them NULL and the cloud chose (snapshot.TakeChoices).
				a.Action, a.Direction, a.Kind = "update", "database", DBFeedback
				a.Description = "fill " + strings.Join(r.Fill, ", ") + " in from the cloud (left NULL: the cloud's choice)"
			default:
				a.Action, a.Direction, a.Kind = "update", "database", DBFeedback
				a.Description = "refresh " + strings.Join(ts.Spec.Feedback, ", ") + " from the cloud"
			}
			p.Actions = append(p.Actions, a)
		}
		// Resources only in the cloud. (Whether imports wait for an
		// unsettled create is the table's, asked once.)
		holdImports := ts.CreateUnsettled()
		cids := make([]string, 0, len(ts.Cloud))
		for cid := range ts.Cloud {
			if ts.ByCloud[cid] == nil && !claimed[snapshot.CloudKey(ts.Spec.Name, cid)] && !refersTo(ts.Spec, ts.Cloud[cid], claimed, snapshot.CloudKey) {
				cids = append(cids, cid)
			}
		}
		sort.Strings(cids)
		for _, cid := range cids {
			c := ts.Cloud[cid]
			if unverified.Cloud(c) || ts.InFlight("cloud "+cid) || ts.InFlight(ts.RecBy[cid]) {
				continue
			}
			// leaving: whether a delete of it must wait (deleteHeld scans
			// the tables below; asked only of deletes).
			leaving := func() bool { return deleteHeld(snap, ts, cid, map[snapshot.Key]bool{}) }
			if rp := ts.Retired[cid]; rp != nil {
				if stillReferenced(snap, ts, cid) || leaving() {
					p.Held++
					continue // its children move (or go) first; a later pass deletes it
				}
				what := "the replaced"
				if cid == rp.Temp {
					what = "the temporary"
				}
				p.Actions = append(p.Actions, &Action{Table: ts.Spec.Name, ID: rp.Record, CloudID: cid, Mode: "replacement", Tab: ts, Cloud: c,
					Record: rp.Record, Kind: CloudDelete, Retire: rp, Action: "delete", Direction: "cloud",
					Description: "delete " + what + " " + Describe(ts.Spec, c) + " (replacement of row " + rp.Record + ")"})
				continue
			}
			if s, ok := ts.Strays[cid]; ok {
				// Never imported: the engine made it, and no row wants it.
				if stillReferenced(snap, ts, cid) || leaving() {
					p.Held++
					continue // what was made in it goes first; a later pass deletes it
				}
				p.Actions = append(p.Actions, &Action{Table: ts.Spec.Name, ID: s.Row, CloudID: cid, Mode: "client token", Tab: ts, Cloud: c,
					Kind: CloudDelete, Action: "delete", Direction: "cloud", Stray: &s,
					Description: "delete " + Describe(ts.Spec, c) + ": " + s.Describe()})
				continue
			}
			rid := ts.RecBy[cid]
			toCloud, mode, label, note := push(rid)
			if rid == "" && mode == snapshot.ModeNormal {
				toCloud = false // never known here: imported
			}
			if parent := pushedParent(snap, ts.Spec, c); parent != "" {
				// Not among the rows of a parent being replaced.
				toCloud, label, note = true, "replacement", " (not in the database for "+parent+")"
			}
			a := &Action{Table: ts.Spec.Name, CloudID: cid, Mode: label, Tab: ts, Cloud: c, Record: rid}
			if !toCloud && !parentsImported(snap, ts.Spec, c) {
				p.Held++
				continue // its parent is imported in this pass; it follows in the next
			}
			if !toCloud && rid == "" && holdImports {
				continue // it may be what that create made: imported once it settles
			}
			if toCloud && leaving() {
				continue // a child's delete runs on in the cloud; a later pass deletes it
			}
			if toCloud {
				// The user deleted the row (or moved it to another identity),
				// or ENFORCE removes what the database does not have.
				a.Action, a.Direction, a.Kind = "delete", "cloud", CloudDelete
				a.ID = rid
				a.Description = "delete " + Describe(ts.Spec, c) + " from the cloud" + note
			} else {
				a.Action, a.Direction, a.Kind = "create", "database", DBInsert
				a.Description = "import " + Describe(ts.Spec, c) + " from the cloud" + note
			}
			p.Actions = append(p.Actions, a)
		}
		// Replacements: promoted by this read, or done.
		for id, rp := range ts.Repl {
			if unverified.Record(id) {
				continue // the old resource may only look gone
			}
			if rp.Promote {
				p.Promote = append(p.Promote, rp)
			}
			if ts.InFlight(id) {
				continue // the new resource is still being made
			}
			left := false
			for cid, r := range ts.Retired {
				if _, there := ts.Cloud[cid]; there && r == rp {
					left = true
				}
			}
			if rp.Done(left, ts.Rows[id] == nil) {
				p.Finished = append(p.Finished, rp)
			}
		}
	}
	for _, a := range p.Actions {
		a.Fix(snap)
	}
	return p, nil
}

// Relaunch reports whether a is the create of a resource whose identity
// the cloud generates, for a row that names one no longer in the cloud (an
// instance terminated elsewhere, launched again under ENFORCE): the new
// resource has a new identity, and what references the row moves to it.
func Relaunch(a *Action) bool {
	return a.Kind == CloudCreate && a.Cloud == nil && a.CloudID != "" && snapshot.Generated(a.Tab.Spec)
}

// dependents says what a replacement of row id cascades to: the rows that
// reference it move to the new resource.
func dependents(snap *snapshot.Snapshot, ts *snapshot.Table, id string) string {
	var parts []string
	for _, cts := range snap.Tables {
		n := 0
		for _, ref := range module.RefsOf(cts.Spec) {
			if ref.Table != ts.Spec.Name {
				continue
			}
			for _, r := range cts.Rows {
				if slices.Contains(ref.Values(r.DB), id) {
					n++
				}
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, cts.Spec.Name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; what references it moves to the new one: " + strings.Join(parts, ", ")
}

// unmade restores from the cloud a row that references a row never made
// in the cloud: the resource its record stands for, if it has one (an
// instance moved to a subnet inserted since begin goes back to its
// subnet; claimed then keeps that resource from being taken for one
// without a row), else the row is deleted.
func unmade(ts *snapshot.Table, id string, r *snapshot.Row, label, note string, claimed map[snapshot.Key]bool) *Action {
	a := &Action{Table: ts.Spec.Name, ID: id, Mode: label, Tab: ts, Row: r}
	if old := ts.Records[id].CloudID; old != "" && ts.Cloud[old] != nil && ts.ByCloud[old] == nil {
		a.Action, a.Direction, a.Kind, a.Cloud, a.CloudID = "update", "database", DBUpdate, ts.Cloud[old], old
		a.Description = "restore the row from " + Describe(ts.Spec, a.Cloud) + ": what it references was never made in the cloud" + note
		claimed[snapshot.CloudKey(ts.Spec.Name, old)] = true
		return a
	}
	a.Action, a.Direction, a.Kind = "delete", "database", DBDelete
	a.Description = "delete the row: it was never made in the cloud, nor what it references" + note
	return a
}

// unmadeParents reports whether a row's references cannot be resolved
// only because rows it references were never made in the cloud and are
// not to be (no pending intent, or intent a rollback discards; no ENFORCE
// rule; not being replaced): they are deleted as rows the cloud does not
// have, and the row must go (or be restored) with them. Every row it
// references was read; a parent whose create is still to come holds the
// row as before.
func unmadeParents(snap *snapshot.Snapshot, spec module.Table, r module.Record, opt Options) bool {
	for _, ref := range module.RefsOf(spec) {
		p := snap.ByName[ref.Table]
		if p == nil {
			return false
		}
		for _, v := range ref.Values(r) {
			pr := p.Rows[v]
			if pr == nil {
				return false
			}
			if pr.CloudID != "" {
				continue
			}
			if lsn, ok := p.Intent[v]; (ok && !opt.Discards(lsn)) || p.Forced[v] || p.Spec.ReadOnly {
				return false
			}
			if m, _ := snap.Modes.Of(ref.Table, v); m == snapshot.ModeEnforce {
				return false
			}
		}
	}
	return true
}

// restorable reports whether a row whose resource is not in the cloud can
// take back the resource its record stood for: that resource is in the
// cloud and no other row stands for it.
func restorable(ts *snapshot.Table, id string, r *snapshot.Row) bool {
	old := ts.Records[id].CloudID
	if old == "" || old == r.CloudID || ts.ByCloud[old] != nil {
		return false
	}
	_, there := ts.Cloud[old]
	return there
}

// refersTo reports whether a record references one of keys, made by key
// from the values its reference columns hold (snapshot.RowKey for a
// database record, whose references are row ids; snapshot.CloudKey for a
// cloud record, whose references are cloud ids).
func refersTo(spec module.Table, r module.Record, keys map[snapshot.Key]bool, key func(table, v string) snapshot.Key) bool {
	if len(keys) == 0 {
		return false // the common case: nothing restored or relaunched
	}
	for _, ref := range module.RefsOf(spec) {
		for _, v := range ref.Values(r) {
			if keys[key(ref.Table, v)] {
				return true
			}
		}
	}
	return false
}

// parentInFlight reports whether a row references a record whose
// operation runs on in the cloud (a create, replacement or change that
// answered module.Pending), or whose long create a previous leader began
// and never recorded the answer of (CreateCutShort): its handle was not
// saved, but the resource may be as much on its way.
func parentInFlight(snap *snapshot.Snapshot, spec module.Table, r module.Record) bool {
	for _, ref := range module.RefsOf(spec) {
		p := snap.ByName[ref.Table]
		if p != nil && slices.ContainsFunc(ref.Values(r), func(id string) bool {
			return p.InFlight(id) || p.CreateCutShort(id, snap.LeaderSince)
		}) {
			return true
		}
	}
	return false
}

// ParentRetired reports whether a resource's parent is the old resource of
// a replacement, to be deleted.
func ParentRetired(snap *snapshot.Snapshot, spec module.Table, c module.Record) bool {
	for _, ref := range module.RefsOf(spec) {
		if p := snap.ByName[ref.Table]; p != nil && slices.ContainsFunc(ref.Values(c), func(v string) bool { return p.Retired[v] != nil }) {
			return true
		}
	}
	return false
}

// ParentLeaving reports whether a resource's parent has no row: the
// parent is being deleted from the cloud (a child of a parent that is
// imported is imported too, never deleted).
func ParentLeaving(snap *snapshot.Snapshot, spec module.Table, c module.Record) bool {
	for _, ref := range module.RefsOf(spec) {
		if p := snap.ByName[ref.Table]; p != nil && slices.ContainsFunc(ref.Values(c), func(v string) bool { return p.Cloud[v] != nil && p.ByCloud[v] == nil }) {
			return true
		}
	}
	return false
}

// stillReferenced reports whether a row of a child table still stands for
// a cloud resource that references cid.
func stillReferenced(snap *snapshot.Snapshot, ts *snapshot.Table, cid string) bool {
	for _, cts := range snap.Tables {
		for _, ref := range module.RefsOf(cts.Spec) {
			if ref.Table != ts.Spec.Name {
				continue
			}
			for ccid, cc := range cts.Cloud {
				if cts.ByCloud[ccid] != nil && slices.Contains(ref.Values(cc), cid) {
					return true
				}
			}
		}
	}
	return false
}

// childLeaving reports whether a resource of a table that references ts
// may still reference cid while its delete runs on in the cloud (an
// instance shutting down still uses its security groups and subnet, and
// AWS refuses to delete them until it is terminated: DependencyViolation).
// A child the read still shows is asked for its references; one it no
// longer shows (a terminating instance is left out of reads) may reference
// anything of ts, so cid's delete waits for it all the same.
func childLeaving(snap *snapshot.Snapshot, ts *snapshot.Table, cid string) bool {
	for _, cts := range snap.Tables {
		for _, ref := range module.RefsOf(cts.Spec) {
			if ref.Table != ts.Spec.Name {
				continue
			}
			for key, o := range cts.Ops {
				child, rowless := strings.CutPrefix(key, "cloud ")
				if o.Handle == "" || o.Action != "delete" || !rowless {
					continue
				}
				if c, shown := cts.Cloud[child]; !shown || slices.Contains(ref.Values(c), cid) {
					return true
				}
			}
		}
	}
	return false
}

// deleteHeld reports whether the delete of resource cid of ts waits: a
// resource that references it is still being deleted in the cloud
// (childLeaving), or is itself to be deleted (no row) and waits so. A VPC
// whose subnet waits for a terminating instance waits too: AWS refuses
// to delete it while the subnet exists.
func deleteHeld(snap *snapshot.Snapshot, ts *snapshot.Table, cid string, seen map[snapshot.Key]bool) bool {
	key := snapshot.CloudKey(ts.Spec.Name, cid)
	if seen[key] {
		return false
	}
	seen[key] = true
	if childLeaving(snap, ts, cid) {
		return true
	}
	for _, cts := range snap.Tables {
		for _, ref := range module.RefsOf(cts.Spec) {
			if ref.Table != ts.Spec.Name {
				continue
			}
			for child, c := range cts.Cloud {
				if cts.ByCloud[child] == nil && slices.Contains(ref.Values(c), cid) && deleteHeld(snap, cts, child, seen) {
					return true
				}
			}
		}
	}
	return false
}

// parentsImported reports whether every resource a cloud record
// references is a row already (so that it can be imported).
func parentsImported(snap *snapshot.Snapshot, spec module.Table, c module.Record) bool {
	for _, ref := range module.RefsOf(spec) {
		if p := snap.ByName[ref.Table]; p != nil && slices.ContainsFunc(ref.Values(c), func(v string) bool { return p.ByCloud[v] == nil }) {
			return false
		}
	}
	return true
}

// pushedParent names the parent of a cloud-only resource when that parent
// is being replaced ("" otherwise): the new resource's children are exactly
// the rows that reference the record (what the cloud adds to a new resource
// of its own accord, like a security group's default egress rule, is
// removed). A resource the user creates keeps what the cloud adds: it is
// imported, for the user to keep or delete.
func pushedParent(snap *snapshot.Snapshot, spec module.Table, c module.Record) string {
	for _, ref := range module.RefsOf(spec) {
		p := snap.ByName[ref.Table]
		if p == nil || ref.Many {
			// A many-valued reference is a resource's link to others,
			// not its parent: a resource is not among its groups' rows.
			continue
		}
		for _, v := range ref.Values(c) {
			if pr := p.ByCloud[v]; pr != nil && p.Forced[pr.ID] {
				return ref.Table + " " + pr.ID
			}
		}
	}
	return ""
}

func Describe(spec module.Table, r module.Record) string {
	return strings.TrimSuffix(spec.Name, "s") + " " + module.CloudIDOf(spec, r)
}

// changes describes the columns of cols in which to differs from from
// (one of them the row, the other the cloud's record), as the table's
// mapper compares them.
// Owned splits the columns that column rules cover (rules) by the way
// they go when it is not the record's (toCloud, with intent or not, by
// TowardsCloud): taken are the columns the row takes from the cloud, every
// declarative column but the pushed ones when the record follows the
// cloud, and enforced are the columns pushed to the cloud when the record
// follows it. Identity columns follow their record (a rule may not name
// them). Both sorted, as the table declares its columns.
func Owned(spec module.Table, rules map[string]snapshot.Resolved, toCloud, intent bool) (taken, enforced []string) {
	var pull []string
	for _, col := range spec.Declarative {
		rule, ok := rules[col]
		if !ok || slices.Contains(spec.CloudID, col) || TowardsCloud[rule.Mode][intent] == toCloud {
			continue
		}
		if toCloud {
			pull = append(pull, col)
		} else {
			enforced = append(enforced, col)
		}
	}
	if toCloud || len(enforced) == 0 {
		return pull, nil
	}
	for _, col := range spec.Declarative {
		if !slices.Contains(enforced, col) && !slices.Contains(spec.CloudID, col) {
			taken = append(taken, col)
		}
	}
	return taken, enforced
}

// columnLabel names the mode that takes cols from the cloud: the column
// rule (of rules, the record's) of the first of them that has one, else
// the record's mode (label).
func columnLabel(rules map[string]snapshot.Resolved, cols []string, label string) string {
	for _, col := range cols {
		if r, ok := rules[col]; ok && r.Mode == snapshot.ModeTrack {
			return r.Mode + " by " + r.Rule
		}
	}
	return label
}

func changes(ts *snapshot.Table, cols []string, from, to module.Record) string {
	var out []string
	for _, c := range ts.Differing(cols, from, to) {
		out = append(out, fmt.Sprintf("%s %s -> %s", c, Show(from[c]), Show(to[c])))
	}
	return strings.Join(out, ", ")
}

func Show(v any) string {
	if v == nil {
		return "NULL"
	}
	js, _ := json.Marshal(v)
	return string(js)
}

// Order sorts actions for execution: creates and updates parents first,
// deletes children first.
func Order(actions []*Action, tableIndex map[string]int) {
	sort.SliceStable(actions, func(i, j int) bool {
		di, dj := isDelete(actions[i]), isDelete(actions[j])
		if di != dj {
			return !di
		}
		ti, tj := tableIndex[actions[i].Table], tableIndex[actions[j].Table]
		if di {
			return ti > tj
		}
		return ti < tj
	})
}

func isDelete(a *Action) bool { return a.Kind == CloudDelete || a.Kind == DBDelete }

// Schedule is a pass's actions as the executor runs them: in table order
// (Order) with what each waits for (Dependencies), worked out in the plan
// room before anything runs, so that the executor only executes.
type Schedule struct {
	Actions []*Action
	Deps    map[*Action][]snapshot.Key
}

// Scheduled orders actions by tableOrder and works out their dependencies.
func Scheduled(actions []*Action, tableOrder map[string]int) Schedule {
	Order(actions, tableOrder)
	return Schedule{Actions: actions, Deps: Dependencies(actions)}
}

// Dependencies maps each action to the keys of the actions it must wait
// for: a create or update waits for its parents' creates and updates; a
// delete of a parent waits for the deletes of its children.
func Dependencies(actions []*Action) map[*Action][]snapshot.Key {
	byKey := map[snapshot.Key]*Action{}
	for _, a := range actions {
		byKey[a.Key] = a
	}
	out := map[*Action][]snapshot.Key{}
	for _, a := range actions {
		for _, ref := range module.RefsOf(a.Tab.Spec) {
			switch {
			case a.Row != nil && !isDelete(a):
				for _, v := range ref.Values(a.Row.DB) {
					if k := snapshot.RowKey(ref.Table, v); byKey[k] != nil {
						out[a] = append(out[a], k)
					}
				}
				if a.Cloud != nil && a.Row.Cloud != nil {
					// An update that stops referencing a resource: that
					// resource's delete waits for it (AWS refuses to delete
					// a security group an instance still uses).
					now := ref.Values(a.Row.Cloud)
					for _, v := range ref.Values(a.Cloud) {
						if p := byKey[snapshot.CloudKey(ref.Table, v)]; p != nil && isDelete(p) && !slices.Contains(now, v) {
							out[p] = append(out[p], a.Key)
						}
					}
				}
			case a.Row == nil && a.Cloud != nil:
				// A child's delete: the parent's delete waits for it. An
				// import waits for its parent's (never in one pass of a
				// cycle: parentsImported; in a preview, Whole).
				for _, v := range ref.Values(a.Cloud) {
					k := snapshot.CloudKey(ref.Table, v)
					if p := byKey[k]; p != nil && isDelete(p) {
						out[p] = append(out[p], a.Key)
					} else if p != nil && p.Kind == DBInsert && a.Kind == DBInsert {
						out[a] = append(out[a], k)
					}
				}
			}
		}
	}
	return out
}

// WithStatus adds to each action's description what iasql_status says of
// its record (the same source): the failures so far and when automatic
// cycles retry.
func WithStatus(actions []*Action) {
	for _, a := range actions {
		if a.Tab == nil {
			continue
		}
		o, ok := a.Tab.Ops[a.OpKey]
		if !ok || o.State != snapshot.OpFailed {
			continue
		}
		a.Description += fmt.Sprintf(" [failed %d time(s), last: %s; automatic cycles retry from %s]",
			o.Attempts, o.LastError, o.NextRetry.UTC().Format(time.RFC3339))
	}
}

// Failure is the line a cycle reports for an action that did not happen:
// the record, its cloud identity, the action and why.
func (a *Action) Failure(why string) string {
	return fmt.Sprintf("%s %s (%s) %s %s: %s", a.Table, cmp.Or(a.ID, "-"), a.CloudID, a.Action, a.Direction, why)
}

// Push names a record whose declarative state a cycle pushed, the
// resource it pushed it to, and what it pushed (the declarative columns in
// cloud form, references as the identities they named): a record that
// references one being replaced is rightly pushed again, to the stand-in
// and then back to the replacement, its own identity unchanged but what it
// names not (a listener forwarding to a replaced target group), and a
// record whose own identity changes is pushed again to the new resource.
// Where the cloud generates the identity, the record and what was pushed
// (CloudID ""): a create is never repeated because its resource does not
// show.
type Push struct {
	Record  snapshot.Key // the row (snapshot.RowKey)
	State   string       // the declarative columns pushed, as JSON
	CloudID string       // the resource pushed to
}

const (
	CloudCreate Step = iota
	CloudUpdate
	CloudDelete
	DBInsert
	DBUpdate
	DBDelete
	DBFeedback
)
