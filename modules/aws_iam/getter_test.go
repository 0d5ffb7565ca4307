package aws_iam_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

// TestRoleGet: Get returns, for the names asked, exactly the records Read
// returns for those roles (every column, in the same form), and nothing for
// a name IAM has no role of, a role under another path than / (Read leaves
// it out) or a name that differs from a role's only in case.
func TestRoleGet(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	call := module.Call{Scope: module.Scope{Regions: []string{"eu-west-1", "us-east-2"}, Default: "eu-west-1"}}
	s := aws.String
	if _, err := c.role.Mapper.Create(ctx, call, row(t, "app", module.Record{"description": "The app's role",
		"attached_policy_arns": []any{readOnly, ecsExec}, "inline_policies": map[string]any{"read-logs": doc(t, readLogs)}})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.role.Mapper.Create(ctx, call, row(t, "bare", nil)); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"svc": "/service-role/", "linked": "/aws-service-role/ecs.amazonaws.com/"} {
		if _, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s(name), Path: s(path), AssumeRolePolicyDocument: s(ec2Trust)}); err != nil {
			t.Fatal(err)
		}
	}
	read := c.read(t)
	cases := []struct {
		name string
		ids  []string
		want []string
	}{
		{"present", []string{"app", "bare"}, []string{"app", "bare"}},
		{"one of them", []string{"bare"}, []string{"bare"}},
		{"absent", []string{"missing"}, nil},
		{"present and absent", []string{"missing", "app", "gone"}, []string{"app"}},
		{"under another path", []string{"svc", "linked", "bare"}, []string{"bare"}},
		{"another case", []string{"APP", "Bare"}, nil},
		{"none", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := c.role.Getter.Get(ctx, call, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			got := enginetest.CheckGot(t, c.role.Equaler, recs, read, func(r module.Record) string { return r.String("role_name") })
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRoleGetFresh: Get reads a role's policies anew even in a call that
// allows reusing them (an automatic cycle's), and makes no ListRoles
// call.
func TestRoleGetFresh(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	if _, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "app", nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.role.Read(ctx, module.Call{}); err != nil { // remembers app's policies
		t.Fatal(err)
	}
	if _, err := c.iam.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("app"), PolicyArn: aws.String(readOnly)}); err != nil {
		t.Fatal(err)
	}
	c.em.Reset()
	recs, err := c.role.Getter.Get(ctx, module.Call{}, []string{"app"})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !slices.Equal(recs[0]["attached_policy_arns"].([]any), []any{readOnly}) {
		t.Errorf("Get returned %v; want app with the policy attached outside iasql", recs)
	}
	calls := c.em.Calls()
	if calls["iam:ListRoles"] != 0 || calls["iam:GetRole"] != 1 {
		t.Errorf("Get made %v", calls)
	}
}

// TestRoleCommitBesideMany: a commit that creates one role beside many
// asks IAM for that role only: no ListRoles, and the policy reads of that
// role alone.
func TestRoleCommitBesideMany(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	ctx := context.Background()
	cl := iam.NewFromConfig(e.AWS)
	const n = 60
	for i := range n {
		if _, err := cl.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(fmt.Sprintf("other-%02d", i)), AssumeRolePolicyDocument: aws.String(ec2Trust)}); err != nil {
			t.Fatal(err)
		}
	}
	e.Refresh()
	if got := e.Count(`SELECT count(*) FROM iam_role`); got != n {
		t.Fatalf("%d roles imported, want %d", got, n)
	}
	e.Exec(`CALL iasql_begin()`) // no automatic cycle in between
	e.Emu.Reset()
	e.Exec(`INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns) VALUES ('app', '` + ec2Trust + `', '{` + readOnly + `}')`)
	e.Commit()
	if _, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("app")}); err != nil {
		t.Fatalf("app was not created: %v", err)
	}
	calls := e.Emu.Calls()
	if calls["iam:ListRoles"] != 0 {
		t.Errorf("the commit listed the roles: %v", calls)
	}
	// Per pass at most one Get of app and its read-back: a handful, not n.
	if got := calls["iam:ListAttachedRolePolicies"]; got == 0 || got > 6 {
		t.Errorf("the commit read attached policies %d times; want a few for app alone (%v)", got, calls)
	}
	if got := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'iam_role'`); got != 0 {
		t.Errorf("%d roles not in sync after the commit", got)
	}
}
