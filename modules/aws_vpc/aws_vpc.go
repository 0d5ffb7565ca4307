// Package aws_vpc is the aws_vpc module: VPCs and subnets (tables vpc and
// subnet) in every enabled region. AWS generates their identities (vpc-…,
// subnet-…): a row without one is a resource to create, and the engine
// writes the identity back once it exists.
package aws_vpc

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_vpc.sql
var installSQL string

// Module returns the aws_vpc module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_vpc",
		Version:   "0.1.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL,
		Tables: []module.Table{
			{
				Name:        "vpc",
				CloudID:     []string{"vpc_id"},
				Declarative: []string{"cidr_block", "region", "tags"},
				CreateOnly:  []string{"cidr_block", "region"},
				Feedback:    []string{"vpc_id", "is_default", "state"},
				Region:      "region",
			},
			{
				Name:        "subnet",
				CloudID:     []string{"subnet_id"},
				Declarative: []string{"vpc_id", "region", "cidr_block", "availability_zone", "tags"},
				CreateOnly:  []string{"vpc_id", "region", "cidr_block", "availability_zone"},
				Feedback:    []string{"subnet_id", "is_default_for_az", "state"},
				Refs:        map[string]string{"vpc_id": "vpc"},
				Region:      "region",
			},
		},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Mapper, error) {
			c := ec2x.NewClients(cfg)
			return map[string]module.Mapper{"vpc": &vpcMapper{c: c}, "subnet": &subnetMapper{c: c}}, nil
		},
	}
}
