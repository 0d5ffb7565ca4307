package bridge

import "testing"

// TestModeResolution: record rule, else table rule, else database rule,
// else NORMAL; ties TRACK > NORMAL > ENFORCE.
func TestModeResolution(t *testing.T) {
	m := modeRules{tables: map[string]string{}, records: map[string]string{}, ids: map[string]string{}}
	if mode, rule := m.of("bucket", "1"); mode != modeNormal || rule != "no rule" {
		t.Errorf("no rules: %s %s", mode, rule)
	}
	m.database, m.ids[""] = modeEnforce, "1"
	m.tables["bucket"], m.ids["bucket"] = modeTrack, "2"
	m.records["bucket\x00"+"7"], m.ids["bucket\x00"+"7"] = modeNormal, "3"
	tests := []struct{ table, id, mode, rule string }{
		{"bucket", "7", modeNormal, "record rule 3"},
		{"bucket", "8", modeTrack, "table rule 2"},
		{"bucket", "", modeTrack, "table rule 2"},
		{"bucket_object", "7", modeEnforce, "database rule 1"},
	}
	for _, tc := range tests {
		if mode, rule := m.of(tc.table, tc.id); mode != tc.mode || rule != tc.rule {
			t.Errorf("%s %s: %s (%s), want %s (%s)", tc.table, tc.id, mode, rule, tc.mode, tc.rule)
		}
	}
	for _, tc := range []struct{ a, b, want string }{
		{modeEnforce, modeTrack, modeTrack}, {modeNormal, modeEnforce, modeNormal}, {modeTrack, modeNormal, modeTrack},
	} {
		if tieRank(tc.a) < tieRank(tc.b) != (tc.a == tc.want) {
			t.Errorf("tie between %s and %s should go to %s", tc.a, tc.b, tc.want)
		}
	}
}
