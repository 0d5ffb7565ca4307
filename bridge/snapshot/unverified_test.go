package snapshot

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

var netSpec = module.Table{Name: "net", CloudID: []string{"name"}, Declarative: []string{"name", "region"}, Region: "region"}

// TestReadFailed: a cancelled read fails the cycle; a partial read keeps
// the records of the regions that worked; any other failure leaves the
// whole table unverified.
func TestReadFailed(t *testing.T) {
	denied := errors.New("AuthFailure")
	recs := []module.Record{{"name": "a", "region": "r1"}, {"name": "b", "region": "r2"}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	cases := []struct {
		name       string
		ctx        context.Context
		err        error
		fails      bool
		kept       int
		unverified []string
	}{
		{"partial", context.Background(), module.Partial(map[string]error{"r2": denied}), false, 1, []string{"r2"}},
		{"whole", context.Background(), denied, false, 0, []string{WholeTable}},
		{"cancelled", cancelled, context.Canceled, true, 0, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := &Table{Spec: netSpec}
			got, err := ts.readFailed(tc.ctx, slices.Clone(recs), tc.err)
			if (err != nil) != tc.fails || len(got) != tc.kept {
				t.Errorf("readFailed: %d records, %v; want %d, failing %v", len(got), err, tc.kept, tc.fails)
			}
			if regions := slices.Sorted(maps.Keys(ts.Unverified)); !slices.Equal(regions, tc.unverified) {
				t.Errorf("unverified %q, want %q", regions, tc.unverified)
			}
		})
	}
}
