package bridge

// Planning: a pure function of a snapshot. diff decides, for every
// difference between database and cloud, what to do, by the direction table
// of DESIGN.md (tested as data without PostgreSQL: direction_internal_test.go),
// and the dependencies between the actions it plans.

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/modules/module"
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

	ts     *tableState
	row    *row
	cloud  module.Record // the resource as the cloud has it
	record string        // the record a cloud-only resource belonged to, if known
	kind   step
	retire *replacement // a cloud delete of a replacement's old or temporary resource
	// identified: a create whose resource's identity is written back;
	// retrying the create could make a second one, so a failure after it
	// is not retried in this pass (the next read sees the resource).
	identified bool
	// token: a create's idempotency token; attempts: the cloud calls made
	// for the action so far (persisted in iasql_operations); retried: an
	// earlier attempt may have made the resource.
	token    string
	attempts int
	retried  bool
}

type step int

const (
	cloudCreate step = iota
	cloudUpdate
	cloudDelete
	dbInsert
	dbUpdate
	dbDelete
	dbFeedback
)

// plan is the outcome of diffing one snapshot.
type plan struct {
	actions []*Action
	// enact: records in sync whose state must be recorded (first sighting,
	// or intent satisfied without a change).
	enact []enactment
	// promote: replacements whose old resource is gone (phase final now);
	// finished: replacements with nothing left to delete.
	promote, finished []*replacement
}

type enactment struct {
	table, id, cloudID string
}

// options change how a cycle decides directions.
type options struct {
	// discardAfter, when set, turns user intent newer than it into "no
	// intent" (iasql_rollback): those records are restored from the cloud.
	discardAfter pglogrepl.LSN
	discard      bool
}

// towardsCloud is the direction table of DESIGN.md as data: whether a
// difference is settled in the cloud (true) or in the database, by the
// record's mode and whether it has pending user intent. Each kind of
// difference then has its action in that direction: a row only in the
// database is created in the cloud or deleted; a resource only in the
// cloud is deleted there or imported; both but different, updated in the
// cloud or in the row. TestDirectionTable checks every cell.
var towardsCloud = map[string]map[bool]bool{
	modeNormal:  {false: false, true: true},  // pending intent wins, else the cloud's state
	modeEnforce: {false: true, true: true},   // the database is the truth
	modeTrack:   {false: false, true: false}, // the cloud is the truth
}

