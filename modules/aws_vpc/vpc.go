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

type vpcMapper struct {
	c *ec2x.Clients
}

// vpc is a VPC found in a region as a row.
func vpc(region string, v types.Vpc) VPC {
	return VPC{
		ID: aws.ToString(v.VpcId), CIDR: aws.ToString(v.CidrBlock), Region: region,
		Tags: ec2x.Tags(v.Tags), IsDefault: aws.ToBool(v.IsDefault), State: string(v.State),
		Token: ec2x.TokenOf(v.Tags),
	}
}

// Read lists the VPCs of every region in scope (DescribeVpcs, paginated).
func (m *vpcMapper) Read(ctx context.Context, call module.Call) ([]VPC, error) {
	return regional.ListOf(ctx, m.c.Clients, call.Scope, ec2x.Terminal, "describe VPCs",
		func(cl *ec2.Client) *ec2.DescribeVpcsPaginator {
			return ec2.NewDescribeVpcsPaginator(cl, &ec2.DescribeVpcsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeVpcsOutput) []types.Vpc { return page.Vpcs }, vpc)
}

// Create creates the VPC, tagged with the create's client token: CreateVpc
// takes no ClientToken, so the SDK does not retry it (see Find).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html
func (m *vpcMapper) Create(ctx context.Context, call module.Call, want VPC) (VPC, error) {
	out, err := m.c.Region(want.Region).CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock:         aws.String(want.CIDR),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeVpc, want.Tags, call.Token),
	}, ec2x.NoRetry)
	if err != nil {
		return VPC{}, ec2x.Terminal.Classify(err, "create VPC %s in %s", want.CIDR, want.Region)
	}
	return vpc(want.Region, *out.Vpc), nil
}

// Find returns the VPC that a create with this client token made in want's
// region (nil when none did).
func (m *vpcMapper) Find(ctx context.Context, call module.Call, want VPC) (*VPC, error) {
	out, err := m.c.Region(want.Region).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: ec2x.TokenFilter(call.Token)})
	if err != nil {
		return nil, fmt.Errorf("find the VPC of client token %s in %s: %w", call.Token, want.Region, err)
	}
	if len(out.Vpcs) == 0 {
		return nil, nil
	}
	v := vpc(want.Region, out.Vpcs[0])
	return &v, nil
}

// Update changes tags; a new CIDR block or region needs a new VPC.
func (m *vpcMapper) Update(ctx context.Context, call module.Call, want, have VPC) (VPC, error) {
	if want.CIDR != have.CIDR || want.Region != have.Region {
		return VPC{}, module.ErrReplace
	}
	if err := ec2x.SyncTags(ctx, m.c.Region(have.Region), have.ID, want.Tags, have.Tags); err != nil {
		return VPC{}, err
	}
	have.Tags = want.Tags
	return have, nil
}

func (m *vpcMapper) Delete(ctx context.Context, call module.Call, have VPC) error {
	_, err := m.c.Region(have.Region).DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(have.ID)})
	if err := module.Deleted(err, "InvalidVpcID.NotFound"); err != nil {
		return fmt.Errorf("delete VPC %s: %w", have.ID, err)
	}
	return nil
}

var (
	_ module.MapperOf[VPC] = (*vpcMapper)(nil)
	_ module.FinderOf[VPC] = (*vpcMapper)(nil)
)
