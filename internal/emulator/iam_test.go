package emulator_test

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/internal/emulator"
)

const trustPolicy = `{
  "Version": "2012-10-17",
  "Statement": [{"Effect": "Allow", "Principal": {"Service": "ecs-tasks.amazonaws.com"}, "Action": "sts:AssumeRole"}]
}`

// iamEnv is an emulator, an IAM client for it signing for us-east-1, and
// a constructor of clients signing for other regions.
func iamEnv(t *testing.T) (*emulator.Emulator, *iam.Client, func(region string) *iam.Client) {
	t.Helper()
	em, client, _ := sdkEnv(t, iam.NewFromConfig)
	return em, client("us-east-1"), client
}

func mkRole(t *testing.T, c *iam.Client, name string) {
	t.Helper()
	if _, err := c.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(trustPolicy)}); err != nil {
		t.Fatalf("create role %s: %v", name, err)
	}
}

// decoded is a policy document as IAM returns it, URL-decoded.
func decoded(t *testing.T, doc *string) string {
	t.Helper()
	s, err := url.QueryUnescape(aws.ToString(doc))
	if err != nil {
		t.Fatalf("policy document %q is not URL-encoded: %v", aws.ToString(doc), err)
	}
	return s
}

var (
	roleIDPattern = regexp.MustCompile(`^AROA[A-Z0-9]{17}$`)
	rfc3986       = regexp.MustCompile(`^(%[0-9A-F]{2}|[A-Za-z0-9._~-])*$`)
)

