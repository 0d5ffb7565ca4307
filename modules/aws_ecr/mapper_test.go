package aws_ecr_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_ecr"
	"github.com/iasql/iasql/modules/module"
)

// cloud is an emulator with the module's mapper for it and out-of-band
// ECR clients.
type cloud struct {
	em   *emulator.Emulator
	ecr  func(region string) *ecr.Client // out of band, as another tool would use
	repo module.Parts
	call module.Call // in the tests' scope
}

// scope is the scope the tests' cycles run in.
var scope = module.Scope{Regions: []string{"us-east-1", "eu-west-1", "ap-southeast-2"}, Default: "us-east-1"}

func newCloud(t *testing.T) (*cloud, context.Context) {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{})
	cfg := cl.AWS
	cfg.RetryMaxAttempts = 1
	ms := testkit.Mappers(t, aws_ecr.Module(), cfg)
	return &cloud{em: cl.Emu, ecr: testkit.Clients(cl.AWS, ecr.NewFromConfig), repo: module.PartsOf(ms["repository"]), call: module.Call{Scope: scope}}, t.Context()
}

func (c *cloud) mkRepo(t *testing.T, region, name string) {
	t.Helper()
	if _, err := c.ecr(region).CreateRepository(t.Context(), &ecr.CreateRepositoryInput{RepositoryName: aws.String(name)}); err != nil {
		t.Fatalf("create repository %s in %s: %v", name, region, err)
	}
}

func (c *cloud) read(t *testing.T, call module.Call) map[string]module.Record {
	t.Helper()
	recs, err := c.repo.Read(t.Context(), call)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]module.Record{}
	for _, r := range recs {
		out[r.String("region")+"/"+r.String("repository_name")] = r
	}
	return out
}

func checkFeedback(t *testing.T, rec module.Record) {
	t.Helper()
	region, name := rec.String("region"), rec.String("repository_name")
	want := map[string]string{
		"repository_arn": "arn:aws:ecr:" + region + ":123456789012:repository/" + name,
		"repository_uri": "123456789012.dkr.ecr." + region + ".amazonaws.com/" + name,
		"registry_id":    "123456789012",
	}
	for col, w := range want {
		if got := rec.String(col); got != w {
			t.Errorf("%s %q, want %q", col, got, w)
		}
	}
	ts, err := time.Parse(time.RFC3339Nano, rec.String("created_at"))
	if err != nil || time.Since(ts) > time.Minute {
		t.Errorf("created_at %v (%v)", rec["created_at"], err)
	}
}

func TestRepositoryLifecycle(t *testing.T) {
	c, ctx := newCloud(t)
	want := module.Record{"repository_name": "team/web", "region": "eu-west-1", "image_tag_mutability": "IMMUTABLE", "scan_on_push": true}
	got, err := c.repo.Mapper.Create(ctx, c.call, want)
	if err != nil {
		t.Fatal(err)
	}
	checkFeedback(t, got)
	if !c.repo.Equaler.Equal(want, got) {
		t.Errorf("created %v, want %v", got, want)
	}
	read := c.read(t, c.call)
	if len(read) != 1 || !c.repo.Equaler.Equal(want, read["eu-west-1/team/web"]) || !module.Same(read["eu-west-1/team/web"]["created_at"], got["created_at"]) {
		t.Fatalf("read %v", read)
	}
	steps := []struct {
		name string
		set  module.Record
	}{
		{"image_tag_mutability", module.Record{"image_tag_mutability": "MUTABLE"}},
		{"scan_on_push", module.Record{"scan_on_push": false}},
		{"both", module.Record{"image_tag_mutability": "IMMUTABLE", "scan_on_push": true}},
	}
	have := got
	for _, s := range steps {
		next := maps.Clone(want)
		maps.Copy(next, s.set)
		if c.repo.Equaler.Equal(next, have) {
			t.Fatalf("%s: Equal before the update", s.name)
		}
		c.em.Reset()
		up, err := c.repo.Mapper.Update(ctx, c.call, next, have)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if !c.repo.Equaler.Equal(next, up) || !c.repo.Equaler.Equal(next, c.read(t, c.call)["eu-west-1/team/web"]) {
			t.Errorf("%s: updated to %v, want %v", s.name, up, next)
		}
		if up.String("created_at") != got.String("created_at") {
			t.Errorf("%s: the repository was replaced", s.name)
		}
		want, have = next, up
	}
	for col, v := range map[string]string{"repository_name": "team/api", "region": "us-east-1"} {
		moved := maps.Clone(want)
		moved[col] = v
		if _, err := c.repo.Mapper.Update(ctx, c.call, moved, have); !errors.Is(err, module.ErrReplace) {
			t.Errorf("change of %s: %v, want ErrReplace", col, err)
		}
	}
	if err := c.repo.Mapper.Delete(ctx, c.call, have); err != nil {
		t.Fatal(err)
	}
	if len(c.read(t, c.call)) != 0 {
		t.Error("the repository is still there")
	}
	if err := c.repo.Mapper.Delete(ctx, c.call, have); err != nil {
		t.Errorf("deleting a deleted repository: %v", err)
	}
}

