package bridge_test

import (
	"testing"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// TestModuleUpgrade: a sidecar offering a module at a newer version than
// the database has applies the module's upgrades when it starts, in
// order, keeping the rows; the table is then as a fresh install of the
// new version declares it, and cycles work on it.
func TestModuleUpgrade(t *testing.T) {
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module()},
		Install: []string{"aws_vpc"},
	})
	e.Exec(`INSERT INTO vpc (cidr_block, region) VALUES ('10.7.0.0/16', 'us-east-1')`)
	e.Commit()
	vpcID := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.7.0.0/16'`)

	next := aws_vpc.Module()
	from := next.Version
	next.Version = "99.2.0" // versions no release has
	next.Upgrades = append(next.Upgrades,
		module.Upgrade{From: from, To: "99.1.0", SQL: `ALTER TABLE public.vpc ADD COLUMN owner text;
COMMENT ON COLUMN public.vpc.owner IS 'Who looks after the VPC (the database''s own).';`},
		module.Upgrade{From: "99.1.0", To: "99.2.0", SQL: `UPDATE public.vpc SET owner = 'platform' WHERE NOT is_default;`})
	vpc := next.Tables[0]
	vpc.Columns = append(vpc.Columns, module.Column{Name: "owner", Type: "text", Kind: module.Initial,
		Comment: "Who looks after the VPC (the database's own)."})
	next.Tables = []module.Table{vpc.Declare(), next.Tables[1]}
	e.Upgrade([]module.Module{aws_account.Module(), next})

	if v := e.String(`SELECT installed_version FROM iasql_modules WHERE name = 'aws_vpc'`); v != "99.2.0" {
		t.Errorf("installed_version %q after the upgrade, want 99.2.0", v)
	}
	if o := e.String(`SELECT owner FROM vpc WHERE vpc_id = $1`, vpcID); o != "platform" {
		t.Errorf("owner %q: the second step did not run after the first", o)
	}
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_description d JOIN pg_catalog.pg_attribute a
		ON d.objoid = a.attrelid AND d.objsubid = a.attnum WHERE a.attrelid = 'public.vpc'::regclass AND a.attname = 'owner'`); n != 1 {
		t.Error("the upgraded column has no comment")
	}
	// The engine works on the upgraded table: a change made now is enacted.
	e.Exec(`UPDATE vpc SET tags = '{"team": "web"}' WHERE vpc_id = '` + vpcID + `'`)
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after a commit on the upgraded table", n)
	}
	if n := e.Count(`SELECT count(*) FROM vpc WHERE vpc_id = $1 AND tags = '{"team": "web"}'`, vpcID); n != 1 {
		t.Error("the tag change was lost")
	}

	// A sidecar at the same version again changes nothing.
	e.Upgrade([]module.Module{aws_account.Module(), next})
	if v := e.String(`SELECT installed_version FROM iasql_modules WHERE name = 'aws_vpc'`); v != "99.2.0" {
		t.Errorf("installed_version %q after a restart, want 99.2.0", v)
	}
}