func TestIAMRoleLifecycle(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	created, err := c.CreateRole(ctx, &iam.CreateRoleInput{
		RoleName:                 aws.String("task-exec"),
		Path:                     aws.String("/service/"),
		AssumeRolePolicyDocument: aws.String(trustPolicy),
		Description:              aws.String("Runs <tasks> & more"),
		MaxSessionDuration:       aws.Int32(7200),
		Tags:                     []types.Tag{{Key: aws.String("team"), Value: aws.String("infra")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := created.Role
	if got, want := aws.ToString(r.Arn), "arn:aws:iam::123456789012:role/service/task-exec"; got != want {
		t.Errorf("Arn %s, want %s", got, want)
	}
	if !roleIDPattern.MatchString(aws.ToString(r.RoleId)) {
		t.Errorf("RoleId %s does not look like AWS's", aws.ToString(r.RoleId))
	}
	if r.CreateDate == nil || time.Since(*r.CreateDate) > time.Minute {
		t.Errorf("CreateDate %v", r.CreateDate)
	}
	if !rfc3986.MatchString(aws.ToString(r.AssumeRolePolicyDocument)) {
		t.Errorf("the trust policy is not RFC 3986 URL-encoded: %s", aws.ToString(r.AssumeRolePolicyDocument))
	}
	if got := decoded(t, r.AssumeRolePolicyDocument); got != trustPolicy {
		t.Errorf("trust policy came back as %q, want the text given", got)
	}
	if aws.ToString(r.Description) != "Runs <tasks> & more" || aws.ToInt32(r.MaxSessionDuration) != 7200 || aws.ToString(r.Path) != "/service/" {
		t.Errorf("created %+v", r)
	}

	got, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("TASK-EXEC")}) // names ignore case
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.Role.RoleId) != aws.ToString(r.RoleId) || len(got.Role.Tags) != 1 || !got.Role.CreateDate.Equal(*r.CreateDate) {
		t.Errorf("GetRole %+v", got.Role)
	}

	if _, err := c.UpdateRole(ctx, &iam.UpdateRoleInput{RoleName: aws.String("task-exec"), Description: aws.String("d2"), MaxSessionDuration: aws.Int32(43200)}); err != nil {
		t.Fatal(err)
	}
	desc, err := c.UpdateRoleDescription(ctx, &iam.UpdateRoleDescriptionInput{RoleName: aws.String("task-exec"), Description: aws.String("d3")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(desc.Role.Description) != "d3" || aws.ToInt32(desc.Role.MaxSessionDuration) != 43200 {
		t.Errorf("after updates %+v", desc.Role)
	}
	newTrust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	if _, err := c.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String("task-exec"), PolicyDocument: aws.String(newTrust)}); err != nil {
		t.Fatal(err)
	}
	list, err := c.ListRoles(ctx, &iam.ListRolesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Roles) != 1 || decoded(t, list.Roles[0].AssumeRolePolicyDocument) != newTrust || aws.ToString(list.Roles[0].Description) != "d3" || list.IsTruncated {
		t.Errorf("ListRoles %+v", list)
	}
	if other, err := c.ListRoles(ctx, &iam.ListRolesInput{PathPrefix: aws.String("/other/")}); err != nil || len(other.Roles) != 0 {
		t.Errorf("ListRoles under /other/: %v %v", other, err)
	}

	// Tags.
	if _, err := c.TagRole(ctx, &iam.TagRoleInput{RoleName: aws.String("task-exec"), Tags: []types.Tag{
		{Key: aws.String("env"), Value: aws.String("prod")}, {Key: aws.String("team"), Value: aws.String("platform")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UntagRole(ctx, &iam.UntagRoleInput{RoleName: aws.String("task-exec"), TagKeys: []string{"env"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.ListRoleTags(ctx, &iam.ListRoleTagsInput{RoleName: aws.String("task-exec")})
	if err != nil {
		t.Fatal(err)
	}
	if len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Key) != "team" || aws.ToString(tags.Tags[0].Value) != "platform" {
		t.Errorf("tags %+v", tags.Tags)
	}

	// Managed policies.
	for _, arn := range []string{"arn:aws:iam::aws:policy/ReadOnlyAccess", "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"} {
		if _, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("task-exec"), PolicyArn: aws.String(arn)}); err != nil {
			t.Fatal(err)
		}
	}
	att, err := c.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("task-exec")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range att.AttachedPolicies {
		names = append(names, aws.ToString(p.PolicyName))
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"AmazonECSTaskExecutionRolePolicy", "ReadOnlyAccess"}) {
		t.Errorf("attached %v", names)
	}
	if sr, err := c.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("task-exec"), PathPrefix: aws.String("/service-role/")}); err != nil || len(sr.AttachedPolicies) != 1 {
		t.Errorf("attached under /service-role/: %v %v", sr, err)
	}

	// Inline policies.
	inline := `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::b/*"}]}`
	if _, err := c.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("task-exec"), PolicyName: aws.String("read-b"), PolicyDocument: aws.String(inline)}); err != nil {
		t.Fatal(err)
	}
	pol, err := c.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String("task-exec"), PolicyName: aws.String("read-b")})
	if err != nil {
		t.Fatal(err)
	}
	if decoded(t, pol.PolicyDocument) != inline || aws.ToString(pol.RoleName) != "task-exec" || aws.ToString(pol.PolicyName) != "read-b" {
		t.Errorf("GetRolePolicy %+v", pol)
	}
	pols, err := c.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String("task-exec")})
	if err != nil || !slices.Equal(pols.PolicyNames, []string{"read-b"}) {
		t.Errorf("ListRolePolicies %v %v", pols, err)
	}

	// Deleting needs the policies gone first.
	if _, err := c.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("task-exec")}); errCode(err) != "DeleteConflict" {
		t.Errorf("delete with attached policies: %v", err)
	}
	for _, p := range att.AttachedPolicies {
		if _, err := c.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String("task-exec"), PolicyArn: p.PolicyArn}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("task-exec")}); errCode(err) != "DeleteConflict" {
		t.Errorf("delete with an inline policy: %v", err)
	}
	if _, err := c.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("task-exec"), PolicyName: aws.String("read-b")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("task-exec")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("task-exec")}); errCode(err) != "NoSuchEntity" {
		t.Errorf("GetRole after delete: %v", err)
	}
}

// TestIAMGlobal: IAM answers the same roles whatever region a request is
// signed for.
func TestIAMGlobal(t *testing.T) {
	_, c, client := iamEnv(t)
	mkRole(t, c, "global")
	out, err := client("ap-southeast-2").GetRole(t.Context(), &iam.GetRoleInput{RoleName: aws.String("global")})
	if err != nil || aws.ToString(out.Role.RoleName) != "global" {
		t.Errorf("GetRole signed for another region: %v %v", out, err)
	}
}

