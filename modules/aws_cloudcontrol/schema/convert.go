package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// DecodeModel reads a resource model (Cloud Control's Properties or
// ResourceModel: a JSON object), numbers as json.Number.
func DecodeModel(doc string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("decode resource model: %w", err)
	}
	return m, nil
}

// ToRecord converts a resource model into a record of the table: each
// property the schema knows under its column (a declared column of
// ModuleTable), tags as {key: value}, booleans a handler returned as
// strings as bool, and objects or arrays a handler returned for a text
// property as their JSON text. Properties the schema does not know are
// left out. The rest of a value's form is the engine's: it makes records
// canonical by the columns' types (module.Table.Canonical: numbers, a
// number in a string too, as json.Number; numbers and booleans in a text
// column as text).
func (t *Type) ToRecord(model map[string]any) module.Record {
	r := module.Record{}
	for _, c := range t.Columns {
		v, ok := model[c.Property]
		if !ok || v == nil {
			continue
		}
		r[c.Name] = c.toColumn(v)
	}
	return r
}

// toColumn converts what a handler returned into what the column's type
// can hold, where Canonical would not.
func (c *Column) toColumn(v any) any {
	switch {
	case c.Tags:
		return TagMap(v)
	case c.SQLType == Boolean:
		if s, ok := v.(string); ok {
			if b, err := strconv.ParseBool(s); err == nil {
				return b
			}
		}
	case c.SQLType == Text:
		switch v.(type) {
		case map[string]any, []any:
			b, _ := json.Marshal(v)
			return string(b)
		}
	}
	return v
}

// TagMap reads tags in either shape (a list of {Key, Value} objects or a
// map) as one map of key to value.
func TagMap(v any) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if m, ok := e.(map[string]any); ok {
				if k, ok := m["Key"].(string); ok {
					out[k] = m["Value"]
				}
			}
		}
	case map[string]any:
		for k, val := range x {
			out[k] = val
		}
	}
	return out
}

// ToModel converts a record of the table into a resource model: each
// column with a value under its property (tags in the schema's shape, a
// list sorted by key), read-only columns left out, and the columns skip
// names left out too.
func (t *Type) ToModel(r module.Record, skip func(c *Column) bool) map[string]any {
	m := map[string]any{}
	for i := range t.Columns {
		c := &t.Columns[i]
		v, ok := r[c.Name]
		if !ok || v == nil || c.ReadOnly || (skip != nil && skip(c)) {
			continue
		}
		m[c.Property] = c.ToProperty(v)
	}
	return m
}

// ToProperty converts a column's value into the property's value.
func (c *Column) ToProperty(v any) any {
	if !c.Tags {
		return v
	}
	tags := TagMap(v)
	if !c.TagList {
		return tags
	}
	keys := make([]string, 0, len(tags))
	for k := range tags {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	list := make([]any, len(keys))
	for i, k := range keys {
		list[i] = map[string]any{"Key": k, "Value": tags[k]}
	}
	return list
}

// IdentifierOf is the primary identifier of a record as Cloud Control takes
// it: the identifier's values in primaryIdentifier order, joined with "|"
// (https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-identifier.html),
// each read from within its column's object where the identifier is
// below a top-level property; "" when one is missing.
func (t *Type) IdentifierOf(r module.Record) string {
	parts := make([]string, len(t.Identifier))
	for i, p := range t.Identifier {
		c, _ := t.Column(p)
		v := r[c.Name]
		for _, k := range t.IdentifierSub[i] {
			m, _ := v.(map[string]any)
			v = m[k]
		}
		s := module.Record{"v": v}.String("v")
		if _, ok := v.(map[string]any); ok || s == "" {
			return ""
		}
		parts[i] = s
	}
	return strings.Join(parts, "|")
}

// IdentityRecord is the record of only the identity an identifier names
// (its "|"-separated values under the identifier columns, within the
// column's object where the identifier is below a top-level property),
// nil when the identifier has not as many parts.
func (t *Type) IdentityRecord(identifier string) module.Record {
	parts := []string{identifier}
	if len(t.Identifier) > 1 {
		parts = strings.Split(identifier, "|")
	}
	if len(parts) != len(t.Identifier) || identifier == "" {
		return nil
	}
	r := module.Record{}
	for i, p := range t.Identifier {
		c, _ := t.Column(p)
		sub := t.IdentifierSub[i]
		if len(sub) == 0 {
			r[c.Name] = c.toColumn(parts[i])
			continue
		}
		m, _ := r[c.Name].(map[string]any)
		if m == nil {
			m = map[string]any{}
			r[c.Name] = m
		}
		for _, k := range sub[:len(sub)-1] {
			next, _ := m[k].(map[string]any)
			if next == nil {
				next = map[string]any{}
				m[k] = next
			}
			m = next
		}
		m[sub[len(sub)-1]] = parts[i]
	}
	return r
}

// CloudIDToIdentifier converts an identity as module.CloudIDOf renders it
// into Cloud Control's identifier and the region ("" where the region is
// not part of the identity: RegionInIdentity); false when it is none (and
// for a type whose identifier is below a top-level property, whose
// identity column holds an object CloudIDOf does not render as JSON).
func (t *Type) CloudIDToIdentifier(id string) (identifier, region string, ok bool) {
	if t.NestedIdentifier() {
		return "", "", false
	}
	parts, ok := module.SplitCloudID(id, len(t.table.CloudID))
	if !ok {
		return "", "", false
	}
	for _, p := range parts {
		if p == "" {
			return "", "", false
		}
	}
	if t.RegionInIdentity() {
		n := len(parts) - 1
		return strings.Join(parts[:n], "|"), parts[n], true
	}
	return strings.Join(parts, "|"), "", true
}

// NestedIdentifier reports whether a part of the primary identifier is
// below a top-level property (its column holds an object).
func (t *Type) NestedIdentifier() bool {
	for _, sub := range t.IdentifierSub {
		if len(sub) > 0 {
			return true
		}
	}
	return false
}
