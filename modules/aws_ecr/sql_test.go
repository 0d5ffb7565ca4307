package aws_ecr_test

import (
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ecr"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installed returns a connection to a fresh database with the module
// installed after aws_account, and the regions aws_account's first sync
// leaves (one the default).
func installed(t *testing.T) *pgx.Conn {
	return srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_ecr.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', false), ('eu-west-1', true)`)
}

func TestSQLConstraints(t *testing.T) {
	conn := installed(t)
	ctx := t.Context()
	var region, mutability string
	var scan bool
	err := conn.QueryRow(ctx, `INSERT INTO repository (repository_name) VALUES ('app')
		RETURNING region, image_tag_mutability, scan_on_push`).Scan(&region, &mutability, &scan)
	if err != nil {
		t.Fatal(err)
	}
	if region != "eu-west-1" || mutability != "MUTABLE" || scan {
		t.Errorf("defaults: region %q (want the default region), image_tag_mutability %q, scan_on_push %v", region, mutability, scan)
	}
	cases := []struct {
		name, sql, constraint string
	}{
		{"one character", `INSERT INTO repository (repository_name) VALUES ('a')`, "repository_name_ecr_rules"},
		{"257 characters", `INSERT INTO repository (repository_name) VALUES (repeat('a', 257))`, "repository_name_ecr_rules"},
		{"uppercase", `INSERT INTO repository (repository_name) VALUES ('App')`, "repository_name_ecr_rules"},
		{"two separators", `INSERT INTO repository (repository_name) VALUES ('a--b')`, "repository_name_ecr_rules"},
		{"leading separator", `INSERT INTO repository (repository_name) VALUES ('-ab')`, "repository_name_ecr_rules"},
		{"trailing separator", `INSERT INTO repository (repository_name) VALUES ('ab.')`, "repository_name_ecr_rules"},
		{"leading slash", `INSERT INTO repository (repository_name) VALUES ('/ab')`, "repository_name_ecr_rules"},
		{"trailing slash", `INSERT INTO repository (repository_name) VALUES ('ab/')`, "repository_name_ecr_rules"},
		{"double slash", `INSERT INTO repository (repository_name) VALUES ('a//b')`, "repository_name_ecr_rules"},
		{"space", `INSERT INTO repository (repository_name) VALUES ('a b')`, "repository_name_ecr_rules"},
		{"duplicate in region", `INSERT INTO repository (repository_name, region) VALUES ('app', 'eu-west-1')`, "repository_name_region_unique"},
		// Regions are checked against aws_regions when written (before the
		// format constraint is): not a region of the account.
		{"bad region", `INSERT INTO repository (repository_name, region) VALUES ('elsewhere', 'Europe')`, "region_in_aws_regions"},
		{"a region the account does not list", `INSERT INTO repository (repository_name, region) VALUES ('gov', 'us-gov-west-1')`, "region_in_aws_regions"},
		{"bad mutability", `INSERT INTO repository (repository_name, image_tag_mutability) VALUES ('m', 'mutable')`, "repository_image_tag_mutability_values"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			pgtest.WantViolation(t, err, tc.constraint)
		})
	}
	for _, ok := range []string{
		`INSERT INTO repository (repository_name, region) VALUES ('app', 'us-east-1')`,
		`INSERT INTO repository (repository_name, image_tag_mutability, scan_on_push) VALUES ('team/app.web_1-x', 'IMMUTABLE', true)`,
		`INSERT INTO repository (repository_name) VALUES ('ab')`,
		`INSERT INTO repository (repository_name) VALUES (repeat('a', 256))`,
		`INSERT INTO repository (repository_name) VALUES ('0/1/2')`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// TestSQLComments: the repository comment says that a repository that
// holds images is not deleted. That every object has a comment is
// TestModuleSQL's (modules/sql_test.go).
func TestSQLComments(t *testing.T) {
	conn := installed(t)
	var comment string
	if err := conn.QueryRow(t.Context(), `SELECT obj_description('public.repository'::regclass, 'pg_class')`).Scan(&comment); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comment, "holds images is not deleted") {
		t.Errorf("repository comment does not say repositories with images are not deleted: %q", comment)
	}
}
