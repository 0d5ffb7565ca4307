package aws_iam_test

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
	"github.com/iasql/iasql/modules/aws_iam"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installed returns a connection to a fresh database with the module's SQL
// applied in one transaction after aws_account's, as the engine installs
// them.
func installed(t *testing.T) *pgx.Conn {
	t.Helper()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, "BEGIN;\n"+aws_account.Module().SQL+"\n"+aws_iam.Module().SQL+"\nCOMMIT;")
	return pgtest.Connect(t, dsn)
}

func TestSQLMatchesTables(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	for _, tbl := range aws_iam.Module().Tables {
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

const trust = `'{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}'`

func TestSQLConstraints(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var maxSession int
	var arns []string
	var inline string
	err := conn.QueryRow(ctx, `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('app', `+trust+`)
		RETURNING max_session_duration, attached_policy_arns, inline_policies::text`).Scan(&maxSession, &arns, &inline)
	if err != nil {
		t.Fatal(err)
	}
	if maxSession != 3600 || len(arns) != 0 || inline != "{}" {
		t.Errorf("defaults: max_session_duration %d, attached_policy_arns %v, inline_policies %s", maxSession, arns, inline)
	}
	ins := func(cols, vals string) string {
		return `INSERT INTO iam_role (role_name, assume_role_policy_document` + cols + `) VALUES ('r', ` + trust + vals + `)`
	}
	cases := []struct {
		name, sql, constraint string
	}{
		{"empty name", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('', ` + trust + `)`, "iam_role_name_iam_rules"},
		{"name with a space", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('my role', ` + trust + `)`, "iam_role_name_iam_rules"},
		{"name with a slash", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('a/b', ` + trust + `)`, "iam_role_name_iam_rules"},
		{"non-ASCII name", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('rôle', ` + trust + `)`, "iam_role_name_iam_rules"},
		{"65 characters", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES (repeat('r', 65), ` + trust + `)`, "iam_role_name_iam_rules"},
		{"duplicate name", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('app', ` + trust + `)`, "iam_role_name_unique"},
		{"duplicate name in another case", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('APP', ` + trust + `)`, "iam_role_name_case_insensitive_unique"},
		{"trust policy not an object", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('r', '"Allow"')`, "iam_role_assume_role_policy_document_object"},
		{"trust policy an array", `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('r', '[]')`, "iam_role_assume_role_policy_document_object"},
		{"long description", ins(", description", ", repeat('d', 1001)"), "iam_role_description_iam_rules"},
		{"description with an emoji", ins(", description", ", 'rocket 🚀'"), "iam_role_description_iam_rules"},
		{"session too short", ins(", max_session_duration", ", 3599"), "iam_role_max_session_duration_range"},
		{"session too long", ins(", max_session_duration", ", 43201"), "iam_role_max_session_duration_range"},
		{"policy ARN not an ARN", ins(", attached_policy_arns", ", '{ReadOnlyAccess}'"), "iam_role_attached_policy_arns_format"},
		{"policy ARN of a role", ins(", attached_policy_arns", ", '{arn:aws:iam::123456789012:role/app}'"), "iam_role_attached_policy_arns_format"},
		{"NULL policy ARN", ins(", attached_policy_arns", ", ARRAY[NULL]::text[]"), "iam_role_attached_policy_arns_format"},
		{"one bad ARN among good", ins(", attached_policy_arns", ", '{arn:aws:iam::aws:policy/ReadOnlyAccess,nope}'"), "iam_role_attached_policy_arns_format"},
		{"inline policies an array", ins(", inline_policies", ", '[]'"), "iam_role_inline_policies_format"},
		{"inline policy not an object", ins(", inline_policies", `, '{"p": "allow"}'`), "iam_role_inline_policies_format"},
		{"inline policy with a bad name", ins(", inline_policies", `, '{"my policy": {}}'`), "iam_role_inline_policies_format"},
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
		`INSERT INTO iam_role (role_name, assume_role_policy_document, description, max_session_duration, attached_policy_arns, inline_policies)
		 VALUES ('svc_A+=,.@-1', ` + trust + `, E'Line one\nline two: café', 43200,
		  '{arn:aws:iam::aws:policy/ReadOnlyAccess,arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy,arn:aws:iam::123456789012:policy/team/custom}',
		  '{"read-logs": {"Version": "2012-10-17", "Statement": []}}')`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document, max_session_duration) VALUES (repeat('r', 64), ` + trust + `, 3600)`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document, description) VALUES ('blank', ` + trust + `, '')`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns) VALUES ('gov', ` + trust + `, '{arn:aws-us-gov:iam::aws:policy/ReadOnlyAccess}')`,
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
	for _, tbl := range aws_iam.Module().Tables {
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
	if err := conn.QueryRow(ctx, `SELECT obj_description('public.iam_role'::regclass, 'pg_class')`).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, "path /") {
		t.Errorf("iam_role comment does not say only roles under the path / are managed: %q", comment)
	}
}
