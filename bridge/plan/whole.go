package plan

// Whole: what a preview shows, every pass of the cycle a commit would run.

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// NotKnown is the value a preview shows for the identity of a resource
// that a create of an earlier pass makes and the cloud names (a VPC's id):
// the row's table and id say whose it is, "(not known yet: vpc 7)". What
// references that row shows it in place of the identity.
func NotKnown(table, id string) string { return notKnownMark + table + " " + id + ")" }

const notKnownMark = "(not known yet: "

// maxSteps bounds the passes Whole plays, as maxPasses bounds a cycle's.
const maxSteps = 10

// Whole plans every action that a cycle starting from snap would take, in
// the order it would take them. The first pass is Diff's plan. While a
// pass holds records back for what it acts on (Plan.Held: a subnet whose
// VPC it creates), the next pass is planned on the snapshot as the pass
// leaves it if every action does what it says (play); an identity the
// cloud generates is NotKnown until then, and the actions that use one say
// so in their description. Each action gets its Step (its pass) and
// WaitsFor (Dependencies over all the passes: a create waits for its
// parents' creates, a delete for its children's deletes). What the cloud
// answers beyond that (a new VPC's default security group, feedback such
// as a state that changes) is not known beforehand and not shown.
//
// snap is left as read: the passes after the first are played on a copy,
// made only when there is one to play. Nothing is asked of the cloud.
func Whole(snap *snapshot.Snapshot, opt Options) ([]*Action, error) {
	index := make(map[string]int, len(snap.Tables))
	for i, ts := range snap.Tables {
		index[ts.Spec.Name] = i
	}
	var all []*Action
	planned := map[string]bool{}
	cur := snap
	for step := 1; step <= maxSteps; step++ {
		p, err := Diff(cur, opt)
		if err != nil {
			return nil, err
		}
		var fresh []*Action
		for _, a := range p.Actions {
			k := Name(a) + " " + a.Direction
			if planned[k] {
				continue // played already: planned again, it would be a cycle that does not converge
			}
			planned[k] = true
			a.Step = step
			if step > 1 {
				a.Description += notKnownRefs(cur, a)
			}
			fresh = append(fresh, a)
		}
		Order(fresh, index)
		all = append(all, fresh...)
		if p.Held == 0 || len(fresh) == 0 {
			break
		}
		if cur == snap {
			cur = clone(snap)
		}
		play(cur, fresh)
	}
	byKey := make(map[snapshot.Key]*Action, len(all))
	for _, a := range all {
		byKey[a.Key] = a
	}
	for a, keys := range Dependencies(all) {
		for _, k := range keys {
			if n := Name(byKey[k]); !slices.Contains(a.WaitsFor, n) {
				a.WaitsFor = append(a.WaitsFor, n)
			}
		}
	}
	return all, nil
}

// Name names an action as a preview's waits_for does: the action, the
// table and the row's id (a resource with no row: its cloud identity),
// "create vpc 7".
func Name(a *Action) string {
	return a.Action + " " + a.Table + " " + cmp.Or(a.ID, a.CloudID)
}

// clone copies a snapshot for play: its tables, and the maps play changes
// (rows, by cloud identity, the cloud, the forced records). Rows are never changed in place
// (play replaces them), and the rest is shared, read only.
func clone(snap *snapshot.Snapshot) *snapshot.Snapshot {
	out := *snap
	out.Tables = make([]*snapshot.Table, len(snap.Tables))
	out.ByName = make(map[string]*snapshot.Table, len(snap.Tables))
	for i, ts := range snap.Tables {
		t := *ts
		t.Rows, t.ByCloud, t.Cloud, t.Forced = cloneMap(ts.Rows), cloneMap(ts.ByCloud), cloneMap(ts.Cloud), cloneMap(ts.Forced)
		out.Tables[i], out.ByName[t.Spec.Name] = &t, &t
	}
	return &out
}

func cloneMap[V any](m map[string]V) map[string]V {
	if m == nil {
		return map[string]V{}
	}
	return maps.Clone(m)
}

