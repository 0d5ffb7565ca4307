package emulator

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// CloudFormation resource schemas the emulator's Cloud Control API and
// cloudformation:DescribeType serve: cfnschemas/*.json, one per type (see
// cfnschemas/README.md for their sources).

//go:embed cfnschemas/*.json
var cfnSchemaFiles embed.FS

// cfnSchema is the part of a resource schema the emulator acts on; raw is
// the whole document, as DescribeType returns it. Real public schemas have
// quirks the emulator accepts, as CloudFormation does: paths in
// readOnlyProperties, createOnlyProperties or writeOnlyProperties that name
// no property (ignored), primary identifiers below a top-level property
// (/properties/Schedule/ScheduleId), "\u0000" inside strings, $ref chains,
// oneOf/anyOf, no list handler. The meta-schema:
// https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html
type cfnSchema struct {
	raw               string
	TypeName          string                `json:"typeName"`
	Properties        map[string]*cfnProp   `json:"properties"`
	Definitions       map[string]*cfnProp   `json:"definitions"`
	Required          []string              `json:"required"`
	CreateOnly        []string              `json:"createOnlyProperties"`
	ReadOnly          []string              `json:"readOnlyProperties"`
	WriteOnly         []string              `json:"writeOnlyProperties"`
	PrimaryIdentifier []string              `json:"primaryIdentifier"`
	Handlers          map[string]cfnHandler `json:"handlers"`
	AdditionalProps   *bool                 `json:"additionalProperties"`
	OneOf             []*cfnProp            `json:"oneOf"`
	AnyOf             []*cfnProp            `json:"anyOf"`
	AllOf             []*cfnProp            `json:"allOf"`
	// readOnlyTop and writeOnlyTop: the top-level properties read-only
	// (write-only) as a whole.
	readOnlyTop, writeOnlyTop map[string]bool
	// writeOnlyPaths: the write-only members below a top-level property,
	// split (["Body", "S3", "Key"]).
	writeOnlyPaths [][]string
	// identifierPaths: primaryIdentifier's paths, split below
	// /properties (["Schedule", "ScheduleId"]).
	identifierPaths [][]string
}

// cfnProp is a property's (sub)schema.
type cfnProp struct {
	Type                 cfnTypes            `json:"type"`
	Ref                  string              `json:"$ref"`
	Items                *cfnProp            `json:"items"`
	Properties           map[string]*cfnProp `json:"properties"`
	PatternProperties    map[string]*cfnProp `json:"patternProperties"`
	AdditionalProperties json.RawMessage     `json:"additionalProperties"`
	Required             []string            `json:"required"`
	OneOf                []*cfnProp          `json:"oneOf"`
	AnyOf                []*cfnProp          `json:"anyOf"`
	AllOf                []*cfnProp          `json:"allOf"`
	Enum                 []any               `json:"enum"`
	Format               string              `json:"format"`
	Pattern              json.RawMessage     `json:"pattern"`
	Default              any                 `json:"default"`
}

// closed reports whether the (sub)schema refuses properties it does not
// name (additionalProperties false).
func (p *cfnProp) closed() bool { return string(bytes.TrimSpace(p.AdditionalProperties)) == "false" }

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
	Permissions []string `json:"permissions"`
	// HandlerSchema: for list, the properties of a parent that the
	// request's ResourceModel gives (required, or one of oneOf's
	// alternatives).
	HandlerSchema *cfnProp `json:"handlerSchema"`
}

// propName is the top-level property a schema path (/properties/Name/...)
// starts with.
func propName(p string) string {
	rest, _ := strings.CutPrefix(p, "/properties/")
	name, _, _ := strings.Cut(rest, "/")
	return name
}

// propPath splits a schema path below /properties: nil when it is not one.
func propPath(p string) []string {
	rest, ok := strings.CutPrefix(p, "/properties/")
	if !ok || rest == "" {
		return nil
	}
	return strings.Split(rest, "/")
}

