package module_test

import (
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// TestSplitCloudID: SplitCloudID reads back what CloudIDOf renders, and
// tells an identity no record could have.
func TestSplitCloudID(t *testing.T) {
	one := module.Table{CloudID: []string{"name"}}
	two := module.Table{CloudID: []string{"region", "name"}}
	cases := []struct {
		name string
		id   string
		n    int
		want []string
		ok   bool
	}{
		{"one column", module.CloudIDOf(one, module.Record{"name": `a"b`}), 1, []string{`a"b`}, true},
		{"two columns", module.CloudIDOf(two, module.Record{"region": "eu-west-1", "name": "team/api"}), 2, []string{"eu-west-1", "team/api"}, true},
		{"a NULL part", module.CloudIDOf(two, module.Record{"name": "x"}), 2, []string{"", "x"}, true},
		{"not JSON", "eu-west-1/x", 2, nil, false},
		{"too few parts", `["eu-west-1"]`, 2, nil, false},
		{"too many parts", `["a","b","c"]`, 2, nil, false},
		{"not strings", `[1,2]`, 2, nil, false},
	}
	for _, tc := range cases {
		got, ok := module.SplitCloudID(tc.id, tc.n)
		if ok != tc.ok || !slices.Equal(got, tc.want) {
			t.Errorf("%s: SplitCloudID(%q, %d) = %q, %v; want %q, %v", tc.name, tc.id, tc.n, got, ok, tc.want, tc.ok)
		}
	}
}
