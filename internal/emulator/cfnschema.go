package emulator

import (
	"embed"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"
)

// CloudFormation resource schemas the emulator's Cloud Control API and
// cloudformation:DescribeType serve: cfnschemas/*.json, one per type (see
// cfnschemas/README.md for their sources).

//go:embed cfnschemas/*.json
var cfnSchemaFiles embed.FS

// cfnSchema is the part of a resource schema the emulator acts on; raw is
// the whole document, as DescribeType returns it.
type cfnSchema struct {
	raw                 string
	TypeName            string                `json:"typeName"`
	Properties          map[string]*cfnProp   `json:"properties"`
	Definitions         map[string]*cfnProp   `json:"definitions"`
	Required            []string              `json:"required"`
	CreateOnly          []string              `json:"createOnlyProperties"`
	ReadOnly            []string              `json:"readOnlyProperties"`
	WriteOnly           []string              `json:"writeOnlyProperties"`
	PrimaryIdentifier   []string              `json:"primaryIdentifier"`
	Handlers            map[string]cfnHandler `json:"handlers"`
	AdditionalProps     *bool                 `json:"additionalProperties"`
	readOnlyTop         map[string]bool
	writeOnlyTop        map[string]bool
	identifierPropNames []string
}

// cfnProp is a property's (sub)schema.
type cfnProp struct {
	Type       cfnTypes            `json:"type"`
	Ref        string              `json:"$ref"`
	Items      *cfnProp            `json:"items"`
	Properties map[string]*cfnProp `json:"properties"`
	Default    any                 `json:"default"`
}

// cfnTypes is a schema's "type": one name or a list of names.
type cfnTypes []string

func (t *cfnTypes) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = cfnTypes{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return err
	}
	*t = many
	return nil
}

type cfnHandler struct {
	Permissions   []string `json:"permissions"`
	HandlerSchema *struct {
		Required []string `json:"required"`
	} `json:"handlerSchema"`
}

// propName is the top-level property a schema path (/properties/Name/...)
// starts with.
func propName(p string) string {
	rest, _ := strings.CutPrefix(p, "/properties/")
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// loadCFNSchemas reads the embedded schemas and extra (Options.CloudFormationSchemas),
// by type name.
func loadCFNSchemas(extra []string) map[string]*cfnSchema {
	entries, err := cfnSchemaFiles.ReadDir("cfnschemas")
	if err != nil {
		panic(err)
	}
	docs := map[string][]byte{}
	for _, e := range entries {
		b, err := cfnSchemaFiles.ReadFile(path.Join("cfnschemas", e.Name()))
		if err != nil {
			panic(err)
		}
		docs[e.Name()] = b
	}
	for i, d := range extra {
		docs[fmt.Sprintf("Options.CloudFormationSchemas[%d]", i)] = []byte(d)
	}
	out := map[string]*cfnSchema{}
	for name, b := range docs {
		s := &cfnSchema{raw: string(b)}
		if err := json.Unmarshal(b, s); err != nil {
			panic(fmt.Sprintf("emulator: schema %s: %v", name, err))
		}
		s.readOnlyTop, s.writeOnlyTop = map[string]bool{}, map[string]bool{}
		for _, p := range s.ReadOnly {
			s.readOnlyTop[propName(p)] = true
		}
		for _, p := range s.WriteOnly {
			s.writeOnlyTop[propName(p)] = true
		}
		for _, p := range s.PrimaryIdentifier {
			s.identifierPropNames = append(s.identifierPropNames, propName(p))
		}
		out[s.TypeName] = s
	}
	return out
}

// provisioningType is DescribeType's ProvisioningType: what Cloud Control
// can do with the type, from its handlers.
func (s *cfnSchema) provisioningType() string {
	_, create := s.Handlers["create"]
	_, update := s.Handlers["update"]
	switch {
	case !create:
		return "NON_PROVISIONABLE"
	case !update:
		return "IMMUTABLE"
	}
	return "FULLY_MUTABLE"
}

// resolve follows a property's local $ref (#/definitions/Name).
func (s *cfnSchema) resolve(p *cfnProp) *cfnProp {
	for i := 0; p != nil && p.Ref != "" && i < 8; i++ {
		name, ok := strings.CutPrefix(p.Ref, "#/definitions/")
		if !ok {
			return p
		}
		p = s.Definitions[name]
	}
	return p
}

// jsonTypeName is a decoded JSON value's schema type ("integer" for a
// whole number, which "number" accepts too).
func jsonTypeName(v any) string {
	switch t := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case bool:
		return "boolean"
	case nil:
		return "null"
	case json.Number:
		if _, err := t.Int64(); err == nil {
			return "integer"
		}
		return "number"
	case float64:
		if t == float64(int64(t)) {
			return "integer"
		}
		return "number"
	}
	return "unknown"
}

