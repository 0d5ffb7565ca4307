package plan_test

import (
	"testing"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// TestDirectionTable: the direction table of DESIGN.md, as data, against
// the planner alone (a snapshot in memory, no PostgreSQL, no cloud): for
// each kind of difference, mode and intent, the action planned.
func TestDirectionTable(t *testing.T) {
	const (
		onlyRow   = "row only in database"
		onlyCloud = "resource only in cloud"
		differ    = "both, different"
	)
	// want[difference][column]: the columns are DESIGN.md's.
	type column struct {
		mode   string // "" for no rule (NORMAL)
		intent bool
	}
	columns := []column{{"", true}, {"", false}, {snapshot.ModeEnforce, false}, {snapshot.ModeEnforce, true}, {snapshot.ModeTrack, false}, {snapshot.ModeTrack, true}}
	want := map[string][]string{
		onlyRow:   {"create cloud", "delete database", "create cloud", "create cloud", "delete database", "delete database"},
		onlyCloud: {"delete cloud", "create database", "delete cloud", "delete cloud", "create database", "create database"},
		differ:    {"update cloud", "update database", "update cloud", "update cloud", "update database", "update database"},
	}
	spec := module.Table{Name: "thing", CloudID: []string{"name"}, Declarative: []string{"name", "size"}}
	for difference, actions := range want {
		for i, col := range columns {
			name := difference + ", mode " + col.mode
			if col.intent {
				name += ", with intent"
			}
			t.Run(name, func(t *testing.T) {
				snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{}, Modes: snapshot.Modes{Tables: map[string]snapshot.Resolved{}, Records: map[snapshot.Key]snapshot.Resolved{}}}
				if col.mode != "" {
					snap.Modes.Tables["thing"] = snapshot.Resolved{Mode: col.mode, Rule: "table rule 1 (thing)"}
				}
				ts := &snapshot.Table{Spec: spec, Mapper: fakeMapper{spec.Declarative}, Rows: map[string]*snapshot.Row{}, ByCloud: map[string]*snapshot.Row{},
					Cloud: map[string]module.Record{}, Records: map[string]snapshot.RecordState{"7": {CloudID: "x", Enacted: 1}}, RecBy: map[string]string{"x": "7"},
					Intent: map[string]pglogrepl.LSN{}, Seen: map[string]pglogrepl.LSN{}, Repl: map[string]*replace.Replacement{}, Retired: map[string]*replace.Replacement{},
					Forced: map[string]bool{}, Ops: map[string]snapshot.Op{}, ByToken: map[string][]string{}, Strays: map[string]snapshot.Stray{}}
				snap.Tables, snap.ByName["thing"] = []*snapshot.Table{ts}, ts
				if col.intent {
					ts.Intent["7"], ts.Seen["7"] = 5, 5
				}
				switch difference {
				case onlyRow:
					ts.Rows["7"] = &snapshot.Row{ID: "7", Xmin: 1, DB: module.Record{"name": "x", "size": "1"}}
				case onlyCloud:
					ts.Cloud["x"] = module.Record{"name": "x", "size": "1"}
				case differ:
					ts.Rows["7"] = &snapshot.Row{ID: "7", Xmin: 1, DB: module.Record{"name": "x", "size": "1"}}
					ts.Cloud["x"] = module.Record{"name": "x", "size": "2"}
				}
				if err := ts.CloudForms(snap); err != nil {
					t.Fatal(err)
				}
				p, err := plan.Diff(snap, plan.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Actions) != 1 {
					t.Fatalf("planned %d actions, want 1 (%s)", len(p.Actions), actions[i])
				}
				if got := p.Actions[0].Action + " " + p.Actions[0].Direction; got != actions[i] {
					t.Errorf("planned %q, want %q", got, actions[i])
				}
			})
		}
	}
}