// TestRepositoryUpdateCalls: an update makes only the calls its change
// needs, and reads the repository back once.
func TestRepositoryUpdateCalls(t *testing.T) {
	c, ctx := newCloud(t)
	have, err := c.repo.Mapper.Create(ctx, c.call, module.Record{"repository_name": "calls", "region": "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	c.em.Reset()
	want := maps.Clone(have)
	want["scan_on_push"] = true
	if _, err := c.repo.Mapper.Update(ctx, c.call, want, have); err != nil {
		t.Fatal(err)
	}
	if got, w := c.em.Calls(), map[string]int{"ecr:PutImageScanningConfiguration": 1, "ecr:DescribeRepositories": 1}; !maps.Equal(got, w) {
		t.Errorf("calls %v, want %v", got, w)
	}
}

// TestRepositoryCreateExisting: creating a repository that exists reads it
// back as it is.
func TestRepositoryCreateExisting(t *testing.T) {
	c, ctx := newCloud(t)
	_, err := c.ecr("ap-southeast-2").CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("there"),
		ImageTagMutability: types.ImageTagMutabilityImmutable})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.repo.Mapper.Create(ctx, c.call, module.Record{"repository_name": "there", "region": "ap-southeast-2"})
	if err != nil {
		t.Fatal(err)
	}
	checkFeedback(t, got)
	if got["image_tag_mutability"] != "IMMUTABLE" {
		t.Errorf("read back %v", got)
	}
}

func TestRepositoryErrors(t *testing.T) {
	c, ctx := newCloud(t)
	var te *module.TerminalError
	if _, err := c.repo.Mapper.Create(ctx, c.call, module.Record{"repository_name": "Bad_Name", "region": "us-east-1"}); !errors.As(err, &te) {
		t.Errorf("bad name: %v, want a terminal error", err)
	}
	c.em.Inject(emulator.Fault{Op: "ecr:DescribeRepositories", Kind: emulator.Throttle, Times: 1})
	if _, err := c.repo.Read(ctx, c.call); err == nil || errors.As(err, &te) {
		t.Errorf("throttled read: %v, want a retryable error", err)
	}
}

// TestRepositoryRegions: the read covers the scope's regions, each once,
// and no other; without a scope, the configuration's region; a row without
// a region goes to the default one.
func TestRepositoryRegions(t *testing.T) {
	c, _ := newCloud(t)
	for _, r := range []string{"us-east-1", "eu-west-1", "ap-southeast-2", "us-west-2"} {
		c.mkRepo(t, r, "app")
	}
	c.em.Reset()
	got := c.read(t, c.call)
	if len(got) != 3 || got["us-west-2/app"] != nil {
		t.Errorf("read %v, want app in the three regions of the scope", got)
	}
	if calls := c.em.Calls(); !maps.Equal(calls, map[string]int{"ecr:DescribeRepositories": 3}) {
		t.Errorf("calls %v", calls)
	}
	if got := c.read(t, module.Call{}); len(got) != 1 || got["us-east-1/app"] == nil {
		t.Errorf("read without a scope %v, want us-east-1 only", got)
	}
	rec, err := c.repo.Mapper.Create(t.Context(), module.Call{Scope: module.Scope{Regions: []string{"eu-west-1"}, Default: "eu-west-1"}},
		module.Record{"repository_name": "defaulted"})
	if err != nil {
		t.Fatal(err)
	}
	if rec["region"] != "eu-west-1" {
		t.Errorf("created in %v, want the default region", rec["region"])
	}
}

