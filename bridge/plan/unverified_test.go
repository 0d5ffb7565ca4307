package plan_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// fakeMapper compares declarative columns; the diff never calls the rest.
type fakeMapper struct{ cols []string }

func (m fakeMapper) Read(context.Context, module.Call) ([]module.Record, error) { return nil, nil }
func (m fakeMapper) Create(context.Context, module.Call, module.Record) (module.Record, error) {
	return nil, nil
}
func (m fakeMapper) Update(context.Context, module.Call, module.Record, module.Record) (module.Record, error) {
	return nil, nil
}
func (m fakeMapper) Delete(context.Context, module.Call, module.Record) error { return nil }
func (m fakeMapper) Equal(db, cloud module.Record) bool {
	return len(module.Table{}.Differing(m.cols, db, cloud)) == 0
}

// Two tables like vpc and subnet: net (regional, identity name) and sub
// (a child of net; its rows have no region column, its cloud records say
// it, like bucket_object).
var (
	netSpec = module.Table{Name: "net", CloudID: []string{"name"}, Declarative: []string{"name", "region"}, Region: "region"}
	subSpec = module.Table{Name: "sub", CloudID: []string{"net_id", "name"}, Declarative: []string{"net_id", "name"},
		Refs: map[string]string{"net_id": "net"}, Region: "region"}
)

// outageSnapshot is a snapshot of net and sub where both regions r1 and r2
// have a net row not in the cloud (deleted by others), a net in the cloud
// without a row, a sub row not in the cloud and a sub in the cloud without
// a row; net row 5 in r2 and net row 6 in r1 have pending intent (to
// create). unverified sets what the reads left unverified, by table.
func outageSnapshot(t *testing.T, unverified map[string]map[string]error) *snapshot.Snapshot {
	t.Helper()
	rec := func(kv ...string) module.Record {
		r := module.Record{}
		for i := 0; i+1 < len(kv); i += 2 {
			r[kv[i]] = kv[i+1]
		}
		return r
	}
	snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
	for _, spec := range []module.Table{netSpec, subSpec} {
		ts := &snapshot.Table{Spec: spec, Mapper: fakeMapper{spec.Declarative}, Rows: map[string]*snapshot.Row{}, ByCloud: map[string]*snapshot.Row{},
			Cloud: map[string]module.Record{}, Records: map[string]snapshot.RecordState{}, RecBy: map[string]string{}, Intent: map[string]pglogrepl.LSN{},
			Seen: map[string]pglogrepl.LSN{}, Repl: map[string]*replace.Replacement{}, Retired: map[string]*replace.Replacement{}, Forced: map[string]bool{},
			Ops: map[string]snapshot.Op{}, ByToken: map[string][]string{}, Strays: map[string]snapshot.Stray{}, Unverified: unverified[spec.Name]}
		snap.Tables = append(snap.Tables, ts)
		snap.ByName[spec.Name] = ts
	}
	net, sub := snap.ByName["net"], snap.ByName["sub"]
	addRow := func(ts *snapshot.Table, id string, db module.Record, known bool) {
		ts.Rows[id] = &snapshot.Row{ID: id, Xmin: 1, DB: db}
		if known {
			ts.Records[id] = snapshot.RecordState{CloudID: module.CloudIDOf(ts.Spec, db), Enacted: 1}
		}
	}
	// Rows in sync (their parents of sub rows), both regions.
	addRow(net, "1", rec("name", "n1", "region", "r1"), true)
	addRow(net, "2", rec("name", "n2", "region", "r2"), true)
	net.Cloud["n1"], net.Cloud["n2"] = rec("name", "n1", "region", "r1"), rec("name", "n2", "region", "r2")
	// Deleted from the cloud by others (rows 3, 4); to create (5, 6).
	addRow(net, "3", rec("name", "n3", "region", "r1"), true)
	addRow(net, "4", rec("name", "n4", "region", "r2"), true)
	addRow(net, "5", rec("name", "n5", "region", "r2"), false)
	addRow(net, "6", rec("name", "n6", "region", "r1"), false)
	net.Intent["5"], net.Intent["6"] = 10, 10
	// Made in the cloud by others.
	net.Cloud["m1"], net.Cloud["m2"] = rec("name", "m1", "region", "r1"), rec("name", "m2", "region", "r2")
	// Children: rows whose resource is gone, resources without a row.
	addRow(sub, "1", module.Record{"net_id": "1", "name": "s1"}, true)
	addRow(sub, "2", module.Record{"net_id": "2", "name": "s2"}, true)
	sub.Cloud[`["n1","t1"]`] = rec("net_id", "n1", "name", "t1", "region", "r1")
	sub.Cloud[`["n2","t2"]`] = rec("net_id", "n2", "name", "t2", "region", "r2")
	for _, ts := range snap.Tables {
		if err := ts.CloudForms(snap); err != nil {
			t.Fatal(err)
		}
	}
	return snap
}

// TestDiffUnverified: in a region (or table) whose reads failed, and in
// its children, nothing is planned: no row deleted, nothing imported or
// created; the records with intent there are held, naming the part and
// the error. The rest is planned as usual.
func TestDiffUnverified(t *testing.T) {
	denied := errors.New("AuthFailure: AWS was not able to validate the provided access credentials")
	all := []string{
		"delete database net 3", "delete database net 4", "create cloud net 5", "create cloud net 6",
		"create database net m1", "create database net m2",
		"delete database sub 1", "delete database sub 2",
		`create database sub ["n1","t1"]`, `create database sub ["n2","t2"]`,
	}
	without := func(drop ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(s string) bool { return slices.Contains(drop, s) })
	}
	r2 := without("delete database net 4", "create cloud net 5", "create database net m2", "delete database sub 2", `create database sub ["n2","t2"]`)
	cases := []struct {
		name       string
		unverified map[string]map[string]error
		want       []string
		held       []string // records held, as "table id"
	}{
		{"everything read", nil, all, nil},
		{"a region of the parent table", map[string]map[string]error{"net": {"r2": denied}}, r2, []string{"net 5"}},
		{"the same region of the child table only", map[string]map[string]error{"sub": {"r2": denied}},
			without("delete database sub 2", `create database sub ["n2","t2"]`), nil},
		{"the whole parent table", map[string]map[string]error{"net": {snapshot.WholeTable: denied}}, nil, []string{"net 5", "net 6"}},
		{"the whole child table", map[string]map[string]error{"sub": {snapshot.WholeTable: denied}},
			without("delete database sub 1", "delete database sub 2", `create database sub ["n1","t1"]`, `create database sub ["n2","t2"]`), nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			snap := outageSnapshot(t, tc.unverified)
			p, err := plan.Diff(snap, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range p.Actions {
				got = append(got, a.Action+" "+a.Direction+" "+a.Table+" "+cmp.Or(a.ID, a.CloudID))
			}
			slices.Sort(got)
			want := slices.Sorted(slices.Values(tc.want))
			if !slices.Equal(got, want) {
				t.Errorf("actions:\n got %q\nwant %q", got, want)
			}
			for _, e := range p.Enact {
				if e.Table == "net" && e.ID == "2" && tc.unverified["net"] != nil {
					t.Errorf("enacted net 2 in an unverified part")
				}
			}
			held := snap.Held()
			if len(held) != len(tc.held) {
				t.Fatalf("held %q, want %v", held, tc.held)
			}
			for i, h := range held {
				if !strings.HasPrefix(h, tc.held[i]+" ") || !strings.Contains(h, "AuthFailure") {
					t.Errorf("held %q, want %s with its error", h, tc.held[i])
				}
			}
		})
	}
}
