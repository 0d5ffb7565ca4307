package aws_iam_test

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

const account = "arn:aws:iam::123456789012:policy"

// statement is a policy document allowing action on everything.
func statement(action string) string {
	return `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "` + action + `", "Resource": "*"}]}`
}

// policyEnv is an engine with aws_iam installed and an out-of-band IAM
// client.
func policyEnv(t *testing.T) (*enginetest.Env, *iam.Client) {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_iam.Module()},
		Install: []string{"aws_iam"},
	})
	return e, iam.NewFromConfig(e.AWS)
}

// cloudPolicy is a policy as IAM has it: its default version's document
// (decoded), the ids of its versions (oldest first), its tags and the roles
// it is attached to; ok false when there is no such policy.
type cloudPolicy struct {
	policy   types.Policy
	document string
	versions []string
}

func getPolicy(t *testing.T, cl *iam.Client, arn string) (cloudPolicy, bool) {
	t.Helper()
	ctx := context.Background()
	got, err := cl.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: &arn})
	if err != nil {
		return cloudPolicy{}, false
	}
	v, err := cl.GetPolicyVersion(ctx, &iam.GetPolicyVersionInput{PolicyArn: &arn, VersionId: got.Policy.DefaultVersionId})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := url.QueryUnescape(aws.ToString(v.PolicyVersion.Document))
	if err != nil {
		t.Fatal(err)
	}
	vs, err := cl.ListPolicyVersions(ctx, &iam.ListPolicyVersionsInput{PolicyArn: &arn})
	if err != nil {
		t.Fatal(err)
	}
	out := cloudPolicy{policy: *got.Policy, document: doc}
	for _, v := range vs.Versions {
		out.versions = append(out.versions, aws.ToString(v.VersionId))
	}
	return out, true
}

// localPolicies names the account's policies in IAM, sorted.
func localPolicies(t *testing.T, cl *iam.Client) []string {
	t.Helper()
	out, err := cl.ListPolicies(context.Background(), &iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range out.Policies {
		names = append(names, aws.ToString(p.PolicyName))
	}
	slices.Sort(names)
	return names
}

// TestPolicyEndToEnd: policies created, changed and deleted in the
// database reach IAM (a change of document is a new default version, and
// no policy ever has more than five); a policy made in IAM becomes a row;
// an unchanged policy costs no writes.
func TestPolicyEndToEnd(t *testing.T) {
	t.Parallel()
	e, cl := policyEnv(t)
	ctx := context.Background()
	arn := account + "/team/read"

	// Database -> cloud: create.
	e.Exec(`INSERT INTO iam_policy (policy_name, path, description, document, tags)
		VALUES ('read', '/team/', 'reads logs', '` + statement("logs:Get*") + `', '{"team": "data"}')`)
	e.Commit()
	p, ok := getPolicy(t, cl, arn)
	if !ok || aws.ToString(p.policy.Description) != "reads logs" || len(p.policy.Tags) != 1 || !sameDocText(t, p.document, statement("logs:Get*")) {
		t.Fatalf("policy in IAM: %v %+v", ok, p)
	}
	if n := e.Count(`SELECT count(*) FROM iam_policy WHERE policy_name = 'read' AND arn = $1 AND policy_id = $2 AND default_version_id = 'v1'`,
		arn, aws.ToString(p.policy.PolicyId)); n != 1 {
		t.Error("arn, policy_id and default_version_id were not written back")
	}

	// Nothing changed: a cycle writes nothing.
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over an unchanged policy made %v", m)
	}

	// Database -> cloud: each change of document is a new default version;
	// from the sixth on, the oldest other version goes first (at most five).
	for i := 2; i <= 7; i++ {
		action := fmt.Sprintf("logs:Get%d", i)
		e.Exec(`UPDATE iam_policy SET document = '` + statement(action) + `' WHERE policy_name = 'read'`)
		e.Commit()
		p, _ := getPolicy(t, cl, arn)
		want := []string{"v1", "v2", "v3", "v4", "v5", "v6", "v7"}[max(0, i-5):i]
		if aws.ToString(p.policy.DefaultVersionId) != fmt.Sprintf("v%d", i) || !slices.Equal(p.versions, want) || !sameDocText(t, p.document, statement(action)) {
			t.Fatalf("update %d: default %s, versions %v; want v%d, %v", i-1, aws.ToString(p.policy.DefaultVersionId), p.versions, i, want)
		}
		if v := e.String(`SELECT default_version_id FROM iam_policy WHERE policy_name = 'read'`); v != fmt.Sprintf("v%d", i) {
			t.Errorf("update %d: the row's default_version_id is %s", i-1, v)
		}
	}

	// Database -> cloud: tags change in place.
	e.Exec(`UPDATE iam_policy SET tags = '{"env": "prod"}' WHERE policy_name = 'read'`)
	e.Commit()
	if p, _ := getPolicy(t, cl, arn); len(p.policy.Tags) != 1 || aws.ToString(p.policy.Tags[0].Key) != "env" {
		t.Errorf("tags in IAM after the update: %v", p.policy.Tags)
	}

	// Cloud -> database: a policy made in IAM is imported.
	if _, err := cl.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: aws.String("made-elsewhere"), Path: aws.String("/ops/"),
		PolicyDocument: aws.String("{\n \"Statement\": [ {\"Resource\": \"*\", \"Action\": [\"s3:Get*\"], \"Effect\": \"Allow\"} ], \"Version\": \"2012-10-17\"\n}"),
		Tags:           []types.Tag{{Key: aws.String("owner"), Value: aws.String("ops")}}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM iam_policy WHERE policy_name = 'made-elsewhere' AND path = '/ops/' AND description IS NULL
		AND document #>> '{Statement,0,Action,0}' = 's3:Get*' AND tags = '{"owner": "ops"}' AND default_version_id = 'v1'`); n != 1 {
		t.Error("the policy made in IAM was not imported as it is")
	}
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle after the import made %v", m)
	}

	// Database -> cloud: delete, with the versions besides the default.
	e.Exec(`DELETE FROM iam_policy WHERE policy_name = 'read'`)
	e.Commit()
	if _, ok := getPolicy(t, cl, arn); ok {
		t.Error("the deleted policy is still in IAM")
	}
	if got := localPolicies(t, cl); !slices.Equal(got, []string{"made-elsewhere"}) {
		t.Errorf("policies in IAM: %v", got)
	}
}

