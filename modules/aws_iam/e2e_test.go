package aws_iam_test

import (
	"context"
	"net/url"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

// cloudPolicies returns a role's attached policy ARNs (sorted) and inline
// policy names (sorted), or ok false when the role does not exist.
func cloudPolicies(t *testing.T, cl *iam.Client, role string) (arns, inline []string, ok bool) {
	t.Helper()
	ctx := context.Background()
	if _, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(role)}); err != nil {
		return nil, nil, false
	}
	att, err := cl.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range att.AttachedPolicies {
		arns = append(arns, aws.ToString(p.PolicyArn))
	}
	pols, err := cl.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String(role)})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(arns)
	return arns, slices.Sorted(slices.Values(pols.PolicyNames)), true
}

// TestRoleEndToEnd: roles created, changed and deleted in the database
// reach IAM; roles created, changed and deleted in IAM reach the
// database; an unchanged role costs no writes.
func TestRoleEndToEnd(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	cl := iam.NewFromConfig(e.AWS)
	ctx := context.Background()

	// Database -> cloud: create.
	e.Exec(`INSERT INTO iam_role (role_name, assume_role_policy_document, description, attached_policy_arns, inline_policies)
		VALUES ('app', '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]}',
		        'the app', '{` + readOnly + `}',
		        '{"logs": {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "logs:PutLogEvents", "Resource": "*", "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": 3600}}}]}}')`)
	e.Commit()
	arns, inline, ok := cloudPolicies(t, cl, "app")
	if !ok || !slices.Equal(arns, []string{readOnly}) || !slices.Equal(inline, []string{"logs"}) {
		t.Fatalf("role app in IAM: %v %v %v", ok, arns, inline)
	}
	got, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("app")})
	if err != nil {
		t.Fatal(err)
	}
	if id := e.String(`SELECT role_id FROM iam_role WHERE role_name = 'app'`); id != aws.ToString(got.Role.RoleId) {
		t.Errorf("row's role_id %q, IAM's %q", id, aws.ToString(got.Role.RoleId))
	}
	if e.Count(`SELECT count(*) FROM iam_role WHERE role_name = 'app' AND arn = 'arn:aws:iam::123456789012:role/app' AND created_at IS NOT NULL`) != 1 {
		t.Error("arn and created_at were not written back")
	}

	// Nothing changed: a cycle writes nothing (the documents as IAM returns
	// them equal the jsonb the user wrote).
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over an unchanged role made %v", m)
	}

	// Database -> cloud: update every kind of column.
	e.Exec(`UPDATE iam_role SET description = NULL, max_session_duration = 7200,
		assume_role_policy_document = jsonb_set(assume_role_policy_document, '{Statement,0,Principal,Service}', '"lambda.amazonaws.com"'),
		attached_policy_arns = '{` + s3Read + `,` + ecsExec + `}',
		inline_policies = '{"other": {"Version": "2012-10-17", "Statement": []}}'
		WHERE role_name = 'app'`)
	e.Commit()
	got, err = cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("app")})
	if err != nil {
		t.Fatal(err)
	}
	if got.Role.Description != nil || aws.ToInt32(got.Role.MaxSessionDuration) != 7200 {
		t.Errorf("role in IAM after the update: description %v, max session %d", aws.ToString(got.Role.Description), aws.ToInt32(got.Role.MaxSessionDuration))
	}
	if r := principal(t, got.Role.AssumeRolePolicyDocument); r != "lambda.amazonaws.com" {
		t.Errorf("trust policy principal %q", r)
	}
	arns, inline, _ = cloudPolicies(t, cl, "app")
	if !slices.Equal(arns, []string{s3Read, ecsExec}) || !slices.Equal(inline, []string{"other"}) {
		t.Errorf("policies in IAM after the update: %v %v", arns, inline)
	}

	// Cloud -> database: a change made in IAM.
	if _, err := cl.UpdateRoleDescription(ctx, &iam.UpdateRoleDescriptionInput{RoleName: aws.String("app"), Description: aws.String("from the console")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String("app"), PolicyArn: aws.String(ecsExec)}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit would reuse the role's recently read policies
	e.Commit()
	if a := e.String(`SELECT attached_policy_arns::text FROM iam_role WHERE role_name = 'app'`); a != "{"+s3Read+"}" {
		t.Errorf("attached_policy_arns in the row %s", a)
	}
	if d := e.String(`SELECT description FROM iam_role WHERE role_name = 'app'`); d != "from the console" {
		t.Errorf("description in the row %q", d)
	}
	if a := e.String(`SELECT attached_policy_arns::text FROM iam_role WHERE role_name = 'app'`); a != "{"+s3Read+"}" {
		t.Errorf("attached_policy_arns in the row %s", a)
	}

	// Cloud -> database: a role made in IAM is imported, with its policies.
	if _, err := cl.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("imported"), AssumeRolePolicyDocument: aws.String(ec2Trust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("imported"), PolicyName: aws.String("p"), PolicyDocument: aws.String(readLogs)}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if n := e.Count(`SELECT count(*) FROM iam_role WHERE role_name = 'imported' AND max_session_duration = 3600
		AND assume_role_policy_document #>> '{Statement,0,Principal,Service}' = 'ec2.amazonaws.com'
		AND inline_policies #> '{p,Statement,0,Condition,NumericLessThan,aws:MultiFactorAuthAge}' = '3600'`); n != 1 {
		t.Errorf("the role made in IAM was not imported as it is")
	}
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle after the import made %v", m)
	}

	// Cloud -> database: a role deleted in IAM leaves the table.
	if _, err := cl.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("imported"), PolicyName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("imported")}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if n := e.Count(`SELECT count(*) FROM iam_role WHERE role_name = 'imported'`); n != 0 {
		t.Error("the role deleted in IAM is still a row")
	}

	// Database -> cloud: a rename replaces the role.
	e.Exec(`UPDATE iam_role SET role_name = 'app2' WHERE role_name = 'app'`)
	e.Commit()
	if _, _, ok := cloudPolicies(t, cl, "app"); ok {
		t.Error("the renamed role's old name is still in IAM")
	}
	if arns, _, ok := cloudPolicies(t, cl, "app2"); !ok || !slices.Equal(arns, []string{s3Read}) {
		t.Errorf("the renamed role in IAM: %v %v", ok, arns)
	}

	// Database -> cloud: delete (its policies go first).
	e.Exec(`DELETE FROM iam_role WHERE role_name = 'app2'`)
	e.Commit()
	if _, _, ok := cloudPolicies(t, cl, "app2"); ok {
		t.Error("the deleted role is still in IAM")
	}
}

// principal returns the service principal of a URL-encoded trust policy.
func principal(t *testing.T, encoded *string) string {
	t.Helper()
	text, err := url.QueryUnescape(aws.ToString(encoded))
	if err != nil {
		t.Fatal(err)
	}
	d, ok := doc(t, text).(map[string]any)
	if !ok {
		return ""
	}
	st, _ := d["Statement"].([]any)
	if len(st) == 0 {
		return ""
	}
	p, _ := st[0].(map[string]any)["Principal"].(map[string]any)
	s, _ := p["Service"].(string)
	return s
}