// loadCFNSchemas reads the embedded schemas, then every *.json of dir
// (Options.SchemaDir; "" for none), then extra (Options.CloudFormationSchemas),
// by type name: a later one replaces an earlier one of the same type.
func loadCFNSchemas(dir string, extra []string) (map[string]*cfnSchema, error) {
	type doc struct {
		name string
		b    []byte
	}
	var docs []doc
	entries, err := cfnSchemaFiles.ReadDir("cfnschemas")
	if err != nil {
		return nil, fmt.Errorf("emulator: embedded schemas: %w", err)
	}
	for _, e := range entries {
		b, err := cfnSchemaFiles.ReadFile(path.Join("cfnschemas", e.Name()))
		if err != nil {
			return nil, fmt.Errorf("emulator: embedded schema %s: %w", e.Name(), err)
		}
		docs = append(docs, doc{"embedded " + e.Name(), b})
	}
	if dir != "" {
		files, err := filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("emulator: schemas in %s: %w", dir, err)
		}
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("emulator: schema folder: %w", err)
		}
		slices.Sort(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return nil, fmt.Errorf("emulator: schema: %w", err)
			}
			docs = append(docs, doc{f, b})
		}
	}
	for i, d := range extra {
		docs = append(docs, doc{fmt.Sprintf("Options.CloudFormationSchemas[%d]", i), []byte(d)})
	}
	out := map[string]*cfnSchema{}
	for _, d := range docs {
		s, err := parseCFNSchema(d.b)
		if err != nil {
			return nil, fmt.Errorf("emulator: schema %s: %w", d.name, err)
		}
		out[s.TypeName] = s
	}
	return out, nil
}

// parseCFNSchema reads one resource schema.
func parseCFNSchema(b []byte) (*cfnSchema, error) {
	s := &cfnSchema{raw: string(b)}
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("not a resource schema: %w", err)
	}
	if s.TypeName == "" || len(s.PrimaryIdentifier) == 0 {
		return nil, fmt.Errorf("a resource schema needs typeName and primaryIdentifier")
	}
	s.readOnlyTop, s.writeOnlyTop = map[string]bool{}, map[string]bool{}
	// A path naming no property (real schemas keep some for properties
	// they dropped) is ignored.
	for _, p := range s.ReadOnly {
		if parts := propPath(p); len(parts) == 1 && s.Properties[parts[0]] != nil {
			s.readOnlyTop[parts[0]] = true
		}
	}
	for _, p := range s.WriteOnly {
		switch parts := propPath(p); len(parts) {
		case 0:
		case 1:
			s.writeOnlyTop[parts[0]] = s.Properties[parts[0]] != nil
		default:
			s.writeOnlyPaths = append(s.writeOnlyPaths, parts)
		}
	}
	for _, p := range s.PrimaryIdentifier {
		parts := propPath(p)
		if parts == nil {
			return nil, fmt.Errorf("primaryIdentifier %q is not a /properties/ path", p)
		}
		s.identifierPaths = append(s.identifierPaths, parts)
	}
	return s, nil
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

