package aws_ecr_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ecr"
	"github.com/iasql/iasql/modules/module"
)

// id is a repository's identity as the engine asks for it.
func id(region, name string) string {
	return module.CloudIDOf(aws_ecr.RepositoryTable(), module.Record{"region": region, "repository_name": name})
}

// TestRepositoryGet: Get returns, for the identities asked, exactly the
// records Read returns for those repositories (every column, in the same
// form), and nothing for a repository ECR does not have there, one in a
// region outside the scope (Read leaves it out) or an identity no record
// could have.
func TestRepositoryGet(t *testing.T) {
	c, ctx := newCloud(t)
	c.mkRepo(t, "us-east-1", "web")
	c.mkRepo(t, "us-east-1", "worker")
	if _, err := c.ecr("eu-west-1").CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("team/api"),
		ImageTagMutability: types.ImageTagMutabilityImmutable, ImageScanningConfiguration: &types.ImageScanningConfiguration{ScanOnPush: true}}); err != nil {
		t.Fatal(err)
	}
	c.mkRepo(t, "us-west-2", "far") // outside the scope
	read := c.read(t, c.call)
	cases := []struct {
		name string
		ids  []string
		want []string
	}{
		{"present", []string{id("us-east-1", "web"), id("eu-west-1", "team/api")}, []string{"eu-west-1/team/api", "us-east-1/web"}},
		{"absent", []string{id("us-east-1", "missing")}, nil},
		{"present and absent in one region", []string{id("us-east-1", "web"), id("us-east-1", "missing"), id("us-east-1", "worker")},
			[]string{"us-east-1/web", "us-east-1/worker"}},
		{"in another region than asked", []string{id("ap-southeast-2", "web"), id("us-east-1", "team/api")}, nil},
		{"outside the scope", []string{id("us-west-2", "far"), id("us-east-1", "web")}, []string{"us-east-1/web"}},
		{"not an identity", []string{"web", `["us-east-1"]`, `["us-east-1","web","x"]`, id("us-east-1", "")}, nil},
		{"none", nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := c.repo.Getter.Get(ctx, c.call, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			got := enginetest.CheckGot(t, c.repo.Equaler, recs, read, func(r module.Record) string {
				return r.String("region") + "/" + r.String("repository_name")
			})
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRepositoryGetCalls: Get asks for up to 100 names a call, and asks
// one by one only for the names of a call that failed for a missing one.
func TestRepositoryGetCalls(t *testing.T) {
	c, ctx := newCloud(t)
	var ids []string
	for i := range 150 {
		name := fmt.Sprintf("r%03d", i)
		c.mkRepo(t, "us-east-1", name)
		ids = append(ids, id("us-east-1", name))
	}
	c.mkRepo(t, "eu-west-1", "api")
	cases := []struct {
		name  string
		ids   []string
		found int
		calls int
	}{
		{"all present", append(slices.Clone(ids), id("eu-west-1", "api")), 151, 3},
		{"one missing", []string{ids[0], id("us-east-1", "missing"), ids[1]}, 2, 1 + 3},
		{"outside the scope only", []string{id("us-west-2", "api")}, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c.em.Reset()
			recs, err := c.repo.Getter.Get(ctx, c.call, tc.ids)
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != tc.found {
				t.Errorf("found %d repositories, want %d", len(recs), tc.found)
			}
			if got := c.em.Calls()["ecr:DescribeRepositories"]; got != tc.calls {
				t.Errorf("%d DescribeRepositories calls, want %d", got, tc.calls)
			}
		})
	}
}

// TestRepositoryCommitBesideMany: a commit that creates one repository
// makes as many DescribeRepositories calls beside 1,500 repositories (two
// pages to list) as beside 10: it asks for the one it acts on.
func TestRepositoryCommitBesideMany(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_ecr.Module()},
		Install: []string{"aws_ecr"},
	})
	ctx := context.Background()
	cl := ecr.NewFromConfig(e.AWS, func(o *ecr.Options) { o.Region = "us-east-1" })
	made := 0
	commitBeside := func(n int) int {
		t.Helper()
		for ; made < n; made++ {
			if _, err := cl.CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String(fmt.Sprintf("other-%04d", made))}); err != nil {
				t.Fatal(err)
			}
		}
		e.Refresh()
		if got := e.Count(`SELECT count(*) FROM repository WHERE repository_name LIKE 'other-%'`); got != n {
			t.Fatalf("%d repositories imported, want %d", got, n)
		}
		e.Exec(`CALL iasql_begin()`) // no automatic cycle in between
		e.Emu.Reset()
		name := fmt.Sprintf("app-%d", n)
		e.Exec(`INSERT INTO repository (repository_name, region) VALUES ('` + name + `', 'us-east-1')`)
		e.Commit()
		if _, err := cl.DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{RepositoryNames: []string{name}}); err != nil {
			t.Fatalf("%s was not created: %v", name, err)
		}
		if got := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'repository'`); got != 0 {
			t.Errorf("%d repositories not in sync after the commit", got)
		}
		return e.Emu.Calls()["ecr:DescribeRepositories"]
	}
	few, many := commitBeside(10), commitBeside(1500)
	if few != many || many > 4 {
		t.Errorf("the commit made %d DescribeRepositories calls beside 10 repositories, %d beside 1,500; want the same few", few, many)
	}
}
