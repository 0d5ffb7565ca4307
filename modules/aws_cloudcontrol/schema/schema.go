// Package schema turns a CloudFormation resource schema (the document
// cloudformation:DescribeType returns for a RESOURCE type) into a table: its
// name, one column per top-level property with a SQL type, which columns are
// the cloud identity, feedback, write-only or create-only, and the
// module.Table that declares it (whose DDL creates it) with the SQL it needs
// beyond its columns (the identity's UNIQUE constraint). It
// also converts between the table's records (column -> value) and Cloud
// Control resource models (property -> value).
//
// The schema language is AWS's resource provider definition schema:
// https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-schema.html
// (meta-schema: aws-cloudformation/cloudformation-resource-schema,
// provider.definition.schema.v1.json and base.definition.schema.v1.json).
package schema

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// SQL types of columns.
const (
	Text    = "text"
	BigInt  = "bigint"
	Numeric = "numeric"
	Boolean = "boolean"
	JSONB   = "jsonb"
)

// IDColumn is the integer primary key every module table has; only the
// database knows it.
const IDColumn = "id"

// Column is one top-level property of the type as a table column.
type Column struct {
	Name        string // column name (see ColumnName)
	Property    string // property name in the schema and in resource models
	SQLType     string // Text, BigInt, Numeric, Boolean or JSONB
	Description string
	Required    bool // in the schema's required: NOT NULL
	ReadOnly    bool // readOnlyProperties: feedback, never sent
	WriteOnly   bool // writeOnlyProperties: sent, never returned, never compared
	// CreateOnly: a createOnlyProperties path is this property or under
	// it; CreateOnlyPaths says which (schema pointers).
	CreateOnly      bool
	CreateOnlyPaths []string
	// ReadOnlyPaths and WriteOnlyPaths are nested paths under the property
	// (/properties/X/Y/...), left out of comparisons and patches.
	ReadOnlyPaths  []string
	WriteOnlyPaths []string
	// Unordered: an array whose order does not matter (insertionOrder
	// false; the meta-schema's default is true, order matters), compared
	// as a set.
	Unordered bool
	// UnorderedPaths are the arrays nested in the property whose order
	// does not matter, as paths of keys below it ("*": every item of an
	// array): {"*", "Projection", "NonKeyAttributes"}.
	UnorderedPaths [][]string
	// Default is the schema's default (nil: none); an absent value equals
	// it.
	Default any
	// Tags: the type's tag property. The column holds one JSON object
	// {key: value}, whatever the schema's shape (TagList).
	Tags bool
	// TagList: the property is an array of {Key, Value} objects (else a
	// map of key to value).
	TagList bool
	// JSONDoc: an object, or a string holding JSON (a policy document):
	// compared by meaning.
	JSONDoc bool
	// StringList: the property is an array of strings as the schema
	// writes it (not through a $ref): a list of names that may name
	// other resources (refs.go).
	StringList bool
}

// Type is a resource type as a table.
type Type struct {
	TypeName    string // AWS::Logs::LogGroup
	Description string
	Table       string // aws_logs_log_group
	Columns     []Column
	// Identifier is the primaryIdentifier's top-level properties, in
	// order (a composite identifier has several; Cloud Control joins their
	// values with "|").
	Identifier []string
	// IdentifierSub is, per Identifier entry, the keys below its
	// top-level property where the value is (nil: the property itself):
	// AWS::QuickSight::RefreshSchedule's /properties/Schedule/ScheduleId
	// is {"ScheduleId"} below Schedule.
	IdentifierSub [][]string
	// Listable: the type has a list handler. Without one its table holds
	// only what is created from it: each row is read back by GetResource
	// (by its identifier) and nothing is imported.
	Listable bool
	// Ignored are the readOnlyProperties, writeOnlyProperties and
	// createOnlyProperties paths that name no property (real schemas
	// keep some after a property is removed): left out, with a warning at
	// install.
	Ignored []IgnoredPath
	// ListParents are the properties the list handler needs
	// (handlers.list.handlerSchema.required): the type is listed per
	// parent, with those properties in ListResources' ResourceModel.
	ListParents []string
	// Updatable: the type has an update handler (ProvisioningType
	// FULLY_MUTABLE); without one every change replaces the resource.
	Updatable bool
	// ReplacementStrategy is the schema's replacementStrategy
	// (create_then_delete when absent, the spec's default).
	ReplacementStrategy string
	// Raw is the schema document as parsed.
	Raw json.RawMessage

	refs   []Reference // references to other tables (refs.go)
	byProp map[string]int
	byCol  map[string]int
	table  module.Table // declared (ModuleTable)
}

