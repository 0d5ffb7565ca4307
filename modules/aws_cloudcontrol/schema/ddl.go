package schema

import (
	"fmt"
	"slices"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// declare is the type's table as a module.Table declaration: one
// module.Column per property, in the table's column order (NOT NULL for
// required properties; read-only ones feedback, the rest declarative;
// create-only properties, and every declarative column of a type without
// an update handler, create-only; the identifier's columns the cloud
// identity), with the comments of the table and its columns from the
// schema's descriptions, saying which columns are read-only, write-only
// and create-only. Its DDL (module.Table.DDL) creates the table; SQL adds
// what is not a column.
func (t *Type) declare() module.Table {
	ids := t.IdentifierColumns()
	t.refs = t.references()
	mt := module.Table{Name: t.Table, Comment: t.tableComment()}
	for _, c := range t.Columns {
		kind := module.Declarative
		if c.ReadOnly {
			kind = module.Feedback
		}
		mt.Columns = append(mt.Columns, module.Column{
			Name: c.Name, Type: c.SQLType, Kind: kind, NotNull: c.Required && !t.hasRef(c),
			CloudID:    slices.Contains(ids, c.Name),
			CreateOnly: !c.ReadOnly && (c.CreateOnly || !t.Updatable),
			Comment:    t.columnComment(c),
		})
	}
	mt.Columns = append(mt.Columns, t.refColumns()...)
	mt.Columns = append(mt.Columns, module.Column{
		Name: RegionColumn, Type: Text, Kind: module.Declarative, NotNull: true,
		Default: t.RegionFunc() + "()", CloudID: t.RegionInIdentity(), CreateOnly: true,
		Comment: "AWS region of the resource, e.g. eu-west-1; defaults to the default region of aws_account " +
			"(without aws_account, the sidecar's region). Changing it replaces the resource.",
	})
	mt.Region = RegionColumn
	return mt.Declare()
}

// RegionColumn is the column every type's table has for the region its
// resource lives in, create-only (Cloud Control works in the region of
// its endpoint, one per region:
// https://docs.aws.amazon.com/general/latest/gr/cloudcontrolapi.html).
const RegionColumn = "region"

// RegionInIdentity reports whether the region is part of the table's
// identity: where the identifier is the user's (a name, unique per
// region), as in the hand-written tables (repository_name and region).
// Where the cloud generates any part of it (QueueUrl, TopicArn, KeyId, a
// route's RouteId), the identity stays those columns alone, as the
// engine takes a generated identity (one feedback column; a VPC's vpc_id
// beside its region), and the region is read from the record.
func (t *Type) RegionInIdentity() bool {
	for _, p := range t.Identifier {
		if c, _ := t.Column(p); c.ReadOnly {
			return false
		}
	}
	return true
}

// RegionFunc is the function that gives the region column its default
// (schema-qualified, without its parentheses).
func (t *Type) RegionFunc() string {
	return "public." + quoteIdent(fitIn(t.Table+"_region", t.TypeName+" region", maxIdent))
}

// RegionSQL creates the function the region column's default calls:
// aws_account's default region (public.default_aws_region()) where
// aws_account is installed, else fallback, the sidecar's region (the Cloud
// Control types do not depend on aws_account, and the default is looked
// up when a row is written: plpgsql plans the call only when aws_account's
// function exists). UninstallSQL drops it.
func (t *Type) RegionSQL(fallback string) string {
	f := t.RegionFunc()
	return fmt.Sprintf(`CREATE OR REPLACE FUNCTION %s() RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF pg_catalog.to_regprocedure('public.default_aws_region()') IS NOT NULL THEN
    RETURN public.default_aws_region();
  END IF;
  RETURN %s;
END;
$$;
COMMENT ON FUNCTION %s() IS %s;
`, f, quoteLiteral(fallback), f, quoteLiteral(fmt.Sprintf("The default of %s.region: the default region of aws_account (public.default_aws_region()) where it is installed, else the sidecar's region (%s).", t.Table, fallback)))
}

// UninstallSQL drops what SQL and RegionSQL made beyond the table (which
// the engine drops, with its constraint and index).
func (t *Type) UninstallSQL() string {
	return fmt.Sprintf("DROP FUNCTION IF EXISTS %s();\n", t.RegionFunc())
}

// SQL is what the type's table needs beyond its columns, run after the
// table's DDL (module.Module.SQL): the UNIQUE constraint on the identity
// (a unique index on the values within the objects where the identifier
// is below a top-level property: the object is not the identity), and the
// comments of the constraint and of the id column (which names the
// identity).
func (t *Type) SQL() string {
	tbl := "public." + quoteIdent(t.Table)
	ids := t.IdentifierColumns()
	constraint := t.IdentityConstraint()
	var b strings.Builder
	if t.NestedIdentifier() {
		keys, names := make([]string, len(t.Identifier)), make([]string, len(t.Identifier))
		for i, p := range t.Identifier {
			c, _ := t.Column(p)
			keys[i], names[i] = quoteIdent(c.Name), c.Name
			if sub := t.IdentifierSub[i]; len(sub) > 0 {
				keys[i] = fmt.Sprintf("(%s #>> %s)", quoteIdent(c.Name), quoteLiteral("{"+strings.Join(sub, ",")+"}"))
				names[i] = c.Name + "." + strings.Join(sub, ".")
			}
		}
		if t.RegionInIdentity() {
			keys, names = append(keys, RegionColumn), append(names, RegionColumn)
		}
		fmt.Fprintf(&b, "CREATE UNIQUE INDEX %s ON %s (%s);\n", quoteIdent(constraint), tbl, strings.Join(keys, ", "))
		fmt.Fprintf(&b, "COMMENT ON INDEX public.%s IS %s;\n", quoteIdent(constraint),
			quoteLiteral("A resource appears once: its identity ("+strings.Join(names, ", ")+") is unique."))
	} else {
		q := make([]string, len(ids), len(ids)+1)
		for i, c := range ids {
			q[i] = quoteIdent(c)
		}
		if t.RegionInIdentity() {
			q = append(q, RegionColumn)
		}
		fmt.Fprintf(&b, "ALTER TABLE %s ADD CONSTRAINT %s UNIQUE (%s);\n", tbl, quoteIdent(constraint), strings.Join(q, ", "))
		fmt.Fprintf(&b, "COMMENT ON CONSTRAINT %s ON %s IS %s;\n", quoteIdent(constraint), tbl,
			quoteLiteral("A resource appears once: its identity ("+strings.Join(ids, ", ")+") is unique"+t.inRegion()+"."))
	}
	fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS %s;\n", tbl, quoteIdent(IDColumn),
		quoteLiteral("Database identifier of the row; the cloud knows the resource by "+strings.Join(ids, ", ")+t.inRegion()+"."))
	return b.String()
}

