package emulator

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// JSON Patch (RFC 6902) over documents decoded by encoding/json (map[string]any,
// []any, string, float64 or json.Number, bool, nil), as Cloud Control's
// UpdateResource takes it: add, remove, replace, move, copy and test. go.mod
// has no JSON Patch library and these operations are small.

// patchOp is one operation of a patch document.
type patchOp struct {
	Op    string          `json:"op"`
	Path  string          `json:"path"`
	From  string          `json:"from,omitempty"`
	Value json.RawMessage `json:"value,omitempty"`
}

// parsePatch reads a patch document: a JSON array of operations.
func parsePatch(doc string) ([]patchOp, error) {
	var ops []patchOp
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&ops); err != nil {
		return nil, fmt.Errorf("patch document is not a JSON array of operations: %v", err)
	}
	for i, op := range ops {
		switch op.Op {
		case "add", "replace", "test":
			if op.Value == nil {
				return nil, fmt.Errorf("operation %d (%s) has no value", i, op.Op)
			}
		case "move", "copy":
			if _, err := splitPointer(op.From); err != nil {
				return nil, fmt.Errorf("operation %d: from: %v", i, err)
			}
		case "remove":
		default:
			return nil, fmt.Errorf("operation %d: unknown op %q", i, op.Op)
		}
		if _, err := splitPointer(op.Path); err != nil {
			return nil, fmt.Errorf("operation %d: path: %v", i, err)
		}
	}
	return ops, nil
}

// applyPatch applies ops to doc in order and returns the result; doc is
// not modified. A failing operation (a missing path, a failed test) fails
// the whole patch.
func applyPatch(doc any, ops []patchOp) (any, error) {
	doc = deepCopyJSON(doc)
	for i, op := range ops {
		var err error
		doc, err = applyOp(doc, op)
		if err != nil {
			return nil, fmt.Errorf("operation %d (%s %s): %v", i, op.Op, op.Path, err)
		}
	}
	return doc, nil
}

func applyOp(doc any, op patchOp) (any, error) {
	path, _ := splitPointer(op.Path)
	switch op.Op {
	case "add", "replace", "test":
		v, err := decodeJSONValue(op.Value)
		if err != nil {
			return nil, err
		}
		switch op.Op {
		case "add":
			return setAt(doc, path, v, true)
		case "replace":
			if _, err := getAt(doc, path); err != nil {
				return nil, err
			}
			return setAt(doc, path, v, false)
		default:
			got, err := getAt(doc, path)
			if err != nil {
				return nil, err
			}
			if !jsonvalue.Equal(got, v) {
				return nil, fmt.Errorf("test failed: the value differs")
			}
			return doc, nil
		}
	case "remove":
		return removeAt(doc, path)
	case "move", "copy":
		from, _ := splitPointer(op.From)
		v, err := getAt(doc, from)
		if err != nil {
			return nil, err
		}
		v = deepCopyJSON(v)
		if op.Op == "move" {
			if len(path) > len(from) && slicesHavePrefix(path, from) {
				return nil, fmt.Errorf("cannot move a value into itself")
			}
			if doc, err = removeAt(doc, from); err != nil {
				return nil, err
			}
		}
		return setAt(doc, path, v, true)
	}
	return nil, fmt.Errorf("unknown op %q", op.Op)
}

// splitPointer splits a JSON Pointer (RFC 6901) into its unescaped tokens;
// "" is the whole document.
func splitPointer(p string) ([]string, error) {
	if p == "" {
		return nil, nil
	}
	if p[0] != '/' {
		return nil, fmt.Errorf("pointer %q does not start with /", p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts, nil
}

func slicesHavePrefix(s, prefix []string) bool {
	if len(prefix) > len(s) {
		return false
	}
	for i := range prefix {
		if s[i] != prefix[i] {
			return false
		}
	}
	return true
}

// arrayIndex reads an array index token; "-" (past the end) only when
// allowEnd.
func arrayIndex(tok string, n int, allowEnd bool) (int, error) {
	if tok == "-" && allowEnd {
		return n, nil
	}
	if tok == "" || (len(tok) > 1 && tok[0] == '0') {
		return 0, fmt.Errorf("bad array index %q", tok)
	}
	i, err := strconv.Atoi(tok)
	if err != nil || i < 0 {
		return 0, fmt.Errorf("bad array index %q", tok)
	}
	limit := n - 1
	if allowEnd {
		limit = n
	}
	if i > limit {
		return 0, fmt.Errorf("array index %d out of range (length %d)", i, n)
	}
	return i, nil
}

func getAt(doc any, path []string) (any, error) {
	cur := doc
	for _, tok := range path {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("path not found: member %q", tok)
			}
			cur = v
		case []any:
			i, err := arrayIndex(tok, len(c), false)
			if err != nil {
				return nil, err
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("path not found: %q is inside a scalar", tok)
		}
	}
	return cur, nil
}

// setAt sets the value at path: insert (add: arrays shift, "-" appends)
// or overwrite (replace). It returns the new document.
func setAt(doc any, path []string, v any, insert bool) (any, error) {
	if len(path) == 0 {
		return v, nil
	}
	parent, err := getAt(doc, path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		p[last] = v
		return doc, nil
	case []any:
		if !insert {
			i, err := arrayIndex(last, len(p), false)
			if err != nil {
				return nil, err
			}
			p[i] = v
			return doc, nil
		}
		i, err := arrayIndex(last, len(p), true)
		if err != nil {
			return nil, err
		}
		grown := append(p[:i:i], append([]any{v}, p[i:]...)...)
		return setAt(doc, path[:len(path)-1], grown, false)
	}
	return nil, fmt.Errorf("path not found: parent of %q is a scalar", last)
}

func removeAt(doc any, path []string) (any, error) {
	if len(path) == 0 {
		return nil, fmt.Errorf("cannot remove the whole document")
	}
	parent, err := getAt(doc, path[:len(path)-1])
	if err != nil {
		return nil, err
	}
	last := path[len(path)-1]
	switch p := parent.(type) {
	case map[string]any:
		if _, ok := p[last]; !ok {
			return nil, fmt.Errorf("path not found: member %q", last)
		}
		delete(p, last)
		return doc, nil
	case []any:
		i, err := arrayIndex(last, len(p), false)
		if err != nil {
			return nil, err
		}
		shrunk := append(p[:i:i], p[i+1:]...)
		return setAt(doc, path[:len(path)-1], shrunk, false)
	}
	return nil, fmt.Errorf("path not found: parent of %q is a scalar", last)
}

// decodeJSONValue decodes one JSON value, numbers as json.Number.
func decodeJSONValue(raw []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// deepCopyJSON copies a decoded JSON value.
func deepCopyJSON(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		s := make([]any, len(t))
		for i, e := range t {
			s[i] = deepCopyJSON(e)
		}
		return s
	}
	return v
}