// IgnoredPath is a path of one of a schema's lists (readOnlyProperties,
// writeOnlyProperties, createOnlyProperties) that names no property.
type IgnoredPath struct {
	List, Path string
}

// ErrNotProvisionable is wrapped by Parse and CheckProvisioning for a type
// Cloud Control cannot create, read and delete.
var ErrNotProvisionable = errors.New("not provisionable through Cloud Control")

// CheckProvisioning refuses a type whose DescribeType ProvisioningType is
// NON_PROVISIONABLE. AWS: "NON_PROVISIONABLE: the type does not include all
// of the following handlers: create, read, delete"
// (https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html).
func CheckProvisioning(typeName, provisioningType string) error {
	if provisioningType == "NON_PROVISIONABLE" {
		return fmt.Errorf("%s: %w (ProvisioningType NON_PROVISIONABLE)", typeName, ErrNotProvisionable)
	}
	return nil
}

// raw mirrors the parts of a resource schema this package reads.
type rawSchema struct {
	TypeName            string              `json:"typeName"`
	Description         string              `json:"description"`
	Properties          map[string]*rawProp `json:"properties"`
	Definitions         map[string]*rawProp `json:"definitions"`
	Required            []string            `json:"required"`
	ReadOnly            []string            `json:"readOnlyProperties"`
	WriteOnly           []string            `json:"writeOnlyProperties"`
	CreateOnly          []string            `json:"createOnlyProperties"`
	PrimaryIdentifier   []string            `json:"primaryIdentifier"`
	ReplacementStrategy string              `json:"replacementStrategy"`
	Tagging             *struct {
		Taggable    *bool  `json:"taggable"`
		TagProperty string `json:"tagProperty"`
	} `json:"tagging"`
	Handlers map[string]struct {
		HandlerSchema *struct {
			Required []string `json:"required"`
		} `json:"handlerSchema"`
	} `json:"handlers"`
}

type rawProp struct {
	Description    string              `json:"description"`
	Type           types               `json:"type"`
	Ref            string              `json:"$ref"`
	Items          *rawProp            `json:"items"`
	Properties     map[string]*rawProp `json:"properties"`
	OneOf          []*rawProp          `json:"oneOf"`
	AnyOf          []*rawProp          `json:"anyOf"`
	AllOf          []*rawProp          `json:"allOf"`
	InsertionOrder *bool               `json:"insertionOrder"`
	Default        any                 `json:"default"`
	PatternProps   map[string]*rawProp `json:"patternProperties"`
}

// types is a schema "type": one name or a list.
type types []string

func (t *types) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*t = types{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("type: %w", err)
	}
	*t = many
	return nil
}

// resolve follows local $refs (#/definitions/Name); a ref it cannot follow
// gives nil.
func (s *rawSchema) resolve(p *rawProp) *rawProp {
	for i := 0; p != nil && p.Ref != ""; i++ {
		name, ok := strings.CutPrefix(p.Ref, "#/definitions/")
		if !ok || i > 16 {
			return nil
		}
		p = s.Definitions[name]
	}
	return p
}

// topProp is the top-level property a schema pointer (/properties/X/...)
// names, and the rest of the path.
func topProp(pointer string) (string, string, bool) {
	rest, ok := strings.CutPrefix(pointer, "/properties/")
	if !ok || rest == "" {
		return "", "", false
	}
	name, sub, _ := strings.Cut(rest, "/")
	return name, sub, true
}

