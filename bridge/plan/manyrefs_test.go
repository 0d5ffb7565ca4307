package plan_test

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// Groups and instances that reference several groups (module.Table.RefsMany).
var (
	groupSpec = module.Table{Name: "grp", CloudID: []string{"name"}, Declarative: []string{"name"}}
	instSpec  = module.Table{Name: "inst", CloudID: []string{"name"}, Declarative: []string{"name", "groups"},
		RefsMany: map[string]string{"groups": "grp"}}
)

func table(spec module.Table) *snapshot.Table {
	return &snapshot.Table{Spec: spec, Mapper: fakeMapper{spec.Declarative}, Rows: map[string]*snapshot.Row{}, ByCloud: map[string]*snapshot.Row{},
		Cloud: map[string]module.Record{}, Records: map[string]snapshot.RecordState{}, RecBy: map[string]string{}, Intent: map[string]pglogrepl.LSN{},
		Seen: map[string]pglogrepl.LSN{}, Repl: map[string]*replace.Replacement{}, Retired: map[string]*replace.Replacement{}, Forced: map[string]bool{},
		Ops: map[string]snapshot.Op{}, ByToken: map[string][]string{}, Strays: map[string]snapshot.Stray{}}
}

func ids(v ...int) []any {
	out := make([]any, len(v))
	for i, n := range v {
		out[i] = json.Number(string(rune('0' + n)))
	}
	return out
}

// manySnapshot: groups 1 (g1) and 2 (g2) in sync; group 3 (g3) is a new
// row; instance 5, new, references all three. The cloud also has g0, whose row the user
// deleted (intent), and instance 6, whose row now drops g0.
func manySnapshot(t *testing.T) *snapshot.Snapshot {
	t.Helper()
	snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
	g, in := table(groupSpec), table(instSpec)
	snap.Tables, snap.ByName["grp"], snap.ByName["inst"] = []*snapshot.Table{g, in}, g, in
	for id, name := range map[string]string{"1": "g1", "2": "g2"} {
		g.Rows[id] = &snapshot.Row{ID: id, Xmin: 1, DB: module.Record{"name": name}}
		g.Cloud[name] = module.Record{"name": name}
		g.Records[id] = snapshot.RecordState{CloudID: name, Enacted: 1}
		g.RecBy[name] = id
	}
	g.Rows["3"] = &snapshot.Row{ID: "3", Xmin: 1, DB: module.Record{"name": "g3"}}
	g.Intent["3"] = 9
	g.Cloud["g0"] = module.Record{"name": "g0"}
	g.Records["4"], g.RecBy["g0"], g.Intent["4"] = snapshot.RecordState{CloudID: "g0", Enacted: 1}, "4", 9
	in.Rows["5"] = &snapshot.Row{ID: "5", Xmin: 1, DB: module.Record{"name": "i5", "groups": ids(1, 2, 3)}}
	in.Intent["5"] = 9
	in.Rows["6"] = &snapshot.Row{ID: "6", Xmin: 1, DB: module.Record{"name": "i6", "groups": ids(1)}}
	in.Cloud["i6"] = module.Record{"name": "i6", "groups": []any{"g1", "g0"}}
	in.Records["6"], in.RecBy["i6"], in.Intent["6"] = snapshot.RecordState{CloudID: "i6", Enacted: 1}, "6", 9
	for _, ts := range snap.Tables {
		if err := ts.CloudForms(snap); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestManyRefs: a column that references several records translates each
// id to its resource's cloud id and back, waits for every parent it needs,
// and a parent's delete waits for the update that stops using it.
func TestManyRefs(t *testing.T) {
	snap := manySnapshot(t)
	in := snap.ByName["inst"]
	if got := in.Rows["5"].Cloud["groups"]; !slices.Equal(got.([]any), []any{"g1", "g2", "g3"}) {
		t.Errorf("instance 5's groups in cloud form: %v, want [g1 g2 g3]", got)
	}
	if _, err := snapshot.ToCloud(instSpec, module.Record{"name": "i7", "groups": ids(1, 7)}, snap); !errors.Is(err, snapshot.ErrNoParent) {
		t.Errorf("ToCloud with a group no row is: %v, want ErrNoParent", err)
	}
	if got := in.Rows["6"].Cloud["groups"]; !slices.Equal(got.([]any), []any{"g1"}) {
		t.Errorf("instance 6's groups in cloud form: %v, want [g1]", got)
	}
	db, err := snapshot.ToDB(instSpec, module.Record{"name": "i6", "groups": []any{"g2", "g1"}}, snap)
	if err != nil || !slices.Equal(db["groups"].([]any), ids(2, 1)) {
		t.Errorf("ToDB: %v %v, want groups [2 1]", db["groups"], err)
	}
	if _, err := snapshot.ToDB(instSpec, module.Record{"name": "x", "groups": []any{"g9"}}, snap); !errors.Is(err, snapshot.ErrNoParent) {
		t.Errorf("ToDB of a group no row stands for: %v, want ErrNoParent", err)
	}

	p, err := plan.Diff(snap, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var createG3, createI5, deleteG0, updateI6 *plan.Action
	for _, a := range p.Actions {
		switch a.Table + " " + a.Action + " " + a.Direction + " " + a.CloudID {
		case "grp create cloud g3":
			createG3 = a
		case "grp delete cloud g0":
			deleteG0 = a
		case "inst update cloud i6":
			updateI6 = a
		case "inst create cloud i5":
			createI5 = a
		}
	}
	if createG3 == nil || createI5 == nil || deleteG0 == nil || updateI6 == nil {
		t.Fatalf("planned %v; want g3 and i5 created, g0 deleted, i6 updated", summarize(p.Actions))
	}
	deps := plan.Dependencies(p.Actions)
	if !slices.Contains(deps[createI5], createG3.Key) {
		t.Errorf("i5's create waits for %v; want g3's create", deps[createI5])
	}
	if !slices.Contains(deps[deleteG0], updateI6.Key) {
		t.Errorf("g0's delete waits for %v; want the update that stops i6 using it", deps[deleteG0])
	}
}

func summarize(as []*plan.Action) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.Table+" "+a.Action+" "+a.Direction+" "+a.CloudID)
	}
	return out
}

