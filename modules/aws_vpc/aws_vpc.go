// Package aws_vpc is the aws_vpc module: VPCs and subnets (tables vpc and
// subnet) in every enabled region. AWS generates their identities (vpc-…,
// subnet-…): a row without one is a resource to create, and the engine
// writes the identity back once it exists.
package aws_vpc

import (
	"context"
	"embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_vpc.sql
var installSQL string

// checksSQL is 0.2.0's step (tag restrictions, subnet blocks), also run at
// install: one source for both.
//
//go:embed upgrades/0.1.0--0.2.0.sql
var checksSQL string

//go:embed aws_vpc_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// VPCTable is the vpc table's declaration.
func VPCTable() module.Table {
	return module.Table{
		Name: "vpc",
		Comment: "VPCs of the enabled regions; each region's default VPC is imported. Insert a row (cidr_block, region) to create a VPC; vpc_id is filled in once AWS has created it. " +
			"Changing cidr_block or region replaces the VPC (its subnets and security groups move to the new one). Delete the row to delete the VPC.",
		Columns: []module.Column{
			{Name: "vpc_id", Type: "text", Kind: module.Feedback, CloudID: true,
				Comment: "The VPC's id (vpc-…), given by AWS at creation (from the cloud; not written to it). Setting it on a new row adopts that existing VPC."},
			{Name: "cidr_block", Type: "cidr", NotNull: true, CreateOnly: true,
				Comment: "Primary IPv4 CIDR block, /16 to /28. Fixed at creation: changing it replaces the VPC."},
			{Name: "region", Type: "text", NotNull: true, Default: "public.default_aws_region()", CreateOnly: true,
				Comment: "Region of the VPC (default: default_aws_region()). Fixed at creation: changing it replaces the VPC."},
			{Name: "tags", Type: "jsonb", NotNull: true, Default: "'{}'", Comment: "Tags as a JSON object of key to value."},
			{Name: "is_default", Type: "boolean", NotNull: true, Default: "false", Kind: module.Feedback,
				Comment: "Whether this is the region's default VPC (from the cloud)."},
			{Name: "state", Type: "text", Kind: module.Feedback, Comment: "pending or available (from the cloud)."},
		},
		Region: "region",
	}.Declare()
}

// SubnetTable is the subnet table's declaration.
func SubnetTable() module.Table {
	return module.Table{
		Name: "subnet",
		Comment: "Subnets of the VPCs; default subnets are imported. Insert a row (vpc_id, cidr_block, availability_zone) to create one; subnet_id is filled in once AWS has created it. " +
			"Changing anything but tags replaces the subnet.",
		Columns: []module.Column{
			{Name: "subnet_id", Type: "text", Kind: module.Feedback, CloudID: true,
				Comment: "The subnet's id (subnet-…), given by AWS at creation (from the cloud)."},
			{Name: "vpc_id", Type: "integer", NotNull: true, CreateOnly: true, Ref: "vpc", Comment: "The VPC (vpc.id) the subnet is in."},
			{Name: "region", Type: "text", NotNull: true, Default: "public.default_aws_region()", CreateOnly: true,
				Comment: "Region of the subnet: the VPC's."},
			{Name: "cidr_block", Type: "cidr", NotNull: true, CreateOnly: true,
				Comment: "IPv4 CIDR block inside the VPC's, /16 to /28, not overlapping another subnet."},
			{Name: "availability_zone", Type: "text", NotNull: true, CreateOnly: true, Comment: "Availability zone, e.g. us-east-1a."},
			{Name: "tags", Type: "jsonb", NotNull: true, Default: "'{}'", Comment: "Tags as a JSON object of key to value."},
			{Name: "is_default_for_az", Type: "boolean", NotNull: true, Default: "false", Kind: module.Feedback,
				Comment: "Whether this is the default subnet of its zone (from the cloud)."},
			{Name: "state", Type: "text", Kind: module.Feedback, Comment: "pending or available (from the cloud)."},
		},
		Region: "region",
	}.Declare()
}

// Module returns the aws_vpc module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_vpc",
		Version:   "0.3.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL + "\n" + checksSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{VPCTable(), SubnetTable()},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			c := ec2x.NewClients(cfg)
			return map[string]module.Reader{"vpc": &vpcMapper{c: c, t: VPCTable()}, "subnet": &subnetMapper{c: c, t: SubnetTable()}}, nil
		},
	}
}
