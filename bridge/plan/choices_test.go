package plan_test

import (
	"slices"
	"testing"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// Queues (a create-only name the cloud generates when left out, an
// identity the cloud generates) and hosts (a subnet and groups the cloud
// chooses when left out) for the cloud's choices (snapshot.TakeChoices).
var (
	queueSpec = module.Table{Name: "queue", CloudID: []string{"url"}, Declarative: []string{"name", "size"}, Feedback: []string{"url"},
		CreateOnly: []string{"name"}}
	hostSpec = module.Table{Name: "host", CloudID: []string{"hid"}, Declarative: []string{"net", "groups"}, Feedback: []string{"hid"},
		Refs: map[string]string{"net": "grp"}, RefsMany: map[string]string{"groups": "grp"}}
)

// TestCloudChoices: a create-only column or a reference the row leaves
// NULL takes the cloud's value: the record is in sync but for a write of
// that value into the row, never a replacement; a reference to a resource
// that has no row yet is written once its row exists (imported in this
// pass, written in the next); an explicit value is compared as the user's.
func TestCloudChoices(t *testing.T) {
	type want struct {
		actions []string
		fill    []string
	}
	for _, tc := range []struct {
		name   string
		table  module.Table
		row    module.Record
		cloud  module.Record
		groups []string // grp rows (names); the cloud has g1, g2 and g3 (imported)
		want   want     // the planned actions of the table's row, and its fills
	}{
		{"generated name", queueSpec, module.Record{"url": "u1", "size": "1"}, module.Record{"url": "u1", "name": "Queue-X", "size": "1"}, nil,
			want{[]string{"queue update database u1"}, []string{"name"}}},
		{"explicit name", queueSpec, module.Record{"url": "u1", "name": "jobs", "size": "1"}, module.Record{"url": "u1", "name": "Queue-X", "size": "1"}, nil,
			want{[]string{"queue replace cloud u1"}, nil}},
		{"name set, size changed", queueSpec, module.Record{"url": "u1", "size": "2"}, module.Record{"url": "u1", "name": "Queue-X", "size": "1"}, nil,
			want{[]string{"queue update cloud u1"}, []string{"name"}}},
		{"default subnet and group", hostSpec, module.Record{"hid": "h1", "groups": []any{}}, module.Record{"hid": "h1", "net": "g1", "groups": []any{"g2"}},
			[]string{"g1", "g2"}, want{[]string{"host update database h1"}, []string{"net", "groups"}}},
		{"group not yet a row", hostSpec, module.Record{"hid": "h1", "groups": []any{}}, module.Record{"hid": "h1", "net": "g1", "groups": []any{"g2", "g3"}},
			[]string{"g1", "g2"}, want{[]string{"host update database h1"}, []string{"net"}}},
		{"subnet not yet a row", hostSpec, module.Record{"hid": "h1", "groups": []any{}}, module.Record{"hid": "h1", "net": "g3", "groups": []any{}},
			[]string{"g1", "g2"}, want{nil, nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
			g, ts := table(groupSpec), table(tc.table)
			snap.Tables, snap.ByName["grp"], snap.ByName[tc.table.Name] = []*snapshot.Table{g, ts}, g, ts
			for _, name := range []string{"g1", "g2", "g3"} {
				g.Cloud[name] = module.Record{"name": name}
			}
			for i, name := range tc.groups {
				id := string(rune('1' + i))
				g.Rows[id] = &snapshot.Row{ID: id, Xmin: 1, DB: module.Record{"name": name}}
				g.Records[id], g.RecBy[name] = snapshot.RecordState{CloudID: name, Enacted: 1}, id
			}
			cid := module.CloudIDOf(tc.table, tc.cloud)
			ts.Rows["7"] = &snapshot.Row{ID: "7", Xmin: 1, DB: tc.row}
			ts.Cloud[cid] = tc.cloud
			ts.Records["7"], ts.RecBy[cid], ts.Intent["7"] = snapshot.RecordState{CloudID: cid}, "7", 9
			for _, x := range snap.Tables {
				if err := x.CloudForms(snap); err != nil {
					t.Fatal(err)
				}
				x.TakeChoices(snap)
			}
			p, err := plan.Diff(snap, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range p.Actions {
				if a.Table == tc.table.Name {
					got = append(got, a.Table+" "+a.Action+" "+a.Direction+" "+a.CloudID)
				}
			}
			if !slices.Equal(got, tc.want.actions) {
				t.Errorf("planned %v, want %v", got, tc.want.actions)
			}
			if got := ts.Rows["7"].Fill; !slices.Equal(got, tc.want.fill) {
				t.Errorf("fills %v, want %v", got, tc.want.fill)
			}
		})
	}
}
