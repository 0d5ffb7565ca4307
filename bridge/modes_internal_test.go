package bridge

import "testing"

// TestModeLookup: a record with a rule of its own has the mode SQL resolved
// for it, any other record its table's; a table is drifty when any of its
// records may be ENFORCE or TRACK. (Resolution itself is
// iasql_effective_mode's, tested in regress/sql/mode.sql.)
func TestModeLookup(t *testing.T) {
	m := modeRules{
		tables: map[string]resolved{
			"bucket":        {modeTrack, "table rule 2 (bucket)"},
			"bucket_object": {modeNormal, "no rule"},
			"repository":    {modeNormal, "no rule"},
		},
		records: map[string]resolved{
			"bucket\x007":         {modeNormal, "record rule 3 (bucket id 7)"},
			"bucket_object\x009":  {modeEnforce, "record rule 4 (bucket_object id 9)"},
			"bucket_objects\x001": {modeTrack, "record rule 5 (bucket_objects id 1)"},
		},
	}
	for _, tc := range []struct{ table, id, mode, rule string }{
		{"bucket", "7", modeNormal, "record rule 3 (bucket id 7)"},
		{"bucket", "8", modeTrack, "table rule 2 (bucket)"},
		{"bucket", "", modeTrack, "table rule 2 (bucket)"},
		{"bucket_object", "9", modeEnforce, "record rule 4 (bucket_object id 9)"},
		{"bucket_object", "1", modeNormal, "no rule"},
		{"unregistered", "1", modeNormal, "no rule"},
	} {
		if mode, rule := m.of(tc.table, tc.id); mode != tc.mode || rule != tc.rule {
			t.Errorf("%s %s: %s (%s), want %s (%s)", tc.table, tc.id, mode, rule, tc.mode, tc.rule)
		}
	}
	for table, want := range map[string]bool{"bucket": true, "bucket_object": true, "repository": false, "bucket_objects": true, "bucke": false} {
		if got := m.drifty(table); got != want {
			t.Errorf("drifty(%s) = %v, want %v", table, got, want)
		}
	}
}
