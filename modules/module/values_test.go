package module_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

func TestSame(t *testing.T) {
	cases := []struct {
		name string
		a, b any
		want bool
	}{
		{"NULL and empty string", nil, "", true},
		{"NULL and a value", nil, "x", false},
		{"integer and its decimal form", json.Number("3600"), json.Number("3600.0"), true},
		{"exponent form", json.Number("3.6e3"), json.Number("3600"), true},
		{"decimals exactly, past float precision", json.Number("0.10000000000000000001"), json.Number("0.1"), false},
		{"trailing zeros", json.Number("1.50"), "1.5", true},
		{"different numbers", json.Number("3600"), json.Number("3601"), false},
		{"timestamps by instant", "2026-01-01T00:00:00Z", "2026-01-01T01:00:00+01:00", true},
		{"objects by meaning", map[string]any{"a": "1", "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": "1"}, true},
		{"objects that differ", map[string]any{"a": "1"}, map[string]any{"a": "2"}, false},
		{"objects with other keys", map[string]any{"a": nil}, map[string]any{"b": json.Number("1")}, false},
		{"a NULL key and an absent one", map[string]any{"a": nil, "b": "x"}, map[string]any{"b": "x"}, true},
		{"arrays in order", []any{"a", "b"}, []any{"b", "a"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := module.Same(c.a, c.b); got != c.want {
				t.Errorf("Same(%v, %v) = %v, want %v", c.a, c.b, got, c.want)
			}
			if got := module.Same(c.b, c.a); got != c.want {
				t.Errorf("Same(%v, %v) = %v, want %v (reversed)", c.b, c.a, got, c.want)
			}
		})
	}
}

// TestStandInName: a stand-in's name is the name with a suffix derived
// from the old cloud id (the same for the same one), cut to fit.
func TestStandInName(t *testing.T) {
	a, b := module.StandInName("web", "sg-1", 255), module.StandInName("web", "sg-1", 255)
	if a != b || !strings.HasPrefix(a, "web-iasql-") {
		t.Errorf("stand-ins %q %q of web", a, b)
	}
	if c := module.StandInName("web", "sg-2", 255); c == a {
		t.Errorf("two old resources, one stand-in name %s", c)
	}
	if n := module.StandInName(strings.Repeat("n", 128), "p", 128); len(n) != 128 || !strings.HasPrefix(n, "nnn") {
		t.Errorf("stand-in of a 128-character name: %q", n)
	}
}
