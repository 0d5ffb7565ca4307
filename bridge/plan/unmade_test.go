package plan_test

import (
	"strings"
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// Tables like vpc and instance: identities the cloud generates, the
// instance referencing its network.
var (
	unmadeLanSpec  = module.Table{Name: "net", CloudID: []string{"net_id"}, Declarative: []string{"cidr"}, Feedback: []string{"net_id"}}
	unmadeHostSpec = module.Table{Name: "host", CloudID: []string{"host_id"}, Declarative: []string{"net"}, Feedback: []string{"host_id"},
		Refs: map[string]string{"net": "net"}}
)

// TestUnmadeRows: a row that references a row never made in the cloud is
// deleted with it when neither is to be made (no intent, or intent a
// rollback discards), children first, or restored from its record's
// resource; it waits while its parent is to be created.
func TestUnmadeRows(t *testing.T) {
	rollback := plan.Options{Discard: true, DiscardAfter: 5, DiscardUpTo: 20}
	for _, tc := range []struct {
		name string
		opt  plan.Options
		// parentIntent, hostIntent: the rows' newest pending change (0: none).
		parentIntent, hostIntent uint64
		// hostHad: the cloud resource the host's record stands for ("": none).
		hostHad string
		want    string // the actions, in execution order
	}{
		{"rolled back together", rollback, 10, 10, "", "delete database host 2; delete database net 1"},
		{"host rolled back, net without intent", rollback, 0, 10, "", "delete database host 2; delete database net 1"},
		{"host had a resource", rollback, 10, 10, "h-1", "update database host 2; delete database net 1"},
		{"changes after the rollback's read are intent", rollback, 30, 30, "", "create cloud net 1"},
		{"a commit creates both", plan.Options{}, 10, 10, "", "create cloud net 1"},
		{"a host without intent waits for a net to create", plan.Options{}, 10, 0, "", "create cloud net 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
			n, h := table(unmadeLanSpec), table(unmadeHostSpec)
			snap.Tables, snap.ByName["net"], snap.ByName["host"] = []*snapshot.Table{n, h}, n, h
			n.Rows["1"] = &snapshot.Row{ID: "1", Xmin: 1, DB: module.Record{"cidr": "10.0.0.0/16"}}
			h.Rows["2"] = &snapshot.Row{ID: "2", Xmin: 1, DB: module.Record{"net": ids(1)[0]}}
			if tc.parentIntent != 0 {
				n.Intent["1"] = pglogrepl.LSN(tc.parentIntent)
			}
			if tc.hostIntent != 0 {
				h.Intent["2"] = pglogrepl.LSN(tc.hostIntent)
			}
			if tc.hostHad != "" {
				// Its network is another, made long ago and not read here.
				h.Cloud[tc.hostHad] = module.Record{"host_id": tc.hostHad}
				h.Records["2"], h.RecBy[tc.hostHad] = snapshot.RecordState{CloudID: tc.hostHad, Enacted: 1}, "2"
			}
			for _, ts := range snap.Tables {
				if err := ts.CloudForms(snap); err != nil {
					t.Fatal(err)
				}
			}
			p, err := plan.Diff(snap, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			plan.Order(p.Actions, map[string]int{"net": 0, "host": 1})
			var got []string
			for _, a := range p.Actions {
				got = append(got, a.Action+" "+a.Direction+" "+a.Table+" "+a.ID)
			}
			if s := strings.Join(got, "; "); s != tc.want {
				t.Errorf("planned %q, want %q", s, tc.want)
			}
		})
	}
}
