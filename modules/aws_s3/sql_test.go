package aws_s3_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_s3"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installed returns a connection to a fresh database with the module
// installed.
func installed(t *testing.T) *pgx.Conn {
	return srv.Installed(t, []string{aws_s3.Module().InstallSQL()})
}

func TestSQLConstraints(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var region string
	var versioning bool
	err := conn.QueryRow(ctx, `INSERT INTO bucket (name) VALUES ('logs') RETURNING region, versioning`).Scan(&region, &versioning)
	if err != nil {
		t.Fatal(err)
	}
	if region != "us-east-1" || versioning {
		t.Errorf("defaults: region %q versioning %v", region, versioning)
	}
	cases := []struct {
		name, sql, constraint string
	}{
		{"uppercase", `INSERT INTO bucket (name) VALUES ('Logs')`, "bucket_name_s3_rules"},
		{"too short", `INSERT INTO bucket (name) VALUES ('ab')`, "bucket_name_s3_rules"},
		{"too long", `INSERT INTO bucket (name) VALUES (repeat('a', 64))`, "bucket_name_s3_rules"},
		{"underscore", `INSERT INTO bucket (name) VALUES ('my_bucket')`, "bucket_name_s3_rules"},
		{"starts with hyphen", `INSERT INTO bucket (name) VALUES ('-logs')`, "bucket_name_s3_rules"},
		{"ends with dot", `INSERT INTO bucket (name) VALUES ('logs.')`, "bucket_name_s3_rules"},
		{"adjacent dots", `INSERT INTO bucket (name) VALUES ('a..b')`, "bucket_name_no_adjacent_periods"},
		{"ip address", `INSERT INTO bucket (name) VALUES ('10.0.0.1')`, "bucket_name_not_an_ip_address"},
		{"prefix xn--", `INSERT INTO bucket (name) VALUES ('xn--logs')`, "bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo"},
		{"prefix sthree-", `INSERT INTO bucket (name) VALUES ('sthree-logs')`, "bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo"},
		{"prefix sthree-configurator", `INSERT INTO bucket (name) VALUES ('sthree-configurator')`, "bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo"},
		{"prefix amzn-s3-demo-", `INSERT INTO bucket (name) VALUES ('amzn-s3-demo-bucket')`, "bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo"},
		{"suffix -s3alias", `INSERT INTO bucket (name) VALUES ('logs-s3alias')`, "bucket_name_no_reserved_suffix"},
		{"suffix --ol-s3", `INSERT INTO bucket (name) VALUES ('logs--ol-s3')`, "bucket_name_no_reserved_suffix"},
		{"suffix .mrap", `INSERT INTO bucket (name) VALUES ('logs.mrap')`, "bucket_name_no_reserved_suffix"},
		{"suffix --x-s3", `INSERT INTO bucket (name) VALUES ('logs--use1-az4--x-s3')`, "bucket_name_no_reserved_suffix"},
		{"suffix --table-s3", `INSERT INTO bucket (name) VALUES ('logs--table-s3')`, "bucket_name_no_reserved_suffix"},
		{"suffix -an", `INSERT INTO bucket (name) VALUES ('logs-an')`, "bucket_name_an_suffix_only_account_regional"},
		{"update to a reserved suffix", `UPDATE bucket SET name = 'logs-s3alias' WHERE name = 'logs'`, "bucket_name_no_reserved_suffix"},
		{"duplicate name", `INSERT INTO bucket (name) VALUES ('logs')`, "bucket_name_unique"},
		{"bad region", `INSERT INTO bucket (name, region) VALUES ('elsewhere', 'Europe')`, "bucket_region_format"},
		{"empty key", `INSERT INTO bucket_object (bucket_id, key) SELECT id, '' FROM bucket`, "bucket_object_key_length"},
		{"long key", `INSERT INTO bucket_object (bucket_id, key) SELECT id, repeat('é', 513) FROM bucket`, "bucket_object_key_length"},
		{"missing bucket", `INSERT INTO bucket_object (bucket_id, key) VALUES (-1, 'k')`, "bucket_object_bucket_fk"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			pgtest.WantViolation(t, err, tc.constraint)
		})
	}
	for _, ok := range []string{
		`INSERT INTO bucket (name, region, versioning) VALUES ('my.logs-2024', 'ap-southeast-2', true)`,
		`INSERT INTO bucket (name, region) VALUES ('gov', 'us-gov-west-1')`,
		`INSERT INTO bucket (name) VALUES (repeat('a', 63))`,
		`INSERT INTO bucket (name) VALUES ('abc')`,
		`INSERT INTO bucket (name) VALUES ('1.2.3')`,                         // three numbers are not an IP address
		`INSERT INTO bucket (name) VALUES ('my-xn--logs')`,                   // reserved prefixes only at the start
		`INSERT INTO bucket (name) VALUES ('sthree')`,                        // sthree without the hyphen
		`INSERT INTO bucket (name) VALUES ('logs-s3alias-2')`,                // reserved suffixes only at the end
		`INSERT INTO bucket (name) VALUES ('logs-ol-s3')`,                    // one hyphen: not --ol-s3
		`INSERT INTO bucket (name) VALUES ('logs-mrap')`,                     // a hyphen: not .mrap
		`INSERT INTO bucket (name) VALUES ('logs-can')`,                      // ends with -can, not -an
		`INSERT INTO bucket (name) VALUES ('app-111122223333-us-west-2-an')`, // account regional namespace
		`INSERT INTO bucket_object (bucket_id, key) SELECT id, 'a/b c.txt' FROM bucket WHERE name = 'logs'`,
		`INSERT INTO bucket_object (bucket_id, key) SELECT id, repeat('k', 1024) FROM bucket WHERE name = 'logs'`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	_, err = conn.Exec(ctx, `INSERT INTO bucket_object (bucket_id, key) SELECT id, 'a/b c.txt' FROM bucket WHERE name = 'logs'`)
	pgtest.WantViolation(t, err, "bucket_object_key_unique")
	var objects int
	if _, err := conn.Exec(ctx, `DELETE FROM bucket WHERE name = 'logs'`); err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM bucket_object`).Scan(&objects); err != nil {
		t.Fatal(err)
	}
	if objects != 0 {
		t.Errorf("%d objects left after deleting their bucket", objects)
	}
}

// TestSQLComments: the bucket_object comment says that its rows create
// empty objects. That every object has a comment is TestModuleSQL's
// (modules/sql_test.go).
func TestSQLComments(t *testing.T) {
	conn := installed(t)
	var comment string
	if err := conn.QueryRow(t.Context(), `SELECT obj_description('public.bucket_object'::regclass, 'pg_class')`).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, "empty object") {
		t.Errorf("bucket_object comment does not say rows create empty objects: %q", comment)
	}
}

// TestSQLBucketRegion: with aws_account installed, bucket.region defaults
// to aws_regions' default region and a region not enabled there is refused
// when written; alone, aws_s3 defaults to us-east-1 (TestSQLConstraints).
func TestSQLBucketRegion(t *testing.T) {
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_s3.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('eu-west-1', true)`,
		`INSERT INTO aws_regions (region, is_enabled) VALUES ('us-east-1', true), ('af-south-1', false)`)
	ctx := t.Context()
	var region string
	if err := conn.QueryRow(ctx, `INSERT INTO bucket (name) VALUES ('logs') RETURNING region`).Scan(&region); err != nil || region != "eu-west-1" {
		t.Fatalf("bucket.region defaults to %q (%v), want the default region eu-west-1", region, err)
	}
	for _, tc := range []struct{ name, sql, constraint, hint string }{
		{"unknown region", `INSERT INTO bucket (name, region) VALUES ('far', 'mars-north-1')`, "region_in_aws_regions", "aws_regions"},
		{"disabled region", `INSERT INTO bucket (name, region) VALUES ('far', 'af-south-1')`, "region_enabled_in_aws_regions", "UPDATE aws_regions SET is_enabled = true WHERE region = 'af-south-1'"},
		{"moved to a disabled region", `UPDATE bucket SET region = 'af-south-1' WHERE name = 'logs'`, "region_enabled_in_aws_regions", "is_enabled = true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			pgtest.WantViolation(t, err, tc.constraint)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && !strings.Contains(pe.Hint, tc.hint) {
				t.Errorf("hint %q, want one with %q", pe.Hint, tc.hint)
			}
		})
	}
	for _, ok := range []string{
		`INSERT INTO bucket (name, region) VALUES ('near', 'us-east-1')`,
		`UPDATE bucket SET versioning = true WHERE name = 'logs'`,
		`UPDATE aws_regions SET is_enabled = true WHERE region = 'af-south-1'`,
		`UPDATE bucket SET region = 'af-south-1' WHERE name = 'logs'`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestSQLBucketRegionAfterOldUninstall: where an older sidecar uninstalled
// aws_account by dropping its table only (its functions default_aws_region()
// and aws_region_require() left behind, failing on the missing aws_regions),
// aws_s3 installs and takes buckets as without aws_account: us-east-1 by
// default, any region code.
func TestSQLBucketRegionAfterOldUninstall(t *testing.T) {
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), "DROP TABLE public.aws_regions;", aws_s3.Module().InstallSQL()})
	ctx := t.Context()
	var region string
	if err := conn.QueryRow(ctx, `INSERT INTO bucket (name) VALUES ('logs') RETURNING region`).Scan(&region); err != nil || region != "us-east-1" {
		t.Fatalf("bucket.region defaults to %q (%v), want us-east-1", region, err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name, region) VALUES ('far', 'eu-west-1')`); err != nil {
		t.Errorf("a bucket in eu-west-1: %v", err)
	}
}
