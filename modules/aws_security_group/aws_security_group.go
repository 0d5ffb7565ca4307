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

// RuleTable is the security_group_rule table's declaration. A rule is known
// by what it allows (everything but its description).
func RuleTable() module.Table {
	return module.Table{
		Name: "security_group_rule",
		Comment: "Rules of security groups, one row per target (CIDR, prefix list or source group). " +
			"A rule is known by everything but its description: changing any other column replaces the rule; changing the description updates it.",
		Columns: []module.Column{
			{Name: "security_group_id", Type: "integer", NotNull: true, CloudID: true, Ref: "security_group",
				Comment: "The group the rule belongs to (security_group.id)."},
			{Name: "is_egress", Type: "boolean", NotNull: true, Default: "false", CloudID: true,
				Comment: "false: inbound (ingress) rule; true: outbound (egress) rule."},
			{Name: "ip_protocol", Type: "text", NotNull: true, CloudID: true,
				Comment: "tcp, udp, icmp, icmpv6, a protocol number, or -1 for all. Written as AWS shows it: TCP, 6 and all become tcp, tcp and -1."},
			{Name: "from_port", Type: "integer", CloudID: true, Comment: "First port (tcp/udp) or ICMP type; NULL for other protocols."},
			{Name: "to_port", Type: "integer", CloudID: true, Comment: "Last port (tcp/udp) or ICMP code; NULL for other protocols."},
			{Name: "cidr_ipv4", Type: "cidr", CloudID: true, Comment: "Target IPv4 range."},
			{Name: "cidr_ipv6", Type: "cidr", CloudID: true, Comment: "Target IPv6 range."},
			{Name: "prefix_list_id", Type: "text", CloudID: true, Comment: "Target managed prefix list (pl-…)."},
			{Name: "source_security_group_id", Type: "integer", CloudID: true, Ref: "security_group",
				Comment: "Target security group (security_group.id): traffic from (ingress) or to (egress) its members."},
			{Name: "description", Type: "text", Comment: "Description of the rule; can change in place."},
			{Name: "rule_id", Type: "text", Kind: module.Feedback, Comment: "The rule's id (sgr-…) from AWS (from the cloud)."},
		},
		// Rows are in their group's region; cloud records say it.
		Region: "region",
		// A new group's default egress rule, a new VPC's default group's rules.
		MadeByCloud: true,
	}.Declare()
}

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
			return map[string]module.Reader{"security_group": module.WithTemporary(groupTable.Mapper(&groupMapper{g: g}), standIns{}), "security_group_rule": &ruleMapper{g: g, t: RuleTable()}}, nil
		},
	}
}
