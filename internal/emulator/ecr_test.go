package emulator_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/internal/emulator"
)

func mkRepo(t *testing.T, c *ecr.Client, name string) {
	t.Helper()
	if _, err := c.CreateRepository(t.Context(), &ecr.CreateRepositoryInput{RepositoryName: aws.String(name)}); err != nil {
		t.Fatalf("create repository %s: %v", name, err)
	}
}

func TestECRRepositoryLifecycle(t *testing.T) {
	_, client, _ := sdkEnv(t, ecr.NewFromConfig)
	ctx := t.Context()
	c := client("eu-west-1")
	out, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{
		RepositoryName:             aws.String("team/app.web"),
		ImageTagMutability:         types.ImageTagMutabilityImmutable,
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: true},
		Tags:                       []types.Tag{{Key: aws.String("team"), Value: aws.String("web")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Repository
	checks := map[string][2]string{
		"repositoryArn":  {aws.ToString(r.RepositoryArn), "arn:aws:ecr:eu-west-1:123456789012:repository/team/app.web"},
		"registryId":     {aws.ToString(r.RegistryId), "123456789012"},
		"repositoryUri":  {aws.ToString(r.RepositoryUri), "123456789012.dkr.ecr.eu-west-1.amazonaws.com/team/app.web"},
		"repositoryName": {aws.ToString(r.RepositoryName), "team/app.web"},
		"mutability":     {string(r.ImageTagMutability), "IMMUTABLE"},
		"encryption":     {string(r.EncryptionConfiguration.EncryptionType), "AES256"},
	}
	for what, v := range checks {
		if v[0] != v[1] {
			t.Errorf("%s %q, want %q", what, v[0], v[1])
		}
	}
	if r.CreatedAt == nil || time.Since(*r.CreatedAt) > time.Minute || time.Until(*r.CreatedAt) > time.Second {
		t.Errorf("createdAt %v", r.CreatedAt)
	}
	if !r.ImageScanningConfiguration.ScanOnPush {
		t.Error("scanOnPush was not kept")
	}

	// Regional: another region does not see it.
	if other, err := client("us-east-1").DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{}); err != nil || len(other.Repositories) != 0 {
		t.Errorf("us-east-1 lists %v (%v)", other, err)
	}
	if _, err := client("us-east-1").DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"team/app.web"}}); errCode(err) != "RepositoryNotFoundException" {
		t.Errorf("us-east-1 describes the eu-west-1 repository: %v", err)
	}

	mut, err := c.PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: aws.String("team/app.web"), ImageTagMutability: types.ImageTagMutabilityMutable})
	if err != nil || mut.ImageTagMutability != types.ImageTagMutabilityMutable || aws.ToString(mut.RegistryId) != "123456789012" {
		t.Fatalf("PutImageTagMutability %+v %v", mut, err)
	}
	scan, err := c.PutImageScanningConfiguration(ctx, &ecr.PutImageScanningConfigurationInput{RepositoryName: aws.String("team/app.web"),
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: false}})
	if err != nil || scan.ImageScanningConfiguration.ScanOnPush {
		t.Fatalf("PutImageScanningConfiguration %+v %v", scan, err)
	}
	desc, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"team/app.web"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(desc.Repositories) != 1 || desc.Repositories[0].ImageTagMutability != types.ImageTagMutabilityMutable ||
		desc.Repositories[0].ImageScanningConfiguration.ScanOnPush || !desc.Repositories[0].CreatedAt.Equal(*r.CreatedAt) {
		t.Errorf("described %+v", desc.Repositories)
	}

	// Tags.
	if _, err := c.TagResource(ctx, &ecr.TagResourceInput{ResourceArn: r.RepositoryArn, Tags: []types.Tag{{Key: aws.String("env"), Value: aws.String("prod")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.UntagResource(ctx, &ecr.UntagResourceInput{ResourceArn: r.RepositoryArn, TagKeys: []string{"team"}}); err != nil {
		t.Fatal(err)
	}
	tags, err := c.ListTagsForResource(ctx, &ecr.ListTagsForResourceInput{ResourceArn: r.RepositoryArn})
	if err != nil || len(tags.Tags) != 1 || aws.ToString(tags.Tags[0].Key) != "env" || aws.ToString(tags.Tags[0].Value) != "prod" {
		t.Errorf("tags %+v %v", tags, err)
	}

	del, err := c.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String("team/app.web")})
	if err != nil || aws.ToString(del.Repository.RepositoryName) != "team/app.web" {
		t.Fatalf("DeleteRepository %+v %v", del, err)
	}
	if _, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"team/app.web"}}); errCode(err) != "RepositoryNotFoundException" {
		t.Errorf("describe after delete: %v", err)
	}
}

func TestECRKMSEncryption(t *testing.T) {
	_, client, _ := sdkEnv(t, ecr.NewFromConfig)
	out, err := client("us-east-2").CreateRepository(t.Context(), &ecr.CreateRepositoryInput{RepositoryName: aws.String("sealed"),
		EncryptionConfiguration: &types.EncryptionConfiguration{EncryptionType: types.EncryptionTypeKms}})
	if err != nil {
		t.Fatal(err)
	}
	if e := out.Repository.EncryptionConfiguration; e.EncryptionType != types.EncryptionTypeKms || !strings.HasPrefix(aws.ToString(e.KmsKey), "arn:aws:kms:us-east-2:") {
		t.Errorf("encryption %+v", e)
	}
}