// diff decides, for every difference between database and cloud, what to
// do, by the direction table of DESIGN.md (every record NORMAL until modes
// land): pending intent pushes to the cloud, its absence pulls from it.
func diff(snap *snapshot, opt options) (*plan, error) {
	p := &plan{}
	// restoring: rows (table, id) that take back the cloud identity their
	// record had (a rename undone); claimed: the cloud ids (table, cloud
	// id) they take back. What references either waits for the next pass.
	restoring, claimed := map[string]bool{}, map[string]bool{}
	for _, ts := range snap.tables {
		// Nothing at all is done in a part whose reads failed (unverified.go).
		unverified := snap.unverifiedParts(ts)
		intent := func(id string) bool {
			if ts.forced[id] {
				return true
			}
			lsn, ok := ts.intent[id]
			if !ok {
				return false
			}
			return !(opt.discard && lsn > opt.discardAfter)
		}
		// push decides the direction of a difference by the record's mode:
		// NORMAL follows pending intent, ENFORCE always pushes the database
		// to the cloud, TRACK always pulls the cloud into the database.
		push := func(id string) (toCloud bool, mode, label, note string) {
			if ts.spec.ReadOnly {
				if intent(id) {
					note = " (the table is read-only: the cloud's state is restored)"
				}
				return false, modeTrack, "TRACK by the table being read-only", note
			}
			m, rule := snap.modes.of(ts.spec.Name, id)
			label = m + " by " + rule
			has := intent(id)
			toCloud = towardsCloud[m][has]
			switch {
			case m == modeEnforce && !has:
				note = " (ENFORCE by " + rule + ": reverting a change made in the cloud)"
			case m == modeTrack && has:
				note = " (WARNING: TRACK by " + rule + ": the user's change is undone from the cloud)"
			}
			return toCloud, m, label, note
		}
		// Rows (in database, maybe in cloud).
		ids := make([]string, 0, len(ts.rows))
		for id := range ts.rows {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return numLess(ids[i], ids[j]) })
		for _, id := range ids {
			r := ts.rows[id]
			if snap.reading.isContext(ts.spec.Name, id) {
				continue // read for reference only (scope.go)
			}
			if ts.inFlight(id) {
				continue // its operation runs on in the cloud: asked about later
			}
			if r.cloud == nil || refersTo(ts.spec, r.db, restoring) {
				// A reference that cannot be resolved yet: its parent is
				// planned in this pass; the next pass handles the child.
				continue
			}
			if unverified.row(r) {
				continue
			}
			c, inCloud := ts.cloud[r.cloudID]
			equal := inCloud && ts.mapper.Equal(r.cloud, c)
			if equal && sameColumns(ts.spec.Feedback, r.cloud, c) {
				// In sync (the common case: no mode or action is worked out).
				if ts.standingIn(id) {
					continue // the stand-in is in sync, not the record
				}
				rec, known := ts.records[id]
				_, working := ts.ops[id]
				if !known || rec.cloudID != r.cloudID || intent(id) || working || (opt.discard && ts.intent[id] != 0) {
					p.enact = append(p.enact, enactment{ts.spec.Name, id, r.cloudID})
				}
				continue
			}
			toCloud, _, label, note := push(id)
			a := &Action{Table: ts.spec.Name, ID: id, CloudID: r.cloudID, Mode: label, ts: ts, row: r, cloud: c}
			switch {
			case !inCloud && toCloud:
				a.Action, a.Direction, a.kind = "create", "cloud", cloudCreate
				a.Description = "create " + describe(ts.spec, r.cloud) + " in the cloud" + note
			case !inCloud && restorable(ts, id, r):
				// The row's identity changed without intent (a rename rolled
				// back, or TRACK): the row takes back the resource its record
				// stood for, under its own id, and what references it stays.
				old := ts.records[id].cloudID
				a.Action, a.Direction, a.kind, a.cloud, a.CloudID = "update", "database", dbUpdate, ts.cloud[old], old
				a.Description = "restore the row from " + describe(ts.spec, a.cloud) + ": " + r.cloudID + " is not in the cloud" + note
				restoring[ts.spec.Name+"\x00"+id], claimed[ts.spec.Name+"\x00"+old] = true, true
			case !inCloud:
				a.Action, a.Direction, a.kind = "delete", "database", dbDelete
				a.Description = "delete the row: " + r.cloudID + " is not in the cloud" + note
			case !equal && toCloud:
				a.Action, a.Direction, a.kind = "update", "cloud", cloudUpdate
				a.Description = "update " + r.cloudID + " in the cloud"
				if why := changes(ts.spec.CreateOnly, c, r.cloud); why != "" {
					a.Action = "replace"
					a.Description = "replace " + r.cloudID + " with a new resource (create-only: " + why + ")" + dependents(snap, ts, id)
				}
				if intent(id) {
					a.Description += " (the user's change wins)"
				}
				a.Description += ": " + changes(ts.spec.Declarative, c, r.cloud) + note
			case !equal:
				a.Action, a.Direction, a.kind = "update", "database", dbUpdate
				a.Description = "update the row from the cloud: " + changes(ts.spec.Declarative, r.cloud, c) + note
			default:
				a.Action, a.Direction, a.kind = "update", "database", dbFeedback
				a.Description = "refresh " + strings.Join(ts.spec.Feedback, ", ") + " from the cloud"
			}
			p.actions = append(p.actions, a)
		}
		// Resources only in the cloud.
		cids := make([]string, 0, len(ts.cloud))
		for cid := range ts.cloud {
			if ts.byCloud[cid] == nil && !claimed[ts.spec.Name+"\x00"+cid] && !refersTo(ts.spec, ts.cloud[cid], claimed) {
				cids = append(cids, cid)
			}
		}
		sort.Strings(cids)
		for _, cid := range cids {
			c := ts.cloud[cid]
			if unverified.cloud(c) || ts.inFlight("cloud "+cid) || ts.inFlight(ts.recBy[cid]) {
				continue
			}
			if rp := ts.retired[cid]; rp != nil {
				if stillReferenced(snap, ts, cid) {
					continue // its children move first; a later pass deletes it
				}
				what := "the replaced"
				if cid == rp.temp {
					what = "the temporary"
				}
				p.actions = append(p.actions, &Action{Table: ts.spec.Name, ID: rp.record, CloudID: cid, Mode: "replacement", ts: ts, cloud: c,
					record: rp.record, kind: cloudDelete, retire: rp, Action: "delete", Direction: "cloud",
					Description: "delete " + what + " " + describe(ts.spec, c) + " (replacement of row " + rp.record + ")"})
				continue
			}
			if row := ts.strays[cid]; row != "" {
				p.actions = append(p.actions, &Action{Table: ts.spec.Name, ID: row, CloudID: cid, Mode: "client token", ts: ts, cloud: c,
					kind: cloudDelete, Action: "delete", Direction: "cloud",
					Description: "delete " + describe(ts.spec, c) + ": a second resource made for row " + row + " by a repeated create (same client token)"})
				continue
			}
			rid := ts.recBy[cid]
			toCloud, mode, label, note := push(rid)
			if rid == "" && mode == modeNormal {
				toCloud = false // never known here: imported
			}
			if parent := pushedParent(snap, ts.spec, c); parent != "" {
				// Not among the rows of a parent being replaced.
				toCloud, label, note = true, "replacement", " (not in the database for "+parent+")"
			}
			a := &Action{Table: ts.spec.Name, CloudID: cid, Mode: label, ts: ts, cloud: c, record: rid}
			if !toCloud && !parentsImported(snap, ts.spec, c) {
				continue // its parent is imported in this pass; it follows in the next
			}
			if toCloud {
				// The user deleted the row (or moved it to another identity),
				// or ENFORCE removes what the database does not have.
				a.Action, a.Direction, a.kind = "delete", "cloud", cloudDelete
				a.ID = rid
				a.Description = "delete " + describe(ts.spec, c) + " from the cloud" + note
			} else {
				a.Action, a.Direction, a.kind = "create", "database", dbInsert
				a.Description = "import " + describe(ts.spec, c) + " from the cloud" + note
			}
			p.actions = append(p.actions, a)
		}
		// Replacements: promoted by this read, or done.
		for id, rp := range ts.repl {
			if unverified.record(id) {
				continue // the old resource may only look gone
			}
			if rp.promote {
				p.promote = append(p.promote, rp)
			}
			left := false
			for cid, r := range ts.retired {
				if _, there := ts.cloud[cid]; there && r == rp {
					left = true
				}
			}
			if !left && (rp.phase == phaseFinal || ts.rows[id] == nil) {
				p.finished = append(p.finished, rp)
			}
		}
	}
	return p, nil
}

