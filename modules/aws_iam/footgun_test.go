package aws_iam_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

// TestRoleNoOpChangesMakeNoCloudCalls: the differ footguns of the
// walkthrough, for roles: after a change that means nothing to IAM, a cycle
// makes no mutating call.
func TestRoleNoOpChangesMakeNoCloudCalls(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	// A role made elsewhere, its documents written with other whitespace
	// and key order than jsonb's (IAM keeps the text as given).
	cl := iam.NewFromConfig(e.AWS)
	if _, err := cl.CreateRole(context.Background(), &iam.CreateRoleInput{RoleName: aws.String("elsewhere"),
		AssumeRolePolicyDocument: aws.String("{\n  \"Statement\" : [ {\"Action\":\"sts:AssumeRole\", \"Principal\":{\"Service\":\"ec2.amazonaws.com\"},\"Effect\":\"Allow\"} ],\n  \"Version\":\"2012-10-17\"\n}")}); err != nil {
		t.Fatal(err)
	}
	e.Exec(`INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns)
		VALUES ('app', '` + ec2Trust + `', '{` + readOnly + `,` + s3Read + `}')`)
	e.Commit()
	e.Refresh() // imports the role made elsewhere: a commit reads only the roles it acts on
	cases := []struct {
		name, footgun, change string
	}{
		{"a document IAM returns with other whitespace and key order", "human-editable formats compared as text",
			`UPDATE iam_role SET max_session_duration = max_session_duration WHERE role_name = 'elsewhere'`},
		{"attached policies in another order", "unordered sets compared element by element",
			`UPDATE iam_role SET attached_policy_arns = '{` + s3Read + `,` + readOnly + `}' WHERE role_name = 'app'`},
		{"an empty description where IAM has none", "NULL and undefined told apart",
			`UPDATE iam_role SET description = '' WHERE role_name = 'app'`},
		{"the trust policy rewritten with its keys in another order", "JSON compared as text",
			`UPDATE iam_role SET assume_role_policy_document = '{"Statement": [{"Principal": {"Service": "ec2.amazonaws.com"}, "Effect": "Allow", "Action": "sts:AssumeRole"}], "Version": "2012-10-17"}' WHERE role_name = 'app'`},
		{"a number written as a decimal", "numbers compared inexactly",
			`UPDATE iam_role SET inline_policies = '{}'::jsonb, max_session_duration = 3600.0 WHERE role_name = 'app'`},
	}
	for _, c := range cases {
		e.Emu.Reset()
		e.Exec(c.change)
		e.Commit()
		if m := e.Mutations(); len(m) != 0 {
			t.Errorf("%s (footgun: %s): the cycle made %v", c.name, c.footgun, m)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iam_role WHERE role_name IN ('app', 'elsewhere')`); n != 2 {
		t.Errorf("%d of the 2 roles left", n)
	}
}
