package schema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// A schema is stored in iasql_modules.definition, a jsonb column, and
// jsonb refuses the escape \u0000 (PostgreSQL's text cannot hold a NUL
// character), which some schemas have in a pattern
// (AWS::SecurityHub::SecurityControl). ToStored rewrites every string of
// the schema, keys included, so that it holds no NUL: the private-use
// character U+E000 escapes, U+E000 itself as U+E000 U+E000 and NUL as
// U+E000 '0'. FromStored undoes it exactly. A schema that holds neither
// character is stored as it is, byte for byte (every public schema but
// that one), so definitions stored before are read as they were.
const storeEscape = '\uE000'

// ToStored is the schema doc in the form it is stored in (see above).
func ToStored(doc []byte) ([]byte, error) {
	return rewrite(doc, func(s string) string {
		if !strings.ContainsAny(s, "\x00"+string(storeEscape)) {
			return s
		}
		var b strings.Builder
		for _, r := range s {
			switch r {
			case storeEscape:
				b.WriteRune(storeEscape)
				b.WriteRune(storeEscape)
			case 0:
				b.WriteRune(storeEscape)
				b.WriteByte('0')
			default:
				b.WriteRune(r)
			}
		}
		return b.String()
	})
}

// FromStored is the schema a stored definition holds (ToStored undone).
func FromStored(def []byte) ([]byte, error) {
	return rewrite(def, func(s string) string {
		if !strings.ContainsRune(s, storeEscape) {
			return s
		}
		var b strings.Builder
		rs := []rune(s)
		for i := 0; i < len(rs); i++ {
			if rs[i] == storeEscape && i+1 < len(rs) && (rs[i+1] == storeEscape || rs[i+1] == '0') {
				if rs[i+1] == '0' {
					b.WriteByte(0)
				} else {
					b.WriteRune(storeEscape)
				}
				i++
				continue
			}
			b.WriteRune(rs[i])
		}
		return b.String()
	})
}

// rewrite applies f to every string and key of the JSON document doc; doc
// itself when f changes none.
func rewrite(doc []byte, f func(string) string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the schema is not JSON: %w", err)
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			y := f(x)
			changed = changed || y != x
			return y
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				k2 := f(k)
				changed = changed || k2 != k
				out[k2] = walk(e)
			}
			return out
		}
		return v
	}
	v = walk(v)
	if !changed {
		return doc, nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode the schema: %w", err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
