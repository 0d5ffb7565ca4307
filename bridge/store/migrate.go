package store

// Migrating an installed table to a new declaration of it (a Cloud
// Control type's schema of a newer version; a reference column a module
// adds once the table it references is installed).

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// Migration is what MigrateTable did to a table.
type Migration struct {
	// Added are the declared columns the table lacked, in declaration
	// order; Nullable those of them declared NOT NULL that were added
	// nullable because the table has rows (they hold NULL until written).
	Added, Nullable []string
	// Gone are the table's columns the declaration no longer has: kept,
	// with their values, nullable, their comment marked.
	Gone []string
}

// Changed reports whether the migration changed the table's columns.
func (m Migration) Changed() bool { return len(m.Added)+len(m.Gone) > 0 }

// MigrateTable brings the installed table t.Name to the declaration t (in
// tx): it adds the declared columns the table lacks, each with its type,
// default and comment, NOT NULL when the table is empty (a table with rows
// gets it nullable: its rows have no value yet), and for a column the
// database fills in (module.Column.Filled) the table's fill trigger again;
// it sets every declared column's comment and the table's. A column the
// declaration no longer has is kept with its values (nothing a user wrote
// is lost), made nullable (nothing writes it any more) and its comment is
// what gone makes of the old one. A declared column whose type differs
// from the table's is refused in one line: its values are the user's, and
// no cast is safe for every value. Constraints beyond NOT NULL (foreign
// keys, the identity's uniqueness) are the module SQL's: the caller adds
// those a new column needs.
func MigrateTable(ctx context.Context, tx pgx.Tx, t module.Table, gone func(column, comment string) string) (Migration, error) {
	var mig Migration
	tbl := pgx.Identifier{"public", t.Name}.Sanitize()
	rows, err := tx.Query(ctx, `SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
		  coalesce(pg_catalog.col_description(a.attrelid, a.attnum), '')
		FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`, tbl)
	if err != nil {
		return mig, fmt.Errorf("migrate %s: read its columns: %w", t.Name, err)
	}
	type have struct {
		typ, comment string
		notNull      bool
	}
	cols := map[string]have{}
	var order []string
	var name string
	var h have
	if _, err := pgx.ForEachRow(rows, []any{&name, &h.typ, &h.notNull, &h.comment}, func() error {
		cols[name] = h
		order = append(order, name)
		return nil
	}); err != nil {
		return mig, fmt.Errorf("migrate %s: read its columns: %w", t.Name, err)
	}
	var empty bool
	if err := tx.QueryRow(ctx, `SELECT NOT EXISTS (SELECT 1 FROM `+tbl+`)`).Scan(&empty); err != nil {
		return mig, fmt.Errorf("migrate %s: %w", t.Name, err)
	}
	var stmts []string
	filled := false
	for _, c := range t.Columns {
		col := pgx.Identifier{c.Name}.Sanitize()
		if got, ok := cols[c.Name]; ok {
			if got.typ != c.Type {
				return mig, fmt.Errorf("migrate %s: column %s is %s and the new declaration makes it %s; no cast is safe for every value: uninstall the module and install it again (its rows are dropped with the table)", t.Name, c.Name, got.typ, c.Type)
			}
			continue
		}
		ddl := fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s %s", tbl, col, c.Type)
		switch {
		case c.Filled():
			// Nullable without a default, as DDL makes it; the rows there
			// get the default, then the fill trigger keeps it set.
			filled = true
			stmts = append(stmts, ddl, fmt.Sprintf("UPDATE %s SET %s = %s", tbl, col, c.Default))
		default:
			if c.Default != "" {
				ddl += " DEFAULT " + c.Default
			}
			if c.NotNull && (empty || c.Default != "") {
				ddl += " NOT NULL"
			} else if c.NotNull {
				mig.Nullable = append(mig.Nullable, c.Name)
			}
			stmts = append(stmts, ddl)
		}
		mig.Added = append(mig.Added, c.Name)
	}
	if filled {
		// The fill trigger and checks again, over every Filled column.
		stmts = append(stmts, fmt.Sprintf("DROP TRIGGER IF EXISTS %s ON %s", pgx.Identifier{t.Name + "_0_defaults"}.Sanitize(), tbl))
		for _, c := range t.Columns {
			if c.Filled() && !slices.Contains(mig.Added, c.Name) {
				stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", tbl, pgx.Identifier{t.Name + "_" + c.Name + "_not_null"}.Sanitize()))
			}
		}
		stmts = append(stmts, t.FillSQL())
	}
	for _, n := range order {
		if n == "id" {
			continue
		}
		if _, ok := t.Column(n); ok {
			continue
		}
		mig.Gone = append(mig.Gone, n)
		col := pgx.Identifier{n}.Sanitize()
		if cols[n].notNull {
			stmts = append(stmts, fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP NOT NULL", tbl, col))
		}
		stmts = append(stmts, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", tbl, col, quoteLiteral(gone(n, cols[n].comment))))
	}
	for _, c := range t.Columns {
		stmts = append(stmts, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", tbl, pgx.Identifier{c.Name}.Sanitize(), quoteLiteral(c.Comment)))
	}
	stmts = append(stmts, fmt.Sprintf("COMMENT ON TABLE %s IS %s", tbl, quoteLiteral(t.Comment)))
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return mig, fmt.Errorf("migrate %s: %s: %w", t.Name, firstLine(s), err)
		}
	}
	return mig, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// ReplaceDefinition records a new definition of an installed module made
// from one (a resource type's schema at a newer version), with the version
// of the module made from it, as that of its tables too (in tx, once they
// are migrated).
func ReplaceDefinition(ctx context.Context, tx pgx.Tx, name, version string, definition []byte) error {
	tag, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET definition = $2::text::jsonb, version = $3, installed_version = $3
		WHERE name = $1 AND installed_at IS NOT NULL`, name, string(definition), version)
	if err != nil {
		return fmt.Errorf("store the new definition of %s: %w", name, err)
	}
	if tag.RowsAffected() != 1 {
		return fmt.Errorf("store the new definition of %s: it is not installed", name)
	}
	return nil
}

// MissingColumns are the columns t declares that its table lacks (none
// when the table does not exist).
func MissingColumns(ctx context.Context, db Querier, t module.Table) ([]string, error) {
	var have []string
	if err := db.QueryRow(ctx, `SELECT coalesce(pg_catalog.array_agg(a.attname::text), '{}') FROM pg_catalog.pg_attribute a
		WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, pgx.Identifier{"public", t.Name}.Sanitize()).Scan(&have); err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", t.Name, err)
	}
	if len(have) == 0 {
		return nil, nil
	}
	var out []string
	for _, c := range t.Columns {
		if !slices.Contains(have, c.Name) {
			out = append(out, c.Name)
		}
	}
	return out, nil
}