// TestDeleteWaitsForChildDeleteInFlight: a group whose row the user deleted
// is not deleted from the cloud while the delete of an instance that may
// still use it runs on (AWS answers DependencyViolation until the instance
// is terminated): an instance the read no longer shows (shutting down) may
// use any group; one it shows holds only the groups it lists. Once the
// instance's delete has ended, the group's delete is planned.
func TestDeleteWaitsForChildDeleteInFlight(t *testing.T) {
	planned := func(snap *snapshot.Snapshot) []string {
		t.Helper()
		p, err := plan.Diff(snap, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, a := range p.Actions {
			if a.Table == "grp" && a.Action == "delete" {
				out = append(out, a.CloudID)
			}
		}
		slices.Sort(out)
		return out
	}
	terminating := snapshot.Op{Action: "delete", State: snapshot.OpInProgress, Handle: "us-east-1:i-9:gone"}

	// The instance (row deleted) is no longer shown: g0's delete waits.
	snap := manySnapshot(t)
	snap.ByName["inst"].Ops["cloud i9"] = terminating
	if got := planned(snap); len(got) != 0 {
		t.Errorf("with an unseen instance terminating, group deletes planned: %v", got)
	}
	// Shown, and using g0: g0 waits; shown, not using it: g0 goes.
	for _, tc := range []struct {
		groups []any
		want   []string
	}{{[]any{"g0"}, nil}, {[]any{"g1"}, []string{"g0"}}} {
		snap := manySnapshot(t)
		in := snap.ByName["inst"]
		in.Cloud["i9"] = module.Record{"name": "i9", "groups": tc.groups}
		in.Ops["cloud i9"] = terminating
		if got := planned(snap); !slices.Equal(got, tc.want) {
			t.Errorf("instance terminating with groups %v: group deletes planned %v, want %v", tc.groups, got, tc.want)
		}
	}
	// Its delete ended (no handle): g0 goes.
	snap = manySnapshot(t)
	snap.ByName["inst"].Ops["cloud i9"] = snapshot.Op{Action: "delete", State: snapshot.OpFailed, LastError: "throttled"}
	if got := planned(snap); !slices.Equal(got, []string{"g0"}) {
		t.Errorf("after the instance's delete: group deletes planned %v, want [g0]", got)
	}
}
