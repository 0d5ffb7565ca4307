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

// VPC is a row of the vpc table: a VPC (API Reference, Vpc:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Vpc.html).
// Its fields declare the table's columns (module.Typed).
type VPC struct {
	ID        string         `iasql:"vpc_id,id,feedback" comment:"The VPC's id (vpc-…), given by AWS at creation (from the cloud; not written to it). Setting it on a new row adopts that existing VPC."`
	CIDR      string         `iasql:"cidr_block,createonly,notnull,type=cidr" comment:"Primary IPv4 CIDR block, /16 to /28. Fixed at creation: changing it replaces the VPC."`
	Region    string         `iasql:"region,createonly,notnull,default=public.default_aws_region()" comment:"Region of the VPC (default: default_aws_region()). Fixed at creation: changing it replaces the VPC."`
	Tags      map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value."`
	IsDefault bool           `iasql:"is_default,feedback,notnull,default=false" comment:"Whether this is the region's default VPC (from the cloud)."`
	State     string         `iasql:"state,feedback" comment:"pending or available (from the cloud)."`
	Token     string         `iasql:",token"`
}

// vpcs is the vpc table, declared by VPC.
var vpcs = module.Declare[VPC](module.Table{
	Name: "vpc",
	Comment: "VPCs of the enabled regions; each region's default VPC is imported. Insert a row (cidr_block, region) to create a VPC; vpc_id is filled in once AWS has created it. " +
		"Changing cidr_block or region replaces the VPC (its subnets and security groups move to the new one). Delete the row to delete the VPC.",
	Region: "region",
})

// VPCTable is the vpc table's declaration.
func VPCTable() module.Table { return vpcs.Table() }

// Subnet is a row of the subnet table: a subnet (API Reference, Subnet:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Subnet.html).
// Its fields declare the table's columns (module.Typed).
type Subnet struct {
	ID           string         `iasql:"subnet_id,id,feedback" comment:"The subnet's id (subnet-…), given by AWS at creation (from the cloud)."`
	VPC          string         `iasql:"vpc_id,createonly,notnull,ref=vpc" comment:"The VPC (vpc.id) the subnet is in."`
	Region       string         `iasql:"region,createonly,notnull,default=public.default_aws_region()" comment:"Region of the subnet: the VPC's."`
	CIDR         string         `iasql:"cidr_block,createonly,notnull,type=cidr" comment:"IPv4 CIDR block inside the VPC's, /16 to /28, not overlapping another subnet."`
	Zone         string         `iasql:"availability_zone,createonly,notnull" comment:"Availability zone, e.g. us-east-1a."`
	Tags         map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value."`
	DefaultForAZ bool           `iasql:"is_default_for_az,feedback,notnull,default=false" comment:"Whether this is the default subnet of its zone (from the cloud)."`
	State        string         `iasql:"state,feedback" comment:"pending or available (from the cloud)."`
	Token        string         `iasql:",token"`
}

// subnets is the subnet table, declared by Subnet.
var subnets = module.Declare[Subnet](module.Table{
	Name: "subnet",
	Comment: "Subnets of the VPCs; default subnets are imported. Insert a row (vpc_id, cidr_block, availability_zone) to create one; subnet_id is filled in once AWS has created it. " +
		"Changing anything but tags replaces the subnet.",
	Region: "region",
})

// SubnetTable is the subnet table's declaration.
func SubnetTable() module.Table { return subnets.Table() }

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
			return map[string]module.Reader{"vpc": vpcs.Mapper(&vpcMapper{c: c}), "subnet": subnets.Mapper(&subnetMapper{c: c})}, nil
		},
	}
}
