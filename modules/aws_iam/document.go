package aws_iam

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// Policy documents. IAM keeps a document's text and returns it URL-encoded;
// the table keeps documents as jsonb. Records carry them parsed (JSON
// objects with json.Number numbers), so that two documents compare by
// meaning: key order and whitespace do not matter, values do (a string is
// not a list of one string).

// parseDoc turns a document as IAM returns it into its record form: the
// parsed JSON, or the text itself when it is not JSON (it then differs
// from every database value and is rewritten). Servers that return the
// document without URL encoding are understood too.
func parseDoc(s string) any {
	text := s
	if t := strings.TrimSpace(s); !strings.HasPrefix(t, "{") {
		if u, err := url.QueryUnescape(s); err == nil {
			text = u
		}
	}
	if v, ok := decodeJSON(text); ok {
		return v
	}
	return text
}

func decodeJSON(s string) (any, bool) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := d.Token(); err == nil {
		return nil, false // trailing data
	}
	return v, true
}

// normDoc makes a record value comparable with module.Same: a JSON text
// is parsed, Go numbers become json.Numbers.
func normDoc(v any) any {
	switch x := v.(type) {
	case nil:
		return nil
	case string:
		if d, ok := decodeJSON(x); ok {
			return d
		}
		return x
	case map[string]any:
		if plain(x) {
			return x
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	d, _ := decodeJSON(string(b))
	return d
}

// plain reports whether v holds only the values a JSON decoder with
// UseNumber produces.
func plain(v any) bool {
	switch x := v.(type) {
	case nil, bool, string, json.Number:
		return true
	case map[string]any:
		for _, e := range x {
			if !plain(e) {
				return false
			}
		}
		return true
	case []any:
		for _, e := range x {
			if !plain(e) {
				return false
			}
		}
		return true
	}
	return false
}

// sameDoc compares two documents by meaning.
func sameDoc(a, b any) bool {
	return jsonvalue.Equal(normDoc(a), normDoc(b))
}

// docText is the JSON text of a document to send to IAM.
func docText(v any) (string, error) {
	switch x := normDoc(v).(type) {
	case nil:
		return "", errors.New("no policy document")
	case map[string]any:
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(x); err != nil {
			return "", err
		}
		return strings.TrimSuffix(b.String(), "\n"), nil
	default:
		return "", fmt.Errorf("a policy document is a JSON object, not %v", x)
	}
}

// stringSet is a list as a sorted set.
func stringSet(v []string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return slices.Compact(out)
}

// inlineMap is an inline_policies value normalised: policy name ->
// document.
func inlineMap(v map[string]any) map[string]any {
	out := map[string]any{}
	m, ok := normDoc(v).(map[string]any)
	if !ok {
		return out
	}
	for k, d := range m {
		out[k] = normDoc(d)
	}
	return out
}

// sameInline compares two inline_policies values: the same policy names,
// each with the same document.
func sameInline(a, b map[string]any) bool {
	return jsonvalue.Equal(inlineMap(a), inlineMap(b))
}