// Parse reads a resource schema. It refuses a type without create, read
// and delete handlers (not provisionable: the DescribeType rule), a schema
// without typeName, properties or primaryIdentifier, and property names
// whose columns would collide. A type without a list handler is not
// Listable; paths of readOnlyProperties, writeOnlyProperties and
// createOnlyProperties that name no property are Ignored.
func Parse(doc []byte) (*Type, error) {
	var s rawSchema
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("parse resource schema: %w", err)
	}
	if s.TypeName == "" {
		return nil, errors.New("parse resource schema: no typeName")
	}
	for _, h := range []string{"create", "read", "delete"} {
		if _, ok := s.Handlers[h]; !ok {
			return nil, fmt.Errorf("%s: %w (no %s handler)", s.TypeName, ErrNotProvisionable, h)
		}
	}
	if len(s.Properties) == 0 {
		return nil, fmt.Errorf("%s: the schema has no properties", s.TypeName)
	}
	if len(s.PrimaryIdentifier) == 0 {
		return nil, fmt.Errorf("%s: the schema has no primaryIdentifier", s.TypeName)
	}
	t := &Type{
		TypeName: s.TypeName, Description: s.Description, Table: TableName(s.TypeName),
		ReplacementStrategy: s.ReplacementStrategy, Raw: json.RawMessage(doc),
		byProp: map[string]int{}, byCol: map[string]int{IDColumn: -1},
	}
	if t.ReplacementStrategy == "" {
		t.ReplacementStrategy = "create_then_delete"
	}
	_, t.Updatable = s.Handlers["update"]
	_, t.Listable = s.Handlers["list"]
	if ls := s.Handlers["list"].HandlerSchema; ls != nil {
		t.ListParents = slices.Clone(ls.Required)
	}
	tagProp := "Tags"
	if s.Tagging != nil && s.Tagging.TagProperty != "" {
		if name, sub, ok := topProp(s.Tagging.TagProperty); ok && sub == "" {
			tagProp = name
		}
	}
	if s.Tagging != nil && s.Tagging.Taggable != nil && !*s.Tagging.Taggable {
		tagProp = ""
	}

	names := slices.Sorted(func(yield func(string) bool) {
		for k := range s.Properties {
			if !yield(k) {
				return
			}
		}
	})
	// The identifier's properties first, then the others by name: a
	// predictable column order.
	// An identifier below a top-level property
	// (/properties/Schedule/ScheduleId) is read from within it: the
	// property's column is the identity column.
	var ident []string
	for _, p := range s.PrimaryIdentifier {
		name, sub, ok := topProp(p)
		if !ok || s.Properties[name] == nil {
			return nil, fmt.Errorf("%s: primaryIdentifier %s names no property", s.TypeName, p)
		}
		var keys []string
		if sub != "" {
			keys = strings.Split(sub, "/")
		}
		ident = append(ident, name)
		t.IdentifierSub = append(t.IdentifierSub, keys)
	}
	t.Identifier = ident
	var order []string
	for _, n := range ident {
		if !slices.Contains(order, n) {
			order = append(order, n)
		}
	}
	for _, n := range names {
		if !slices.Contains(ident, n) {
			order = append(order, n)
		}
	}
	for _, name := range order {
		p := s.Properties[name]
		c := Column{Name: ColumnName(name), Property: name, Description: p.Description}
		if other, ok := t.byCol[c.Name]; ok {
			what := "the engine's own column"
			if other >= 0 {
				what = "property " + t.Columns[other].Property
			}
			return nil, fmt.Errorf("%s: property %s and %s both make column %q", s.TypeName, name, what, c.Name)
		}
		r := s.resolve(p)
		if c.Description == "" && r != nil {
			c.Description = r.Description
		}
		c.SQLType = sqlType(&s, r)
		c.StringList = len(p.Type) == 1 && p.Type[0] == "array" && p.Items != nil && len(p.Items.Type) == 1 && p.Items.Type[0] == "string"
		if r != nil {
			c.Default = r.Default
			if p.Default != nil {
				c.Default = p.Default
			}
			if len(r.Type) == 1 && r.Type[0] == "array" {
				// insertionOrder defaults to true (order matters).
				io := r.InsertionOrder
				if p.InsertionOrder != nil {
					io = p.InsertionOrder
				}
				c.Unordered = io != nil && !*io
			}
			// Policy documents: objects, or strings holding JSON (by the
			// conventional names), compared by meaning.
			c.JSONDoc = slices.Contains(r.Type, "object") ||
				(c.SQLType != BigInt && c.SQLType != Numeric && c.SQLType != Boolean &&
					(strings.HasSuffix(name, "PolicyDocument") || strings.HasSuffix(name, "Policy")))
		}
		if name == tagProp && r != nil {
			c.Tags = true
			c.JSONDoc = false
			c.Unordered = false
			if item := s.resolve(r.Items); slices.Contains(r.Type, "array") && item != nil {
				c.TagList = true
			}
		}
		if r != nil && !c.Tags {
			c.UnorderedPaths = s.unorderedBelow(r, nil, 0)
		}
		c.Required = slices.Contains(s.Required, name)
		t.byCol[c.Name] = len(t.Columns)
		t.byProp[name] = len(t.Columns)
		t.Columns = append(t.Columns, c)
	}
	mark := func(paths []string, what string, set func(c *Column, sub, path string)) error {
		for _, path := range paths {
			name, sub, ok := topProp(path)
			if !ok {
				return fmt.Errorf("%s: %s path %q does not start with /properties/", s.TypeName, what, path)
			}
			i, ok := t.byProp[name]
			if !ok {
				// The schema names a property it does not define (AWS's
				// schemas keep some after a property is removed: EC2
				// Instance's /properties/LicenseSpecification): nothing
				// to mark.
				t.Ignored = append(t.Ignored, IgnoredPath{what, path})
				continue
			}
			set(&t.Columns[i], sub, path)
		}
		return nil
	}
	if err := mark(s.ReadOnly, "readOnlyProperties", func(c *Column, sub, path string) {
		if sub == "" {
			c.ReadOnly = true
		} else {
			c.ReadOnlyPaths = append(c.ReadOnlyPaths, path)
		}
	}); err != nil {
		return nil, err
	}
	if err := mark(s.WriteOnly, "writeOnlyProperties", func(c *Column, sub, path string) {
		if sub == "" {
			c.WriteOnly = true
		} else {
			c.WriteOnlyPaths = append(c.WriteOnlyPaths, path)
		}
	}); err != nil {
		return nil, err
	}
	if err := mark(s.CreateOnly, "createOnlyProperties", func(c *Column, sub, path string) {
		c.CreateOnly = true
		c.CreateOnlyPaths = append(c.CreateOnlyPaths, path)
	}); err != nil {
		return nil, err
	}
	for _, p := range t.ListParents {
		if _, ok := t.byProp[p]; !ok {
			return nil, fmt.Errorf("%s: the list handler needs property %s, which the schema does not have", s.TypeName, p)
		}
	}
	if err := t.checkDDL(); err != nil {
		return nil, err
	}
	t.table = t.declare()
	return t, nil
}

