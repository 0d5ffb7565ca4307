package schema

import (
	"fmt"
	"strings"
)

// DDL is the SQL that creates the type's table: CREATE TABLE
// public."<table>" with the id column, one column per property (NOT NULL
// for required ones), a UNIQUE constraint on the identity, and COMMENT ON
// the table and every column, from the schema's descriptions and saying
// which columns are read-only, write-only and create-only.
func (t *Type) DDL() string {
	tbl := "public." + quoteIdent(t.Table)
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE %s (\n  %s serial PRIMARY KEY", tbl, quoteIdent(IDColumn))
	for _, c := range t.Columns {
		fmt.Fprintf(&b, ",\n  %s %s", quoteIdent(c.Name), c.SQLType)
		if c.Required {
			b.WriteString(" NOT NULL")
		}
	}
	ids := t.IdentifierColumns()
	q := make([]string, len(ids))
	for i, c := range ids {
		q[i] = quoteIdent(c)
	}
	constraint := fit(t.Table+"_identity", t.TypeName+" identity")
	fmt.Fprintf(&b, ",\n  CONSTRAINT %s UNIQUE (%s)\n);\n", quoteIdent(constraint), strings.Join(q, ", "))

	fmt.Fprintf(&b, "COMMENT ON TABLE %s IS %s;\n", tbl, quoteLiteral(t.tableComment()))
	fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS %s;\n", tbl, quoteIdent(IDColumn),
		quoteLiteral("Database identifier of the row; the cloud knows the resource by "+strings.Join(ids, ", ")+"."))
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "COMMENT ON COLUMN %s.%s IS %s;\n", tbl, quoteIdent(c.Name), quoteLiteral(t.columnComment(c)))
	}
	fmt.Fprintf(&b, "COMMENT ON CONSTRAINT %s ON %s IS %s;\n", quoteIdent(constraint), tbl,
		quoteLiteral("A resource appears once: its identity ("+strings.Join(ids, ", ")+") is unique."))
	// serial names its sequence <table>_id_seq; PostgreSQL shortens a
	// longer name its own way, so only a name that fits is commented.
	if seq := t.Table + "_id_seq"; len(seq) <= maxIdent {
		fmt.Fprintf(&b, "COMMENT ON SEQUENCE public.%s IS %s;\n", quoteIdent(seq), quoteLiteral("Generates "+t.Table+".id."))
	}
	return b.String()
}

func (t *Type) tableComment() string {
	s := fmt.Sprintf("%s resources (Cloud Control API). ", t.TypeName)
	if d := strings.TrimSpace(t.Description); d != "" {
		s += sentence(d) + " "
	}
	s += "Insert a row to create one, update it to change it, delete it to delete it."
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
	if c.Unordered {
		notes = append(notes, "order does not matter")
	}
	if c.Default != nil {
		notes = append(notes, fmt.Sprintf("absent means %v", c.Default))
	}
	s := sentence(strings.TrimSpace(c.Description))
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

// sentence ends s with a full stop.
func sentence(s string) string {
	if s == "" || strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}
