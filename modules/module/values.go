package module

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cockroachdb/apd/v3"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// String returns a record's value as a string, "" for NULL.
func (r Record) String(col string) string {
	switch v := r[col].(type) {
	case nil:
		return ""
	case string:
		return v
	case json.Number:
		return v.String()
	default:
		return fmt.Sprint(v)
	}
}

// Bool returns a record's value as a bool, false for NULL.
func (r Record) Bool(col string) bool {
	b, _ := r[col].(bool)
	return b
}

// Int returns a record's value as an int64, 0 for NULL.
func (r Record) Int(col string) int64 {
	switch v := r[col].(type) {
	case json.Number:
		n, _ := v.Int64()
		return n
	case int64:
		return v
	case int:
		return int64(v)
	}
	return 0
}

// Number makes a json.Number of an integer, for cloud records.
func Number(n int64) json.Number { return json.Number(fmt.Sprint(n)) }

// Time makes the record form of a timestamp (RFC 3339, UTC), nil for zero.
func Time(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// Same compares two record values the way equality of declarative columns
// usually needs: NULL and "" alike, numbers by value, timestamps by
// instant, JSON objects by meaning, arrays in order.
func Same(a, b any) bool { return recordRules.Equal(a, b) }

// SameColumns reports whether a and b agree on cols (Same).
func SameColumns(cols []string, a, b Record) bool {
	for _, c := range cols {
		if !Same(a[c], b[c]) {
			return false
		}
	}
	return true
}

// recordRules are Same's: NULL and "" alike (an absent key is NULL),
// numbers by value, timestamps by instant.
var recordRules = jsonvalue.Rules{Null: isNull, Scalar: sameScalar}

func sameScalar(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		return numberEqual(x, b)
	case string:
		y, ok := b.(string)
		if !ok {
			if n, ok := b.(json.Number); ok {
				return numberEqual(n, x)
			}
			return false
		}
		if x == y {
			return true
		}
		tx, errx := time.Parse(time.RFC3339Nano, x)
		ty, erry := time.Parse(time.RFC3339Nano, y)
		return errx == nil && erry == nil && tx.Equal(ty)
	}
	return a == b
}

func isNull(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	}
	return false
}

func numberEqual(n json.Number, b any) bool {
	var s string
	switch y := b.(type) {
	case json.Number:
		s = y.String()
	case string:
		s = y
	default:
		return false
	}
	if n.String() == s {
		return true
	}
	// Exactly, as decimals (no floats): 3600 = 3600.0 = 3.6e3.
	x, _, errx := apd.NewFromString(n.String())
	y, _, erry := apd.NewFromString(s)
	return errx == nil && erry == nil && x.Cmp(y) == 0
}

// Differing names the columns of cols in which a database record and a
// cloud record differ by value: each with Same, a many-valued reference
// (RefsMany) as a set, in any order. It is how the engine compares a table
// whose mapper says nothing of its own (Equaler, Comparer).
func (t Table) Differing(cols []string, db, cloud Record) []string {
	var out []string
	for _, c := range cols {
		same := false
		if _, many := t.RefsMany[c]; many {
			same = slices.Equal(Strings(db[c]), Strings(cloud[c]))
		} else {
			same = Same(db[c], cloud[c])
		}
		if !same {
			out = append(out, c)
		}
	}
	return out
}

// DifferingBy names the columns of cols in which a database record and a
// cloud record differ as the engine compares them: by the mapper's
// Comparer when it has one, else by t.Differing.
func DifferingBy(t Table, m Reader, cols []string, db, cloud Record) []string {
	if cmp := PartsOf(m).Comparer; cmp != nil {
		return cmp.Differing(cols, db, cloud)
	}
	return t.Differing(cols, db, cloud)
}

// Equal reports whether a database record and a cloud record agree as the
// engine compares them: by the mapper's Equaler when it has one, else on
// every declarative column (DifferingBy).
func Equal(t Table, m Reader, db, cloud Record) bool {
	if eq := PartsOf(m).Equaler; eq != nil {
		return eq.Equal(db, cloud)
	}
	return len(DifferingBy(t, m, t.Declarative, db, cloud)) == 0
}

// Strings is a record's array value (a many-valued reference, a list of
// names) as a set: its non-empty elements as strings, sorted, once each.
func Strings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if s := fmt.Sprint(e); e != nil && s != "" {
				out = append(out, s)
			}
		}
	case []string:
		for _, s := range x {
			if s != "" {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