// dependents says what a replacement of row id cascades to: the rows that
// reference it move to the new resource.
func dependents(snap *snapshot, ts *tableState, id string) string {
	var parts []string
	for _, cts := range snap.tables {
		n := 0
		for col, parent := range cts.spec.Refs {
			if parent != ts.spec.Name {
				continue
			}
			for _, r := range cts.rows {
				if r.db.String(col) == id {
					n++
				}
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, cts.spec.Name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; what references it moves to the new one: " + strings.Join(parts, ", ")
}

// restorable reports whether a row whose resource is not in the cloud can
// take back the resource its record stood for: that resource is in the
// cloud and no other row stands for it.
func restorable(ts *tableState, id string, r *row) bool {
	old := ts.records[id].cloudID
	if old == "" || old == r.cloudID || ts.byCloud[old] != nil {
		return false
	}
	_, there := ts.cloud[old]
	return there
}

// refersTo reports whether a record references one of keys (table, id of
// a row for a database record; table, cloud id for a cloud record: the
// form its reference columns hold).
func refersTo(spec module.Table, r module.Record, keys map[string]bool) bool {
	for col, parent := range spec.Refs {
		if r[col] != nil && keys[parent+"\x00"+r.String(col)] {
			return true
		}
	}
	return false
}

// parentRetired reports whether a resource's parent is the old resource of
// a replacement, to be deleted.
func parentRetired(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if p := snap.byName[parent]; p != nil && c[col] != nil && p.retired[c.String(col)] != nil {
			return true
		}
	}
	return false
}

// parentLeaving reports whether a resource's parent has no row: the
// parent is being deleted from the cloud (a child of a parent that is
// imported is imported too, never deleted).
func parentLeaving(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if p := snap.byName[parent]; p != nil && c[col] != nil && p.cloud[c.String(col)] != nil && p.byCloud[c.String(col)] == nil {
			return true
		}
	}
	return false
}

// stillReferenced reports whether a row of a child table still stands for
// a cloud resource that references cid.
func stillReferenced(snap *snapshot, ts *tableState, cid string) bool {
	for _, cts := range snap.tables {
		for col, parent := range cts.spec.Refs {
			if parent != ts.spec.Name {
				continue
			}
			for ccid, cc := range cts.cloud {
				if cc.String(col) == cid && cts.byCloud[ccid] != nil {
					return true
				}
			}
		}
	}
	return false
}

// parentsImported reports whether every resource a cloud record
// references is a row already (so that it can be imported).
func parentsImported(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if c[col] == nil {
			continue
		}
		if p := snap.byName[parent]; p != nil && p.byCloud[c.String(col)] == nil {
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
func pushedParent(snap *snapshot, spec module.Table, c module.Record) string {
	for col, parent := range spec.Refs {
		p := snap.byName[parent]
		if p == nil || c[col] == nil {
			continue
		}
		pr := p.byCloud[c.String(col)]
		if pr != nil && p.forced[pr.id] {
			return parent + " " + pr.id
		}
	}
	return ""
}

func numLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func describe(spec module.Table, r module.Record) string {
	return strings.TrimSuffix(spec.Name, "s") + " " + module.CloudIDOf(spec, r)
}

func sameColumns(cols []string, a, b module.Record) bool {
	for _, c := range cols {
		if !module.Same(a[c], b[c]) {
			return false
		}
	}
	return true
}

// changes describes the columns in which to differs from from.
func changes(cols []string, from, to module.Record) string {
	var out []string
	for _, c := range differing(cols, from, to) {
		out = append(out, fmt.Sprintf("%s %s -> %s", c, show(from[c]), show(to[c])))
	}
	return strings.Join(out, ", ")
}

// differing are the columns of cols in which a and b differ.
func differing(cols []string, a, b module.Record) []string {
	var out []string
	for _, c := range cols {
		if !module.Same(a[c], b[c]) {
			out = append(out, c)
		}
	}
	return out
}

func show(v any) string {
	if v == nil {
		return "NULL"
	}
	js, _ := json.Marshal(v)
	return string(js)
}

// order sorts actions for execution: creates and updates parents first,
// deletes children first.
func order(actions []*Action, tableIndex map[string]int) {
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

func isDelete(a *Action) bool { return a.kind == cloudDelete || a.kind == dbDelete }

// actionKey names what an action acts on: a row by its id, a resource only
// in the cloud by its cloud id.
func actionKey(a *Action) string {
	if a.row != nil {
		return a.Table + "\x00#" + a.ID
	}
	return a.Table + "\x00" + a.CloudID
}

// dependencies maps each action to the keys of the actions it must wait
// for: a create or update waits for its parents' creates and updates; a
// delete of a parent waits for the deletes of its children.
func dependencies(actions []*Action) map[*Action][]string {
	byKey := map[string]*Action{}
	for _, a := range actions {
		byKey[actionKey(a)] = a
	}
	out := map[*Action][]string{}
	for _, a := range actions {
		for col, parent := range a.ts.spec.Refs {
			switch {
			case a.row != nil && !isDelete(a) && a.row.db[col] != nil:
				if k := parent + "\x00#" + a.row.db.String(col); byKey[k] != nil {
					out[a] = append(out[a], k)
				}
			case a.row == nil && a.cloud != nil && a.cloud[col] != nil:
				// A child's delete: the parent's delete waits for it.
				if p := byKey[parent+"\x00"+a.cloud.String(col)]; p != nil && isDelete(p) {
					out[p] = append(out[p], actionKey(a))
				}
			}
		}
	}
	return out
}
