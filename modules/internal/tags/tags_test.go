package tags_test

import (
	"maps"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/internal/tags"
	"github.com/iasql/iasql/modules/module"
)

// kv is a service's tag, as SDKs type them: pointers to strings.
type kv struct{ k, v *string }

func s(v string) *string { return &v }

func tag(t kv) tags.Tag { return tags.Tag{Key: *t.k, Value: *t.v} }

// TestRecord: a resource's tags become the tags column without AWS's own
// aws: tags (in any case) and the client-token tag, which Token reads.
func TestRecord(t *testing.T) {
	cases := []struct {
		name  string
		in    []kv
		want  map[string]any
		token string
	}{
		{"none", nil, map[string]any{}, ""},
		{"user tags", []kv{{s("env"), s("prod")}, {s("team"), s("web")}}, map[string]any{"env": "prod", "team": "web"}, ""},
		{"AWS's own left out", []kv{{s("aws:cloudformation:stack-name"), s("x")}, {s("AWS:x"), s("y")}, {s("env"), s("dev")}}, map[string]any{"env": "dev"}, ""},
		{"the token apart", []kv{{s(module.TokenTag), s("tok-1")}, {s("env"), s("dev")}}, map[string]any{"env": "dev"}, "tok-1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tags.Record(tc.in, tag); !maps.Equal(got, tc.want) {
				t.Errorf("Record = %v, want %v", got, tc.want)
			}
			if got := tags.Token(tc.in, tag); got != tc.token {
				t.Errorf("Token = %q, want %q", got, tc.token)
			}
		})
	}
}

// TestList: a create's tags are the column's, sorted by key (values as
// text), then the token's.
func TestList(t *testing.T) {
	cases := []struct {
		name  string
		v     any
		token string
		want  []tags.Tag
	}{
		{"none", nil, "", []tags.Tag{}},
		{"sorted", map[string]any{"b": "2", "a": "1"}, "", []tags.Tag{{Key: "a", Value: "1"}, {Key: "b", Value: "2"}}},
		{"token last", map[string]any{"z": "1"}, "tok", []tags.Tag{{Key: "z", Value: "1"}, {Key: module.TokenTag, Value: "tok"}}},
		{"only the token", map[string]any{}, "tok", []tags.Tag{{Key: module.TokenTag, Value: "tok"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tags.List(tc.v, tc.token); !slices.Equal(got, tc.want) {
				t.Errorf("List = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDiff: what turns have's tags into want's: new and changed tags to
// set, keys gone to remove, each sorted; nothing when they agree.
func TestDiff(t *testing.T) {
	cases := []struct {
		name       string
		want, have any
		set        []tags.Tag
		remove     []string
	}{
		{"same", map[string]any{"a": "1"}, map[string]any{"a": "1"}, nil, nil},
		{"both empty", map[string]any{}, nil, nil, nil},
		{"added and changed", map[string]any{"a": "2", "c": "3", "b": "1"}, map[string]any{"a": "1", "b": "1"},
			[]tags.Tag{{Key: "a", Value: "2"}, {Key: "c", Value: "3"}}, nil},
		{"removed", map[string]any{"a": "1"}, map[string]any{"z": "9", "a": "1", "m": "5"}, nil, []string{"m", "z"}},
		{"all of it", map[string]any{"new": "x"}, map[string]any{"old": "y"}, []tags.Tag{{Key: "new", Value: "x"}}, []string{"old"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set, remove := tags.Diff(tc.want, tc.have)
			if !slices.Equal(set, tc.set) || !slices.Equal(remove, tc.remove) {
				t.Errorf("Diff = %v, %v; want %v, %v", set, remove, tc.set, tc.remove)
			}
		})
	}
}

// TestSame: tags columns agree on their user tags.
func TestSame(t *testing.T) {
	cases := []struct {
		name string
		a, b any
		want bool
	}{
		{"equal", map[string]any{"a": "1"}, map[string]any{"a": "1"}, true},
		{"nil and empty", nil, map[string]any{}, true},
		{"AWS's own ignored", map[string]any{"a": "1", "aws:x": "2"}, map[string]any{"a": "1"}, true},
		{"token ignored", map[string]any{module.TokenTag: "t"}, map[string]any{}, true},
		{"a value differs", map[string]any{"a": "1"}, map[string]any{"a": "2"}, false},
		{"a key differs", map[string]any{"a": "1"}, map[string]any{"b": "1"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tags.Same(tc.a, tc.b); got != tc.want {
				t.Errorf("Same(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
