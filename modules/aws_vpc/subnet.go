package aws_vpc

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

type subnetMapper struct {
	c *ec2x.Clients
	t module.Table
}

func subnetRecord(region string, s types.Subnet) module.Record {
	return module.Record{
		"subnet_id": aws.ToString(s.SubnetId), "vpc_id": aws.ToString(s.VpcId), "region": region,
		"cidr_block": aws.ToString(s.CidrBlock), "availability_zone": aws.ToString(s.AvailabilityZone),
		"tags": ec2x.Tags(s.Tags), "is_default_for_az": aws.ToBool(s.DefaultForAz), "state": string(s.State),
		module.TokenTag: ec2x.TokenOf(s.Tags),
	}
}

// Read lists the subnets of every region in scope (DescribeSubnets,
// paginated).
func (m *subnetMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return regional.List(ctx, m.c.Clients, call.Scope, ec2x.Terminal, "describe subnets",
		func(cl *ec2.Client) *ec2.DescribeSubnetsPaginator {
			return ec2.NewDescribeSubnetsPaginator(cl, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeSubnetsOutput) []types.Subnet { return page.Subnets }, subnetRecord)
}

// Create creates the subnet, tagged with the create's client token:
// CreateSubnet takes no ClientToken, so the SDK does not retry it (see Find).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html
func (m *subnetMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region := want.String("region")
	out, err := m.c.Region(region).CreateSubnet(ctx, &ec2.CreateSubnetInput{
		VpcId:             aws.String(want.String("vpc_id")),
		CidrBlock:         aws.String(want.String("cidr_block")),
		AvailabilityZone:  aws.String(want.String("availability_zone")),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeSubnet, want["tags"], call.Token),
	}, ec2x.NoRetry)
	if err != nil {
		return nil, ec2x.Terminal.Classify(err, "create subnet %s in %s", want.String("cidr_block"), want.String("vpc_id"))
	}
	return subnetRecord(region, *out.Subnet), nil
}

// Find returns the subnet that a create with this client token made in
// want's region (nil when none did).
func (m *subnetMapper) Find(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	token := call.Token
	region := want.String("region")
	out, err := m.c.Region(region).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: ec2x.TokenFilter(token)})
	if err != nil {
		return nil, fmt.Errorf("find the subnet of client token %s in %s: %w", token, region, err)
	}
	if len(out.Subnets) == 0 {
		return nil, nil
	}
	return subnetRecord(region, out.Subnets[0]), nil
}

// Update changes tags; anything else needs a new subnet.
func (m *subnetMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return m.c.UpdateTags(ctx, m.t, "subnet_id", want, have)
}

func (m *subnetMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	_, err := m.c.Region(have.String("region")).DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(have.String("subnet_id"))})
	if err := module.Deleted(err, "InvalidSubnetID.NotFound"); err != nil {
		return fmt.Errorf("delete subnet %s: %w", have.String("subnet_id"), err)
	}
	return nil
}
