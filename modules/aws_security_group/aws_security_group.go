// Package aws_security_group is the aws_security_group module: security
// groups (table security_group) and their rules (security_group_rule). A
// group is known by its name in its VPC; AWS fixes its description at
// creation, so a description change replaces the group through a temporary
// stand-in (module.Temporary) and the row keeps its name and id. A rule is
// known by what it allows, so any change but its description replaces it.
package aws_security_group

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_security_group.sql
var installSQL string

var (
	groupTable = module.Table{
		Name:        "security_group",
		CloudID:     []string{"vpc_id", "group_name"},
		Declarative: []string{"group_name", "description", "vpc_id", "region", "tags"},
		CreateOnly:  []string{"description", "region"},
		Feedback:    []string{"group_id"},
		Refs:        map[string]string{"vpc_id": "vpc"},
		Region:      "region",
		MadeByCloud: true, // a VPC's default group
	}
	ruleTable = module.Table{
		Name: "security_group_rule",
		CloudID: []string{"security_group_id", "is_egress", "ip_protocol", "from_port", "to_port",
			"cidr_ipv4", "cidr_ipv6", "prefix_list_id", "source_security_group_id"},
		Declarative: []string{"security_group_id", "is_egress", "ip_protocol", "from_port", "to_port",
			"cidr_ipv4", "cidr_ipv6", "prefix_list_id", "source_security_group_id", "description"},
		Feedback: []string{"rule_id"},
		Refs:     map[string]string{"security_group_id": "security_group", "source_security_group_id": "security_group"},
		// Rows are in their group's region; cloud records say it.
		Region: "region",
		// A new group's default egress rule, a new VPC's default group's rules.
		MadeByCloud: true,
	}
)

// Module returns the aws_security_group module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_security_group",
		Version:   "0.1.0",
		DependsOn: []string{"aws_vpc"},
		SQL:       installSQL,
		Tables:    []module.Table{groupTable, ruleTable},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			g := &groups{c: ec2x.NewClients(cfg), byID: map[string]groupRef{}, byCID: map[string]string{}}
			return map[string]module.Reader{"security_group": &groupMapper{g: g}, "security_group_rule": &ruleMapper{g: g}}, nil
		},
	}
}

// GroupTable is the security_group table as this module declares it: other
// modules that reference groups (aws_ec2's instances) render a group's
// identity by it.
func GroupTable() module.Table { return groupTable }
