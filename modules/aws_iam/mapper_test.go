package aws_iam_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/module"
)

// cloud is an emulator with the module's mapper for it and an out-of-band
// IAM client.
type cloud struct {
	em   *emulator.Emulator
	role module.Parts
	iam  *iam.Client
}

func newCloud(t *testing.T) *cloud {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{})
	cfg := cl.AWS
	cfg.RetryMaxAttempts = 1
	ms := testkit.Mappers(t, aws_iam.Module(), cfg)
	return &cloud{em: cl.Emu, role: module.PartsOf(ms["iam_role"]), iam: testkit.Clients(cl.AWS, iam.NewFromConfig)("us-east-1")}
}

// doc is a JSON value as the engine reads it from a jsonb column.
func doc(t *testing.T, s string) any {
	t.Helper()
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("bad JSON in test: %v", err)
	}
	return v
}

const (
	ec2Trust    = `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}`
	lambdaTrust = `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}`
	readLogs    = `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": ["logs:GetLogEvents"], "Resource": "*", "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": 3600}}}]}`
	readOnly    = "arn:aws:iam::aws:policy/ReadOnlyAccess"
	ecsExec     = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
	s3Read      = "arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess"
)

// row is a database record of the table with defaults filled in.
func row(t *testing.T, name string, cols module.Record) module.Record {
	r := module.Record{
		"role_name":                   name,
		"assume_role_policy_document": doc(t, ec2Trust),
		"description":                 nil,
		"max_session_duration":        json.Number("3600"),
		"attached_policy_arns":        []any{},
		"inline_policies":             map[string]any{},
	}
	maps.Copy(r, cols)
	return r
}

var roleIDPattern = regexp.MustCompile(`^AROA[A-Z0-9]{17}$`)

func checkFeedback(t *testing.T, rec module.Record) {
	t.Helper()
	if got, want := rec.String("arn"), "arn:aws:iam::123456789012:role/"+rec.String("role_name"); got != want {
		t.Errorf("arn %q, want %q", got, want)
	}
	if !roleIDPattern.MatchString(rec.String("role_id")) {
		t.Errorf("role_id %q", rec.String("role_id"))
	}
	ts, err := time.Parse(time.RFC3339Nano, rec.String("created_at"))
	if err != nil || time.Since(ts) > time.Minute {
		t.Errorf("created_at %v (%v)", rec["created_at"], err)
	}
}

