package aws_vpc_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// commitWarnings runs CALL iasql_commit() on a session of its own and
// returns its error and the WARNINGs it raised.
func commitWarnings(t *testing.T, dsn string) (error, []string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var warnings []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		if n.Severity == "WARNING" {
			mu.Lock()
			warnings = append(warnings, n.Message)
			mu.Unlock()
		}
	}
	ctx := context.Background()
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CALL iasql_commit()`)
	mu.Lock()
	defer mu.Unlock()
	return err, warnings
}

// lastCommit is the outcome and summary of the end record of the last
// cycle a commit ran (an automatic cycle may have run since).
func lastCommit(e *enginetest.Env) (outcome, summary string) {
	e.T.Helper()
	err := e.DB.QueryRow(context.Background(), `SELECT message::jsonb->>'outcome', message::jsonb->>'summary' FROM iasql_audit_log
		WHERE change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'commit' ORDER BY id DESC LIMIT 1`).Scan(&outcome, &summary)
	if err != nil {
		e.T.Fatalf("read the last commit's end record: %v", err)
	}
	return outcome, summary
}

// TestRegionNotEnabled: a region in aws_regions that the account has not
// enabled (an opt-in region enabled in the table, or a region the account
// does not list at all) is unverified: its reads fail with AuthFailure, and
// a commit still creates a bucket and a VPC in the default region, warns
// of the region, names it in the cycle's end record (which does not end
// failed) and, while the row enables it, in iasql_status.
func TestRegionNotEnabled(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		disabled []string // the emulator's account has not enabled these
		region   string
		setup    string
		stays    bool // the aws_regions row stays (the account lists the region)
	}{
		{"an opt-in region enabled in the table", []string{"eu-central-1"}, "eu-central-1",
			`UPDATE aws_regions SET is_enabled = true WHERE region = 'eu-central-1'`, true},
		{"a region the account does not list", nil, "ap-east-1",
			`INSERT INTO aws_regions (region) VALUES ('ap-east-1')`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := enginetest.New(t, srv, enginetest.Options{
				Modules:  []module.Module{aws_account.Module(), aws_s3.Module(), aws_vpc.Module()},
				Install:  []string{"aws_s3", "aws_vpc"},
				Emulator: emulator.Options{DisabledRegions: tc.disabled},
			})
			if tc.stays {
				// Imported, but not enabled: not in the scope of cycles.
				if n := e.Count(`SELECT count(*) FROM aws_regions WHERE region = $1 AND NOT is_enabled AND NOT is_default`, tc.region); n != 1 {
					t.Fatalf("%s imported %d time(s) as a disabled region, want once", tc.region, n)
				}
			}
			// In an iasql transaction: no automatic cycle runs before the commit.
			e.Exec(`CALL iasql_begin()`, tc.setup,
				`INSERT INTO bucket (name) VALUES ('kept-working')`,
				`INSERT INTO vpc (cidr_block) VALUES ('10.42.0.0/16')`)
			err, warnings := commitWarnings(t, e.DSN)
			if err != nil {
				t.Fatalf("commit with %s unverified failed: %v", tc.region, err)
			}
			var warned bool
			for _, w := range warnings {
				warned = warned || strings.Contains(w, "vpc in "+tc.region) && strings.Contains(w, "AuthFailure")
			}
			if !warned {
				t.Errorf("the commit did not warn of vpc in %s (AuthFailure); warnings: %q", tc.region, warnings)
			}

			// The rest was done: the bucket and the VPC in us-east-1.
			if _, err := s3.NewFromConfig(e.AWS, testkit.PathStyle).
				HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String("kept-working")}); err != nil {
				t.Errorf("the bucket was not created: %v", err)
			}
			vpc := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.42.0.0/16' AND region = 'us-east-1'`)
			out, err := ec2.NewFromConfig(e.AWS).DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{VpcIds: []string{vpc}})
			if vpc == "" || err != nil || len(out.Vpcs) != 1 {
				t.Errorf("the VPC was not created (row's vpc_id %q): %v", vpc, err)
			}

			// The commit acts on VPCs (it reads them whole: the cloud makes
			// their ids) and not on subnets, which it leaves as last read.
			outcome, summary := lastCommit(e)
			if outcome != "done" || !strings.Contains(summary, "vpc in "+tc.region) {
				t.Errorf("end record: outcome %s, summary %q; want done, naming vpc in %s", outcome, summary, tc.region)
			}
			status := `SELECT count(*) FROM iasql_status WHERE state = 'unverified' AND region = $1 AND last_error LIKE '%AuthFailure%'`
			// (An automatic cycle after the commit may have read subnets too.)
			if n, want := e.Count(status+` AND table_name = 'vpc'`, tc.region), map[bool]int{true: 1, false: 0}[tc.stays]; n != want {
				t.Errorf("iasql_status: %d unverified vpc parts in %s, want %d (while the row enables it)", n, tc.region, want)
			}
			if n, want := e.Count(`SELECT count(*) FROM aws_regions WHERE region = $1`, tc.region), map[bool]int{true: 1, false: 0}[tc.stays]; n != want {
				t.Errorf("%d aws_regions rows for %s, want %d", n, tc.region, want)
			}
			if !tc.stays {
				return
			}

			// It stays unverified, and commits keep working.
			e.Exec(`CALL iasql_begin()`, `UPDATE bucket SET versioning = true WHERE name = 'kept-working'`)
			if err, _ := commitWarnings(t, e.DSN); err != nil {
				t.Fatalf("second commit: %v", err)
			}
			// (An automatic cycle between the commits may have read subnets.)
			if n := e.Count(status+` AND table_name = 'vpc'`, tc.region); n != 1 {
				t.Errorf("after a second commit vpc is not unverified in %s", tc.region)
			}
			// Disabling the region in the table ends it.
			e.Exec(`CALL iasql_begin()`, `UPDATE aws_regions SET is_enabled = false WHERE region = '`+tc.region+`'`)
			err, warnings = commitWarnings(t, e.DSN)
			if err != nil || len(warnings) > 0 {
				t.Fatalf("commit with %s disabled: %v, warnings %q", tc.region, err, warnings)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status WHERE state = 'unverified'`); n != 0 {
				t.Errorf("%d unverified parts left once %s is disabled", n, tc.region)
			}
		})
	}
}

// TestRegionOutage: while every EC2 read in one region fails, nothing is
// done there: a row whose VPC was deleted meanwhile is not deleted, a VPC
// made meanwhile is not imported, a VPC the user added there is not
// created (the commit fails naming it, the region and the error), and
// nothing is changed in the cloud there; the other regions go on. Once the
// region answers again, everything is as it would have been.
func TestRegionOutage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		kind emulator.FaultKind
		code string // in the error
	}{
		{"denied", emulator.Denied, "AuthFailure"},
		{"server errors", emulator.ServerError, "InternalError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			const region = "us-west-2"
			west := e.AWS.Copy()
			west.Region = region
			westEC2 := ec2.NewFromConfig(west)
			e.Exec(`INSERT INTO vpc (cidr_block, region) VALUES ('10.1.0.0/16', '` + region + `')`)
			e.Commit()
			gone := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.1.0.0/16'`)
			subnets := `SELECT string_agg(subnet_id || ' ' || cidr_block, ',' ORDER BY subnet_id) FROM subnet WHERE region = '` + region + `'`
			westSubnets := e.String(subnets)
			if gone == "" || westSubnets == "" {
				t.Fatalf("setup: VPC %q, default subnets %q", gone, westSubnets)
			}
			// Made in the cloud by others: one VPC deleted, one created (in an
			// iasql transaction: no automatic cycle sees them before the outage).
			e.Exec(`CALL iasql_begin()`)
			if _, err := westEC2.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(gone)}); err != nil {
				t.Fatal(err)
			}
			made, err := westEC2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.2.0.0/16")})
			if err != nil {
				t.Fatal(err)
			}
			// Asked by the user: a VPC in the region and one elsewhere.
			e.Exec(`INSERT INTO vpc (cidr_block, region) VALUES ('10.3.0.0/16', '`+region+`')`,
				`INSERT INTO vpc (cidr_block, region) VALUES ('10.4.0.0/16', 'us-east-1')`)

			e.Emu.Inject(emulator.Fault{Op: "ec2:*", Region: region, Kind: tc.kind})
			e.Emu.Reset()
			_, err = e.DB.Exec(ctx, `CALL iasql_commit()`)
			if err == nil || !strings.Contains(err.Error(), "vpc") || !strings.Contains(err.Error(), region) || !strings.Contains(err.Error(), tc.code) {
				t.Errorf("commit during the outage: %v; want a failure of the VPC held in %s (%s)", err, region, tc.code)
			}
			if m := e.Mutations(); len(m) != 1 || m["ec2:CreateVpc"] != 1 {
				t.Errorf("cloud changes during the outage: %v, want the one VPC in us-east-1 created", m)
			}
			for _, c := range []struct{ what, q, want string }{
				{"the row of the VPC deleted meanwhile", `SELECT (SELECT vpc_id FROM vpc WHERE cidr_block = '10.1.0.0/16')`, gone},
				{"an import of the VPC made meanwhile", `SELECT (SELECT vpc_id FROM vpc WHERE cidr_block = '10.2.0.0/16')`, ""},
				{"the user's VPC in the region", `SELECT coalesce(vpc_id, 'not created') FROM vpc WHERE cidr_block = '10.3.0.0/16'`, "not created"},
				{"the default subnets of the region", subnets, westSubnets},
			} {
				if got := e.String(c.q); got != c.want {
					t.Errorf("%s: %q, want %q", c.what, got, c.want)
				}
			}
			if e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.4.0.0/16'`) == "" {
				t.Errorf("the VPC in us-east-1 was not created during the outage in %s", region)
			}
			if _, summary := lastCommit(e.Env); !strings.Contains(summary, "vpc in "+region) {
				t.Errorf("end record summary %q does not name vpc in %s", summary, region)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status WHERE state = 'unverified' AND region = $1 AND table_name = 'vpc'`, region); n != 1 {
				t.Errorf("iasql_status: %d unverified parts in %s, want vpc (the commit acts on VPCs only)", n, region)
			}

			// The region recovers: the next commit does what was left.
			e.Emu.ClearFaults()
			e.Commit()
			for _, c := range []struct{ what, q, want string }{
				{"the row of the VPC deleted in the cloud", `SELECT count(*)::text FROM vpc WHERE cidr_block = '10.1.0.0/16'`, "0"},
				{"the VPC made in the cloud", `SELECT (SELECT vpc_id FROM vpc WHERE cidr_block = '10.2.0.0/16')`, aws.ToString(made.Vpc.VpcId)},
				{"the default subnets of the region", subnets, westSubnets},
				{"unverified parts", `SELECT count(*)::text FROM iasql_status WHERE state = 'unverified'`, "0"},
			} {
				if got := e.String(c.q); got != c.want {
					t.Errorf("after recovery, %s: %q, want %q", c.what, got, c.want)
				}
			}
			created := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.3.0.0/16'`)
			if out, err := westEC2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{created}}); created == "" || err != nil || len(out.Vpcs) != 1 {
				t.Errorf("after recovery the user's VPC in %s was not created (%q): %v", region, created, err)
			}
			if outcome, _ := lastCommit(e.Env); outcome != "done" {
				t.Errorf("the cycle after recovery ended %s", outcome)
			}
		})
	}
}