func TestIAMErrors(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	mkRole(t, c, "exists")
	s := aws.String
	cases := []errCase{
		{"duplicate name", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("exists"), AssumeRolePolicyDocument: s(trustPolicy)})
			return err
		}, "EntityAlreadyExists"},
		{"duplicate name in another case", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("EXISTS"), AssumeRolePolicyDocument: s(trustPolicy)})
			return err
		}, "EntityAlreadyExists"},
		{"bad name", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("no spaces"), AssumeRolePolicyDocument: s(trustPolicy)})
			return err
		}, "ValidationError"},
		{"long name", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s(strings.Repeat("r", 65)), AssumeRolePolicyDocument: s(trustPolicy)})
			return err
		}, "ValidationError"},
		{"bad path", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("p"), Path: s("nopath"), AssumeRolePolicyDocument: s(trustPolicy)})
			return err
		}, "ValidationError"},
		{"short session", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("short"), AssumeRolePolicyDocument: s(trustPolicy), MaxSessionDuration: aws.Int32(3599)})
			return err
		}, "ValidationError"},
		{"long session", func() error {
			_, err := c.UpdateRole(ctx, &iam.UpdateRoleInput{RoleName: s("exists"), MaxSessionDuration: aws.Int32(43201)})
			return err
		}, "ValidationError"},
		{"trust policy not JSON", func() error {
			_, err := c.CreateRole(ctx, &iam.CreateRoleInput{RoleName: s("bad-doc"), AssumeRolePolicyDocument: s("allow everyone")})
			return err
		}, "MalformedPolicyDocument"},
		{"trust policy not an object", func() error {
			_, err := c.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: s("exists"), PolicyDocument: s(`["Allow"]`)})
			return err
		}, "MalformedPolicyDocument"},
		{"inline policy not JSON", func() error {
			_, err := c.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: s("exists"), PolicyName: s("p"), PolicyDocument: s(`{"Statement":`)})
			return err
		}, "MalformedPolicyDocument"},
		{"get missing role", func() error {
			_, err := c.GetRole(ctx, &iam.GetRoleInput{RoleName: s("missing")})
			return err
		}, "NoSuchEntity"},
		{"delete missing role", func() error {
			_, err := c.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: s("missing")})
			return err
		}, "NoSuchEntity"},
		{"update missing role", func() error {
			_, err := c.UpdateRole(ctx, &iam.UpdateRoleInput{RoleName: s("missing"), Description: s("x")})
			return err
		}, "NoSuchEntity"},
		{"attach unknown policy", func() error {
			_, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: s("exists"), PolicyArn: s("arn:aws:iam::aws:policy/NoSuchPolicy")})
			return err
		}, "NoSuchEntity"},
		{"attach to missing role", func() error {
			_, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: s("missing"), PolicyArn: s("arn:aws:iam::aws:policy/ReadOnlyAccess")})
			return err
		}, "NoSuchEntity"},
		{"attach a malformed ARN", func() error {
			_, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: s("exists"), PolicyArn: s("ReadOnlyAccess-not-an-arn")})
			return err
		}, "InvalidInput"},
		{"detach a policy not attached", func() error {
			_, err := c.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: s("exists"), PolicyArn: s("arn:aws:iam::aws:policy/ReadOnlyAccess")})
			return err
		}, "NoSuchEntity"},
		{"list policies attached to a missing role", func() error {
			_, err := c.ListAttachedRolePolicies(ctx, &iam.ListAttachedRolePoliciesInput{RoleName: s("missing")})
			return err
		}, "NoSuchEntity"},
		{"list inline policies of a missing role", func() error {
			_, err := c.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: s("missing")})
			return err
		}, "NoSuchEntity"},
		{"get an inline policy of a missing role", func() error {
			_, err := c.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: s("missing"), PolicyName: s("p")})
			return err
		}, "NoSuchEntity"},
		{"get missing inline policy", func() error {
			_, err := c.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: s("exists"), PolicyName: s("none")})
			return err
		}, "NoSuchEntity"},
		{"delete missing inline policy", func() error {
			_, err := c.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: s("exists"), PolicyName: s("none")})
			return err
		}, "NoSuchEntity"},
		{"MaxItems 0", func() error {
			_, err := c.ListRoles(ctx, &iam.ListRolesInput{MaxItems: aws.Int32(0)})
			return err
		}, "ValidationError"},
		{"MaxItems 1001", func() error {
			_, err := c.ListRoles(ctx, &iam.ListRolesInput{MaxItems: aws.Int32(1001)})
			return err
		}, "ValidationError"},
		{"forged marker", func() error {
			_, err := c.ListRoles(ctx, &iam.ListRolesInput{Marker: s("not a marker")})
			return err
		}, "ValidationError"},
	}
	wantCodes(t, cases)
	// The failed calls changed nothing.
	out, err := c.ListRoles(ctx, &iam.ListRolesInput{})
	if err != nil || len(out.Roles) != 1 {
		t.Errorf("roles after failures: %v %v", out, err)
	}
}

