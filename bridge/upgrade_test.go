package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
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

// released is m as its version 0.1.0 was: its SQL without the 0.2.0 step
// that the newer install appends (a step that only adds objects is also
// the install's), and its Filled columns NOT NULL with their default, as
// the tables were before the step that made them Filled.
func released(t *testing.T, m module.Module) module.Module {
	t.Helper()
	i := slices.IndexFunc(m.Upgrades, func(u module.Upgrade) bool { return u.From == "0.1.0" })
	if i < 0 || m.Upgrades[i].To != "0.2.0" || !strings.HasSuffix(m.SQL, "\n"+m.Upgrades[i].SQL) {
		t.Fatalf("%s: not a module whose step 0.1.0 -> 0.2.0 is also the end of its install", m.Name)
	}
	m.SQL = strings.TrimSuffix(m.SQL, "\n"+m.Upgrades[i].SQL)
	for _, tbl := range m.Tables {
		var cols []string
		for _, c := range tbl.Columns {
			if c.Filled() {
				m.SQL += fmt.Sprintf("\nALTER TABLE public.%s DROP CONSTRAINT %s_%s_not_null, ALTER COLUMN %s SET NOT NULL, ALTER COLUMN %s SET DEFAULT %s;",
					tbl.Name, tbl.Name, c.Name, c.Name, c.Name, c.Default)
				cols = append(cols, c.Name)
			}
		}
		if len(cols) > 0 {
			m.SQL += fmt.Sprintf("\nDROP TRIGGER %s_0_defaults ON public.%s;\nDROP FUNCTION public.%s_defaults();", tbl.Name, tbl.Name, tbl.Name)
		}
	}
	m.Version, m.Upgrades, m.Uninstall = "0.1.0", nil, ""
	return m
}

// TestModuleUpgradeChecks: a sidecar offering aws_account, aws_vpc,
// aws_security_group and aws_ec2 at 0.3.0 upgrades a database where they
// are installed at 0.1.0, a module after those it depends on (aws_vpc's
// step uses aws_account's aws_tags_check), whatever order it knows them in;
// the rows stay, the new checks refuse what AWS would, and cycles work.
func TestModuleUpgradeChecks(t *testing.T) {
	t.Parallel()
	now := []module.Module{aws_ec2.Module(), aws_security_group.Module(), aws_vpc.Module(), aws_account.Module()}
	var old []module.Module
	for _, m := range now {
		old = append(old, released(t, m))
	}
	log := &testkit.Log{}
	e := enginetest.New(t, srv, enginetest.Options{Modules: old, Install: []string{"aws_ec2"},
		Logger: slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	e.Exec(`INSERT INTO vpc (cidr_block, tags) VALUES ('10.7.0.0/16', '{"team": "web"}')`)
	e.Commit()
	e.Upgrade(now)
	// Each module's step ran once, on the first try: none failed for want
	// of what a module it depends on adds in its own step.
	if strings.Contains(log.String(), "engine cannot register modules") {
		t.Errorf("an upgrade failed before it worked:\n%s", log.String())
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name IN ('aws_account', 'aws_vpc', 'aws_security_group', 'aws_ec2') AND installed_version = '0.3.0'`); n != 4 {
		t.Fatalf("%d of 4 modules at 0.3.0 after the upgrade", n)
	}
	_, err := e.DB.Exec(context.Background(), `UPDATE vpc SET tags = '{"aws:team": "web"}' WHERE cidr_block = '10.7.0.0/16'`)
	pgtest.WantViolation(t, err, "vpc_tags_aws_limits")
	_, err = e.DB.Exec(context.Background(), `INSERT INTO subnet (vpc_id, cidr_block, availability_zone) SELECT id, '10.8.0.0/24', 'us-east-1a' FROM vpc WHERE cidr_block = '10.7.0.0/16'`)
	pgtest.WantViolation(t, err, "subnet_cidr_in_vpc")
	e.Exec(`UPDATE vpc SET tags = '{"team": "api"}' WHERE cidr_block = '10.7.0.0/16'`)
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after a commit on the upgraded tables", n)
	}
}
