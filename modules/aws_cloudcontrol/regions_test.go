package aws_cloudcontrol_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// TestRegions: with aws_account installed and two regions enabled, a
// Cloud Control table holds the resources of both, each row with its
// region: a row in eu-west-1 is created there (and not in the default
// region), resources made elsewhere in either region are imported with
// their region (one name in two regions is two rows), one in a region not
// enabled is not; a region whose reads fail leaves the others read and its
// rows kept (unverified), until it reads again.
func TestRegions(t *testing.T) {
	t.Parallel()
	const lg = "AWS::Logs::LogGroup"
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module()},
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"aws_account", lg},
	})
	e.Commit() // aws_regions fills
	e.Exec(`UPDATE aws_regions SET is_enabled = (region IN ('us-east-1', 'eu-west-1'))`)
	e.Commit()
	in := func(region string) *cc {
		cfg := e.AWS.Copy()
		cfg.Region = region
		return &cc{t: t, client: cloudcontrol.NewFromConfig(cfg)}
	}
	us, eu, ap := in("us-east-1"), in("eu-west-1"), in("ap-southeast-2")
	rows := func() string {
		return e.String(`SELECT coalesce(string_agg(log_group_name || '@' || region, ' ' ORDER BY log_group_name, region), '') FROM aws_logs_log_group`)
	}

	// Database -> cloud: each row in its region, the default region's
	// when it names none.
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name, region) VALUES ('eu-app', 'eu-west-1')`,
		`INSERT INTO aws_logs_log_group (log_group_name) VALUES ('us-app')`)
	e.Commit()
	if eu.get(lg, "eu-app") == nil || us.get(lg, "eu-app") != nil {
		t.Errorf("eu-app in eu-west-1: %v, in us-east-1: %v; want it in eu-west-1 only", eu.get(lg, "eu-app"), us.get(lg, "eu-app"))
	}
	if us.get(lg, "us-app") == nil || eu.get(lg, "us-app") != nil {
		t.Error("us-app is not in the default region us-east-1 only")
	}
	if got := rows(); got != "eu-app@eu-west-1 us-app@us-east-1" {
		t.Errorf("rows %q", got)
	}

	// Cloud -> database: made elsewhere in each enabled region (one name
	// in both), and in a region not enabled.
	eu.create(lg, `{"LogGroupName": "made-eu"}`)
	us.create(lg, `{"LogGroupName": "made-eu"}`)
	us.create(lg, `{"LogGroupName": "made-us"}`)
	ap.create(lg, `{"LogGroupName": "made-ap"}`)
	e.Refresh()
	if got, want := rows(), "eu-app@eu-west-1 made-eu@eu-west-1 made-eu@us-east-1 made-us@us-east-1 us-app@us-east-1"; got != want {
		t.Errorf("rows after a refresh %q, want %q", got, want)
	}

	// eu-west-1's reads fail: what changed there meanwhile is not taken
	// (its rows are not deleted), us-east-1 is read as ever.
	eu.delete(lg, "made-eu")
	us.create(lg, `{"LogGroupName": "late-us"}`)
	e.Emu.Inject(emulator.Fault{Op: "cloudcontrolapi:*", Region: "eu-west-1", Kind: emulator.Denied})
	_, err := e.DB.Exec(context.Background(), `CALL iasql_refresh()`)
	t.Logf("refresh during the outage: %v", err)
	if got, want := rows(), "eu-app@eu-west-1 late-us@us-east-1 made-eu@eu-west-1 made-eu@us-east-1 made-us@us-east-1 us-app@us-east-1"; got != want {
		t.Errorf("rows after a refresh with eu-west-1 failing %q, want %q", got, want)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE state = 'unverified' AND region = 'eu-west-1' AND table_name = 'aws_logs_log_group'`); n != 1 {
		t.Errorf("%d unverified parts of aws_logs_log_group in eu-west-1, want 1", n)
	}

	// The region reads again: the delete made there is taken.
	e.Emu.ClearFaults()
	e.Refresh()
	if got, want := rows(), "eu-app@eu-west-1 late-us@us-east-1 made-eu@us-east-1 made-us@us-east-1 us-app@us-east-1"; got != want {
		t.Errorf("rows after eu-west-1 recovered %q, want %q", got, want)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync at the end", n)
	}

	// A row's region is create-only: moving it replaces the resource.
	e.Exec(`UPDATE aws_logs_log_group SET region = 'eu-west-1' WHERE log_group_name = 'us-app'`)
	e.Commit()
	if eu.get(lg, "us-app") == nil || us.get(lg, "us-app") != nil {
		t.Error("us-app moved to eu-west-1 is not there only")
	}

	// A row in a region not enabled is refused in one line, and kept.
	msg := refusal(e, `INSERT INTO aws_logs_log_group (log_group_name, region) VALUES ('nowhere', 'ap-southeast-2')`)
	if !strings.Contains(msg, "ap-southeast-2") || !strings.Contains(msg, "aws_regions") {
		t.Errorf("a commit of a row in a region not enabled: %q; want it refused naming the region and aws_regions", msg)
	}
	if ap.get(lg, "nowhere") != nil || e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'nowhere'`) != 1 {
		t.Error("the row in a region not enabled was created, or lost")
	}
}

// refusal runs q and a commit, and returns the commit's error text.
func refusal(e *enginetest.Env, q string) string {
	e.Exec(q)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestRegionWithoutAccountAndUpgrade: without aws_account a row's region
// is the sidecar's (here eu-west-1), and its resource is made there; a
// table installed before tables had a region column (its version the
// schema's digest alone) gets the column at the next start, its rows the
// sidecar's region, and nothing in the cloud changes: no row is imported
// again, deleted or replaced.
func TestRegionWithoutAccountAndUpgrade(t *testing.T) {
	t.Parallel()
	const lg = "AWS::Logs::LogGroup"
	e := enginetest.New(t, srv, enginetest.Options{Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()}})
	e.Stop()
	e.AWS.Region = "eu-west-1"
	e.Upgrade(nil) // the sidecar of eu-west-1
	e.Exec(`SELECT * FROM iasql_install('` + lg + `')`)
	eu := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name) VALUES ('old')`)
	e.Commit()
	if got := e.String(`SELECT region FROM aws_logs_log_group WHERE log_group_name = 'old'`); got != "eu-west-1" || eu.get(lg, "old") == nil {
		t.Fatalf("a row without aws_account: region %q, in eu-west-1's cloud %v; want the sidecar's region", got, eu.get(lg, "old"))
	}
	version := e.String(`SELECT installed_version FROM iasql_modules WHERE name = $1`, lg)
	digest, ok := strings.CutSuffix(version, aws_cloudcontrol.RegionsVersion)
	if !ok {
		t.Fatalf("version %q does not end with %q", version, aws_cloudcontrol.RegionsVersion)
	}

	// The table as a sidecar before regions made it, with the engine's
	// state of its record.
	e.Stop()
	e.Exec(`BEGIN`, `SET LOCAL session_replication_role = replica`,
		`DROP TRIGGER aws_logs_log_group_0_defaults ON aws_logs_log_group`,
		`DROP FUNCTION aws_logs_log_group_defaults()`,
		`DROP FUNCTION aws_logs_log_group_region()`,
		`ALTER TABLE aws_logs_log_group DROP CONSTRAINT aws_logs_log_group_identity`,
		`ALTER TABLE aws_logs_log_group DROP COLUMN region`,
		`ALTER TABLE aws_logs_log_group ADD CONSTRAINT aws_logs_log_group_identity UNIQUE (log_group_name)`,
		`UPDATE iasql_records SET cloud_id = cloud_id::jsonb->>0 WHERE table_name = 'aws_logs_log_group'`,
		`UPDATE iasql_modules SET version = '`+digest+`', installed_version = '`+digest+`' WHERE name = '`+lg+`'`,
		`COMMIT`)
	if got := e.String(`SELECT cloud_id FROM iasql_records WHERE table_name = 'aws_logs_log_group'`); got != "old" {
		t.Fatalf("setup: the record's cloud id %q", got)
	}

	e.Emu.Reset()
	e.Upgrade(nil)
	testkit.Until(t, 30*time.Second, "the type's module upgraded", func() bool {
		return e.String(`SELECT installed_version FROM iasql_modules WHERE name = $1`, lg) == version
	})
	if got := e.String(`SELECT cloud_id FROM iasql_records WHERE table_name = 'aws_logs_log_group'`); got != `["old","eu-west-1"]` {
		t.Errorf("the record's cloud id %q after the upgrade", got)
	}
	e.Refresh()
	if got := e.String(`SELECT string_agg(log_group_name || '@' || region, ' ') FROM aws_logs_log_group`); got != "old@eu-west-1" {
		t.Errorf("rows after the upgrade and a refresh: %q", got)
	}
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the upgraded table's first cycle changed the cloud: %v", m)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the upgrade", n)
	}
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name) VALUES ('new')`)
	e.Commit()
	if eu.get(lg, "new") == nil || e.String(`SELECT region FROM aws_logs_log_group WHERE log_group_name = 'new'`) != "eu-west-1" {
		t.Error("a row inserted after the upgrade is not in the sidecar's region")
	}

	// Uninstalled, the table leaves no function behind.
	e.Exec(`SELECT * FROM iasql_uninstall('` + lg + `')`)
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_proc WHERE proname IN ('aws_logs_log_group_region', 'aws_logs_log_group_defaults')`); n != 0 {
		t.Errorf("%d functions of the table left after the uninstall", n)
	}
}