// resolve follows a property's local $ref (#/definitions/Name or
// #/properties/Name), through chains of them; a $ref elsewhere (or a
// loop) resolves to nil: anything is accepted there.
func (s *cfnSchema) resolve(p *cfnProp) *cfnProp {
	for i := 0; p != nil && p.Ref != ""; i++ {
		if i == 32 {
			return nil
		}
		if name, ok := strings.CutPrefix(p.Ref, "#/definitions/"); ok {
			p = s.Definitions[name]
		} else if name, ok := strings.CutPrefix(p.Ref, "#/properties/"); ok {
			p = s.Properties[name]
		} else {
			return nil
		}
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
// does: unknown properties where additionalProperties is false, missing
// required ones, types, enums, at every depth, through $ref, oneOf, anyOf
// and allOf. The messages follow CloudFormation's "Model validation failed
// (...)" form.
func (s *cfnSchema) validate(model map[string]any) error {
	top := &cfnProp{Type: cfnTypes{"object"}, Properties: s.Properties, Required: s.Required,
		OneOf: s.OneOf, AnyOf: s.AnyOf, AllOf: s.AllOf}
	if s.AdditionalProps == nil || !*s.AdditionalProps {
		// The meta-schema makes additionalProperties false mandatory.
		top.AdditionalProperties = json.RawMessage("false")
	}
	if problems := s.check("#", model, top); len(problems) > 0 {
		return fmt.Errorf("Model validation failed (%s)", strings.Join(problems, "; "))
	}
	return nil
}

// check is what is wrong with value v at path (#/Name/0/...) under the
// (sub)schema p.
func (s *cfnSchema) check(at string, v any, p *cfnProp) []string {
	p = s.resolve(p)
	if p == nil {
		return nil
	}
	if !typeOK(p.Type, v) {
		return []string{fmt.Sprintf("%s: expected type: %s, found: %s", at, typeNames(p.Type), typeTitle(jsonTypeName(v)))}
	}
	var problems []string
	if len(p.Enum) > 0 && !slices.ContainsFunc(p.Enum, func(e any) bool { return jsonvalue.Equal(e, v) }) {
		problems = append(problems, fmt.Sprintf("%s: %v is not a valid enum value", at, v))
	}
	switch t := v.(type) {
	case map[string]any:
		for _, name := range slices.Sorted(maps.Keys(t)) {
			sub, known := p.Properties[name]
			if !known {
				for pat, pp := range p.PatternProperties {
					if re, err := regexp.Compile(pat); err == nil && re.MatchString(name) {
						sub, known = pp, true
						break
					}
				}
			}
			if !known {
				if p.closed() {
					problems = append(problems, fmt.Sprintf("%s: extraneous key [%s] is not permitted", at, name))
				}
				continue
			}
			problems = append(problems, s.check(at+"/"+name, t[name], sub)...)
		}
		for _, r := range p.Required {
			if _, ok := t[r]; !ok {
				problems = append(problems, fmt.Sprintf("%s: required key [%s] not found", at, r))
			}
		}
	case []any:
		if p.Items != nil {
			for i, e := range t {
				problems = append(problems, s.check(fmt.Sprintf("%s/%d", at, i), e, p.Items)...)
			}
		}
	}
	for _, alt := range p.AllOf {
		problems = append(problems, s.check(at, v, alt)...)
	}
	// oneOf is checked as anyOf: the alternatives of real schemas overlap
	// (e.g. only "required" lists), and CloudFormation accepts a model
	// that satisfies one of them.
	for _, alts := range [][]*cfnProp{p.OneOf, p.AnyOf} {
		if len(alts) > 0 && !slices.ContainsFunc(alts, func(alt *cfnProp) bool { return len(s.check(at, v, alt)) == 0 }) {
			problems = append(problems, fmt.Sprintf("%s: no subschema matched out of the total %d subschemas", at, len(alts)))
		}
	}
	return problems
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
// primaryIdentifier's order (read from within a top-level property when
// the path goes below one), joined with "|" as Cloud Control joins them;
// false when one is missing.
// https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-identifier.html
func (s *cfnSchema) identifier(model map[string]any) (string, bool) {
	parts := make([]string, len(s.identifierPaths))
	for i, path := range s.identifierPaths {
		v, ok := valueAt(model, path)
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

// valueAt is the value at path in nested objects.
func valueAt(m map[string]any, path []string) (any, bool) {
	var v any = m
	for _, name := range path {
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = obj[name]; !ok {
			return nil, false
		}
	}
	return v, v != nil
}

// view is the model as the read handler returns it: without write-only
// properties, at the top level or below ("*" stands for every item of an
// array).
func (s *cfnSchema) view(model map[string]any) map[string]any {
	out := make(map[string]any, len(model))
	for k, v := range model {
		if !s.writeOnlyTop[k] {
			out[k] = v
		}
	}
	for _, path := range s.writeOnlyPaths {
		if _, ok := out[path[0]]; ok {
			out[path[0]] = withoutPath(out[path[0]], path[1:])
		}
	}
	return out
}

// withoutPath is v without what path names (v is not changed).
func withoutPath(v any, path []string) any {
	if len(path) == 0 {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		if _, ok := t[path[0]]; !ok {
			return v
		}
		out := maps.Clone(t)
		if len(path) == 1 {
			delete(out, path[0])
		} else {
			out[path[0]] = withoutPath(t[path[0]], path[1:])
		}
		return out
	case []any:
		if path[0] != "*" {
			return v
		}
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = withoutPath(e, path[1:])
		}
		return out
	}
	return v
}
