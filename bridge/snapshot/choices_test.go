package snapshot_test

import (
	"testing"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// TestUnfinished: a create's resource needs finishing only where it
// differs from the row in a value the row set: a create-only name the row
// left NULL is the cloud's choice, taken into what the finishing update
// wants, never a difference.
func TestUnfinished(t *testing.T) {
	ts := &snapshot.Table{Spec: module.Table{Name: "queue", CloudID: []string{"url"}, Declarative: []string{"name", "size"},
		Feedback: []string{"url"}, CreateOnly: []string{"name"}}}
	for _, tc := range []struct {
		name       string
		row, got   module.Record
		want       module.Record
		unfinished bool
	}{
		{"as the row says", module.Record{"name": "jobs", "size": "1"}, module.Record{"url": "u1", "name": "jobs", "size": "1"},
			module.Record{"name": "jobs", "size": "1"}, false},
		{"a generated name", module.Record{"size": "1"}, module.Record{"url": "u1", "name": "Queue-X", "size": "1"},
			module.Record{"name": "Queue-X", "size": "1"}, false},
		{"half made", module.Record{"size": "2"}, module.Record{"url": "u1", "name": "Queue-X", "size": "1"},
			module.Record{"name": "Queue-X", "size": "2"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, unfinished := ts.Unfinished(tc.row, tc.got)
			if unfinished != tc.unfinished || !module.SameColumns([]string{"name", "size"}, want, tc.want) {
				t.Errorf("Unfinished = %v, %v; want %v, %v", want, unfinished, tc.want, tc.unfinished)
			}
		})
	}
}
