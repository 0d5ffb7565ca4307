// Package trail reads what a table's mapper needs of an AWS CloudTrail
// record (module.Event) to tell which of its resources the call named:
// values of requestParameters and responseElements by path, ARNs, and
// the event's service and name.
//
// CloudTrail logs a call's request parameters and response elements as
// the API names its members, in lowerCamelCase for most services; lists
// of the query protocols are JSON arrays, EC2's are sets
// ({"items": [...]}, named as EC2's XML names them: instancesSet,
// resourcesSet):
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html
// Keys are matched regardless of case (a JSON-protocol service logs what
// the SDK sent: Cloud Control's TypeName as typeName), and values may be
// strings, numbers or booleans (a record decoded with or without
// UseNumber).
package trail

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// Is reports whether ev is a call to the service of source (its
// eventSource, e.g. "ec2.amazonaws.com") named one of names.
func Is(ev module.Event, source string, names ...string) bool {
	return ev.Source == source && slices.Contains(names, ev.Name)
}

// Field is the value of m's key, whatever its case (an exact match
// first); nil when m is no object or has no such key.
func Field(m any, key string) any {
	obj, ok := m.(map[string]any)
	if !ok {
		return nil
	}
	if v, ok := obj[key]; ok {
		return v
	}
	for k, v := range obj {
		if strings.EqualFold(k, key) {
			return v
		}
	}
	return nil
}

// Values are the values at path below v: each key is looked up with
// Field, and a list met on the way (a JSON array, or an EC2 set's items)
// goes on with each of its elements.
func Values(v any, path ...string) []any {
	vals := []any{v}
	for _, key := range path {
		var next []any
		for _, x := range vals {
			for _, e := range elements(x) {
				if f := Field(e, key); f != nil {
					next = append(next, f)
				}
			}
		}
		vals = next
	}
	var out []any
	for _, x := range vals {
		out = append(out, elements(x)...)
	}
	return out
}

// elements is a list's elements, or v alone.
func elements(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// Strings are the scalar values at path below v (Values) as text, in
// order, without empties and repeats.
func Strings(v any, path ...string) []string {
	var out []string
	for _, x := range Values(v, path...) {
		if s, ok := Text(x); ok && s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// String is the first of Strings, "" for none.
func String(v any, path ...string) string {
	if s := Strings(v, path...); len(s) > 0 {
		return s[0]
	}
	return ""
}

// Text is a scalar value as text: a string as it is, a number in its
// shortest form, a boolean true or false; false for nil, objects and
// lists.
func Text(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), true
	case int:
		return strconv.Itoa(x), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// Int is an integer value (a number, or a string of one); false when v
// is none.
func Int(v any) (int32, bool) {
	s, ok := Text(v)
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 32)
	return int32(n), err == nil
}

// Bool is a boolean value (true or false, or a string of one); false
// when v is none.
func Bool(v any) (b, ok bool) {
	s, ok := Text(v)
	if !ok {
		return false, false
	}
	b, err := strconv.ParseBool(s)
	return b, err == nil
}

// ARN is an Amazon Resource Name's parts:
// arn:partition:service:region:account:resource.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html
type ARN struct {
	Partition, Service, Region, Account, Resource string
}

// ParseARN reads an ARN; false when s is none.
func ParseARN(s string) (ARN, bool) {
	parts := strings.SplitN(s, ":", 6)
	if len(parts) != 6 || parts[0] != "arn" || parts[2] == "" {
		return ARN{}, false
	}
	return ARN{Partition: parts[1], Service: parts[2], Region: parts[3], Account: parts[4], Resource: parts[5]}, true
}

// Unique is ids without empties and repeats, in order.
func Unique(ids []string) []string {
	var out []string
	for _, id := range ids {
		if id != "" && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// EC2 is the eventSource of EC2's calls.
const EC2 = "ec2.amazonaws.com"

// EC2Tagged are the resource ids with prefix (i-, vpc-, subnet-, sg-)
// whose tags an EC2 CreateTags or DeleteTags call changed: the
// requestParameters' resourcesSet.items[].resourceId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateTags.html).
// Tags name resources of several tables: each table answers for its own
// ids by their prefix.
func EC2Tagged(ev module.Event, prefix string) []string {
	if !Is(ev, EC2, "CreateTags", "DeleteTags") {
		return nil
	}
	var ids []string
	for _, id := range Strings(ev.Request, "resourcesSet", "items", "resourceId") {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	return ids
}

// Parse reads a CloudTrail record (the JSON of one event, as a log file's
// Records hold it, LookupEvents' CloudTrailEvent gives it, or EventBridge
// delivers it as "AWS API Call via CloudTrail"'s detail) into an Event.
// Numbers stay json.Number.
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func Parse(doc []byte) (module.Event, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var r module.EventRecord
	if err := dec.Decode(&r); err != nil {
		return module.Event{}, fmt.Errorf("read a CloudTrail record: %w", err)
	}
	return r.Event(), nil
}

// Find are the scalar values under key (regardless of case) anywhere
// below v, as text, without empties and repeats, in the order of a walk
// that takes an object's keys in sorted order.
func Find(v any, key string) []string {
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				e := x[k]
				if strings.EqualFold(k, key) {
					if s, ok := Text(e); ok && s != "" && !slices.Contains(out, s) {
						out = append(out, s)
					}
					continue
				}
				walk(e)
			}
		}
	}
	walk(v)
	return out
}
