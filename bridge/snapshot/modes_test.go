package snapshot_test

import (
	"testing"

	"github.com/iasql/iasql/bridge/snapshot"
)

// TestModeLookup: a record with a rule of its own has the mode SQL resolved
// for it, any other record its table's; a table is drifty when any of its
// records may be ENFORCE or TRACK. (Resolution itself is
// iasql_effective_mode's, tested in regress/sql/mode.sql.)
func TestModeLookup(t *testing.T) {
	m := snapshot.Modes{
		Tables: map[string]snapshot.Resolved{
			"bucket":        {snapshot.ModeTrack, "table rule 2 (bucket)"},
			"bucket_object": {snapshot.ModeNormal, "no rule"},
			"repository":    {snapshot.ModeNormal, "no rule"},
		},
		Records: map[snapshot.Key]snapshot.Resolved{
			snapshot.RowKey("bucket", "7"):         {snapshot.ModeNormal, "record rule 3 (bucket id 7)"},
			snapshot.RowKey("bucket_object", "9"):  {snapshot.ModeEnforce, "record rule 4 (bucket_object id 9)"},
			snapshot.RowKey("bucket_objects", "1"): {snapshot.ModeTrack, "record rule 5 (bucket_objects id 1)"},
		},
	}
	for _, tc := range []struct{ table, id, mode, rule string }{
		{"bucket", "7", snapshot.ModeNormal, "record rule 3 (bucket id 7)"},
		{"bucket", "8", snapshot.ModeTrack, "table rule 2 (bucket)"},
		{"bucket", "", snapshot.ModeTrack, "table rule 2 (bucket)"},
		{"bucket_object", "9", snapshot.ModeEnforce, "record rule 4 (bucket_object id 9)"},
		{"bucket_object", "1", snapshot.ModeNormal, "no rule"},
		{"unregistered", "1", snapshot.ModeNormal, "no rule"},
	} {
		if mode, rule := m.Of(tc.table, tc.id); mode != tc.mode || rule != tc.rule {
			t.Errorf("%s %s: %s (%s), want %s (%s)", tc.table, tc.id, mode, rule, tc.mode, tc.rule)
		}
	}
	for table, want := range map[string]bool{"bucket": true, "bucket_object": true, "repository": false, "bucket_objects": true, "bucke": false} {
		if got := m.Drifty(table); got != want {
			t.Errorf("drifty(%s) = %v, want %v", table, got, want)
		}
	}
}
