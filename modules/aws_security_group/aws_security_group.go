// Package aws_security_group is the aws_security_group module: security
// groups (table security_group) and their rules (security_group_rule). A
// group is known by its name in its VPC; AWS fixes its description at
// creation, so a description change replaces the group through a temporary
// stand-in (module.Temporary) and the row keeps its name and id. A rule is
// known by what it allows, so any change but its description replaces it.
package aws_security_group

import (
	"context"
	"embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_security_group.sql
var installSQL string

// checksSQL is 0.2.0's step (tag restrictions), also run at install: one
// source for both.
//
//go:embed upgrades/0.1.0--0.2.0.sql
var checksSQL string

//go:embed aws_security_group_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// Group is a row of the security_group table: a security group (API
// Reference, SecurityGroup:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SecurityGroup.html).
// Its fields declare the table's columns (module.Typed).
type Group struct {
	Name        string `iasql:"group_name,id,notnull" comment:"Name, unique within the VPC: 1 to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*, not starting with sg-."`
	Description string `iasql:"description,createonly,notnull" comment:"Description, 1 to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*. AWS fixes it at creation: changing it replaces the group."`
	// Nullable for what introspects the schema (an ORM's model must be
	// able to insert without it); the trigger security_group_default_vpc
	// fills it, and security_group_vpc_id_set refuses a row left without one.
	VPC    string         `iasql:"vpc_id,id,ref=vpc" comment:"The VPC (vpc.id); left out (or NULL) on INSERT, the region's default VPC."`
	Region string         `iasql:"region,createonly,notnull,default=public.default_aws_region()" comment:"Region of the group: its VPC's (default: default_aws_region())."`
	Tags   map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value."`
	ID     string         `iasql:"group_id,feedback" comment:"The group's id (sg-…) from AWS (from the cloud; changes when the group is replaced)."`
}

// groupTable is the security_group table, declared by Group.
var groupTable = module.Declare[Group](module.Table{
	Name: "security_group",
	Comment: `Security groups of the VPCs; every VPC's "default" group is imported (and cannot be deleted). Insert a row to create a group; group_id is filled in once AWS has created it. ` +
		"A group is known by its name within its VPC. Changing description replaces the group while it keeps its name: a temporary group stands in while the old one is deleted, " +
		"rules are recreated and groups that reference it move over; the row keeps its id and gets a new group_id.",
	Region:      "region",
	MadeByCloud: true, // a VPC's default group
})

// GroupTable is the security_group table's declaration. Other modules that
// reference groups (aws_ec2's instances) render a group's identity by it.
func GroupTable() module.Table { return groupTable.Table() }

// Rule is a row of the security_group_rule table: a security group rule
// (API Reference, SecurityGroupRule:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SecurityGroupRule.html).
// Its fields declare the table's columns (module.Typed); a column that may
// be NULL is a pointer.
type Rule struct {
	Group       string  `iasql:"security_group_id,id,notnull,ref=security_group" comment:"The group the rule belongs to (security_group.id)."`
	Egress      bool    `iasql:"is_egress,id,notnull,default=false" comment:"false: inbound (ingress) rule; true: outbound (egress) rule."`
	Protocol    string  `iasql:"ip_protocol,id,notnull" comment:"tcp, udp, icmp, icmpv6, a protocol number, or -1 for all. Written as AWS shows it: TCP, 6 and all become tcp, tcp and -1."`
	FromPort    *int32  `iasql:"from_port,id" comment:"First port (tcp/udp) or ICMP type; NULL for other protocols."`
	ToPort      *int32  `iasql:"to_port,id" comment:"Last port (tcp/udp) or ICMP code; NULL for other protocols."`
	CidrIPv4    *string `iasql:"cidr_ipv4,id,type=cidr" comment:"Target IPv4 range."`
	CidrIPv6    *string `iasql:"cidr_ipv6,id,type=cidr" comment:"Target IPv6 range."`
	PrefixList  *string `iasql:"prefix_list_id,id" comment:"Target managed prefix list (pl-…)."`
	Source      *string `iasql:"source_security_group_id,id,ref=security_group" comment:"Target security group (security_group.id): traffic from (ingress) or to (egress) its members."`
	Description string  `iasql:"description" comment:"Description of the rule; can change in place."`
	ID          string  `iasql:"rule_id,feedback" comment:"The rule's id (sgr-…) from AWS (from the cloud)."`
	// Rows are in their group's region, which is no column; cloud
	// records say it (module.Typed.WithRegionKey).
	Region string `iasql:"-"`
}

// ruleTable is the security_group_rule table, declared by Rule. A rule is
// known by what it allows (everything but its description).
var ruleTable = module.Declare[Rule](module.Table{
	Name: "security_group_rule",
	Comment: "Rules of security groups, one row per target (CIDR, prefix list or source group). " +
		"A rule is known by everything but its description: changing any other column replaces the rule; changing the description updates it.",
	// Rows are in their group's region; cloud records say it.
	Region: "region",
	// A new group's default egress rule, a new VPC's default group's rules.
	MadeByCloud: true,
}).WithRegionKey("Region")

// RuleTable is the security_group_rule table's declaration.
func RuleTable() module.Table { return ruleTable.Table() }

// Module returns the aws_security_group module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_security_group",
		Version:   "0.3.0",
		DependsOn: []string{"aws_vpc"},
		SQL:       installSQL + "\n" + checksSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{GroupTable(), RuleTable()},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			g := &groups{c: ec2x.NewClients(cfg), t: GroupTable(), byID: map[string]groupRef{}, byCID: map[string]string{}}
			return map[string]module.Reader{"security_group": groupTable.Mapper(&groupMapper{g: g}), "security_group_rule": ruleTable.Mapper(&ruleMapper{g: g})}, nil
		},
	}
}
