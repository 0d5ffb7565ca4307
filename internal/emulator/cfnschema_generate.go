package emulator

import (
	"encoding/json"
	"regexp"
	"strings"
	"time"
)

// What the emulator's handler of a type without hooks of its own
// (cloudcontrol_types.go) fills in on create, as a real handler returns
// the resource's read-only properties and names what is left unnamed:
//   - each top-level read-only property the model lacks, of a scalar type,
//     by its name and format: an ARN in the type's service for names
//     ending in Arn, an id for names ending in Id, a timestamp for
//     format date-time, a URL for names ending in Url, an enum's first
//     value, a generated name otherwise;
//   - each part of the primary identifier the model lacks, the same way
//     (a part below a top-level property is filled within it).
//
// ARNs follow AWS's general form arn:aws:SERVICE:REGION:ACCOUNT:RESOURCE
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/reference-arns.html),
// with the type's service lowercased (AWS::ApiGatewayV2::Api ->
// apigatewayv2) and RESOURCE the type's short name, lowercased, "/" and
// the resource's first other identifier or a generated id.

// generate fills a new model's read-only and identifier properties.
func (s *cfnSchema) generate(m map[string]any, region, account string) {
	var arns [][]string // filled last: they name the others
	fill := func(path []string) {
		if _, ok := valueAt(m, path); ok {
			return
		}
		p := s.at(path)
		if isArnName(path[len(path)-1]) {
			arns = append(arns, path)
			return
		}
		if v, ok := s.generated(path[len(path)-1], p, region, account, m); ok {
			setNested(m, path, v)
		}
	}
	for _, ro := range s.ReadOnly {
		if path := propPath(ro); len(path) == 1 && s.Properties[path[0]] != nil {
			fill(path)
		}
	}
	for _, path := range s.identifierPaths {
		fill(path)
	}
	for _, path := range arns {
		if _, ok := valueAt(m, path); !ok {
			setNested(m, path, s.arn(region, account, m))
		}
	}
}

// at is the (resolved) subschema at a path below /properties; nil when
// the schema does not say.
func (s *cfnSchema) at(path []string) *cfnProp {
	p := s.resolve(s.Properties[path[0]])
	for _, name := range path[1:] {
		if p == nil {
			return nil
		}
		p = s.resolve(p.Properties[name])
	}
	return p
}

func isArnName(name string) bool { return strings.HasSuffix(strings.ToLower(name), "arn") }

// generated is a value for the read-only or identifier property name of
// subschema p; false for objects and arrays, which are left out.
func (s *cfnSchema) generated(name string, p *cfnProp, region, account string, m map[string]any) (any, bool) {
	var types cfnTypes
	if p != nil {
		types = p.Type
		if len(p.Enum) > 0 {
			return deepCopyJSON(p.Enum[0]), true
		}
	}
	kind := "string"
	if len(types) > 0 && !typeAllows(types, "string") {
		kind = types[0]
	}
	switch kind {
	case "integer", "number":
		return json.Number("1"), true
	case "boolean":
		return false, true
	case "object", "array", "null":
		return nil, false
	}
	lower := strings.ToLower(name)
	switch {
	case p != nil && p.Format == "date-time" || strings.HasSuffix(lower, "time") || strings.HasSuffix(lower, "date"):
		return time.Now().UTC().Format(time.RFC3339), true
	case strings.HasSuffix(lower, "url") || strings.HasSuffix(lower, "uri") || strings.HasSuffix(lower, "endpoint"):
		return "https://" + randomString("abcdefghijklmnopqrstuvwxyz0123456789", 10) + "." + s.service() + "." + region + ".amazonaws.com", true
	case strings.HasSuffix(lower, "name"):
		return ccName(s.shortName()), true
	}
	if p != nil && p.Format == "" {
		// An id shaped like the pattern's simplest reading when it is a
		// plain character class: AWS's id patterns mostly are.
		if id, ok := patternID(p); ok {
			return id, true
		}
	}
	return randomString("abcdefghijklmnopqrstuvwxyz0123456789", 10), true
}

// patternID is a value for a pattern of the form ^[class]{n}$ or
// ^prefix-[class]+$ with a lowercase hex or alphanumeric class.
var simplePattern = regexp.MustCompile(`^\^?([a-z-]*)\[(a-z0-9|0-9a-z|a-f0-9|0-9a-f|0-9)\](?:\{(\d+)(?:,\d*)?\}|\+|\*)\$?$`)

func patternID(p *cfnProp) (string, bool) {
	var pattern string
	if err := json.Unmarshal(p.Pattern, &pattern); err != nil || pattern == "" {
		return "", false
	}
	sm := simplePattern.FindStringSubmatch(pattern)
	if sm == nil {
		return "", false
	}
	n := 10
	if sm[3] != "" {
		if k, err := json.Number(sm[3]).Int64(); err == nil && k > 0 && k < 64 {
			n = int(k)
		}
	}
	alphabet := map[string]string{"a-z0-9": "abcdefghijklmnopqrstuvwxyz0123456789", "0-9a-z": "abcdefghijklmnopqrstuvwxyz0123456789",
		"a-f0-9": "0123456789abcdef", "0-9a-f": "0123456789abcdef", "0-9": "0123456789"}[sm[2]]
	return sm[1] + randomString(alphabet, n), true
}

// typeAllows reports whether types names t.
func typeAllows(types cfnTypes, t string) bool {
	for _, x := range types {
		if x == t {
			return true
		}
	}
	return false
}

// service is the type's service, lowercased (AWS::SNS::Topic -> sns).
func (s *cfnSchema) service() string {
	parts := strings.Split(s.TypeName, "::")
	if len(parts) < 2 {
		return "cloudformation"
	}
	return strings.ToLower(parts[1])
}

// shortName is the type's last part (AWS::SNS::Topic -> Topic).
func (s *cfnSchema) shortName() string {
	return s.TypeName[strings.LastIndex(s.TypeName, ":")+1:]
}

// arn is an ARN for a new resource of the type: its first identifier that
// is no ARN names it, or a generated id.
func (s *cfnSchema) arn(region, account string, m map[string]any) string {
	id := ""
	for _, path := range s.identifierPaths {
		if v, ok := valueAt(m, path); ok && !isArnName(path[len(path)-1]) {
			if str, ok := v.(string); ok && str != "" {
				id = str
				break
			}
		}
	}
	if id == "" {
		id = randomString("abcdefghijklmnopqrstuvwxyz0123456789", 10)
	}
	return "arn:aws:" + s.service() + ":" + region + ":" + account + ":" + strings.ToLower(s.shortName()) + "/" + id
}

// setNested sets the value at path, making the objects on the way.
func setNested(m map[string]any, path []string, v any) {
	for _, name := range path[:len(path)-1] {
		next, ok := m[name].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[name] = next
		}
		m = next
	}
	m[path[len(path)-1]] = v
}
