package module

import (
	"fmt"
	"regexp"
	"strings"
)

// Kind says whose a column's value is.
type Kind int

const (
	// Declarative columns are the user's: the desired state, compared and
	// written to the cloud.
	Declarative Kind = iota
	// Feedback columns are the cloud's (generated ids, ARNs, timestamps):
	// written back into rows, never written to the cloud.
	Feedback
	// Initial columns are the database's own, given a value from the cloud
	// when a resource is imported and the user's afterwards.
	Initial
)

// Column is one column of a module table, declared once: the table's DDL
// (Table.DDL), the engine's view of it (Table.Declare derives CloudID,
// Declarative, Feedback, CreateOnly, Refs, RefsMany and Initial) and the
// form of the values in its records (Table.Canonical) all follow from it.
type Column struct {
	Name string
	// Type is the column's SQL type as PostgreSQL's format_type() writes it
	// ("text", "integer", "bigint", "boolean", "jsonb", "cidr", "inet",
	// "timestamp with time zone", "bigint[]", "text[]").
	Type    string
	Kind    Kind
	NotNull bool
	// Default is the SQL expression of the column's default, if any.
	Default string
	// CloudID: the column is (part of) the resource's identity in the cloud.
	CloudID bool
	// CreateOnly: a change replaces the resource.
	CreateOnly bool
	// Ref names the module table the column references by database id: a
	// single reference when the type is integer or bigint, several when it
	// is an array (bigint[]). The foreign key itself is the module SQL's (a
	// single reference's FOREIGN KEY, a trigger for an array).
	Ref string
	// Comment is the column's COMMENT ON COLUMN.
	Comment string
}

// Many reports whether the column references several records.
func (c Column) Many() bool { return c.Ref != "" && strings.HasSuffix(c.Type, "[]") }

var sqlName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)

// Declare returns t with the engine's view of it (CloudID, Declarative,
// Feedback, CreateOnly, Refs, RefsMany, Initial) derived from its Columns.
// A table that declares Columns must not set those fields itself; Declare
// panics on such a table or on a malformed column, which is a mistake in
// the module's code (the registry test declares every module's tables).
func (t Table) Declare() Table {
	if len(t.Columns) == 0 {
		return t
	}
	if t.declared {
		// Derived before: derive again, from the columns as they are now
		// (a declaration extended by a copy, as a module's next version does).
		t.CloudID, t.Declarative, t.Feedback, t.CreateOnly, t.Refs, t.RefsMany, t.Initial = nil, nil, nil, nil, nil, nil, nil
	}
	t.declared = true
	if len(t.CloudID)+len(t.Declarative)+len(t.Feedback)+len(t.CreateOnly)+len(t.Refs)+len(t.RefsMany)+len(t.Initial) > 0 {
		panic(fmt.Sprintf("module table %s declares Columns and also sets the fields derived from them", t.Name))
	}
	if !sqlName.MatchString(t.Name) {
		panic(fmt.Sprintf("module table name %q is not a plain lower-case SQL name", t.Name))
	}
	seen := map[string]bool{"id": true}
	for _, c := range t.Columns {
		switch {
		case !sqlName.MatchString(c.Name):
			panic(fmt.Sprintf("%s: column name %q is not a plain lower-case SQL name", t.Name, c.Name))
		case seen[c.Name]:
			panic(fmt.Sprintf("%s: column %s is declared twice (id is every table's own)", t.Name, c.Name))
		case c.Type == "":
			panic(fmt.Sprintf("%s.%s has no type", t.Name, c.Name))
		case c.Comment == "":
			panic(fmt.Sprintf("%s.%s has no comment", t.Name, c.Name))
		case c.CreateOnly && c.Kind != Declarative:
			panic(fmt.Sprintf("%s.%s: only a declarative column can be create-only", t.Name, c.Name))
		case c.Ref != "" && c.Kind != Declarative:
			panic(fmt.Sprintf("%s.%s: only a declarative column can reference another table", t.Name, c.Name))
		}
		seen[c.Name] = true
		if c.CloudID {
			t.CloudID = append(t.CloudID, c.Name)
		}
		switch c.Kind {
		case Declarative:
			t.Declarative = append(t.Declarative, c.Name)
		case Feedback:
			t.Feedback = append(t.Feedback, c.Name)
		case Initial:
			t.Initial = append(t.Initial, c.Name)
		}
		if c.CreateOnly {
			t.CreateOnly = append(t.CreateOnly, c.Name)
		}
		if c.Many() {
			if t.RefsMany == nil {
				t.RefsMany = map[string]string{}
			}
			t.RefsMany[c.Name] = c.Ref
		} else if c.Ref != "" {
			if t.Refs == nil {
				t.Refs = map[string]string{}
			}
			t.Refs[c.Name] = c.Ref
		}
	}
	if c, ok := t.Column(t.Created); t.Created != "" && (!ok || c.Kind != Feedback) {
		panic(fmt.Sprintf("%s: Created names %q, which is no feedback column", t.Name, t.Created))
	}
	return t
}