func (c *cloud) read(t *testing.T) map[string]module.Record {
	t.Helper()
	recs, err := c.role.Read(t.Context(), module.Call{Fresh: module.Fresh{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]module.Record{}
	for _, r := range recs {
		out[r.String("role_name")] = r
	}
	return out
}

func TestRoleLifecycle(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	want := row(t, "app", module.Record{
		"description":          "The app's role",
		"max_session_duration": json.Number("7200"),
		"attached_policy_arns": []any{readOnly, ecsExec},
		"inline_policies":      map[string]any{"read-logs": doc(t, readLogs)},
	})
	got, err := c.role.Mapper.Create(ctx, module.Call{}, want)
	if err != nil {
		t.Fatal(err)
	}
	checkFeedback(t, got)
	if !c.role.Equaler.Equal(want, got) {
		t.Errorf("created %v, want %v", got, want)
	}
	read := c.read(t)
	if len(read) != 1 || !c.role.Equaler.Equal(want, read["app"]) {
		t.Fatalf("read %v", read)
	}
	for col, v := range got {
		if col == "created_at" {
			continue // second precision from ListRoles and GetRole alike, but compare as instants
		}
		if !module.Same(v, read["app"][col]) && !c.role.Equaler.Equal(module.Record{col: v}, module.Record{col: read["app"][col]}) {
			t.Errorf("%s: created %v, read %v", col, v, read["app"][col])
		}
	}

	// Each declarative column, one at a time.
	steps := []struct {
		name string
		set  module.Record
	}{
		{"description", module.Record{"description": "changed"}},
		{"description cleared", module.Record{"description": nil}},
		{"max_session_duration", module.Record{"max_session_duration": json.Number("43200")}},
		{"assume_role_policy_document", module.Record{"assume_role_policy_document": doc(t, lambdaTrust)}},
		{"attach and detach", module.Record{"attached_policy_arns": []any{s3Read, readOnly}}},
		{"detach all", module.Record{"attached_policy_arns": []any{}}},
		{"inline policy changed and added", module.Record{"inline_policies": map[string]any{
			"read-logs": doc(t, strings.Replace(readLogs, "GetLogEvents", "FilterLogEvents", 1)),
			"second":    doc(t, `{"Version": "2012-10-17", "Statement": []}`),
		}}},
		{"inline policy removed", module.Record{"inline_policies": map[string]any{"second": doc(t, `{"Version": "2012-10-17", "Statement": []}`)}}},
	}
	have := got
	for _, s := range steps {
		next := maps.Clone(want)
		maps.Copy(next, s.set)
		if c.role.Equaler.Equal(next, have) {
			t.Fatalf("%s: Equal before the update", s.name)
		}
		up, err := c.role.Mapper.Update(ctx, module.Call{}, next, have)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !c.role.Equaler.Equal(next, up) {
			t.Errorf("%s: updated to %v, want %v", s.name, up, next)
		}
		if r := c.read(t)["app"]; !c.role.Equaler.Equal(next, r) {
			t.Errorf("%s: read back %v", s.name, r)
		}
		if up.String("role_id") != got.String("role_id") {
			t.Errorf("%s: the role was replaced", s.name)
		}
		want, have = next, up
	}
	renamed := maps.Clone(want)
	renamed["role_name"] = "app2"
	if _, err := c.role.Mapper.Update(ctx, module.Call{}, renamed, have); !errors.Is(err, module.ErrReplace) {
		t.Errorf("rename: %v, want ErrReplace", err)
	}

	// Delete removes the remaining inline policy first; again is no error.
	if err := c.role.Mapper.Delete(ctx, module.Call{}, have); err != nil {
		t.Fatal(err)
	}
	if len(c.read(t)) != 0 {
		t.Error("the role is still there")
	}
	if err := c.role.Mapper.Delete(ctx, module.Call{}, have); err != nil {
		t.Errorf("deleting a deleted role: %v", err)
	}
}

// TestRoleDeleteDetaches: a role with attached and inline policies, some
// of them added outside iasql, is deleted.
func TestRoleDeleteDetaches(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	have, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "full", module.Record{"attached_policy_arns": []any{readOnly}}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.iam.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("full"), PolicyArn: aws.String(s3Read)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.iam.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("full"), PolicyName: aws.String("oob"), PolicyDocument: aws.String(readLogs)}); err != nil {
		t.Fatal(err)
	}
	if err := c.role.Mapper.Delete(ctx, module.Call{}, have); err != nil {
		t.Fatal(err)
	}
	if _, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("full")}); err == nil {
		t.Error("the role still exists")
	}
}

// TestRoleCreateExisting: creating a role that exists reads it back as it
// is.
func TestRoleCreateExisting(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	_, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("there"), AssumeRolePolicyDocument: aws.String(lambdaTrust), Description: aws.String("made elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "there", nil))
	if err != nil {
		t.Fatal(err)
	}
	checkFeedback(t, got)
	if got["description"] != "made elsewhere" || !c.role.Equaler.Equal(row(t, "there", module.Record{"description": "made elsewhere", "assume_role_policy_document": doc(t, lambdaTrust)}), got) {
		t.Errorf("read back %v", got)
	}
	// Under another path, it cannot be managed here.
	_, err = c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("svc"), Path: aws.String("/service-role/"), AssumeRolePolicyDocument: aws.String(lambdaTrust)})
	if err != nil {
		t.Fatal(err)
	}
	var te *module.TerminalError
	if _, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "svc", nil)); !errors.As(err, &te) {
		t.Errorf("create over a role with another path: %v, want a terminal error", err)
	}
}

