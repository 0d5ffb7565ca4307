package schema

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// References. A property that names another resource (a role's ARN, an
// API's id, subnet ids) gets a reference column beside its own: the
// database's way to point at the referenced row by id, so that one
// transaction can make both, and a replacement of the referenced resource
// repoints this one. The property's column stays, for resources the
// database does not hold; the engine fills it from the referenced row
// (module.Column.Names). Where the engine learns a reference from, first
// found wins:
//  1. the schema's relationshipRef on the property (on it, its items, or
//     an alternative of its anyOf/oneOf): the type and the property of it
//     whose value this one holds;
//  2. well-known names (wellKnown below: VPC, subnet and security-group
//     ids, role ARNs, KMS keys), which point at the hand-written tables;
//  3. a property named exactly like the single primary identifier of
//     another type of the same service (ApiId: AWS::ApiGatewayV2::Api),
//     found when the type is first described (NameCandidates) and kept
//     with its stored schema (under StoredReferences).
// The reference column is named after the property's column with _ref:
// integer for one name, bigint[] for an array of names.

// Reference is one reference of a type's property to another table.
type Reference struct {
	Property string // the top-level property that names the resource
	Column   string // its column (the naming column)
	Ref      string // the reference column: Column + "_ref"
	Many     bool   // an array of names (bigint[] of ids)
	Target   string // the referenced table
	// TargetType is the referenced resource type (AWS::IAM::Role), or a
	// hand-written table's module and table (aws_iam's iam_role).
	TargetType string
	// By is the referenced table's column whose value the property holds.
	By string
	// Source says where the reference was learnt (relationshipRef, a
	// well-known name, the referenced type's identifier).
	Source string
}

// known is a well-known name's referenced table: the table, its column
// whose value the property holds, what it is, and the Cloud Control type
// of the same resources (a type's own identifier is no reference: an
// AWS::IAM::Role's RoleName names itself, not an iam_role row).
type known struct {
	table, by, what, same string
}

// wellKnown maps property names to the hand-written tables whose resources
// they name, as CloudFormation's resource reference documents them for
// the types that use them (AWS::EC2::* ids: vpc-…, subnet-…, sg-…; IAM
// role ARNs and names (AWS::IAM::RolePolicy's RoleName): https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_identifiers.html;
// KMS keys by ARN, which every property naming a key accepts:
// https://docs.aws.amazon.com/kms/latest/developerguide/concepts.html#key-id).
// A KMS key has no hand-written table: its Cloud Control table is the
// target (AWS::KMS::Key's Arn).
var wellKnown = map[string]known{
	"VpcId":               {"vpc", "vpc_id", "aws_vpc's vpc", "AWS::EC2::VPC"},
	"SubnetId":            {"subnet", "subnet_id", "aws_vpc's subnet", "AWS::EC2::Subnet"},
	"SubnetIds":           {"subnet", "subnet_id", "aws_vpc's subnet", "AWS::EC2::Subnet"},
	"Subnets":             {"subnet", "subnet_id", "aws_vpc's subnet", "AWS::EC2::Subnet"},
	"SecurityGroupId":     {"security_group", "group_id", "aws_security_group's security_group", "AWS::EC2::SecurityGroup"},
	"SecurityGroupIds":    {"security_group", "group_id", "aws_security_group's security_group", "AWS::EC2::SecurityGroup"},
	"VpcSecurityGroupIds": {"security_group", "group_id", "aws_security_group's security_group", "AWS::EC2::SecurityGroup"},
	"Role":                {"iam_role", "arn", "aws_iam's iam_role", "AWS::IAM::Role"},
	"RoleName":            {"iam_role", "role_name", "aws_iam's iam_role", "AWS::IAM::Role"},
	"RoleArn":             {"iam_role", "arn", "aws_iam's iam_role", "AWS::IAM::Role"},
	"ExecutionRoleArn":    {"iam_role", "arn", "aws_iam's iam_role", "AWS::IAM::Role"},
	"ServiceRoleArn":      {"iam_role", "arn", "aws_iam's iam_role", "AWS::IAM::Role"},
	"TaskRoleArn":         {"iam_role", "arn", "aws_iam's iam_role", "AWS::IAM::Role"},
	"KmsKeyId":            {"aws_kms_key", "arn", "AWS::KMS::Key", "AWS::KMS::Key"},
	"KmsKeyArn":           {"aws_kms_key", "arn", "AWS::KMS::Key", "AWS::KMS::Key"},
	"KmsMasterKeyId":      {"aws_kms_key", "arn", "AWS::KMS::Key", "AWS::KMS::Key"},
	"KMSMasterKeyID":      {"aws_kms_key", "arn", "AWS::KMS::Key", "AWS::KMS::Key"},
}

// StoredReferences is the key, at the top of a stored schema, of the
// references found by the referenced type's identifier when the type was
// first described (NameCandidates): AWS's schemas have no such key.
const StoredReferences = "iasqlReferences"