// inRegion is " in its region" where the region is part of the identity.
func (t *Type) inRegion() string {
	if t.RegionInIdentity() {
		return " in its region"
	}
	return ""
}

// IdentityConstraint is the name of the identity's UNIQUE constraint (or
// unique index, where the identifier is below a property).
func (t *Type) IdentityConstraint() string { return fit(t.Table+"_identity", t.TypeName+" identity") }

// checkDDL refuses a type whose table the generated DDL
// (module.Table.DDL, which writes names unquoted) cannot create: a table
// name that does not start with a letter (an organization such as 1Abc).
func (t *Type) checkDDL() error {
	if t.Table == "" || t.Table[0] < 'a' || t.Table[0] > 'z' {
		return fmt.Errorf("%s: its table name %q does not start with a letter, which the generated table cannot have", t.TypeName, t.Table)
	}
	return nil
}

func (t *Type) tableComment() string {
	s := fmt.Sprintf("%s resources (Cloud Control API). ", t.TypeName)
	if d := commentText(t.Description); d != "" {
		s += sentence(d) + " "
	}
	s += "Insert a row to create one, update it to change it, delete it to delete it."
	s += " Holds the resources of every enabled region of aws_regions where aws_account is installed, else of the sidecar's region; a row's region says where it is."
	if !t.Listable {
		s += " The type has no list handler: the table holds only what is created from it, each row read back by its identifier (GetResource); nothing made elsewhere is imported, and a row whose resource is deleted elsewhere is deleted like any other."
	}
	if len(t.ListParents) > 0 {
		s += fmt.Sprintf(" Listed per parent (%s) of the rows in this table.", strings.Join(t.ListParents, ", "))
	}
	if !t.Updatable {
		s += " The type cannot be updated: any change replaces the resource."
	}
	return s
}

func (t *Type) columnComment(c Column) string {
	var notes []string
	if c.Property != c.Name {
		notes = append(notes, "property "+c.Property)
	}
	switch {
	case c.ReadOnly:
		notes = append(notes, "read-only: set by the cloud, never written to it")
	case c.WriteOnly:
		notes = append(notes, "write-only: sent to the cloud, which never returns it, so it is not compared")
	}
	if c.CreateOnly {
		if len(c.CreateOnlyPaths) == 1 && c.CreateOnlyPaths[0] == "/properties/"+c.Property {
			notes = append(notes, "create-only: changing it replaces the resource")
		} else {
			notes = append(notes, "create-only at "+strings.Join(c.CreateOnlyPaths, ", ")+": changing those replaces the resource")
		}
	}
	if c.Tags {
		notes = append(notes, `tags as one JSON object {"key": "value"}`)
	}
	for _, r := range t.refs {
		if r.Column == c.Name {
			notes = append(notes, "or point at a row of "+r.Target+" with "+r.Ref)
		}
	}
	if c.Unordered {
		notes = append(notes, "order does not matter")
	}
	if c.Default != nil {
		notes = append(notes, fmt.Sprintf("absent means %v", c.Default))
	}
	s := sentence(commentText(c.Description))
	if len(notes) > 0 {
		if s != "" {
			s += " "
		}
		s += "(" + strings.Join(notes, "; ") + ")"
	}
	if s == "" {
		s = "Property " + c.Property + "."
	}
	return s
}

// commentText is a schema's description as a comment holds it: trimmed,
// without NUL characters (a schema may hold \u0000; PostgreSQL's text
// cannot).
func commentText(s string) string {
	return strings.TrimSpace(strings.ReplaceAll(s, "\x00", ""))
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
