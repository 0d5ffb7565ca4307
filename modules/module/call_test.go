package module_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

// TestFresh: a read is fresh for everything, for the names it was given,
// or for nothing.
func TestFresh(t *testing.T) {
	cases := []struct {
		name  string
		fresh module.Fresh
		ask   []string
		want  bool
	}{
		{"nothing asked", module.Fresh{}, []string{"a"}, false},
		{"all", module.Fresh{All: true}, []string{"a"}, true},
		{"all, no name", module.Fresh{All: true}, nil, true},
		{"a name given", module.Fresh{Names: map[string]bool{"a": true}}, []string{"a"}, true},
		{"any of the names", module.Fresh{Names: map[string]bool{"b": true}}, []string{"a", "b"}, true},
		{"another name", module.Fresh{Names: map[string]bool{"b": true}}, []string{"a"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.fresh.For(tc.ask...); got != tc.want {
				t.Errorf("For(%v) = %v, want %v", tc.ask, got, tc.want)
			}
		})
	}
	call := module.Call{Token: "tok", Fresh: module.Fresh{Names: map[string]bool{"x": true}}}
	if all := call.AllFresh(); !all.Fresh.For("y") || all.Token != "tok" || call.Fresh.For("y") {
		t.Errorf("AllFresh = %+v (from %+v): want every read fresh, the rest kept, the call itself unchanged", all, call)
	}
}

// TestScope: a set scope is itself; without one (aws_account not
// installed), the configuration's region, us-east-1 when it names none.
func TestScope(t *testing.T) {
	set := module.Scope{Regions: []string{"eu-west-1", "us-east-1"}, Default: "us-east-1"}
	cases := []struct {
		name  string
		scope module.Scope
		cfg   aws.Config
		want  module.Scope
		isSet bool
	}{
		{"set", set, aws.Config{Region: "ap-south-1"}, set, true},
		{"unset", module.Scope{}, aws.Config{Region: "ap-south-1"}, module.Scope{Regions: []string{"ap-south-1"}, Default: "ap-south-1"}, false},
		{"unset, no region", module.Scope{}, aws.Config{}, module.Scope{Regions: []string{"us-east-1"}, Default: "us-east-1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.scope.Or(tc.cfg)
			if !slices.Equal(got.Regions, tc.want.Regions) || got.Default != tc.want.Default {
				t.Errorf("Or = %+v, want %+v", got, tc.want)
			}
			if tc.scope.Set() != tc.isSet {
				t.Errorf("Set = %v, want %v", tc.scope.Set(), tc.isSet)
			}
		})
	}
}

// TestSetParents: each table's parents are its own.
func TestSetParents(t *testing.T) {
	var call module.Call
	call.SetParents("a", []map[string]any{{"P": "1"}})
	call.SetParents("b", nil)
	if len(call.Parents["a"]) != 1 || call.Parents["a"][0]["P"] != "1" || call.Parents["b"] != nil || len(call.Parents) != 2 {
		t.Errorf("Parents = %v", call.Parents)
	}
}

// TestIdentityOf: an identity as CloudIDOf renders it reads back into the
// table's identity columns.
func TestIdentityOf(t *testing.T) {
	one := module.Table{Name: "bucket", CloudID: []string{"name"}}
	two := module.Table{Name: "repository", CloudID: []string{"repository_name", "region"}}
	cases := []struct {
		name string
		t    module.Table
		id   string
		want module.Record
		ok   bool
	}{
		{"one column", one, "logs", module.Record{"name": "logs"}, true},
		{"two columns", two, module.CloudIDOf(two, module.Record{"repository_name": "app", "region": "eu-west-1"}),
			module.Record{"repository_name": "app", "region": "eu-west-1"}, true},
		{"not an identity of two", two, "app", nil, false},
		{"too many parts", two, `["a","b","c"]`, nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := module.IdentityOf(tc.t, tc.id)
			if ok != tc.ok || !maps.Equal(got, tc.want) {
				t.Errorf("IdentityOf(%q) = %v, %v; want %v, %v", tc.id, got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestTerminalWith: a module's codes beside a family's, the family's
// left as they were.
func TestTerminalWith(t *testing.T) {
	family := module.TerminalCodes("A", "B")
	own := family.With("C")
	if !own["A"] || !own["B"] || !own["C"] || len(own) != 3 || family["C"] {
		t.Errorf("With: %v from %v", own, family)
	}
}
