package aws_iam_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

// TestSQLPolicyConstraints: iam_policy refuses what CreatePolicy would
// (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicy.html),
// when the row is written, and fills in path and tags.
func TestSQLPolicyConstraints(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var path, tags string
	if err := conn.QueryRow(ctx, `INSERT INTO iam_policy (policy_name, document) VALUES ('read', '{}') RETURNING path, tags::text`).Scan(&path, &tags); err != nil {
		t.Fatal(err)
	}
	if path != "/" || tags != "{}" {
		t.Errorf("defaults: path %q, tags %s", path, tags)
	}
	ins := func(cols, vals string) string {
		return `INSERT INTO iam_policy (policy_name, document` + cols + `) VALUES ('p', '{}'` + vals + `)`
	}
	cases := []struct{ name, sql, constraint string }{
		{"empty name", `INSERT INTO iam_policy (policy_name, document) VALUES ('', '{}')`, "iam_policy_name_iam_rules"},
		{"name with a slash", `INSERT INTO iam_policy (policy_name, document) VALUES ('a/b', '{}')`, "iam_policy_name_iam_rules"},
		{"129 characters", `INSERT INTO iam_policy (policy_name, document) VALUES (repeat('p', 129), '{}')`, "iam_policy_name_iam_rules"},
		{"duplicate name", `INSERT INTO iam_policy (policy_name, document) VALUES ('read', '{}')`, "iam_policy_name_unique"},
		{"duplicate name in another case", `INSERT INTO iam_policy (policy_name, document) VALUES ('READ', '{}')`, "iam_policy_name_case_insensitive_unique"},
		{"path without the last slash", ins(", path", ", '/team'"), "iam_policy_path_iam_rules"},
		{"path without the first slash", ins(", path", ", 'team/'"), "iam_policy_path_iam_rules"},
		{"path with an asterisk", ins(", path", ", '/te*am/'"), "iam_policy_path_iam_rules"},
		{"path with a space", ins(", path", ", '/te am/'"), "iam_policy_path_iam_rules"},
		{"path of 513 characters", ins(", path", ", '/' || repeat('p', 511) || '/'"), "iam_policy_path_iam_rules"},
		{"long description", ins(", description", ", repeat('d', 1001)"), "iam_policy_description_iam_rules"},
		{"document not an object", `INSERT INTO iam_policy (policy_name, document) VALUES ('p', '[]')`, "iam_policy_document_object"},
		{"tags an array", ins(", tags", ", '[]'"), "iam_policy_tags_object"},
		{"an aws: tag", ins(", tags", `, '{"aws:x": "y"}'`), "iam_policy_tags_aws_limits"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			pgtest.WantViolation(t, err, tc.constraint)
		})
	}
	for _, ok := range []string{
		`INSERT INTO iam_policy (policy_name, path, description, document, tags) VALUES ('svc_A+=,.@-1', '/team/a.b/', E'Line one\nline two: café', '{"Version": "2012-10-17", "Statement": []}', '{"team": "data"}')`,
		`INSERT INTO iam_policy (policy_name, path, document) VALUES (repeat('p', 128), '/' || repeat('p', 510) || '/', '{}')`,
		`INSERT INTO iam_policy (policy_name, path, description, document) VALUES ('blank', '/~!/', '', '{}')`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestSQLPolicyIdsReference: iam_role.policy_ids holds iam_policy ids,
// checked both ways as a foreign key without a cascade would: a role row
// cannot list an id that is not a policy row, and a policy row that a role
// row lists cannot be deleted until the role rows are deleted or leave it
// (earlier in the same transaction is enough). Both refusals are
// SQLSTATE 23503 naming iam_role_policy_ids_fk, with a hint saying what to
// do.
func TestSQLPolicyIdsReference(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var read, write, spare int64
	if err := conn.QueryRow(ctx, `WITH p AS (INSERT INTO iam_policy (policy_name, document) VALUES ('read', '{}'), ('write', '{}'), ('spare', '{}') RETURNING id, policy_name)
		SELECT (SELECT id FROM p WHERE policy_name = 'read'), (SELECT id FROM p WHERE policy_name = 'write'), (SELECT id FROM p WHERE policy_name = 'spare')`).Scan(&read, &write, &spare); err != nil {
		t.Fatal(err)
	}
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	refused := func(err error, hint string, message ...string) {
		t.Helper()
		pgtest.WantRefused(t, err, "iam_role_policy_ids_fk", hint, message...)
	}

	// Writes naming an id that is not a policy row are refused.
	_, err := conn.Exec(ctx, `INSERT INTO iam_role (role_name, assume_role_policy_document, policy_ids) VALUES ('app', `+trust+`, ARRAY[$1, 424242]::bigint[])`, read)
	refused(err, "create the policy first", "policy 424242 is not an iam_policy row")
	var role int64
	if err := conn.QueryRow(ctx, `INSERT INTO iam_role (role_name, assume_role_policy_document, policy_ids) VALUES ('app', `+trust+`, ARRAY[$1, $2]::bigint[]) RETURNING id`, read, write).Scan(&role); err != nil {
		t.Fatalf("a role listing two policy rows: %v", err)
	}
	_, err = conn.Exec(ctx, `UPDATE iam_role SET policy_ids = policy_ids || 424242::bigint`)
	refused(err, "create the policy first", "424242")
	_, err = conn.Exec(ctx, `UPDATE iam_role SET policy_ids = ARRAY[NULL]::bigint[]`)
	pgtest.WantViolation(t, err, "iam_role_policy_ids_no_nulls")

	// A policy row a role lists cannot be deleted; one no role lists can.
	_, err = conn.Exec(ctx, `DELETE FROM iam_policy WHERE policy_name = 'read'`)
	refused(err, "delete those iam_role rows", "policy "+itoa(read)+" (read) is still attached to iam_role row(s) "+itoa(role))
	if _, err := conn.Exec(ctx, `DELETE FROM iam_policy WHERE policy_name = 'spare'`); err != nil {
		t.Errorf("delete a policy no role lists: %v", err)
	}

	// Leaving the policy first, or deleting the role first, in the same
	// transaction: the policy goes.
	if err := pgtest.RolledBack(ctx, conn, `UPDATE iam_role SET policy_ids = array_remove(policy_ids, `+itoa(read)+`)`,
		`DELETE FROM iam_policy WHERE policy_name = 'read'`); err != nil {
		t.Errorf("leave the policy, then delete it: %v", err)
	}
	if err := pgtest.RolledBack(ctx, conn, `DELETE FROM iam_role`, `DELETE FROM iam_policy`); err != nil {
		t.Errorf("delete the role, then its policies: %v", err)
	}
}

// TestPolicyEqual: the policy mapper compares documents by meaning (key
// order and whitespace aside), descriptions with NULL and "" alike, and
// everything else by value.
func TestPolicyEqual(t *testing.T) {
	ms, err := aws_iam.Mappers(t.Context(), aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m := module.PartsOf(ms["iam_policy"]).Equaler
	base := func() module.Record {
		return module.Record{"policy_name": "read", "path": "/", "description": nil,
			"document": doc(t, readLogs), "tags": map[string]any{"team": "data"}}
	}
	cases := []struct {
		name  string
		cloud func(module.Record)
		equal bool
	}{
		{"the same", func(module.Record) {}, true},
		{"the document in another key order", func(r module.Record) {
			r["document"] = doc(t, `{"Statement": [{"Resource": "*", "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": 3600.0}}, "Effect": "Allow", "Action": ["logs:GetLogEvents"]}], "Version": "2012-10-17"}`)
		}, true},
		{"an empty description", func(r module.Record) { r["description"] = "" }, true},
		{"another description", func(r module.Record) { r["description"] = "x" }, false},
		{"another path", func(r module.Record) { r["path"] = "/team/" }, false},
		{"an action as a string, not a list", func(r module.Record) {
			r["document"] = doc(t, strings.Replace(readLogs, `["logs:GetLogEvents"]`, `"logs:GetLogEvents"`, 1))
		}, false},
		{"another tag value", func(r module.Record) { r["tags"] = map[string]any{"team": "web"} }, false},
		{"no tags", func(r module.Record) { r["tags"] = map[string]any{} }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cloud := base()
			tc.cloud(cloud)
			if got := m.Equal(base(), cloud); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
		})
	}
}
