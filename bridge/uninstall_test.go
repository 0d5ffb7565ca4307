package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// TestUninstallAccountThenS3: uninstalling aws_account leaves nothing of
// it behind (its functions went with aws_regions), so aws_s3 installs
// afterwards and its buckets take us-east-1, S3's region without a
// location constraint; installed again, aws_account's default region is
// the buckets' default again. An uninstall that would leave another
// module's column defaults dangling is refused, naming the module.
func TestUninstallAccountThenS3(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_s3.Module(), aws_vpc.Module()},
		Install: []string{"aws_account"},
	})
	e.Exec(`SELECT * FROM iasql_uninstall('aws_account')`)
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = 'public'::regnamespace
		AND proname IN ('default_aws_region', 'aws_region_require', 'aws_region_check', 'aws_regions_single_default', 'aws_tags_check')`); n != 0 {
		t.Errorf("%d of aws_account's functions left after its uninstall", n)
	}
	e.Exec(`SELECT * FROM iasql_install('aws_s3')`)
	if r := e.String(`INSERT INTO bucket (name) VALUES ('after-account') RETURNING region`); r != "us-east-1" {
		t.Errorf("a bucket's region without aws_account: %q, want us-east-1", r)
	}
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'after-account' AND created_at IS NOT NULL`); n != 1 {
		t.Error("the bucket was not created")
	}

	e.Exec(`SELECT * FROM iasql_install('aws_account')`)
	want := e.String(`SELECT public.default_aws_region()`)
	if r := e.String(`INSERT INTO bucket (name) VALUES ('with-account') RETURNING region`); r != want {
		t.Errorf("a bucket's region with aws_account installed again: %q, want its default region %q", r, want)
	}

	// aws_vpc's region columns default to default_aws_region(): aws_account
	// cannot go while aws_vpc is installed.
	e.Exec(`SELECT * FROM iasql_install('aws_vpc')`)
	_, err := e.DB.Exec(context.Background(), `SELECT * FROM iasql_uninstall('aws_account')`)
	if err == nil || !strings.Contains(err.Error(), "cannot uninstall aws_account: the installed module aws_vpc depends on it; uninstall aws_vpc first (or both together)") {
		t.Errorf("uninstall of aws_account under aws_vpc: %v, want it refused naming aws_vpc", err)
	}
	if r := e.String(`INSERT INTO vpc (cidr_block) VALUES ('10.3.0.0/16') RETURNING region`); r != want {
		t.Errorf("a VPC's region after the refused uninstall: %q, want %q", r, want)
	}
	e.Exec(`SELECT * FROM iasql_uninstall('aws_account', 'aws_vpc')`)
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_proc WHERE pronamespace = 'public'::regnamespace AND proname IN ('default_aws_region', 'subnet_cidr_check')`); n != 0 {
		t.Errorf("%d functions of aws_account and aws_vpc left after uninstalling both", n)
	}
	if r := e.String(`INSERT INTO bucket (name) VALUES ('after-both') RETURNING region`); r != "us-east-1" {
		t.Errorf("a bucket's region after both went: %q, want us-east-1", r)
	}
}
