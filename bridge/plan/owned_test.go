package plan_test

import (
	"slices"
	"testing"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// TestOwned: which columns column rules take from the cloud, and which
// they push to it, by the record's direction and intent.
func TestOwned(t *testing.T) {
	spec := module.Table{Name: "instance", CloudID: []string{"instance_id"}, Declarative: []string{"instance_type", "state", "tags"}, Feedback: []string{"instance_id"}}
	rule := func(m string) snapshot.Resolved { return snapshot.Resolved{Mode: m, Rule: "column rule 1"} }
	for _, tc := range []struct {
		name            string
		rules           map[string]snapshot.Resolved
		toCloud, intent bool
		taken, enforced []string
	}{
		{"ENFORCE record, TRACK tags: tags come from the cloud", map[string]snapshot.Resolved{"tags": rule(snapshot.ModeTrack)}, true, false, []string{"tags"}, nil},
		{"NORMAL with intent, TRACK tags: tags still the cloud's", map[string]snapshot.Resolved{"tags": rule(snapshot.ModeTrack)}, true, true, []string{"tags"}, nil},
		{"NORMAL without intent, ENFORCE state: state pushed, the rest taken", map[string]snapshot.Resolved{"state": rule(snapshot.ModeEnforce)}, false, false, []string{"instance_type", "tags"}, []string{"state"}},
		{"TRACK record, TRACK tags: the same way, nothing to split", map[string]snapshot.Resolved{"tags": rule(snapshot.ModeTrack)}, false, false, nil, nil},
		{"ENFORCE record, ENFORCE state: the same way", map[string]snapshot.Resolved{"state": rule(snapshot.ModeEnforce)}, true, false, nil, nil},
		{"NORMAL column in an ENFORCE record, no intent: taken", map[string]snapshot.Resolved{"tags": rule(snapshot.ModeNormal)}, true, false, []string{"tags"}, nil},
		{"NORMAL column in an ENFORCE record, with intent: pushed like the record", map[string]snapshot.Resolved{"tags": rule(snapshot.ModeNormal)}, true, true, nil, nil},
		{"a rule on the identity is ignored", map[string]snapshot.Resolved{"instance_id": rule(snapshot.ModeTrack)}, true, false, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			taken, enforced := plan.Owned(spec, tc.rules, tc.toCloud, tc.intent)
			if !slices.Equal(taken, tc.taken) || !slices.Equal(enforced, tc.enforced) {
				t.Errorf("taken %v, enforced %v; want %v, %v", taken, enforced, tc.taken, tc.enforced)
			}
		})
	}
}
