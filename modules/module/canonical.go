package module

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Canonical returns rec with every value in the one form the engine
// compares (the form a row read from the database has), by its column's
// declared type: text-like columns hold strings, numbers json.Number,
// booleans bool, timestamps RFC 3339 strings in UTC, json and jsonb
// JSON-like values (nil, bool, string, json.Number, []any, map[string]any)
// and arrays []any; a reference holds the referenced resource's identity
// (CloudIDOf), a string, and a many-valued one []any of them. A mapper may so return natural SDK values (an int32, a
// *string, a time.Time, a []string, an enum type) and never loop on a
// difference of form (int64(5) against json.Number("5")).
//
// A key the table does not declare is a mistake in the mapper and an
// error, except TokenTag and Region's key in a table without such a
// column. A table that declares no Columns is returned as is.
func (t Table) Canonical(rec Record) (Record, error) {
	if len(t.Columns) == 0 || rec == nil {
		return rec, nil
	}
	out := make(Record, len(rec))
	for k, v := range rec {
		c, ok := t.Column(k)
		switch {
		case k == "id":
			continue // the database's own key, never the cloud's (a want record a mapper cloned)
		case ok:
			typ := c.Type
			if c.Many() {
				typ = "text[]" // in cloud records, the referenced identities
			} else if c.Ref != "" {
				typ = "text"
			}
			cv, err := canonical(typ, v)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t.Name, k, err)
			}
			out[k] = cv
		case k == TokenTag || (k == t.Region && t.Region != ""):
			cv, err := canonical("text", v)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", t.Name, k, err)
			}
			out[k] = cv
		default:
			return nil, fmt.Errorf("a record of %s has %q, which the table does not declare", t.Name, k)
		}
	}
	return out, nil
}

// CanonicalAll is Canonical of each record.
func (t Table) CanonicalAll(recs []Record) ([]Record, error) {
	if len(t.Columns) == 0 {
		return recs, nil
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		c, err := t.Canonical(r)
		if err != nil {
			return nil, err
		}
		out[i] = c
	}
	return out, nil
}

// canonical converts v to the form of SQL type typ.
func canonical(typ string, v any) (any, error) {
	v = deref(v)
	if v == nil {
		return nil, nil
	}
	if elem, ok := strings.CutSuffix(typ, "[]"); ok {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
			return nil, fmt.Errorf("%T is not an array", v)
		}
		out := make([]any, rv.Len())
		for i := range out {
			e, err := canonical(elem, rv.Index(i).Interface())
			if err != nil {
				return nil, err
			}
			out[i] = e
		}
		return out, nil
	}
	switch typeClass(typ) {
	case "number":
		return number(v)
	case "bool":
		if b, ok := v.(bool); ok {
			return b, nil
		}
		if rv := reflect.ValueOf(v); rv.Kind() == reflect.Bool {
			return rv.Bool(), nil
		}
		return nil, fmt.Errorf("%T is not a boolean", v)
	case "time":
		switch x := v.(type) {
		case time.Time:
			return Time(x), nil
		case string:
			tm, err := time.Parse(time.RFC3339Nano, x)
			if err != nil {
				return nil, fmt.Errorf("%q is not an RFC 3339 timestamp", x)
			}
			return Time(tm), nil
		}
		return nil, fmt.Errorf("%T is not a timestamp", v)
	case "json":
		return jsonValue(v)
	default: // text-like: text, cidr, inet, enums
		switch x := v.(type) {
		case string:
			return x, nil
		case json.Number:
			return x.String(), nil
		case fmt.Stringer:
			return x.String(), nil
		}
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.String:
			return rv.String(), nil // an SDK enum type
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Bool:
			return fmt.Sprint(v), nil
		}
		return nil, fmt.Errorf("%T is not text", v)
	}
}

// typeClass groups PostgreSQL's type names by the form of their values.
func typeClass(typ string) string {
	t := strings.ToLower(strings.TrimSpace(typ))
	if i := strings.IndexByte(t, '('); i >= 0 {
		t = strings.TrimSpace(t[:i])
	}
	switch t {
	case "smallint", "integer", "int", "int2", "int4", "int8", "bigint", "numeric", "decimal", "real",
		"double precision", "float4", "float8", "serial", "bigserial":
		return "number"
	case "boolean", "bool":
		return "bool"
	case "timestamp with time zone", "timestamptz":
		return "time"
	case "json", "jsonb":
		return "json"
	}
	return "text"
}

// deref follows pointers; a nil pointer is nil.
func deref(v any) any {
	for {
		rv := reflect.ValueOf(v)
		if rv.Kind() != reflect.Pointer {
			return v
		}
		if rv.IsNil() {
			return nil
		}
		v = rv.Elem().Interface()
	}
}

// number is v as a json.Number.
func number(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		return x, nil
	case string:
		if _, err := strconv.ParseFloat(x, 64); err != nil {
			return nil, fmt.Errorf("%q is not a number", x)
		}
		return json.Number(x), nil
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return json.Number(strconv.FormatInt(rv.Int(), 10)), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return json.Number(strconv.FormatUint(rv.Uint(), 10)), nil
	case reflect.Float32, reflect.Float64:
		return json.Number(strconv.FormatFloat(rv.Float(), 'f', -1, 64)), nil
	}
	return nil, fmt.Errorf("%T is not a number", v)
}

// jsonValue is v as JSON-like values: what is already JSON-like keeps its
// shape (its numbers made json.Number); anything else goes through
// encoding/json (a map[string]string, a []string, a struct).
func jsonValue(v any) (any, error) {
	v = deref(v)
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return x, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			c, err := jsonValue(e)
			if err != nil {
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	}
	switch reflect.ValueOf(v).Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return number(v)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("%T is not JSON: %w", v, err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("%T is not JSON: %w", v, err)
	}
	return out, nil
}
