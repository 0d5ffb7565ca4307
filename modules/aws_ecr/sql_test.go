package aws_ecr_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ecr"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installed returns a connection to a fresh database with the module's SQL
// applied in one transaction after aws_account's, as the engine installs
// them.
func installed(t *testing.T) *pgx.Conn {
	t.Helper()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, "BEGIN;\n"+aws_account.Module().SQL+"\n"+aws_ecr.Module().SQL+"\nCOMMIT;")
	// What aws_account's first sync leaves: the regions, one the default.
	pgtest.Exec(t, dsn, `INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', false), ('eu-west-1', true)`)
	return pgtest.Connect(t, dsn)
}

func TestSQLMatchesTables(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	for _, tbl := range aws_ecr.Module().Tables {
		rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, tbl.Name)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(cols) == 0 || cols[0] != "id" {
			t.Errorf("%s: columns %v, want id first", tbl.Name, cols)
		}
		for _, c := range cols[1:] {
			if slices.Contains(tbl.Declarative, c) == slices.Contains(tbl.Feedback, c) {
				t.Errorf("%s.%s: must be exactly one of declarative and feedback", tbl.Name, c)
			}
		}
		for _, group := range [][]string{tbl.CloudID, tbl.Declarative, tbl.Feedback, slices.Collect(maps.Keys(tbl.Refs))} {
			for _, c := range group {
				if !slices.Contains(cols, c) {
					t.Errorf("%s: column %s is not in the SQL", tbl.Name, c)
				}
			}
		}
		for _, c := range tbl.CloudID {
			if !slices.Contains(tbl.Declarative, c) {
				t.Errorf("%s: cloud id column %s is not declarative", tbl.Name, c)
			}
		}
	}
}

func TestSQLConstraints(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var region, mutability string
	var scan bool
	err := conn.QueryRow(ctx, `INSERT INTO repository (repository_name) VALUES ('app')
		RETURNING region, image_tag_mutability, scan_on_push`).Scan(&region, &mutability, &scan)
	if err != nil {
		t.Fatal(err)
	}
	if region != "eu-west-1" || mutability != "MUTABLE" || scan {
		t.Errorf("defaults: region %q (want the default region), image_tag_mutability %q, scan_on_push %v", region, mutability, scan)
	}
	cases := []struct {
		name, sql, constraint string
	}{
		{"one character", `INSERT INTO repository (repository_name) VALUES ('a')`, "repository_name_ecr_rules"},
		{"257 characters", `INSERT INTO repository (repository_name) VALUES (repeat('a', 257))`, "repository_name_ecr_rules"},
		{"uppercase", `INSERT INTO repository (repository_name) VALUES ('App')`, "repository_name_ecr_rules"},
		{"two separators", `INSERT INTO repository (repository_name) VALUES ('a--b')`, "repository_name_ecr_rules"},
		{"leading separator", `INSERT INTO repository (repository_name) VALUES ('-ab')`, "repository_name_ecr_rules"},
		{"trailing separator", `INSERT INTO repository (repository_name) VALUES ('ab.')`, "repository_name_ecr_rules"},
		{"leading slash", `INSERT INTO repository (repository_name) VALUES ('/ab')`, "repository_name_ecr_rules"},
		{"trailing slash", `INSERT INTO repository (repository_name) VALUES ('ab/')`, "repository_name_ecr_rules"},
		{"double slash", `INSERT INTO repository (repository_name) VALUES ('a//b')`, "repository_name_ecr_rules"},
		{"space", `INSERT INTO repository (repository_name) VALUES ('a b')`, "repository_name_ecr_rules"},
		{"duplicate in region", `INSERT INTO repository (repository_name, region) VALUES ('app', 'eu-west-1')`, "repository_name_region_unique"},
		{"bad region", `INSERT INTO repository (repository_name, region) VALUES ('elsewhere', 'Europe')`, "repository_region_format"},
		{"bad mutability", `INSERT INTO repository (repository_name, image_tag_mutability) VALUES ('m', 'mutable')`, "repository_image_tag_mutability_values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.ConstraintName != tc.constraint {
				t.Errorf("error %v, want a violation of %s", err, tc.constraint)
			}
		})
	}
	for _, ok := range []string{
		`INSERT INTO repository (repository_name, region) VALUES ('app', 'us-east-1')`,
		`INSERT INTO repository (repository_name, image_tag_mutability, scan_on_push) VALUES ('team/app.web_1-x', 'IMMUTABLE', true)`,
		`INSERT INTO repository (repository_name) VALUES ('ab')`,
		`INSERT INTO repository (repository_name) VALUES (repeat('a', 256))`,
		`INSERT INTO repository (repository_name) VALUES ('0/1/2')`,
		`INSERT INTO repository (repository_name, region) VALUES ('gov', 'us-gov-west-1')`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

func TestSQLComments(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var tables []string
	for _, tbl := range aws_ecr.Module().Tables {
		tables = append(tables, "public."+tbl.Name)
	}
	rows, err := conn.Query(ctx, `
		WITH t AS (SELECT unnest($1::text[])::regclass AS oid)
		SELECT 'table ' || t.oid::text FROM t WHERE obj_description(t.oid, 'pg_class') IS NULL
		UNION ALL
		SELECT 'column ' || t.oid::text || '.' || a.attname FROM t JOIN pg_attribute a ON a.attrelid = t.oid
		 WHERE a.attnum > 0 AND NOT a.attisdropped AND col_description(t.oid, a.attnum) IS NULL
		UNION ALL
		SELECT 'constraint ' || c.conname FROM t JOIN pg_constraint c ON c.conrelid = t.oid
		 WHERE c.contype <> 'p' AND obj_description(c.oid, 'pg_constraint') IS NULL
		UNION ALL
		SELECT 'sequence ' || s.oid::regclass::text FROM t JOIN pg_depend d ON d.refobjid = t.oid AND d.classid = 'pg_class'::regclass
		  JOIN pg_class s ON s.oid = d.objid AND s.relkind = 'S'
		 WHERE obj_description(s.oid, 'pg_class') IS NULL
		UNION ALL
		SELECT 'index ' || i.indexrelid::regclass::text FROM t JOIN pg_index i ON i.indrelid = t.oid
		 WHERE NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
		   AND obj_description(i.indexrelid, 'pg_class') IS NULL`, tables)
	if err != nil {
		t.Fatal(err)
	}
	missing, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("without a comment: %s", strings.Join(missing, ", "))
	}
	var comment string
	if err := conn.QueryRow(ctx, `SELECT obj_description('public.repository'::regclass, 'pg_class')`).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, "holds images is not deleted") {
		t.Errorf("repository comment does not say repositories with images are not deleted: %q", comment)
	}
}