// TestRepositoryOutOfBand: changes made with the SDK are what Read returns.
func TestRepositoryOutOfBand(t *testing.T) {
	c, ctx := newCloud(t)
	c.mkRepo(t, "eu-west-1", "oob")
	if r := c.read(t, c.call)["eu-west-1/oob"]; r == nil || r["image_tag_mutability"] != "MUTABLE" || r["scan_on_push"] != false {
		t.Fatalf("read %v", r)
	}
	cl := c.ecr("eu-west-1")
	if _, err := cl.PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: aws.String("oob"), ImageTagMutability: types.ImageTagMutabilityImmutable}); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.PutImageScanningConfiguration(ctx, &ecr.PutImageScanningConfigurationInput{RepositoryName: aws.String("oob"),
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: true}}); err != nil {
		t.Fatal(err)
	}
	if r := c.read(t, c.call)["eu-west-1/oob"]; r["image_tag_mutability"] != "IMMUTABLE" || r["scan_on_push"] != true {
		t.Errorf("after changes outside iasql: %v", r)
	}
	if _, err := cl.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String("oob")}); err != nil {
		t.Fatal(err)
	}
	if len(c.read(t, c.call)) != 0 {
		t.Error("a repository deleted outside iasql is still read")
	}
}

// TestRepositoryReadMany: more repositories than one page, each once.
func TestRepositoryReadMany(t *testing.T) {
	c, _ := newCloud(t)
	const n = 1003
	for i := range n {
		c.mkRepo(t, "ap-southeast-2", fmt.Sprintf("r%04d", i))
	}
	c.em.Reset()
	got := c.read(t, c.call)
	if len(got) != n {
		t.Errorf("read %d repositories, want %d", len(got), n)
	}
	if calls := c.em.Calls()["ecr:DescribeRepositories"]; calls != 4 { // two pages in ap-southeast-2, one per other region
		t.Errorf("%d DescribeRepositories calls, want 4", calls)
	}
}

func TestRepositoryEqual(t *testing.T) {
	c, _ := newCloud(t)
	base := module.Record{"repository_name": "app", "region": "us-east-1", "image_tag_mutability": "MUTABLE", "scan_on_push": false,
		"repository_arn": "arn:aws:ecr:us-east-1:123456789012:repository/app"}
	with := func(set module.Record) module.Record {
		r := maps.Clone(base)
		maps.Copy(r, set)
		return r
	}
	cases := []struct {
		name      string
		db, cloud module.Record
		equal     bool
	}{
		{"same", base, with(nil), true},
		{"feedback differs", base, with(module.Record{"repository_arn": nil, "created_at": "2024-01-01T00:00:00Z"}), true},
		{"NULL mutability is MUTABLE", with(module.Record{"image_tag_mutability": nil}), base, true},
		{"NULL scan is off", with(module.Record{"scan_on_push": nil}), base, true},
		{"other name", base, with(module.Record{"repository_name": "app2"}), false},
		{"other region", base, with(module.Record{"region": "eu-west-1"}), false},
		{"immutable", base, with(module.Record{"image_tag_mutability": "IMMUTABLE"}), false},
		{"scan on push", base, with(module.Record{"scan_on_push": true}), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.repo.Equaler.Equal(tc.db, tc.cloud); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
			if got := c.repo.Equaler.Equal(tc.cloud, tc.db); got != tc.equal {
				t.Errorf("Equal (swapped) = %v, want %v", got, tc.equal)
			}
		})
	}
}