// TestRoleWithPolicies: a role and the two policies it uses, inserted in
// one transaction, are made in one commit (the policies first) and the
// role attaches both; a policy's rename and a change of its description
// replace it, the role moving to the new one; a policy row a role lists
// cannot be deleted, and one the role stops using in the same transaction
// is detached, then deleted.
func TestRoleWithPolicies(t *testing.T) {
	t.Parallel()
	e, cl := policyEnv(t)
	attached := func() []string {
		t.Helper()
		out, err := cl.ListAttachedRolePolicies(context.Background(), &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("app")})
		if err != nil {
			t.Fatal(err)
		}
		var arns []string
		for _, p := range out.AttachedPolicies {
			arns = append(arns, aws.ToString(p.PolicyArn))
		}
		slices.Sort(arns)
		return arns
	}
	arns := func(arns ...string) []string { return slices.Sorted(slices.Values(arns)) }
	e.Exec(`WITH p AS (INSERT INTO iam_policy (policy_name, document) VALUES ('read', '` + statement("s3:Get*") + `'), ('write', '` + statement("s3:Put*") + `') RETURNING id)
		INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns, policy_ids)
		SELECT 'app', '` + ec2Trust + `', '{` + readOnly + `}', array_agg(id) FROM p`)
	e.Commit()
	if got, want := attached(), arns(readOnly, account+"/read", account+"/write"); !slices.Equal(got, want) {
		t.Fatalf("the role attaches %v, want %v", got, want)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after one commit", n)
	}
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over the unchanged role and policies made %v", m)
	}

	// A rename replaces the policy; the role attaches the new one.
	e.Exec(`UPDATE iam_policy SET policy_name = 'reader' WHERE policy_name = 'read'`)
	e.Commit()
	if got, want := attached(), arns(readOnly, account+"/reader", account+"/write"); !slices.Equal(got, want) {
		t.Errorf("after the rename the role attaches %v, want %v", got, want)
	}
	if got := localPolicies(t, cl); !slices.Equal(got, []string{"reader", "write"}) {
		t.Errorf("policies in IAM after the rename: %v", got)
	}
	// So does a new description, under the same name (IAM cannot change
	// it); the stand-in it takes meanwhile is gone afterwards.
	e.Exec(`UPDATE iam_policy SET description = 'writes objects' WHERE policy_name = 'write'`)
	e.Commit()
	if p, ok := getPolicy(t, cl, account+"/write"); !ok || aws.ToString(p.policy.Description) != "writes objects" {
		t.Errorf("after the description change: %v %+v", ok, p.policy)
	}
	if got := localPolicies(t, cl); !slices.Equal(got, []string{"reader", "write"}) {
		t.Errorf("policies in IAM after the description change: %v", got)
	}
	if got, want := attached(), arns(readOnly, account+"/reader", account+"/write"); !slices.Equal(got, want) {
		t.Errorf("after the description change the role attaches %v, want %v", got, want)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the replacements", n)
	}

	// A policy the role lists cannot be deleted; leaving it first, in the
	// same transaction, detaches it, then deletes it.
	if _, err := e.DB.Exec(context.Background(), `DELETE FROM iam_policy WHERE policy_name = 'reader'`); err == nil || !strings.Contains(err.Error(), "still attached to iam_role row(s)") {
		t.Fatalf("deleting a policy a role lists: %v, want it refused", err)
	}
	e.Exec(`BEGIN`,
		`UPDATE iam_role SET policy_ids = array(SELECT id FROM iam_policy WHERE policy_name = 'write') WHERE role_name = 'app'`,
		`DELETE FROM iam_policy WHERE policy_name = 'reader'`,
		`COMMIT`)
	e.Commit()
	if got, want := attached(), arns(readOnly, account+"/write"); !slices.Equal(got, want) {
		t.Errorf("the role attaches %v, want %v", got, want)
	}
	if got := localPolicies(t, cl); !slices.Equal(got, []string{"write"}) {
		t.Errorf("policies in IAM: %v", got)
	}
}