// sqlType is the column type of a (resolved) property schema: scalars as
// text, bigint, numeric or boolean; objects, arrays, combinators, several
// types and anything unknown as jsonb.
func sqlType(s *rawSchema, p *rawProp) string {
	if p == nil || len(p.OneOf)+len(p.AnyOf)+len(p.AllOf) > 0 || len(p.Type) != 1 {
		return JSONB
	}
	switch p.Type[0] {
	case "string":
		return Text
	case "integer":
		return BigInt
	case "number":
		return Numeric
	case "boolean":
		return Boolean
	}
	return JSONB
}

// Column returns the column of a property.
func (t *Type) Column(property string) (*Column, bool) {
	i, ok := t.byProp[property]
	if !ok {
		return nil, false
	}
	return &t.Columns[i], true
}

// ColumnNamed returns the column of a column name.
func (t *Type) ColumnNamed(name string) (*Column, bool) {
	i, ok := t.byCol[name]
	if !ok || i < 0 {
		return nil, false
	}
	return &t.Columns[i], true
}

// IdentifierColumns are the columns of the primary identifier, in order,
// each once (two identifier paths below one property make one column).
func (t *Type) IdentifierColumns() []string {
	var out []string
	for _, p := range t.Identifier {
		c, _ := t.Column(p)
		if !slices.Contains(out, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out
}

// ModuleTable is the type's table, declared (module.Table.Declare): its
// columns, and from them the identity, declarative and feedback columns,
// and the create-only ones (every declarative column of a type without an
// update handler). Its DDL creates the table; SQL adds the rest.
func (t *Type) ModuleTable() module.Table { return t.table }

// unorderedBelow lists the arrays nested in p (at path below the column)
// whose insertionOrder is false; depth bounds recursive definitions.
func (s *rawSchema) unorderedBelow(p *rawProp, path []string, depth int) [][]string {
	if p == nil || depth > 8 {
		return nil
	}
	var out [][]string
	if slices.Contains(p.Type, "array") {
		if len(path) > 0 && p.InsertionOrder != nil && !*p.InsertionOrder {
			out = append(out, slices.Clone(path))
		}
		out = append(out, s.unorderedBelow(s.resolve(p.Items), append(slices.Clone(path), "*"), depth+1)...)
	}
	for _, name := range slices.Sorted(maps.Keys(p.Properties)) {
		out = append(out, s.unorderedBelow(s.resolve(p.Properties[name]), append(slices.Clone(path), name), depth+1)...)
	}
	return out
}
