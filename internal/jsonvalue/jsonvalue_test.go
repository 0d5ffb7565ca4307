package jsonvalue_test

import (
	"encoding/json"
	"testing"

	"github.com/iasql/iasql/internal/jsonvalue"
)

func isEmpty(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func TestRules(t *testing.T) {
	empty := func(v any) bool { s, ok := v.(string); return ok && s == "" }
	cases := []struct {
		name  string
		rules jsonvalue.Rules
		a, b  any
		want  bool
	}{
		{"numbers by value", jsonvalue.Rules{}, json.Number("3600"), 3.6e3, true},
		{"int and json.Number", jsonvalue.Rules{}, 5, json.Number("5.0"), true},
		{"a string is not a number", jsonvalue.Rules{}, "5", json.Number("5"), false},
		{"a number is not a string", jsonvalue.Rules{}, json.Number("5"), "5", false},
		{"objects by keys", jsonvalue.Rules{}, map[string]any{"a": 1, "b": []any{"x"}}, map[string]any{"b": []any{"x"}, "a": json.Number("1")}, true},
		{"strict: an absent key is not a null", jsonvalue.Rules{}, map[string]any{"a": nil}, map[string]any{}, false},
		{"strict: other keys", jsonvalue.Rules{}, map[string]any{"a": nil}, map[string]any{"b": nil}, false},
		{"null rule: an absent key is a null", jsonvalue.Rules{Null: empty}, map[string]any{"a": ""}, map[string]any{}, true},
		{"null rule: not null", jsonvalue.Rules{Null: empty}, map[string]any{"a": "x"}, map[string]any{}, false},
		{"strict: empty string is not null", jsonvalue.Rules{}, "", nil, false},
		{"arrays in order", jsonvalue.Rules{}, []any{1, 2}, []any{2, 1}, false},
		{"array against object", jsonvalue.Rules{}, []any{}, map[string]any{}, false},
		{"scalar rule", jsonvalue.Rules{Scalar: func(a, b any) bool { return true }}, "x", "y", true},
		{"scalar rule never sees containers", jsonvalue.Rules{Scalar: func(a, b any) bool { return true }}, "x", []any{}, false},
		{"booleans", jsonvalue.Rules{}, true, false, false},
		{"null rule: empty equals empty of another kind", jsonvalue.Rules{Null: isEmpty}, []any{}, map[string]any{}, true},
		{"nil only: empty against nil", jsonvalue.Rules{Null: isEmpty, NilOnly: true}, []any{}, nil, true},
		{"nil only: empty against empty of another kind", jsonvalue.Rules{Null: isEmpty, NilOnly: true}, []any{}, map[string]any{}, false},
		{"nil only: an absent key against empty", jsonvalue.Rules{Null: isEmpty, NilOnly: true}, map[string]any{"a": []any{}}, map[string]any{}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.rules.Equal(tc.a, tc.b); got != tc.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
			if got := tc.rules.Equal(tc.b, tc.a); got != tc.want {
				t.Errorf("Equal(%#v, %#v) = %v, want %v (reversed)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}
