package bridge

import (
	"testing"

	"github.com/jackc/pglogrepl"

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
	columns := []column{{"", true}, {"", false}, {modeEnforce, false}, {modeEnforce, true}, {modeTrack, false}, {modeTrack, true}}
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
				snap := &snapshot{byName: map[string]*tableState{}, modes: modeRules{tables: map[string]resolved{}, records: map[string]resolved{}}}
				if col.mode != "" {
					snap.modes.tables["thing"] = resolved{col.mode, "table rule 1 (thing)"}
				}
				ts := &tableState{spec: spec, mapper: fakeMapper{spec.Declarative}, rows: map[string]*row{}, byCloud: map[string]*row{},
					cloud: map[string]module.Record{}, records: map[string]record{"7": {cloudID: "x", enacted: 1}}, recBy: map[string]string{"x": "7"},
					intent: map[string]pglogrepl.LSN{}, seen: map[string]pglogrepl.LSN{}, repl: map[string]*replacement{}, retired: map[string]*replacement{},
					forced: map[string]bool{}, ops: map[string]op{}, byToken: map[string][]string{}, strays: map[string]string{}}
				snap.tables, snap.byName["thing"] = []*tableState{ts}, ts
				if col.intent {
					ts.intent["7"], ts.seen["7"] = 5, 5
				}
				switch difference {
				case onlyRow:
					ts.rows["7"] = &row{id: "7", xmin: "1", db: module.Record{"name": "x", "size": "1"}}
				case onlyCloud:
					ts.cloud["x"] = module.Record{"name": "x", "size": "1"}
				case differ:
					ts.rows["7"] = &row{id: "7", xmin: "1", db: module.Record{"name": "x", "size": "1"}}
					ts.cloud["x"] = module.Record{"name": "x", "size": "2"}
				}
				if err := ts.cloudForms(snap); err != nil {
					t.Fatal(err)
				}
				p, err := diff(snap, options{})
				if err != nil {
					t.Fatal(err)
				}
				if len(p.actions) != 1 {
					t.Fatalf("planned %d actions, want 1 (%s)", len(p.actions), actions[i])
				}
				if got := p.actions[0].Action + " " + p.actions[0].Direction; got != actions[i] {
					t.Errorf("planned %q, want %q", got, actions[i])
				}
			})
		}
	}
}