// TestPolicyDeleteWaitsForDetach: a policy something outside the tables
// uses (a role under another path than /) cannot be deleted (DeletePolicy:
// DeleteConflict). The commit fails saying so and the delete is not lost:
// once the policy is detached, the next commit deletes it.
func TestPolicyDeleteWaitsForDetach(t *testing.T) {
	t.Parallel()
	e, cl := policyEnv(t)
	ctx := context.Background()
	e.Exec(`INSERT INTO iam_policy (policy_name, document) VALUES ('shared', '` + statement("sqs:*") + `')`)
	e.Commit()
	arn := e.String(`SELECT arn FROM iam_policy WHERE policy_name = 'shared'`)
	if _, err := cl.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("svc"), Path: aws.String("/service-role/"), AssumeRolePolicyDocument: aws.String(ec2Trust)}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("svc"), PolicyArn: &arn}); err != nil {
		t.Fatal(err)
	}
	e.Exec(`DELETE FROM iam_policy WHERE policy_name = 'shared'`)
	if _, err := e.DB.Exec(ctx, `CALL iasql_commit()`); err == nil || !strings.Contains(err.Error(), "still attached") {
		t.Errorf("commit while the policy is attached elsewhere: %v, want a failure saying it is still attached", err)
	}
	if _, ok := getPolicy(t, cl, arn); !ok {
		t.Fatal("the policy was deleted while attached")
	}
	if _, err := cl.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String("svc"), PolicyArn: &arn}); err != nil {
		t.Fatal(err)
	}
	e.Commit()
	if _, ok := getPolicy(t, cl, arn); ok {
		t.Error("the policy is still in IAM once detached")
	}
	if n := e.Count(`SELECT count(*) FROM iam_policy`); n != 0 {
		t.Errorf("%d policy rows: the deleted row came back", n)
	}
}

// sameDocText compares two JSON documents by meaning.
func sameDocText(t *testing.T, a, b string) bool {
	t.Helper()
	return module.Same(doc(t, a), doc(t, b))
}
