package aws_security_group_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
)

// TestSQLGroupNameRules: a group name or description AWS's
// CreateSecurityGroup would refuse (in a VPC: up to 255 characters of
// a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*; names not starting with
// sg-) is refused by the INSERT or UPDATE itself, naming the rule.
func TestSQLGroupNameRules(t *testing.T) {
	t.Parallel()
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_vpc.Module().InstallSQL(), aws_security_group.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`,
		`INSERT INTO vpc (vpc_id, cidr_block, is_default) VALUES ('vpc-1', '172.31.0.0/16', true)`)
	ctx := t.Context()
	insert := func(name, description string) error {
		_, err := conn.Exec(ctx, `INSERT INTO security_group (group_name, description) VALUES ($1, $2)`, name, description)
		return err
	}
	for _, ok := range []struct{ name, description string }{
		{"web", "web servers"},
		{"a", "x"},
		{"All allowed ._-:/()#,@[]+=&;{}!$*", "All allowed ._-:/()#,@[]+=&;{}!$* 0-9"},
		{"launch-wizard-1", "launch-wizard-1 created 2024-01-01T10:00:00.000Z"},
		{"my-sg-group", "sg- inside a name is fine"},
		{strings.Repeat("n", 255), strings.Repeat("d", 255)},
	} {
		if err := insert(ok.name, ok.description); err != nil {
			t.Errorf("%q, %q: %v", ok.name, ok.description, err)
		}
	}
	cases := []struct {
		name, group, description, constraint string
	}{
		{"empty name", "", "d", "security_group_name_1_to_255_characters"},
		{"long name", strings.Repeat("n", 255) + "n", "d", "security_group_name_1_to_255_characters"},
		{"name starting with sg-", "sg-web", "d", "security_group_name_not_starting_with_sg"},
		{"name starting with SG-", "SG-web", "d", "security_group_name_not_starting_with_sg"},
		{"accented name", "café", "d", "security_group_name_allowed_characters"},
		{"name with a quote", "bob's", "d", "security_group_name_allowed_characters"},
		{"name with a tab", "a\tb", "d", "security_group_name_allowed_characters"},
		{"name with a percent", "100%", "d", "security_group_name_allowed_characters"},
		{"name with a backslash", `a\b`, "d", "security_group_name_allowed_characters"},
		{"empty description", "g1", "", "security_group_description_1_to_255_characters"},
		{"long description", "g2", strings.Repeat("d", 255) + "d", "security_group_description_1_to_255_characters"},
		{"description with a newline", "g3", "web\nservers", "security_group_description_allowed_characters"},
		{"description with a question mark", "g4", "why?", "security_group_description_allowed_characters"},
		{"description with an emoji", "g5", "web 🚀", "security_group_description_allowed_characters"},
		{"description with a double quote", "g6", `"web"`, "security_group_description_allowed_characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pgtest.WantViolation(t, insert(tc.group, tc.description), tc.constraint)
		})
	}
	_, err := conn.Exec(ctx, `UPDATE security_group SET description = 'tier <1>' WHERE group_name = 'web'`)
	pgtest.WantViolation(t, err, "security_group_description_allowed_characters")
	_, err = conn.Exec(ctx, `UPDATE security_group SET group_name = 'sg-web' WHERE group_name = 'web'`)
	pgtest.WantViolation(t, err, "security_group_name_not_starting_with_sg")
}

// TestSQLRegionChecks: a region column written with a region that is not in
// aws_regions, or not enabled there, is refused by the INSERT or UPDATE
// itself, the error naming the region and how to enable it; region columns
// default to aws_regions' default region.
func TestSQLRegionChecks(t *testing.T) {
	t.Parallel()
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_vpc.Module().InstallSQL(), aws_security_group.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('eu-west-1', true)`,
		`INSERT INTO aws_regions (region, is_enabled) VALUES ('us-east-1', true), ('af-south-1', false)`,
		`INSERT INTO vpc (vpc_id, cidr_block, is_default) VALUES ('vpc-1', '172.31.0.0/16', true)`)
	ctx := t.Context()
	var region string
	if err := conn.QueryRow(ctx, `SELECT region FROM vpc WHERE vpc_id = 'vpc-1'`).Scan(&region); err != nil || region != "eu-west-1" {
		t.Fatalf("vpc.region defaults to %q (%v), want the default region eu-west-1", region, err)
	}
	if err := conn.QueryRow(ctx, `INSERT INTO security_group (group_name, description) VALUES ('web', 'web') RETURNING region`).Scan(&region); err != nil || region != "eu-west-1" {
		t.Fatalf("security_group.region defaults to %q (%v), want eu-west-1", region, err)
	}
	cases := []struct {
		name, sql, constraint, message, hint string
	}{
		{"vpc in an unknown region", `INSERT INTO vpc (cidr_block, region) VALUES ('10.0.0.0/16', 'mars-north-1')`,
			"region_in_aws_regions", "region mars-north-1 is not a region of the account", "aws_regions"},
		{"vpc in a disabled region", `INSERT INTO vpc (cidr_block, region) VALUES ('10.0.0.0/16', 'af-south-1')`,
			"region_enabled_in_aws_regions", "region af-south-1 is not enabled in aws_regions", "UPDATE aws_regions SET is_enabled = true WHERE region = 'af-south-1'"},
		{"vpc moved to a disabled region", `UPDATE vpc SET region = 'af-south-1' WHERE vpc_id = 'vpc-1'`,
			"region_enabled_in_aws_regions", "region af-south-1 is not enabled", "is_enabled = true"},
		{"subnet in a disabled region", `INSERT INTO subnet (vpc_id, region, cidr_block, availability_zone) SELECT id, 'af-south-1', '172.31.0.0/20', 'af-south-1a' FROM vpc`,
			"region_enabled_in_aws_regions", "region af-south-1 is not enabled", "is_enabled = true"},
		{"group in a disabled region", `INSERT INTO security_group (group_name, description, vpc_id, region) SELECT 'db', 'db', id, 'af-south-1' FROM vpc`,
			"region_enabled_in_aws_regions", "region af-south-1 is not enabled", "is_enabled = true"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := conn.Exec(ctx, tc.sql)
			pgtest.WantViolation(t, err, tc.constraint)
			var pe *pgconn.PgError
			if errors.As(err, &pe) && (!strings.Contains(pe.Message, tc.message) || !strings.Contains(pe.Hint, tc.hint)) {
				t.Errorf("message %q hint %q, want %q and a hint with %q", pe.Message, pe.Hint, tc.message, tc.hint)
			}
		})
	}
	// Enabled, the region is taken; rows of a region disabled since can
	// still be written (the engine writes back to them until it drops them).
	for _, ok := range []string{
		`UPDATE aws_regions SET is_enabled = true WHERE region = 'af-south-1'`,
		`INSERT INTO vpc (cidr_block, region) VALUES ('10.0.0.0/16', 'af-south-1')`,
		`INSERT INTO vpc (cidr_block, region) VALUES ('10.1.0.0/16', 'us-east-1')`,
		`UPDATE aws_regions SET is_enabled = false WHERE region = 'af-south-1'`,
		`UPDATE vpc SET vpc_id = 'vpc-2', region = region WHERE region = 'af-south-1'`,
	} {
		if _, err := conn.Exec(ctx, ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}
