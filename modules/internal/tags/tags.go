// Package tags is the tags column of the tables whose resources AWS tags:
// a JSON object of key to value, read from the service's tags without AWS's
// own (module.ReservedTag) and the engine's client-token tag
// (module.TokenTag), written as the calls that add the new and changed
// tags and remove the keys gone. Services type their tags each their own
// way (ec2 and elasticloadbalancingv2 have a types.Tag each); a module
// adapts them to Tag once.
//
// AWS's tag restrictions (keys unique per resource, aws: reserved):
// https://docs.aws.amazon.com/tag-editor/latest/userguide/tagging.html and
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions
package tags

import (
	"fmt"
	"maps"
	"slices"

	"github.com/iasql/iasql/modules/module"
)

// Tag is one tag as a service has it.
type Tag struct{ Key, Value string }

// Record renders a service's tags as a tags column value: an object of key
// to value ({} when there are none, as the tables' default is), without
// the client-token tag (Token reads it) and AWS's own aws: tags, which no
// one may set or delete. tag reads a service's tag.
func Record[T any](ts []T, tag func(T) Tag) map[string]any {
	out := make(map[string]any, len(ts))
	for _, t := range ts {
		if kv := tag(t); kv.Key != module.TokenTag && !module.ReservedTag(kv.Key) {
			out[kv.Key] = kv.Value
		}
	}
	return out
}

// Token is the client token a resource was tagged with at creation (""
// when none).
func Token[T any](ts []T, tag func(T) Tag) string {
	for _, t := range ts {
		if kv := tag(t); kv.Key == module.TokenTag {
			return kv.Value
		}
	}
	return ""
}

// List is a tags column value as tags sorted by key, then the client-token
// tag when token is not "": the tags of a create call.
func List(v any, token string) []Tag {
	m, _ := v.(map[string]any)
	out := make([]Tag, 0, len(m)+1)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, Tag{Key: k, Value: fmt.Sprint(m[k])})
	}
	if token != "" {
		out = append(out, Tag{Key: module.TokenTag, Value: token})
	}
	return out
}

// Diff is what makes a resource's tags want's, from have's (tags column
// values): the tags to set (new or changed), and the keys to remove, each
// sorted by key; none when they are the same.
func Diff(want, have any) (set []Tag, remove []string) {
	w, _ := want.(map[string]any)
	h, _ := have.(map[string]any)
	for _, t := range List(w, "") {
		if old, ok := h[t.Key]; !ok || fmt.Sprint(old) != t.Value {
			set = append(set, t)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if _, ok := w[k]; !ok {
			remove = append(remove, k)
		}
	}
	return set, remove
}

// Same reports whether two tags column values hold the same user tags
// (AWS's own aws: tags and the client-token tag left out of both).
func Same(a, b any) bool {
	return module.Same(user(a), user(b))
}

func user(v any) map[string]any {
	m, _ := v.(map[string]any)
	out := make(map[string]any, len(m))
	for k, val := range m {
		if k != module.TokenTag && !module.ReservedTag(k) {
			out[k] = val
		}
	}
	return out
}
