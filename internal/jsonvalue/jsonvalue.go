// Package jsonvalue compares JSON-like values: nil, bool, string, numbers
// (json.Number and Go's integers and floats), []any and map[string]any, as
// encoding/json decodes them. It is the one deep equality of such values:
// the engine's comparison of record values (module.Same), Cloud Control's
// comparison by a schema's rules, IAM policy documents and the emulator
// use it, each with the rules it needs for nulls and for scalar values.
package jsonvalue

import (
	"encoding/json"
	"math"
	"reflect"
	"strconv"

	"github.com/cockroachdb/apd/v3"
)

// Rules say how two values compare.
type Rules struct {
	// Null says which values count as null besides nil. When set, an
	// object key absent on one side equals a null on the other; when nil,
	// only nil is null and objects must have the same keys.
	Null func(v any) bool
	// NilOnly applies Null only against nil: two values neither of which
	// is nil compare by what they are even when Null holds for them ([]
	// equals nil, and [], but not {}).
	NilOnly bool
	// Scalar compares two values that are neither null, objects nor
	// arrays; nil means Exact.
	Scalar func(a, b any) bool
}

// Equal compares exactly: objects by their keys, arrays in order, numbers
// by value (3600, 3600.0 and 3.6e3 alike, whatever their Go type), strings
// and booleans as they are; "" is not null and "1" is not 1.
func Equal(a, b any) bool { return Rules{}.Equal(a, b) }

// Equal compares a and b by r.
func (r Rules) Equal(a, b any) bool {
	if a == nil || b == nil || (!r.NilOnly && (r.null(a) || r.null(b))) {
		return r.null(a) && r.null(b)
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (r.Null == nil && len(x) != len(y)) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok && r.Null == nil {
				return false
			}
			if !r.Equal(v, w) {
				return false
			}
		}
		for k, v := range y {
			if _, seen := x[k]; !seen && !r.null(v) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !r.Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	}
	switch b.(type) {
	case map[string]any, []any:
		return false
	}
	if r.Scalar != nil {
		return r.Scalar(a, b)
	}
	return Exact(a, b)
}

func (r Rules) null(v any) bool {
	if v == nil {
		return true
	}
	return r.Null != nil && r.Null(v)
}

// Exact compares two scalar values: numbers by value, anything else by
// Go's equality (a string equals the same string, never a number).
func Exact(a, b any) bool {
	if x, ok := Number(a); ok {
		y, ok := Number(b)
		return ok && x.Cmp(y) == 0
	}
	if _, ok := Number(b); ok {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// Number reads a numeric value (json.Number, Go integers and floats) as an
// exact decimal. Strings are not numbers here.
func Number(v any) (*apd.Decimal, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, false
		}
		s = strconv.FormatFloat(x, 'g', -1, 64)
	case float32:
		s = strconv.FormatFloat(float64(x), 'g', -1, 32)
	case int:
		s = strconv.Itoa(x)
	case int32:
		s = strconv.FormatInt(int64(x), 10)
	case int64:
		s = strconv.FormatInt(x, 10)
	case uint64:
		s = strconv.FormatUint(x, 10)
	default:
		return nil, false
	}
	d, _, err := apd.NewFromString(s)
	if err != nil {
		return nil, false
	}
	return d, true
}