// StoredReference is one entry of StoredReferences.
type StoredReference struct {
	Property string `json:"property"`
	TypeName string `json:"typeName"`
}

// refSchema is what references are learnt from in a schema.
type refSchema struct {
	Properties map[string]*refProp `json:"properties"`
	Stored     []StoredReference   `json:"iasqlReferences"`
}

type refProp struct {
	RelationshipRef *struct {
		TypeName     string `json:"typeName"`
		PropertyPath string `json:"propertyPath"`
	} `json:"relationshipRef"`
	Items *refProp   `json:"items"`
	AnyOf []*refProp `json:"anyOf"`
	OneOf []*refProp `json:"oneOf"`
}

// relationship is the first relationshipRef on p, its items or one of its
// alternatives.
func (p *refProp) relationship() (typeName, property string, ok bool) {
	if p == nil {
		return "", "", false
	}
	if r := p.RelationshipRef; r != nil {
		if name, sub, ok := topProp(r.PropertyPath); ok && sub == "" && r.TypeName != "" {
			return r.TypeName, name, true
		}
	}
	for _, q := range append(append([]*refProp{p.Items}, p.AnyOf...), p.OneOf...) {
		if t, prop, ok := q.relationship(); ok {
			return t, prop, true
		}
	}
	return "", "", false
}

// references works out the type's references (the package comment on
// references says from where): for each top-level property of a string
// or an array of strings that is not read-only nor write-only (a part of
// the identity may be one: a route's ApiId). A reference column that would
// clash with a column is left out.
func (t *Type) references() []Reference {
	var s refSchema
	if err := json.Unmarshal(t.Raw, &s); err != nil {
		return nil
	}
	stored := map[string]string{}
	for _, r := range s.Stored {
		stored[r.Property] = r.TypeName
	}
	var out []Reference
	for _, c := range t.Columns {
		many, ok := t.names(c)
		if !ok {
			continue
		}
		r := Reference{Property: c.Property, Column: c.Name, Ref: fit(c.Name+"_ref", t.TypeName+" "+c.Property+" reference"), Many: many}
		if _, clash := t.byCol[r.Ref]; clash {
			continue
		}
		if typeName, prop, ok := s.Properties[c.Property].relationship(); ok {
			r.Target, r.TargetType, r.By, r.Source = TableName(typeName), typeName, ColumnName(prop), "the schema's relationshipRef"
		} else if k, ok := wellKnown[c.Property]; ok && k.same != t.TypeName {
			r.Target, r.TargetType, r.By, r.Source = k.table, k.what, k.by, "a well-known property name"
		} else if typeName, ok := stored[c.Property]; ok {
			r.Target, r.TargetType, r.By, r.Source = TableName(typeName), typeName, ColumnName(c.Property), typeName+"'s identifier"
		} else {
			continue
		}
		if r.Target == t.Table {
			continue // a resource naming another of its own type: no order to keep
		}
		out = append(out, r)
	}
	return out
}

// names reports whether column c can name other resources: a string (one)
// or an array of strings (many), set by the user (declarative, not
// write-only: the engine finds the reference from what the cloud returns).
// A part of the identity may (a route's ApiId).
func (t *Type) names(c Column) (many, ok bool) {
	if c.ReadOnly || c.WriteOnly || c.Tags {
		return false, false
	}
	switch {
	case c.SQLType == Text:
		return false, true
	case c.SQLType == JSONB && c.StringList:
		return true, true
	}
	return false, false
}

// References are the type's references to other tables.
func (t *Type) References() []Reference { return t.refs }

// NameCandidates are the types the type's properties may reference by
// name (rule 3 of the package comment): for each property that names no
// reference otherwise and ends in Id, Name or Arn, the type of the same
// service named by the rest (ApiId: AWS::ApiGatewayV2::Api), by property.
// Whether the candidate is one (its single primary identifier is that
// property) is for its describer to say (Referenced).
func (t *Type) NameCandidates() map[string]string {
	parts := strings.Split(t.TypeName, "::")
	if len(parts) != 3 {
		return nil
	}
	out := map[string]string{}
	for _, c := range t.Columns {
		if _, ok := t.names(c); !ok || slices.ContainsFunc(t.refs, func(r Reference) bool { return r.Property == c.Property }) {
			continue
		}
		for _, suffix := range []string{"Id", "Name", "Arn"} {
			if base, ok := strings.CutSuffix(c.Property, suffix); ok && base != "" && base != parts[2] {
				out[c.Property] = parts[0] + "::" + parts[1] + "::" + base
			}
		}
	}
	return out
}

// Referenced reports whether other, a described type, is the one its
// property prop names: prop is other's single primary identifier.
func Referenced(other *Type, prop string) bool {
	return len(other.Identifier) == 1 && other.Identifier[0] == prop && len(other.IdentifierSub[0]) == 0
}

