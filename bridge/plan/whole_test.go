package plan_test

import (
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// wholeFwSpec: a firewall named within its network (an identity that
// holds its parent's, like a security group's), referencing a net.
var wholeFwSpec = module.Table{Name: "fw", CloudID: []string{"name", "net"}, Declarative: []string{"name", "net"}, Refs: map[string]string{"net": "net"}}

// TestWhole: a preview plans every pass of the cycle: what waits for a
// parent's create (or import) comes in the next pass, waiting for it,
// with the identity the cloud has not given yet not known; deletes go
// children first in one pass. The snapshot is left as read.
func TestWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		// rows: "table id" -> the row (net 1, fw 3, host 2), with pending
		// intent;
		// cloud: table -> resources only in the cloud; gone: table -> the
		// records whose rows the user deleted (id -> their resource).
		rows  map[string]module.Record
		cloud map[string][]module.Record
		gone  map[string]map[string]string
		want  string // step, action, waits for; one line each
	}{
		{name: "creates, parents first", rows: map[string]module.Record{
			"net 1": {"cidr": "10.0.0.0/16"}, "fw 3": {"name": "web", "net": ids(1)[0]}, "host 2": {"net": ids(1)[0]}},
			want: `1 create cloud net 1 () create net  in the cloud []
2 create cloud fw 3 (["web","(not known yet: net 1)"]) create fw ["web","(not known yet: net 1)"] in the cloud; not known yet: net (net 1) [create net 1]
2 create cloud host 2 () create host  in the cloud; not known yet: net (net 1) [create net 1]`},
		{name: "imports, parents first", cloud: map[string][]module.Record{
			"net": {{"net_id": "n-1", "cidr": "10.0.0.0/16"}}, "host": {{"host_id": "h-1", "net": "n-1"}}},
			want: `1 create database net  (n-1) import net n-1 from the cloud []
2 create database host  (h-1) import host h-1 from the cloud [create net n-1]`},
		{name: "deletes, children first, in one pass", gone: map[string]map[string]string{"net": {"1": "n-1"}, "host": {"2": "h-1"}}, cloud: map[string][]module.Record{
			"net": {{"net_id": "n-1", "cidr": "10.0.0.0/16"}}, "host": {{"host_id": "h-1", "net": "n-1"}}},
			want: `1 delete cloud host 2 (h-1) delete host h-1 from the cloud []
1 delete cloud net 1 (n-1) delete net n-1 from the cloud [delete host 2]`},
		{name: "in sync: nothing", rows: map[string]module.Record{"net 1": {"net_id": "n-1", "cidr": "10.0.0.0/16"}}, cloud: map[string][]module.Record{
			"net": {{"net_id": "n-1", "cidr": "10.0.0.0/16"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
			for _, spec := range []module.Table{unmadeLanSpec, wholeFwSpec, unmadeHostSpec} {
				ts := table(spec)
				snap.Tables, snap.ByName[spec.Name] = append(snap.Tables, ts), ts
			}
			for key, rec := range tc.rows {
				table, id, _ := strings.Cut(key, " ")
				ts := snap.ByName[table]
				ts.Rows[id] = &snapshot.Row{ID: id, Xmin: 1, DB: rec}
				ts.Intent[id] = pglogrepl.LSN(10)
			}
			for table, recs := range tc.cloud {
				snap.ByName[table].AddCloud(recs)
			}
			for table, gone := range tc.gone {
				ts := snap.ByName[table]
				for id, cid := range gone {
					ts.Records[id], ts.RecBy[cid], ts.Intent[id] = snapshot.RecordState{CloudID: cid, Enacted: 1}, id, 10
				}
			}
			for _, ts := range snap.Tables {
				if err := ts.CloudForms(snap); err != nil {
					t.Fatal(err)
				}
			}
			actions, err := plan.Whole(snap, plan.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, a := range actions {
				got = append(got, strings.Join([]string{
					string(rune('0' + a.Step)), a.Action, a.Direction, a.Table, a.ID, "(" + a.CloudID + ")", a.Description,
					"[" + strings.Join(a.WaitsFor, ", ") + "]"}, " "))
			}
			if s := strings.Join(got, "\n"); s != tc.want {
				t.Errorf("planned:\n%s\nwant:\n%s", s, tc.want)
			}
			// The read is left as it was: what waits has no cloud form.
			if r := snap.ByName["host"].Rows["2"]; r != nil && (r.Cloud != nil || snap.ByName["net"].Rows["1"].CloudID != "") {
				t.Errorf("Whole changed the snapshot: host 2 in cloud form %v", r.Cloud)
			}
		})
	}
}