// Column returns the declared column name (false when the table declares
// no such column).
func (t Table) Column(name string) (Column, bool) {
	for _, c := range t.Columns {
		if c.Name == name {
			return c, true
		}
	}
	return Column{}, false
}

// DDL is the CREATE TABLE of a declared table with the comments of the
// table, its columns and its id sequence. Constraints beyond NOT NULL,
// triggers and functions are the module's SQL, which runs after it.
func (t Table) DDL() string {
	var b strings.Builder
	fmt.Fprintf(&b, "CREATE TABLE public.%s (\n  id serial PRIMARY KEY", t.Name)
	for _, c := range t.Columns {
		fmt.Fprintf(&b, ",\n  %s %s", c.Name, c.Type)
		if c.NotNull {
			b.WriteString(" NOT NULL")
		}
		if c.Default != "" {
			b.WriteString(" DEFAULT " + c.Default)
		}
	}
	b.WriteString("\n);\n")
	fmt.Fprintf(&b, "COMMENT ON TABLE public.%s IS %s;\n", t.Name, quote(t.Comment))
	fmt.Fprintf(&b, "COMMENT ON COLUMN public.%s.id IS 'Database identifier of the row.';\n", t.Name)
	for _, c := range t.Columns {
		fmt.Fprintf(&b, "COMMENT ON COLUMN public.%s.%s IS %s;\n", t.Name, c.Name, quote(c.Comment))
	}
	fmt.Fprintf(&b, "COMMENT ON SEQUENCE public.%s_id_seq IS %s;\n", t.Name, quote("Generates "+t.Name+".id."))
	return b.String()
}

// quote is a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// Declared returns m with every table declared (Table.Declare).
func (m Module) Declared() Module {
	tables := make([]Table, len(m.Tables))
	for i, t := range m.Tables {
		tables[i] = t.Declare()
	}
	m.Tables = tables
	return m
}

// InstallSQL is what installing m runs, in one transaction: its Prelude,
// the DDL of its declared tables in order, then its SQL (constraints,
// triggers, functions, and the tables it does not declare by Columns).
func (m Module) InstallSQL() string {
	var b strings.Builder
	if m.Prelude != "" {
		b.WriteString(m.Prelude + "\n")
	}
	for _, t := range m.Tables {
		if len(t.Columns) > 0 {
			b.WriteString(t.DDL() + "\n")
		}
	}
	b.WriteString(m.SQL)
	return b.String()
}

// UninstallSQL is what uninstalling m runs, in one transaction: DROP TABLE
// of its tables in reverse order, then its Uninstall SQL.
func (m Module) UninstallSQL() string {
	var b strings.Builder
	for i := len(m.Tables) - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "DROP TABLE IF EXISTS public.%s;\n", m.Tables[i].Name)
	}
	b.WriteString(m.Uninstall)
	return b.String()
}
