package aws_ecr_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ecr"
	"github.com/iasql/iasql/modules/module"
)

// TestRepositoryEndToEnd: repositories created, changed and deleted in
// the database reach ECR in their regions; repositories created, changed
// and deleted in ECR reach the database; unchanged ones cost no writes.
func TestRepositoryEndToEnd(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_ecr.Module()},
		Install: []string{"aws_ecr"},
	})
	ctx := context.Background()
	client := func(region string) *ecr.Client {
		return ecr.NewFromConfig(e.AWS, func(o *ecr.Options) { o.Region = region })
	}
	describe := func(region, name string) (types.Repository, bool) {
		t.Helper()
		out, err := client(region).DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{name}})
		if err != nil {
			return types.Repository{}, false
		}
		return out.Repositories[0], true
	}

	// Database -> cloud: create, in the default region and in another.
	e.Exec(`INSERT INTO repository (repository_name) VALUES ('web')`,
		`INSERT INTO repository (repository_name, region, image_tag_mutability, scan_on_push) VALUES ('team/api', 'eu-west-1', 'IMMUTABLE', true)`)
	e.Commit()
	web, ok := describe("us-east-1", "web")
	if !ok || web.ImageTagMutability != types.ImageTagMutabilityMutable || web.ImageScanningConfiguration.ScanOnPush {
		t.Fatalf("web in us-east-1: %v %+v", ok, web)
	}
	api, ok := describe("eu-west-1", "team/api")
	if !ok || api.ImageTagMutability != types.ImageTagMutabilityImmutable || !api.ImageScanningConfiguration.ScanOnPush {
		t.Fatalf("team/api in eu-west-1: %v %+v", ok, api)
	}
	if uri := e.String(`SELECT repository_uri FROM repository WHERE repository_name = 'team/api'`); uri != aws.ToString(api.RepositoryUri) {
		t.Errorf("row's repository_uri %q, ECR's %q", uri, aws.ToString(api.RepositoryUri))
	}
	if e.Count(`SELECT count(*) FROM repository WHERE repository_arn IS NOT NULL AND registry_id = '123456789012' AND created_at IS NOT NULL`) != 2 {
		t.Error("feedback was not written back")
	}
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over unchanged repositories made %v", m)
	}

	// Database -> cloud: update.
	e.Exec(`UPDATE repository SET image_tag_mutability = 'IMMUTABLE', scan_on_push = true WHERE repository_name = 'web'`)
	e.Emu.Reset()
	e.Commit()
	if web, _ = describe("us-east-1", "web"); web.ImageTagMutability != types.ImageTagMutabilityImmutable || !web.ImageScanningConfiguration.ScanOnPush {
		t.Errorf("web after the update: %+v", web)
	}
	if m := e.Mutations(); m["ecr:PutImageTagMutability"] != 1 || m["ecr:PutImageScanningConfiguration"] != 1 || len(m) != 2 {
		t.Errorf("the update made %v", m)
	}

	// Cloud -> database: a change, an import and a delete made in ECR.
	if _, err := client("eu-west-1").PutImageTagMutability(ctx, &ecr.PutImageTagMutabilityInput{RepositoryName: aws.String("team/api"), ImageTagMutability: types.ImageTagMutabilityMutable}); err != nil {
		t.Fatal(err)
	}
	if _, err := client("ap-southeast-2").CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("made-elsewhere"),
		ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: true}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if m := e.String(`SELECT image_tag_mutability FROM repository WHERE repository_name = 'team/api'`); m != "MUTABLE" {
		t.Errorf("team/api's row has %s after the change in ECR", m)
	}
	if n := e.Count(`SELECT count(*) FROM repository WHERE repository_name = 'made-elsewhere' AND region = 'ap-southeast-2' AND scan_on_push`); n != 1 {
		t.Error("the repository made in ECR was not imported")
	}
	if _, err := client("ap-southeast-2").DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String("made-elsewhere")}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if n := e.Count(`SELECT count(*) FROM repository WHERE repository_name = 'made-elsewhere'`); n != 0 {
		t.Error("the repository deleted in ECR is still a row")
	}

	// Database -> cloud: moving a repository to another region replaces it.
	e.Exec(`UPDATE repository SET region = 'us-east-2' WHERE repository_name = 'web'`)
	e.Commit()
	if _, ok := describe("us-east-1", "web"); ok {
		t.Error("web is still in us-east-1")
	}
	if web, ok = describe("us-east-2", "web"); !ok || web.ImageTagMutability != types.ImageTagMutabilityImmutable {
		t.Errorf("web in us-east-2: %v %+v", ok, web)
	}

	// Database -> cloud: delete.
	e.Exec(`DELETE FROM repository`)
	e.Commit()
	for _, r := range [][2]string{{"us-east-2", "web"}, {"eu-west-1", "team/api"}} {
		if _, ok := describe(r[0], r[1]); ok {
			t.Errorf("%s is still in %s", r[1], r[0])
		}
	}
}
