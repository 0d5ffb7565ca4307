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
}

// subnet is a subnet found in a region as a row.
func subnet(region string, s types.Subnet) Subnet {
	return Subnet{
		ID: aws.ToString(s.SubnetId), VPC: aws.ToString(s.VpcId), Region: region,
		CIDR: aws.ToString(s.CidrBlock), Zone: aws.ToString(s.AvailabilityZone),
		Tags: ec2x.Tags(s.Tags), DefaultForAZ: aws.ToBool(s.DefaultForAz), State: string(s.State),
		Token: ec2x.TokenOf(s.Tags),
	}
}

// Read lists the subnets of every region in scope (DescribeSubnets,
// paginated).
func (m *subnetMapper) Read(ctx context.Context, call module.Call) ([]Subnet, error) {
	return regional.ListOf(ctx, m.c.Clients, call.Scope, ec2x.Terminal, "describe subnets",
		func(cl *ec2.Client) *ec2.DescribeSubnetsPaginator {
			return ec2.NewDescribeSubnetsPaginator(cl, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeSubnetsOutput) []types.Subnet { return page.Subnets }, subnet)
}

// Create creates the subnet, tagged with the create's client token:
// CreateSubnet takes no ClientToken, so the SDK does not retry it (see Find).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html
func (m *subnetMapper) Create(ctx context.Context, call module.Call, want Subnet) (Subnet, error) {
	out, err := m.c.Region(want.Region).CreateSubnet(ctx, &ec2.CreateSubnetInput{
		VpcId:             aws.String(want.VPC),
		CidrBlock:         aws.String(want.CIDR),
		AvailabilityZone:  aws.String(want.Zone),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeSubnet, want.Tags, call.Token),
	}, ec2x.NoRetry)
	if err != nil {
		return Subnet{}, ec2x.Terminal.Classify(err, "create subnet %s in %s", want.CIDR, want.VPC)
	}
	return subnet(want.Region, *out.Subnet), nil
}

// Find returns the subnet that a create with this client token made in
// want's region (nil when none did).
func (m *subnetMapper) Find(ctx context.Context, call module.Call, want Subnet) (*Subnet, error) {
	out, err := m.c.Region(want.Region).DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: ec2x.TokenFilter(call.Token)})
	if err != nil {
		return nil, fmt.Errorf("find the subnet of client token %s in %s: %w", call.Token, want.Region, err)
	}
	if len(out.Subnets) == 0 {
		return nil, nil
	}
	s := subnet(want.Region, out.Subnets[0])
	return &s, nil
}

// Update changes tags; anything else needs a new subnet.
func (m *subnetMapper) Update(ctx context.Context, call module.Call, want, have Subnet) (Subnet, error) {
	if want.VPC != have.VPC || want.Region != have.Region || want.CIDR != have.CIDR || want.Zone != have.Zone {
		return Subnet{}, module.ErrReplace
	}
	if err := ec2x.SyncTags(ctx, m.c.Region(have.Region), have.ID, want.Tags, have.Tags); err != nil {
		return Subnet{}, err
	}
	have.Tags = want.Tags
	return have, nil
}

func (m *subnetMapper) Delete(ctx context.Context, call module.Call, have Subnet) error {
	_, err := m.c.Region(have.Region).DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(have.ID)})
	if err := module.Deleted(err, "InvalidSubnetID.NotFound"); err != nil {
		return fmt.Errorf("delete subnet %s: %w", have.ID, err)
	}
	return nil
}

var (
	_ module.MapperOf[Subnet] = (*subnetMapper)(nil)
	_ module.FinderOf[Subnet] = (*subnetMapper)(nil)
)