func TestRoleCreateErrors(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	var te *module.TerminalError
	if _, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "short", module.Record{"max_session_duration": json.Number("60")})); !errors.As(err, &te) {
		t.Errorf("max_session_duration 60: %v, want a terminal error", err)
	}
	if _, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "bad-doc", module.Record{"assume_role_policy_document": "not json"})); !errors.As(err, &te) {
		t.Errorf("a trust policy that is not JSON: %v, want a terminal error", err)
	}
	// An unknown managed policy fails the create after the role is made;
	// the retry finds the role and the engine's update reports the policy
	// again.
	want := row(t, "unknown-policy", module.Record{"attached_policy_arns": []any{"arn:aws:iam::aws:policy/NoSuchPolicy"}})
	if _, err := c.role.Mapper.Create(ctx, module.Call{}, want); err == nil || !strings.Contains(err.Error(), "NoSuchPolicy") {
		t.Errorf("unknown policy: %v", err)
	}
	have, err := c.role.Mapper.Create(ctx, module.Call{}, want)
	if err != nil {
		t.Fatalf("retried create: %v", err)
	}
	if c.role.Equaler.Equal(want, have) {
		t.Error("the role read back has a policy that does not exist")
	}
	if _, err := c.role.Mapper.Update(ctx, module.Call{}, want, have); err == nil {
		t.Error("update attaching an unknown policy succeeded")
	}
}

// TestRoleOutOfBand: changes made with the SDK are what Read returns.
func TestRoleOutOfBand(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	created, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, "oob", nil))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name  string
		do    func() error
		check func(r module.Record) bool
	}{
		{"description", func() error {
			_, err := c.iam.UpdateRoleDescription(ctx, &iam.UpdateRoleDescriptionInput{RoleName: aws.String("oob"), Description: aws.String("by hand")})
			return err
		}, func(r module.Record) bool { return r["description"] == "by hand" }},
		{"max session", func() error {
			_, err := c.iam.UpdateRole(ctx, &iam.UpdateRoleInput{RoleName: aws.String("oob"), MaxSessionDuration: aws.Int32(10800)})
			return err
		}, func(r module.Record) bool { return module.Same(r["max_session_duration"], json.Number("10800")) }},
		{"trust policy", func() error {
			_, err := c.iam.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String("oob"), PolicyDocument: aws.String(lambdaTrust)})
			return err
		}, func(r module.Record) bool {
			return c.role.Equaler.Equal(row(t, "oob", module.Record{"assume_role_policy_document": doc(t, lambdaTrust)}),
				module.Record{"role_name": "oob", "assume_role_policy_document": r["assume_role_policy_document"]})
		}},
		{"attached policy", func() error {
			_, err := c.iam.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("oob"), PolicyArn: aws.String(ecsExec)})
			return err
		}, func(r module.Record) bool { return slices.Equal(r["attached_policy_arns"].([]any), []any{ecsExec}) }},
		{"inline policy", func() error {
			_, err := c.iam.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("oob"), PolicyName: aws.String("p"), PolicyDocument: aws.String(readLogs)})
			return err
		}, func(r module.Record) bool {
			m, _ := r["inline_policies"].(map[string]any)
			d, _ := json.Marshal(m["p"])
			return len(m) == 1 && strings.Contains(string(d), `"aws:MultiFactorAuthAge":3600`)
		}},
	}
	for _, s := range steps {
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		r := c.read(t)["oob"]
		if !s.check(r) {
			t.Errorf("%s: read %v", s.name, r)
		}
		if r.String("role_id") != created.String("role_id") {
			t.Errorf("%s: role_id changed", s.name)
		}
	}
	if _, err := c.iam.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String("oob"), PolicyArn: aws.String(ecsExec)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.iam.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String("oob"), PolicyName: aws.String("p")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.iam.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String("oob")}); err != nil {
		t.Fatal(err)
	}
	if len(c.read(t)) != 0 {
		t.Error("a role deleted outside iasql is still read")
	}
}

