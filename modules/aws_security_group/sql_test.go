package aws_security_group_test

import (
	"strings"
	"testing"

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
	conn := srv.Installed(t, []string{aws_account.Module().SQL, aws_vpc.Module().SQL, aws_security_group.Module().SQL},
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
