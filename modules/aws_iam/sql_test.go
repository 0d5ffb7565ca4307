package aws_iam_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installed returns a connection to a fresh database with the module
// installed after aws_account.
func installed(t *testing.T) *pgx.Conn {
	return srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_iam.Module().InstallSQL()})
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
			pgtest.WantViolation(t, err, tc.constraint)
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

// TestSQLComments: the iam_role comment says that only roles under the
// path / are managed. That every object has a comment is TestModuleSQL's
// (modules/sql_test.go).
func TestSQLComments(t *testing.T) {
	conn := installed(t)
	var comment string
	if err := conn.QueryRow(t.Context(), `SELECT obj_description('public.iam_role'::regclass, 'pg_class')`).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, "path /") {
		t.Errorf("iam_role comment does not say only roles under the path / are managed: %q", comment)
	}
}
