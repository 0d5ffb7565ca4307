package diff

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// Op is one RFC 6902 operation (https://www.rfc-editor.org/rfc/rfc6902).
type Op struct {
	Op    string `json:"op"` // add, remove or replace
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// Patch is what UpdateResource needs to make the resource have want's
// declarative values when it has have's.
type Patch struct {
	// Ops is the patch document, by path. Empty: nothing to change.
	Ops []Op
	// Replace lists the create-only paths (schema pointers) whose value
	// differs: the change needs a new resource (module.ErrReplace), and Ops
	// is then not to be sent.
	Replace []string
	// WriteOnly reports that Ops holds nothing but the write-only
	// properties want sets (which no read can say differ): sending such a
	// patch alone would be a mutating call for no compared difference.
	WriteOnly bool
}

// JSON is the patch document.
func (p Patch) JSON() string {
	b, _ := json.Marshal(p.Ops)
	return string(b)
}

// Diff computes the patch from have to want, records of t's table.
//
//   - Read-only columns are never patched.
//   - A compared column that differs is added (have absent), removed
//     (want absent: the handler goes back to AWS's default) or replaced
//     whole; tag lists and other arrays are replaced whole. A column with
//     nested read-only, write-only or create-only paths is patched key by
//     key down to where it differs, so a patch never touches those
//     paths (Cloud Control answers NotUpdatable for a path at, under or
//     above a create-only one); other objects are replaced whole, which
//     makes the same desired model for the handler with fewer rules.
//   - A difference at or under a create-only path is a replacement.
//   - Write-only columns want sets are sent as add with the wanted value
//     (no read can tell whether they differ).
func Diff(t *schema.Type, have, want module.Record) Patch {
	var p Patch
	var compared int
	for i := range t.Columns {
		c := &t.Columns[i]
		if c.ReadOnly {
			continue
		}
		path := "/" + escape(c.Property)
		if c.WriteOnly {
			if v := want[c.Name]; v != nil {
				p.Ops = append(p.Ops, Op{Op: "add", Path: path, Value: c.ToProperty(v)})
			}
			continue
		}
		if ColumnEqual(c, have[c.Name], want[c.Name]) {
			continue
		}
		if changed := createOnlyChanged(c, have[c.Name], want[c.Name]); len(changed) > 0 {
			p.Replace = append(p.Replace, changed...)
			continue
		}
		compared++
		hv, wv := Normalize(c, have[c.Name]), Normalize(c, want[c.Name])
		nested := len(c.ReadOnlyPaths)+len(c.WriteOnlyPaths)+len(c.CreateOnlyPaths) > 0
		switch {
		case want[c.Name] == nil:
			p.Ops = append(p.Ops, Op{Op: "remove", Path: path})
		case have[c.Name] == nil:
			p.Ops = append(p.Ops, Op{Op: "add", Path: path, Value: c.ToProperty(want[c.Name])})
		case nested && isObject(hv) && isObject(wv):
			p.Ops = append(p.Ops, objectOps(path, hv.(map[string]any), wv.(map[string]any))...)
		default:
			p.Ops = append(p.Ops, Op{Op: "replace", Path: path, Value: c.ToProperty(want[c.Name])})
		}
	}
	sort.SliceStable(p.Ops, func(i, j int) bool { return p.Ops[i].Path < p.Ops[j].Path })
	slices.Sort(p.Replace)
	p.WriteOnly = len(p.Ops) > 0 && compared == 0
	return p
}

func isObject(v any) bool { _, ok := v.(map[string]any); return ok }

// objectOps patches object have into want key by key.
func objectOps(path string, have, want map[string]any) []Op {
	var ops []Op
	keys := map[string]bool{}
	for k := range have {
		keys[k] = true
	}
	for k := range want {
		keys[k] = true
	}
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range keys {
			if !yield(k) {
				return
			}
		}
	}) {
		h, w := have[k], want[k]
		p := path + "/" + escape(k)
		switch {
		case Same(h, w):
		case isNullish(w):
			if _, ok := have[k]; ok {
				ops = append(ops, Op{Op: "remove", Path: p})
			}
		case isNullish(h):
			ops = append(ops, Op{Op: "add", Path: p, Value: w})
		case isObject(h) && isObject(w):
			ops = append(ops, objectOps(p, h.(map[string]any), w.(map[string]any))...)
		default:
			ops = append(ops, Op{Op: "replace", Path: p, Value: w})
		}
	}
	return ops
}

// createOnlyChanged lists the create-only paths of c whose values differ
// between have and want.
func createOnlyChanged(c *schema.Column, have, want any) []string {
	var out []string
	for _, sp := range c.CreateOnlyPaths {
		sub := subPath(sp)
		if len(sub) == 0 {
			out = append(out, sp)
			continue
		}
		h, hok := at(Normalize(c, have), sub)
		w, wok := at(Normalize(c, want), sub)
		if !hok || !wok {
			// Under an array: the items cannot be told apart, so any
			// difference of the property counts.
			out = append(out, sp)
			continue
		}
		if !Same(h, w) {
			out = append(out, sp)
		}
	}
	return out
}

// at is the value at a path of object keys; false when the path goes
// through an array ("*") and cannot name one value.
func at(v any, path []string) (any, bool) {
	for _, k := range path {
		if k == "*" {
			return nil, false
		}
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			return nil, false
		default:
			v = nil
		}
	}
	return v, true
}

// escape escapes a JSON Pointer reference token (RFC 6901).
func escape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
