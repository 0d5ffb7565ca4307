package emulator_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"
)

const readAll = `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:Get*", "Resource": "*"}]}`

var policyIDPattern = regexp.MustCompile(`^ANPA[A-Z0-9]{17}$`)

// TestIAMManagedPolicyLifecycle: a customer managed policy as the IAM API
// Reference documents it: CreatePolicy makes v1 the default; at most five
// versions (CreatePolicyVersion: LimitExceeded at the sixth); the default
// version cannot be deleted (DeletePolicyVersion: DeleteConflict); a policy
// attached to a role, or with versions besides its default, cannot be
// deleted (DeletePolicy: DeleteConflict); names are unique regardless of
// case; AWS's own policies cannot be changed.
func TestIAMManagedPolicyLifecycle(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	s := aws.String
	created, err := c.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: s("read"), Path: s("/team/"), PolicyDocument: s(readAll),
		Description: s("Reads <objects>"), Tags: []types.Tag{{Key: s("team"), Value: s("data")}}})
	if err != nil {
		t.Fatal(err)
	}
	p := created.Policy
	arn := aws.ToString(p.Arn)
	if arn != "arn:aws:iam::123456789012:policy/team/read" || !policyIDPattern.MatchString(aws.ToString(p.PolicyId)) ||
		aws.ToString(p.DefaultVersionId) != "v1" || aws.ToString(p.Path) != "/team/" {
		t.Errorf("created %s id %s default %s path %s", arn, aws.ToString(p.PolicyId), aws.ToString(p.DefaultVersionId), aws.ToString(p.Path))
	}
	if _, err := c.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: s("READ"), PolicyDocument: s(readAll)}); errCode(err) != "EntityAlreadyExists" {
		t.Errorf("a second policy named READ: %v, want EntityAlreadyExists", err)
	}
	for _, bad := range []struct{ name, path, doc, code string }{
		{"bad-path", "/a*/", readAll, "ValidationError"},
		{"bad-path2", "team", readAll, "ValidationError"},
		{"bad name", "/", readAll, "ValidationError"},
		{"bad-doc", "/", `["no"]`, "MalformedPolicyDocument"},
		// 6,144 characters at most, white space not counted.
		{"too-big", "/", `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"` + strings.Repeat("x", 6144) + `"}]}`, "LimitExceeded"},
	} {
		if _, err := c.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: s(bad.name), Path: s(bad.path), PolicyDocument: s(bad.doc)}); errCode(err) != bad.code {
			t.Errorf("CreatePolicy %s %s %s: %v, want %s", bad.name, bad.path, bad.doc, err, bad.code)
		}
	}
	spaced := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}` + strings.Repeat(" ", 7000)
	if _, err := c.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: s("spaced"), PolicyDocument: s(spaced)}); err != nil {
		t.Errorf("a policy under the size quota once white space is left out: %v", err)
	}
	got, err := c.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: s(arn)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.Policy.Description) != "Reads <objects>" || len(got.Policy.Tags) != 1 {
		t.Errorf("GetPolicy: description %q tags %v", aws.ToString(got.Policy.Description), got.Policy.Tags)
	}
	v1, err := c.GetPolicyVersion(ctx, &iam.GetPolicyVersionInput{PolicyArn: s(arn), VersionId: s("v1")})
	if err != nil {
		t.Fatal(err)
	}
	if !rfc3986.MatchString(aws.ToString(v1.PolicyVersion.Document)) || decoded(t, v1.PolicyVersion.Document) != readAll || !v1.PolicyVersion.IsDefaultVersion {
		t.Errorf("v1: %q default %v", aws.ToString(v1.PolicyVersion.Document), v1.PolicyVersion.IsDefaultVersion)
	}

	// Versions: four more, the last two not default; a sixth is refused.
	for i := 2; i <= 5; i++ {
		out, err := c.CreatePolicyVersion(ctx, &iam.CreatePolicyVersionInput{PolicyArn: s(arn), PolicyDocument: s(readAll), SetAsDefault: i <= 3})
		if err != nil {
			t.Fatal(err)
		}
		if id := aws.ToString(out.PolicyVersion.VersionId); id != "v"+string(rune('0'+i)) || out.PolicyVersion.Document != nil {
			t.Errorf("version %d: id %s, document %v (CreatePolicyVersion does not return it)", i, id, out.PolicyVersion.Document)
		}
	}
	if _, err := c.CreatePolicyVersion(ctx, &iam.CreatePolicyVersionInput{PolicyArn: s(arn), PolicyDocument: s(readAll)}); errCode(err) != "LimitExceeded" {
		t.Errorf("a sixth version: %v, want LimitExceeded", err)
	}
	versions := func() (ids []string, def string) {
		out, err := c.ListPolicyVersions(ctx, &iam.ListPolicyVersionsInput{PolicyArn: s(arn)})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range out.Versions {
			ids = append(ids, aws.ToString(v.VersionId))
			if v.IsDefaultVersion {
				def = aws.ToString(v.VersionId)
			}
		}
		return ids, def
	}
	if ids, def := versions(); !slices.Equal(ids, []string{"v1", "v2", "v3", "v4", "v5"}) || def != "v3" {
		t.Errorf("versions %v, default %s; want v1..v5, default v3", ids, def)
	}
	if _, err := c.DeletePolicyVersion(ctx, &iam.DeletePolicyVersionInput{PolicyArn: s(arn), VersionId: s("v3")}); errCode(err) != "DeleteConflict" {
		t.Errorf("deleting the default version: %v, want DeleteConflict", err)
	}
	if _, err := c.DeletePolicyVersion(ctx, &iam.DeletePolicyVersionInput{PolicyArn: s(arn), VersionId: s("v1")}); err != nil {
		t.Fatal(err)
	}
	out, err := c.CreatePolicyVersion(ctx, &iam.CreatePolicyVersionInput{PolicyArn: s(arn), PolicyDocument: s(readAll), SetAsDefault: true})
	if err != nil || aws.ToString(out.PolicyVersion.VersionId) != "v6" {
		t.Fatalf("a version after a delete: %v %v, want v6 (ids are not reused)", out, err)
	}

	// Attached to a role: listed there, and not deleted.
	mkRole(t, c, "app")
	if _, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: s("app"), PolicyArn: s(arn)}); err != nil {
		t.Fatal(err)
	}
	att, err := c.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: s("app")})
	if err != nil || len(att.AttachedPolicies) != 1 || aws.ToString(att.AttachedPolicies[0].PolicyName) != "read" {
		t.Errorf("attached policies %v %v", att, err)
	}
	if _, err := c.DeletePolicy(ctx, &iam.DeletePolicyInput{PolicyArn: s(arn)}); errCode(err) != "DeleteConflict" {
		t.Errorf("deleting an attached policy: %v, want DeleteConflict", err)
	}
	if _, err := c.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: s("app"), PolicyArn: s(arn)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeletePolicy(ctx, &iam.DeletePolicyInput{PolicyArn: s(arn)}); errCode(err) != "DeleteConflict" {
		t.Errorf("deleting a policy with versions besides its default: %v, want DeleteConflict", err)
	}
	ids, def := versions()
	for _, id := range ids {
		if id != def {
			if _, err := c.DeletePolicyVersion(ctx, &iam.DeletePolicyVersionInput{PolicyArn: s(arn), VersionId: s(id)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := c.DeletePolicy(ctx, &iam.DeletePolicyInput{PolicyArn: s(arn)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: s(arn)}); errCode(err) != "NoSuchEntity" {
		t.Errorf("GetPolicy after the delete: %v, want NoSuchEntity", err)
	}

	// AWS's own policies are attachable, not changeable.
	awsOwn := "arn:aws:iam::aws:policy/ReadOnlyAccess"
	if _, err := c.CreatePolicyVersion(ctx, &iam.CreatePolicyVersionInput{PolicyArn: s(awsOwn), PolicyDocument: s(readAll)}); errCode(err) != "AccessDenied" {
		t.Errorf("a version of an AWS managed policy: %v, want AccessDenied", err)
	}
	if _, err := c.DeletePolicy(ctx, &iam.DeletePolicyInput{PolicyArn: s(awsOwn)}); errCode(err) != "AccessDenied" {
		t.Errorf("deleting an AWS managed policy: %v, want AccessDenied", err)
	}
}

// TestIAMListPolicies: ListPolicies with Scope (Local: the account's own;
// AWS: AWS's), OnlyAttached, PathPrefix, and pages (MaxItems, Marker,
// IsTruncated); ListPolicyTags and TagPolicy/UntagPolicy.
func TestIAMListPolicies(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	s := aws.String
	for _, p := range []struct{ name, path string }{{"a", "/"}, {"b", "/team/"}, {"c", "/team/x/"}, {"d", "/other/"}} {
		if _, err := c.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: s(p.name), Path: s(p.path), PolicyDocument: s(readAll)}); err != nil {
			t.Fatal(err)
		}
	}
	mkRole(t, c, "app")
	if _, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: s("app"), PolicyArn: s("arn:aws:iam::123456789012:policy/team/b")}); err != nil {
		t.Fatal(err)
	}
	list := func(in iam.ListPoliciesInput) []string {
		var names []string
		p := iam.NewListPoliciesPaginator(c, &in)
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, pol := range page.Policies {
				names = append(names, aws.ToString(pol.PolicyName))
			}
		}
		slices.Sort(names)
		return names
	}
	cases := []struct {
		name string
		in   iam.ListPoliciesInput
		want []string
	}{
		{"local", iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal}, []string{"a", "b", "c", "d"}},
		{"local, a page of one", iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, MaxItems: aws.Int32(1)}, []string{"a", "b", "c", "d"}},
		{"local under /team/", iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, PathPrefix: s("/team/")}, []string{"b", "c"}},
		{"local, attached", iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, OnlyAttached: true}, []string{"b"}},
		{"AWS's under /service-role/", iam.ListPoliciesInput{Scope: types.PolicyScopeTypeAws, PathPrefix: s("/service-role/")},
			[]string{"AWSLambdaBasicExecutionRole", "AWSLambdaVPCAccessExecutionRole", "AmazonECSTaskExecutionRolePolicy"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := list(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
	page, err := c.ListPolicies(ctx, &iam.ListPoliciesInput{Scope: types.PolicyScopeTypeLocal, MaxItems: aws.Int32(3)})
	if err != nil || len(page.Policies) != 3 || !page.IsTruncated || page.Marker == nil {
		t.Errorf("a first page of 3 of 4: %d policies, truncated %v, marker %v (%v)", len(page.Policies), page.IsTruncated, page.Marker, err)
	}
	if page.Policies[0].Description != nil || page.Policies[0].Tags != nil {
		t.Error("ListPolicies returns descriptions or tags, which AWS leaves to GetPolicy")
	}

	arn := s("arn:aws:iam::123456789012:policy/a")
	if _, err := c.TagPolicy(ctx, &iam.TagPolicyInput{PolicyArn: arn, Tags: []types.Tag{{Key: s("team"), Value: s("x")}, {Key: s("env"), Value: s("prod")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UntagPolicy(ctx, &iam.UntagPolicyInput{PolicyArn: arn, TagKeys: []string{"TEAM"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.ListPolicyTags(ctx, &iam.ListPolicyTagsInput{PolicyArn: arn})
	if err != nil || len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Key) != "env" {
		t.Errorf("tags after tag and untag: %v %v", tags, err)
	}
}