// WithStoredReferences is doc, a schema, with refs under StoredReferences
// (sorted by property), as the catalog stores it.
func WithStoredReferences(doc []byte, refs []StoredReference) ([]byte, error) {
	if len(refs) == 0 {
		return doc, nil
	}
	sort.Slice(refs, func(i, j int) bool { return refs[i].Property < refs[j].Property })
	var m map[string]json.RawMessage
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("add references to the schema: %w", err)
	}
	b, err := json.Marshal(refs)
	if err != nil {
		return nil, err
	}
	m[StoredReferences] = b
	return json.Marshal(m)
}

// refColumns are the reference columns of the table: after the
// properties', one per reference.
func (t *Type) refColumns() []module.Column {
	out := make([]module.Column, 0, len(t.refs))
	for _, r := range t.refs {
		typ := "integer"
		what := "The row"
		if r.Many {
			typ, what = "bigint[]", "The rows"
		}
		out = append(out, module.Column{
			Name: r.Ref, Type: typ, Kind: module.Declarative, Ref: r.Target, Names: r.Column, NamedBy: r.By,
			Comment: fmt.Sprintf("%s (%s.id) of %s that %s names (learnt from %s). Set it instead of %s to point at a row by id: "+
				"the engine fills %s from that row's %s once the cloud has it; found from %s for resources read from the cloud, NULL when no row of %s has that %s.",
				what, r.Target, r.TargetType, r.Property, r.Source, r.Column, r.Column, r.By, r.Column, r.Target, r.By),
		})
	}
	return out
}

// hasRef reports whether column c names a referenced row's resource.
func (t *Type) hasRef(c Column) bool {
	return slices.ContainsFunc(t.refs, func(r Reference) bool { return r.Column == c.Name })
}

// ChecksSQL checks each reference column (iasql_reference_check,
// sql/080_references.sql) and links it when the referenced table is
// installed (iasql_link_reference; the sidecar links it later otherwise).
// It is idempotent (module.Module.Checks): run at install, and again
// after a migration adds reference columns to a table made before.
func (t *Type) ChecksSQL() string {
	tbl := "public." + quoteIdent(t.Table)
	var b strings.Builder
	for _, r := range t.refs {
		trigger := fit(t.Table+"_"+r.Ref+"_check", t.TypeName+" "+r.Ref+" check")
		fmt.Fprintf(&b, "CREATE OR REPLACE TRIGGER %s BEFORE INSERT OR UPDATE OF %s ON %s FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_check(%s, %s, %s, %s);\n",
			quoteIdent(trigger), quoteIdent(r.Ref), tbl, quoteLiteral(r.Ref), quoteLiteral(r.Target), quoteLiteral(r.Column), quoteLiteral(fmt.Sprint(r.Many)))
		fmt.Fprintf(&b, "COMMENT ON TRIGGER %s ON %s IS %s;\n", quoteIdent(trigger), tbl,
			quoteLiteral(fmt.Sprintf("%s lists rows of %s, which must be installed (a foreign key once both are: %s_%s_fk).", r.Ref, r.Target, t.Table, r.Ref)))
		fmt.Fprintf(&b, "SELECT public.iasql_link_reference(%s, %s, %s, %t);\n", quoteLiteral(t.Table), quoteLiteral(r.Ref), quoteLiteral(r.Target), r.Many)
		named := fit(t.Table+"_"+r.Column+"_named", t.TypeName+" "+r.Column+" named")
		fmt.Fprintf(&b, "CREATE OR REPLACE TRIGGER %s BEFORE UPDATE OF %s ON %s FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_named(%s, %s);\n",
			quoteIdent(named), quoteIdent(r.Column), tbl, quoteLiteral(r.Ref), quoteLiteral(r.Column))
		fmt.Fprintf(&b, "COMMENT ON TRIGGER %s ON %s IS %s;\n", quoteIdent(named), tbl,
			quoteLiteral(fmt.Sprintf("A user's change of %s alone sets %s NULL: the name given is the one sent to the cloud.", r.Column, r.Ref)))
		if c, ok := t.ColumnNamed(r.Column); ok && c.Required {
			// A required property is given by its column or by the
			// reference (the engine then fills the column in).
			check := fit(t.Table+"_"+r.Column+"_given", t.TypeName+" "+r.Column+" given")
			fmt.Fprintf(&b, "ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL;\n", tbl, quoteIdent(r.Column))
			fmt.Fprintf(&b, "ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s;\n", tbl, quoteIdent(check))
			fmt.Fprintf(&b, "ALTER TABLE %s ADD CONSTRAINT %s CHECK (%s IS NOT NULL OR %s IS NOT NULL);\n", tbl, quoteIdent(check), quoteIdent(r.Column), quoteIdent(r.Ref))
			fmt.Fprintf(&b, "COMMENT ON CONSTRAINT %s ON %s IS %s;\n", quoteIdent(check), tbl,
				quoteLiteral(fmt.Sprintf("%s is required: give it, or the row it names in %s.", c.Property, r.Ref)))
		}
	}
	return b.String()
}
