package plan_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// launchSpec is a table whose identity the cloud generates (iid) and
// whose resources say when they were made (launched).
var launchSpec = module.Table{Name: "inst", CloudID: []string{"iid"}, Declarative: []string{"name"},
	Feedback: []string{"iid", "launched"}, Created: "launched"}

// TestStraysOfOneClientToken: of the resources one create's client token
// made more than once (an endpoint that ignored the token), the one a row
// holds is kept, else the one its record knew, else the oldest (then the
// least id); every other one is deleted from the cloud, named with the
// token and what is kept, and none is imported as a row.
func TestStraysOfOneClientToken(t *testing.T) {
	const tok = "tok-1"
	// The cloud: i-a launched last, i-b first, i-c between; all tok's.
	cloud := map[string]string{"i-a": "2026-01-01T00:00:03Z", "i-b": "2026-01-01T00:00:01Z", "i-c": "2026-01-01T00:00:02.5Z"}
	for _, tc := range []struct {
		name string
		// setup adds rows, records, operations and intent.
		setup func(ts *snapshot.Table)
		// want: the plan's actions, as "action direction cloud_id".
		want []string
		// kept: the resources kept.
		kept string
	}{
		{"a row yet to be identified adopts the oldest", func(ts *snapshot.Table) {
			ts.Rows["3"] = &snapshot.Row{ID: "3", Xmin: 1, DB: module.Record{"name": "web"}}
			ts.Ops["3"] = snapshot.Op{Action: "create", State: snapshot.OpInProgress, Token: tok}
			ts.Intent["3"], ts.Seen["3"] = 9, 9
		}, []string{"delete cloud i-a", "delete cloud i-c", "update database i-b"}, "i-b"},
		{"a row holds one: it keeps it", func(ts *snapshot.Table) {
			ts.Rows["3"] = &snapshot.Row{ID: "3", Xmin: 1, DB: module.Record{"name": "web", "iid": "i-a", "launched": cloud["i-a"]}}
			ts.Records["3"], ts.RecBy["i-a"] = snapshot.RecordState{CloudID: "i-a", Enacted: 1}, "3"
		}, []string{"delete cloud i-b", "delete cloud i-c"}, "i-a"},
		{"the user deleted the row: its resource is deleted as the user asked", func(ts *snapshot.Table) {
			ts.Records["3"], ts.RecBy["i-c"] = snapshot.RecordState{CloudID: "i-c", Enacted: 1}, "3"
			ts.Intent["3"], ts.Seen["3"] = 9, 9
		}, []string{"delete cloud i-a", "delete cloud i-b", "delete cloud i-c"}, "i-c"},
		{"no row, no record: the oldest is imported", func(*snapshot.Table) {},
			[]string{"create database i-b", "delete cloud i-a", "delete cloud i-c"}, "i-b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
			ts := table(launchSpec)
			snap.Tables, snap.ByName["inst"] = []*snapshot.Table{ts}, ts
			var recs []module.Record
			for id, at := range cloud {
				recs = append(recs, module.Record{"iid": id, "name": "web", "launched": at, module.TokenTag: tok})
			}
			ts.AddCloud(recs)
			tc.setup(ts)
			if err := ts.CloudForms(snap); err != nil {
				t.Fatal(err)
			}
			ts.MarkStrays()
			p, err := plan.Diff(snap, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range p.Actions {
				got = append(got, a.Action+" "+a.Direction+" "+a.CloudID)
				if a.Stray != nil && (!strings.Contains(a.Description, tok) || !strings.Contains(a.Description, "kept "+tc.kept)) {
					t.Errorf("the delete of %s says %q: it must name the token and the resource kept (%s)", a.CloudID, a.Description, tc.kept)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("planned %q, want %q", got, tc.want)
			}
		})
	}
}