// typeOK reports whether v has one of the types the schema allows.
func typeOK(types cfnTypes, v any) bool {
	if len(types) == 0 {
		return true
	}
	got := jsonTypeName(v)
	for _, t := range types {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// validate checks a model against the schema as CloudFormation's validator
// does, at the top level: unknown properties, missing required ones, the
// types of the given ones (and of array items). The messages follow
// CloudFormation's "Model validation failed (...)" form.
func (s *cfnSchema) validate(model map[string]any) error {
	var problems []string
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range model {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		p, ok := s.Properties[name]
		if !ok {
			if s.AdditionalProps == nil || !*s.AdditionalProps {
				problems = append(problems, fmt.Sprintf("#: extraneous key [%s] is not permitted", name))
			}
			continue
		}
		p = s.resolve(p)
		v := model[name]
		if p == nil {
			continue
		}
		if !typeOK(p.Type, v) {
			problems = append(problems, fmt.Sprintf("#/%s: expected type: %s, found: %s", name, typeNames(p.Type), typeTitle(jsonTypeName(v))))
			continue
		}
		if arr, ok := v.([]any); ok && p.Items != nil {
			item := s.resolve(p.Items)
			for i, e := range arr {
				if item != nil && !typeOK(item.Type, e) {
					problems = append(problems, fmt.Sprintf("#/%s/%d: expected type: %s, found: %s", name, i, typeNames(item.Type), typeTitle(jsonTypeName(e))))
				}
			}
		}
	}
	for _, r := range s.Required {
		if _, ok := model[r]; !ok {
			problems = append(problems, fmt.Sprintf("#: required key [%s] not found", r))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("Model validation failed (%s)", strings.Join(problems, "; "))
	}
	return nil
}

func typeTitle(t string) string {
	switch t {
	case "object":
		return "JSONObject"
	case "array":
		return "JSONArray"
	}
	if t == "" {
		return t
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

func typeNames(ts cfnTypes) string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = typeTitle(t)
	}
	sort.Strings(out)
	return strings.Join(out, " or ")
}

// fillDefaults sets the schema's default of each top-level property the
// model leaves out, as a read handler returns AWS's value for it.
func (s *cfnSchema) fillDefaults(model map[string]any) {
	for name, p := range s.Properties {
		if p.Default == nil {
			continue
		}
		if _, ok := model[name]; !ok && !s.writeOnlyTop[name] {
			model[name] = deepCopyJSON(p.Default)
		}
	}
}

// touches reports whether a patch path (/Name/...) changes something at
// or under the schema path sp (/properties/Name/...), or a parent of it.
func touches(patchPath, sp string) bool {
	pp, _ := splitPointer(patchPath)
	rest, _ := strings.CutPrefix(sp, "/properties")
	sparts, _ := splitPointer(rest)
	n := min(len(pp), len(sparts))
	for i := 0; i < n; i++ {
		// Array items of a schema path are written "*" in some schemas.
		if sparts[i] != pp[i] && sparts[i] != "*" {
			return false
		}
	}
	return true
}

// identifier is the primary identifier of a model: its values in
// primaryIdentifier's order, joined with "|" as Cloud Control joins them;
// false when one is missing.
func (s *cfnSchema) identifier(model map[string]any) (string, bool) {
	parts := make([]string, len(s.identifierPropNames))
	for i, name := range s.identifierPropNames {
		v, ok := model[name]
		if !ok {
			return "", false
		}
		switch t := v.(type) {
		case string:
			parts[i] = t
		default:
			b, _ := json.Marshal(t)
			parts[i] = string(b)
		}
	}
	return strings.Join(parts, "|"), true
}

// view is the model as the read handler returns it: without write-only
// properties.
func (s *cfnSchema) view(model map[string]any) map[string]any {
	out := make(map[string]any, len(model))
	for k, v := range model {
		if !s.writeOnlyTop[k] {
			out[k] = v
		}
	}
	return out
}