func TestIAMPagination(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	const n = 23
	for i := range n {
		mkRole(t, c, fmt.Sprintf("role-%02d", i))
	}
	var roles []string
	p := iam.NewListRolesPaginator(c, &iam.ListRolesInput{MaxItems: aws.Int32(5)})
	all := pages(t, p.HasMorePages, p.NextPage)
	for _, page := range all {
		if len(page.Roles) > 5 {
			t.Errorf("page of %d roles, MaxItems 5", len(page.Roles))
		}
		for _, r := range page.Roles {
			roles = append(roles, aws.ToString(r.RoleName))
		}
	}
	if len(all) != 5 || len(roles) != n || len(slices.Compact(slices.Sorted(slices.Values(roles)))) != n {
		t.Errorf("%d pages, roles %v: want each of %d once", len(all), roles, n)
	}

	for i := range 7 {
		doc := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"arn:aws:s3:::b%d/*"}]}`, i)
		if _, err := c.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("role-00"), PolicyName: aws.String(fmt.Sprintf("p%d", i)), PolicyDocument: aws.String(doc)}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	pp := iam.NewListRolePoliciesPaginator(c, &iam.ListRolePoliciesInput{RoleName: aws.String("role-00"), MaxItems: aws.Int32(3)})
	for _, page := range pages(t, pp.HasMorePages, pp.NextPage) {
		names = append(names, page.PolicyNames...)
	}
	if !slices.Equal(names, []string{"p0", "p1", "p2", "p3", "p4", "p5", "p6"}) {
		t.Errorf("inline policies %v", names)
	}

	arns := []string{
		"arn:aws:iam::aws:policy/ReadOnlyAccess", "arn:aws:iam::aws:policy/AdministratorAccess",
		"arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess", "arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
		"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
	}
	for _, arn := range arns {
		if _, err := c.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("role-00"), PolicyArn: aws.String(arn)}); err != nil {
			t.Fatal(err)
		}
	}
	var attached []string
	ap := iam.NewListAttachedRolePoliciesPaginator(c, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String("role-00"), MaxItems: aws.Int32(2)})
	for _, page := range pages(t, ap.HasMorePages, ap.NextPage) {
		for _, p := range page.AttachedPolicies {
			attached = append(attached, aws.ToString(p.PolicyArn))
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(attached)), slices.Sorted(slices.Values(arns))) {
		t.Errorf("attached %v, want %v", attached, arns)
	}

	var tags []types.Tag
	for i := range 4 {
		tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
	}
	if _, err := c.TagRole(ctx, &iam.TagRoleInput{RoleName: aws.String("role-01"), Tags: tags}); err != nil {
		t.Fatal(err)
	}
	var keys []string
	tp := iam.NewListRoleTagsPaginator(c, &iam.ListRoleTagsInput{RoleName: aws.String("role-01"), MaxItems: aws.Int32(3)})
	for _, page := range pages(t, tp.HasMorePages, tp.NextPage) {
		for _, tg := range page.Tags {
			keys = append(keys, aws.ToString(tg.Key))
		}
	}
	if !slices.Equal(keys, []string{"k0", "k1", "k2", "k3"}) {
		t.Errorf("tags %v", keys)
	}
}

// TestIAMPaginationUnderChange: a role deleted between pages does not make
// the listing skip or repeat the others.
func TestIAMPaginationUnderChange(t *testing.T) {
	_, c, _ := iamEnv(t)
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c", "d"} {
		mkRole(t, c, n)
	}
	first, err := c.ListRoles(ctx, &iam.ListRolesInput{MaxItems: aws.Int32(2)})
	if err != nil || !first.IsTruncated {
		t.Fatalf("first page %v %v", first, err)
	}
	if _, err := c.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: first.Roles[1].RoleName}); err != nil {
		t.Fatal(err)
	}
	rest, err := c.ListRoles(ctx, &iam.ListRolesInput{Marker: first.Marker})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rest.Roles {
		got = append(got, aws.ToString(r.RoleName))
	}
	if !slices.Equal(got, []string{"c", "d"}) || rest.IsTruncated {
		t.Errorf("second page %v (truncated %v)", got, rest.IsTruncated)
	}
}

func TestIAMThrottle(t *testing.T) {
	em, c, _ := iamEnv(t)
	em.Inject(emulator.Fault{Op: "iam:CreateRole", Kind: emulator.Throttle, Times: 1})
	_, err := c.CreateRole(t.Context(), &iam.CreateRoleInput{RoleName: aws.String("t"), AssumeRolePolicyDocument: aws.String(trustPolicy)})
	if errCode(err) != "Throttling" {
		t.Fatalf("throttled CreateRole: %v", err)
	}
	mkRole(t, c, "t") // the fault is spent and did not create the role
	if got := em.Calls()["iam:CreateRole"]; got != 2 {
		t.Errorf("iam:CreateRole counted %d times, want 2", got)
	}
}
