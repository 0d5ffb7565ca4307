// Package diff compares two records of a Cloud Control table (the
// database's and the cloud's) the way the resource schema says they
// should be compared, and computes the RFC 6902 JSON Patch that
// UpdateResource takes to turn one into the other.
//
// Rules (from the resource schema specification,
// https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html):
// read-only properties are the cloud's and write-only ones are never
// returned by a read, so neither is compared; an absent property equals
// the schema's default; arrays whose insertionOrder is false compare as
// multisets; tags compare as a map with AWS's own (aws:*) tags left out;
// JSON documents (objects, and strings holding JSON for policy
// properties) compare by meaning; numbers by value (json.Number "5",
// int64 5 and float64 5.0 are one number); an empty array, object or tag
// map equals absence.
package diff

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// Equal reports whether two records of t's table agree on every
// compared column (declarative, not write-only).
func Equal(t *schema.Type, a, b module.Record) bool {
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.ReadOnly || c.WriteOnly {
			continue
		}
		if !ColumnEqual(c, a[c.Name], b[c.Name]) {
			return false
		}
	}
	return true
}

// Different names the compared columns on which a and b differ.
func Different(t *schema.Type, a, b module.Record) []string {
	var out []string
	for i := range t.Columns {
		c := &t.Columns[i]
		if !c.ReadOnly && !c.WriteOnly && !ColumnEqual(c, a[c.Name], b[c.Name]) {
			out = append(out, c.Name)
		}
	}
	return out
}

// ColumnEqual compares two values of a column by the column's rules.
func ColumnEqual(c *schema.Column, a, b any) bool {
	x, y := Normalize(c, a), Normalize(c, b)
	if c.Unordered {
		return sameSet(x, y)
	}
	return Same(x, y)
}

// Normalize is a column value as comparisons see it: the default for
// NULL, tags as a map without aws:* keys, a JSON document held in a
// string parsed, nested read-only and write-only paths removed, empty
// arrays, objects and tag maps as NULL.
func Normalize(c *schema.Column, v any) any {
	if v == nil && c.Default != nil {
		v = c.Default
	}
	if c.Tags && v != nil {
		m := schema.TagMap(v)
		for k := range m {
			if module.ReservedTag(k) {
				delete(m, k)
			}
		}
		v = m
	}
	if s, ok := v.(string); ok && c.JSONDoc {
		if doc, err := decode(s); err == nil {
			if _, isObj := doc.(map[string]any); isObj {
				v = doc
			}
		}
	}
	for _, p := range append(append([]string(nil), c.ReadOnlyPaths...), c.WriteOnlyPaths...) {
		v = without(v, subPath(p))
	}
	for _, p := range c.UnorderedPaths {
		v = sortedAt(v, p)
	}
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return nil
		}
	case map[string]any:
		if len(x) == 0 {
			return nil
		}
	}
	return v
}

func decode(s string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// subPath is the parts of a schema pointer below its top-level property
// (/properties/A/B/C: [B C]).
func subPath(p string) []string {
	rest, _ := strings.CutPrefix(p, "/properties/")
	parts := strings.Split(rest, "/")
	return parts[1:]
}

// without returns v (copied where changed) without the value at path
// (object keys; "*" or an array in between applies to every item).
func without(v any, path []string) any {
	if len(path) == 0 {
		return nil
	}
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x[path[0]]; !ok {
			return v
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = e
		}
		if len(path) == 1 {
			delete(out, path[0])
		} else {
			out[path[0]] = without(x[path[0]], path[1:])
		}
		return out
	case []any:
		rest := path
		if path[0] == "*" {
			rest = path[1:]
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = without(e, rest)
		}
		return out
	}
	return v
}

// Same compares JSON-like values by meaning: numbers by value whatever
// their Go type, objects key by key (an absent key equals null), arrays
// in order.
func Same(a, b any) bool { return sameRules.Equal(a, b) }

// sameRules: empty arrays and objects are null against nil (an absent
// key), numbers compare by value whatever their Go type, strings and
// booleans as they are, anything else never.
var sameRules = jsonvalue.Rules{Null: isNullish, NilOnly: true, Scalar: sameScalar}

func sameScalar(a, b any) bool {
	if _, ok := jsonvalue.Number(a); ok {
		return jsonvalue.Exact(a, b)
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	}
	return false
}

func isNullish(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// sameSet compares two arrays as multisets (each item of one matched to
// an equal item of the other); non-arrays compare with Same.
func sameSet(a, b any) bool {
	x, okx := a.([]any)
	y, oky := b.([]any)
	if !okx || !oky {
		return Same(a, b)
	}
	if len(x) != len(y) {
		return false
	}
	used := make([]bool, len(y))
outer:
	for _, e := range x {
		for j, f := range y {
			if !used[j] && Same(e, f) {
				used[j] = true
				continue outer
			}
		}
		return false
	}
	return true
}

// sortedAt returns v (copied where changed) with the arrays at path (object
// keys; "*" applies to every item of an array) in a canonical order, so
// that arrays whose order does not matter compare equal in any order.
func sortedAt(v any, path []string) any {
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 0 {
			return v
		}
		e, ok := x[path[0]]
		if !ok {
			return v
		}
		out := maps.Clone(x)
		out[path[0]] = sortedAt(e, path[1:])
		return out
	case []any:
		out := slices.Clone(x)
		if len(path) == 0 {
			slices.SortStableFunc(out, func(a, b any) int { return strings.Compare(canonical(a), canonical(b)) })
			return out
		}
		if path[0] != "*" {
			return v
		}
		for i, e := range out {
			out[i] = sortedAt(e, path[1:])
		}
		return out
	}
	return v
}

// canonical is a value's JSON with numbers in one form, for ordering.
func canonical(v any) string {
	b, _ := json.Marshal(canonicalNumbers(v))
	return string(b)
}

func canonicalNumbers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = canonicalNumbers(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = canonicalNumbers(e)
		}
		return out
	}
	if d, ok := jsonvalue.Number(v); ok {
		return d.Text('f')
	}
	return v
}