// play changes snap as a pass's actions would if each did what it says:
// a create or update leaves the cloud with the row's state (under a
// NotKnown identity where the cloud gives one, which the row then holds,
// as a create's write-back does), a delete removes the resource or row, an
// import adds a row, and an update from the cloud makes the row the
// cloud's. Then the rows that were waiting for an identity are put in
// cloud form (reform).
func play(snap *snapshot.Snapshot, actions []*Action) {
	moved := map[snapshot.Key]bool{} // rows (RowKey) whose identity changed
	for _, a := range actions {
		ts := snap.ByName[a.Table]
		if ts == nil {
			continue
		}
		switch a.Kind {
		case CloudCreate, CloudUpdate:
			r := ts.Rows[a.ID]
			if r == nil || r.Cloud == nil {
				continue
			}
			cf, cid, db := r.Cloud, r.CloudID, r.DB
			if snapshot.Generated(ts.Spec) && (cid == "" || Relaunch(a)) {
				// A new resource, named by the cloud. (A replacement is
				// played in place: what it entails, its old resource's
				// delete and what moves to the new one, its description
				// says.)
				cid = NotKnown(a.Table, a.ID)
				cf = snapshot.WithIdentity(ts.Spec, cf, cid)
				db = maps.Clone(r.DB)
				db[ts.Spec.CloudID[0]] = cid
				if Relaunch(a) {
					ts.Forced[a.ID] = true // what references it is pushed to the new one
				}
			}
			ts.Cloud[cid] = cf
			set(ts, &snapshot.Row{ID: r.ID, Xmin: r.Xmin, DB: db, Cloud: cf, CloudID: cid, Chosen: r.Chosen}, moved)
		case CloudDelete:
			delete(ts.Cloud, a.CloudID)
		case DBDelete:
			if r := ts.Rows[a.ID]; r != nil {
				delete(ts.Rows, a.ID)
				if ts.ByCloud[r.CloudID] == r {
					delete(ts.ByCloud, r.CloudID)
				}
			}
		case DBInsert:
			db, err := snapshot.ToDB(ts.Spec, a.Cloud, snap)
			if err != nil {
				db = a.Cloud
			}
			set(ts, &snapshot.Row{ID: "import " + a.CloudID, DB: db, Cloud: a.Cloud, CloudID: a.CloudID}, moved)
		case DBUpdate, DBFeedback:
			r := ts.Rows[a.ID]
			if r == nil || a.Cloud == nil {
				continue
			}
			db := maps.Clone(r.DB)
			if rec, err := snapshot.ToDB(ts.Spec, a.Cloud, snap); err == nil {
				maps.Copy(db, rec)
			}
			set(ts, &snapshot.Row{ID: r.ID, Xmin: r.Xmin, DB: db, Cloud: a.Cloud, CloudID: a.CloudID}, moved)
		}
	}
	reform(snap, moved)
}

// set puts row r in its table in place of the row with its id, and notes
// in moved that its identity changed, if it did.
func set(ts *snapshot.Table, r *snapshot.Row, moved map[snapshot.Key]bool) {
	if old := ts.Rows[r.ID]; old != nil {
		if ts.ByCloud[old.CloudID] == old {
			delete(ts.ByCloud, old.CloudID)
		}
		if old.CloudID != r.CloudID {
			moved[snapshot.RowKey(ts.Spec.Name, r.ID)] = true
		}
	}
	ts.Rows[r.ID] = r
	if r.CloudID != "" {
		ts.ByCloud[r.CloudID] = r
	}
}

// reform puts in cloud form again, parents first, the rows that had none
// (what they reference had no identity: snapshot.ToCloud) and those that
// reference a row whose identity moved, forced if what they reference is;
// a row still waiting keeps none.
func reform(snap *snapshot.Snapshot, moved map[snapshot.Key]bool) {
	for _, ts := range snap.Tables {
		for _, r := range ts.Rows {
			if r.Cloud != nil && !refersTo(ts.Spec, r.DB, moved, snapshot.RowKey) {
				continue
			}
			cf, err := snapshot.ToCloud(ts.Spec, r.DB, snap)
			if err != nil {
				continue // what it references has no identity yet
			}
			if r.Cloud != nil {
				cf = snapshot.WithChosen(cf, r.Cloud, r.Chosen)
			}
			cid := module.CloudIDOf(ts.Spec, cf)
			if snapshot.Generated(ts.Spec) && cf[ts.Spec.CloudID[0]] == nil {
				cid = "" // to be created: the cloud names it
			}
			set(ts, &snapshot.Row{ID: r.ID, Xmin: r.Xmin, DB: r.DB, Cloud: cf, CloudID: cid, Chosen: r.Chosen, Fill: r.Fill}, moved)
			for _, ref := range module.RefsOf(ts.Spec) {
				// Pushed with what it references (snapshot.Table.CloudForms).
				if p := snap.ByName[ref.Table]; p != nil && slices.ContainsFunc(ref.Values(r.DB), func(v string) bool { return p.Forced[v] }) {
					ts.Forced[r.ID] = true
				}
			}
		}
	}
}

// notKnownRefs says which references of a row's action name rows whose
// identity is not known yet (NotKnown), and whose: "; not known yet:
// vpc_id (vpc 7)".
func notKnownRefs(snap *snapshot.Snapshot, a *Action) string {
	if a.Row == nil || isDelete(a) {
		return ""
	}
	var parts []string
	for _, ref := range module.RefsOf(a.Tab.Spec) {
		p := snap.ByName[ref.Table]
		if p == nil {
			continue
		}
		var whose []string
		for _, v := range ref.Values(a.Row.DB) {
			if pr := p.Rows[v]; pr != nil && strings.Contains(pr.CloudID, notKnownMark) {
				whose = append(whose, v)
			}
		}
		if len(whose) > 0 {
			parts = append(parts, ref.Column+" ("+ref.Table+" "+strings.Join(whose, ", ")+")")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; not known yet: " + strings.Join(parts, ", ")
}