func TestECRErrors(t *testing.T) {
	_, client, _ := sdkEnv(t, ecr.NewFromConfig)
	ctx := t.Context()
	c := client("us-east-1")
	mkRepo(t, c, "exists")
	s := aws.String
	cases := []errCase{
		{"duplicate", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("exists")})
			return err
		},
			"RepositoryAlreadyExistsException"},
		{"uppercase name", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("App")})
			return err
		},
			"InvalidParameterException"},
		{"one character", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("a")})
			return err
		},
			"InvalidParameterException"},
		{"257 characters", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s(strings.Repeat("a", 257))})
			return err
		}, "InvalidParameterException"},
		{"double separator", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("a--b")})
			return err
		},
			"InvalidParameterException"},
		{"trailing slash", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("team/")})
			return err
		},
			"InvalidParameterException"},
		{"leading separator", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("_app")})
			return err
		},
			"InvalidParameterException"},
		{"bad mutability", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("m"), ImageTagMutability: "SOMETIMES"})
			return err
		}, "InvalidParameterException"},
		{"describe missing", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"exists", "missing"}})
			return err
		}, "RepositoryNotFoundException"},
		{"describe missing alone", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"missing"}})
			return err
		}, "RepositoryNotFoundException"},
		{"describe names with maxResults", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{"exists"}, MaxResults: aws.Int32(10)})
			return err
		}, "InvalidParameterException"},
		{"describe more than 100 names", func() error {
			names := make([]string, 101)
			for i := range names {
				names[i] = fmt.Sprintf("n%03d", i)
			}
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: names})
			return err
		}, "InvalidParameterException"},
		{"maxResults 0", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{MaxResults: aws.Int32(0)})
			return err
		}, "InvalidParameterException"},
		{"maxResults 1001", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{MaxResults: aws.Int32(1001)})
			return err
		}, "InvalidParameterException"},
		{"forged nextToken", func() error {
			_, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{NextToken: s("forged")})
			return err
		}, "InvalidParameterException"},
		{"delete missing", func() error {
			_, err := c.DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: s("missing"), Force: true})
			return err
		}, "RepositoryNotFoundException"},
		{"mutability of missing", func() error {
			_, err := c.PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: s("missing"), ImageTagMutability: types.ImageTagMutabilityMutable})
			return err
		}, "RepositoryNotFoundException"},
		{"scanning of missing", func() error {
			_, err := c.PutImageScanningConfiguration(ctx, &ecr.PutImageScanningConfigurationInput{RepositoryName: s("missing"),
				ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: true}})
			return err
		}, "RepositoryNotFoundException"},
		{"tag a malformed ARN", func() error {
			_, err := c.TagResource(ctx, &ecr.TagResourceInput{ResourceArn: s("exists"), Tags: []types.Tag{{Key: s("k"), Value: s("v")}}})
			return err
		}, "InvalidParameterException"},
		{"another registry", func() error {
			_, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s("elsewhere"), RegistryId: s("999999999999")})
			return err
		}, "InvalidParameterException"},
	}
	wantCodes(t, cases)
	out, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{})
	if err != nil || len(out.Repositories) != 1 {
		t.Errorf("repositories after failures: %v %v", out, err)
	}
	// Valid names at the edges of the rules.
	for _, n := range []string{"ab", strings.Repeat("a", 256), "a.b_c-d/e/f0", "0/1"} {
		if _, err := c.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: s(n)}); err != nil {
			t.Errorf("create %q: %v", n, err)
		}
	}
}

func TestECRPagination(t *testing.T) {
	_, client, _ := sdkEnv(t, ecr.NewFromConfig)
	ctx := t.Context()
	c := client("ap-southeast-2")
	const n = 17
	for i := range n {
		mkRepo(t, c, fmt.Sprintf("repo-%02d", i))
	}
	var names []string
	p := ecr.NewDescribeRepositoriesPaginator(c, &ecr.DescribeRepositoriesInput{MaxResults: aws.Int32(4)})
	all := pages(t, p.HasMorePages, p.NextPage)
	for _, page := range all {
		for _, r := range page.Repositories {
			names = append(names, aws.ToString(r.RepositoryName))
		}
	}
	if len(all) != 5 || len(names) != n || len(slices.Compact(slices.Sorted(slices.Values(names)))) != n {
		t.Errorf("%d pages with %v: want each of %d repositories once", len(all), names, n)
	}
	// Without maxResults, pages hold 100.
	for i := n; i < 150; i++ {
		mkRepo(t, c, fmt.Sprintf("repo-%03d", i))
	}
	first, err := c.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{})
	if err != nil || len(first.Repositories) != 100 || first.NextToken == nil {
		t.Errorf("default page: %d repositories, next %v, %v", len(first.Repositories), first.NextToken, err)
	}
}

func TestECRThrottle(t *testing.T) {
	em, client, _ := sdkEnv(t, ecr.NewFromConfig)
	c := client("us-east-1")
	em.Inject(emulator.Fault{Op: "ecr:CreateRepository", Kind: emulator.Throttle, Times: 1})
	_, err := c.CreateRepository(t.Context(), &ecr.CreateRepositoryInput{RepositoryName: aws.String("t1")})
	if errCode(err) != "ThrottlingException" {
		t.Fatalf("throttled CreateRepository: %v", err)
	}
	mkRepo(t, c, "t1")
	if got := em.Calls()["ecr:CreateRepository"]; got != 2 {
		t.Errorf("ecr:CreateRepository counted %d times, want 2", got)
	}
}