// TestRoleReadScope: roles under other paths are left out; the read works
// whatever the scope's default region (IAM is global).
func TestRoleReadScope(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	for name, path := range map[string]string{"plain": "/", "svc": "/service-role/", "linked": "/aws-service-role/ecs.amazonaws.com/"} {
		_, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), Path: aws.String(path), AssumeRolePolicyDocument: aws.String(ec2Trust)})
		if err != nil {
			t.Fatal(err)
		}
	}
	recs, err := c.role.Read(ctx, module.Call{Scope: module.Scope{Regions: []string{"eu-west-1", "us-east-2"}, Default: "eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0]["role_name"] != "plain" {
		t.Errorf("read %v, want the role under / only", recs)
	}
}

// TestRoleReadMany: more roles than one ListRoles page, each read once.
func TestRoleReadMany(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	const n = 1010
	for i := range n {
		name := fmt.Sprintf("r%04d", i)
		if _, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String(name), AssumeRolePolicyDocument: aws.String(ec2Trust)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.iam.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("r0007"), PolicyName: aws.String("p"), PolicyDocument: aws.String(readLogs)}); err != nil {
		t.Fatal(err)
	}
	c.em.Reset()
	recs := c.read(t)
	if len(recs) != n {
		t.Errorf("read %d roles, want %d", len(recs), n)
	}
	want := map[string]int{"iam:ListRoles": 2, "iam:ListAttachedRolePolicies": n, "iam:ListRolePolicies": n, "iam:GetRolePolicy": 1}
	if got := c.em.Calls(); !maps.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

// TestRoleDetailReuse: an automatic cycle's Read of unchanged roles makes
// ListRoles calls only; a fresh read sees a policy attached outside.
func TestRoleDetailReuse(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	for _, n := range []string{"a", "b", "c"} {
		if _, err := c.role.Mapper.Create(ctx, module.Call{}, row(t, n, nil)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.iam.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String("b"), PolicyArn: aws.String(readOnly)}); err != nil {
		t.Fatal(err)
	}
	c.em.Reset()
	recs, err := c.role.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.em.Calls(); !maps.Equal(got, map[string]int{"iam:ListRoles": 1}) {
		t.Errorf("an automatic read of unchanged roles made %v; want one ListRoles", got)
	}
	for _, r := range recs {
		if r["role_name"] == "b" && len(r["attached_policy_arns"].([]any)) != 0 {
			t.Error("the automatic read did not reuse the remembered policies")
		}
	}
	if r := c.read(t)["b"]; !slices.Equal(r["attached_policy_arns"].([]any), []any{readOnly}) {
		t.Errorf("a fresh read did not see the policy attached outside iasql: %v", r)
	}
}

func TestRoleEqual(t *testing.T) {
	m := newCloud(t).role
	base := row(t, "eq", module.Record{
		"description":          "d",
		"attached_policy_arns": []any{readOnly, ecsExec},
		"inline_policies":      map[string]any{"p": doc(t, readLogs)},
	})
	// cloud is base as the cloud would give it, with changes.
	cloud := func(set module.Record) module.Record {
		r := maps.Clone(base)
		maps.Copy(r, set)
		return r
	}
	reordered := `{
	  "Statement": [{"Resource": "*", "Action": ["logs:GetLogEvents"], "Effect": "Allow",
	                 "Condition": {"NumericLessThan": {"aws:MultiFactorAuthAge": 3600.0}}}],
	  "Version": "2012-10-17"
	}`
	cases := []struct {
		name  string
		db    module.Record
		cloud module.Record
		equal bool
	}{
		{"same", base, cloud(nil), true},
		{"NULL and empty description", cloud(module.Record{"description": nil}), cloud(module.Record{"description": ""}), true},
		{"absent and empty description", func() module.Record { r := cloud(nil); delete(r, "description"); return r }(), cloud(module.Record{"description": ""}), true},
		{"attached ARNs in another order", base, cloud(module.Record{"attached_policy_arns": []any{ecsExec, readOnly}}), true},
		{"attached ARNs repeated", cloud(module.Record{"attached_policy_arns": []any{readOnly, ecsExec, readOnly}}), base, true},
		{"NULL and no attached ARNs", cloud(module.Record{"attached_policy_arns": nil}), cloud(module.Record{"attached_policy_arns": []any{}}), true},
		{"trust policy with other whitespace and key order", base, cloud(module.Record{"assume_role_policy_document": doc(t, "{\"Statement\":[{\"Action\":\"sts:AssumeRole\",\"Principal\":{\"Service\":\"ec2.amazonaws.com\"},\"Effect\":\"Allow\"}],\n\"Version\":\"2012-10-17\"}")}), true},
		{"trust policy as JSON text", base, cloud(module.Record{"assume_role_policy_document": ec2Trust}), true},
		{"inline policy with other key order and 3600.0", base, cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, reordered)}}), true},
		{"max session 3600 and 3600.0", base, cloud(module.Record{"max_session_duration": json.Number("3600.0")}), true},
		{"max session NULL and 3600", cloud(module.Record{"max_session_duration": nil}), base, true},
		{"inline policies NULL and none", cloud(module.Record{"inline_policies": nil}), cloud(module.Record{"inline_policies": map[string]any{}}), true},

		{"other name", base, cloud(module.Record{"role_name": "Eq"}), false},
		{"other description", base, cloud(module.Record{"description": "e"}), false},
		{"description and none", base, cloud(module.Record{"description": nil}), false},
		{"other max session", base, cloud(module.Record{"max_session_duration": json.Number("3601")}), false},
		{"one more attached ARN", base, cloud(module.Record{"attached_policy_arns": []any{readOnly, ecsExec, s3Read}}), false},
		{"one attached ARN less", base, cloud(module.Record{"attached_policy_arns": []any{readOnly}}), false},
		{"other trust principal", base, cloud(module.Record{"assume_role_policy_document": doc(t, lambdaTrust)}), false},
		{"a string for a list of one", base, cloud(module.Record{"assume_role_policy_document": doc(t, strings.Replace(ec2Trust, `"sts:AssumeRole"`, `["sts:AssumeRole"]`, 1))}), false},
		{"a number for a string", base, cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, strings.Replace(readLogs, "3600", `"3600"`, 1))}}), false},
		{"an empty string for null", cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, `{"Sid": ""}`)}}), cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, `{"Sid": null}`)}}), false},
		{"other inline policy number", base, cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, strings.Replace(readLogs, "3600", "3601", 1))}}), false},
		{"inline policy renamed", base, cloud(module.Record{"inline_policies": map[string]any{"q": doc(t, readLogs)}}), false},
		{"inline policy added", base, cloud(module.Record{"inline_policies": map[string]any{"p": doc(t, readLogs), "q": doc(t, readLogs)}}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Equaler.Equal(tc.db, tc.cloud); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
			if got := m.Equaler.Equal(tc.cloud, tc.db); got != tc.equal {
				t.Errorf("Equal (swapped) = %v, want %v", got, tc.equal)
			}
		})
	}
}

// TestRoleDocumentText: a document the cloud returns is the text given,
// URL-encoded; the mapper decodes it, also when a server does not encode.
func TestRoleDocumentText(t *testing.T) {
	c := newCloud(t)
	ctx := t.Context()
	text := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"arn:aws:iam::123456789012:root"},"Action":"sts:AssumeRole","Condition":{"StringEquals":{"sts:ExternalId":"a+b c&d=é"}}}]}`
	if _, err := c.iam.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("ext"), AssumeRolePolicyDocument: aws.String(text)}); err != nil {
		t.Fatal(err)
	}
	raw, err := c.iam.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String("ext")})
	if err != nil {
		t.Fatal(err)
	}
	if dec, _ := url.QueryUnescape(aws.ToString(raw.Role.AssumeRolePolicyDocument)); dec != text {
		t.Fatalf("the emulator returned %q", aws.ToString(raw.Role.AssumeRolePolicyDocument))
	}
	r := c.read(t)["ext"]
	if !c.role.Equaler.Equal(row(t, "ext", module.Record{"assume_role_policy_document": doc(t, text)}), r) {
		t.Errorf("read %v", r["assume_role_policy_document"])
	}
}
