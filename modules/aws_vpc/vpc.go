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
	t module.Table
}

func vpcRecord(region string, v types.Vpc) module.Record {
	return module.Record{
		"vpc_id": aws.ToString(v.VpcId), "cidr_block": aws.ToString(v.CidrBlock), "region": region,
		"tags": ec2x.Tags(v.Tags), "is_default": aws.ToBool(v.IsDefault), "state": string(v.State),
		module.TokenTag: ec2x.TokenOf(v.Tags),
	}
}

// Read lists the VPCs of every region in scope (DescribeVpcs, paginated).
func (m *vpcMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return regional.List(ctx, m.c.Clients, call.Scope, ec2x.Terminal, "describe VPCs",
		func(cl *ec2.Client) *ec2.DescribeVpcsPaginator {
			return ec2.NewDescribeVpcsPaginator(cl, &ec2.DescribeVpcsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeVpcsOutput) []types.Vpc { return page.Vpcs }, vpcRecord)
}

// Create creates the VPC, tagged with the create's client token: CreateVpc
// takes no ClientToken, so the SDK does not retry it (see Find).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html
func (m *vpcMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region := want.String("region")
	out, err := m.c.Region(region).CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock:         aws.String(want.String("cidr_block")),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeVpc, want["tags"], call.Token),
	}, ec2x.NoRetry)
	if err != nil {
		return nil, ec2x.Terminal.Classify(err, "create VPC %s in %s", want.String("cidr_block"), region)
	}
	return vpcRecord(region, *out.Vpc), nil
}

// Find returns the VPC that a create with this client token made in want's
// region (nil when none did).
func (m *vpcMapper) Find(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	token := call.Token
	region := want.String("region")
	out, err := m.c.Region(region).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: ec2x.TokenFilter(token)})
	if err != nil {
		return nil, fmt.Errorf("find the VPC of client token %s in %s: %w", token, region, err)
	}
	if len(out.Vpcs) == 0 {
		return nil, nil
	}
	return vpcRecord(region, out.Vpcs[0]), nil
}

// Update changes tags; a new CIDR block or region needs a new VPC.
func (m *vpcMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return m.c.UpdateTags(ctx, m.t, "vpc_id", want, have)
}

func (m *vpcMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	_, err := m.c.Region(have.String("region")).DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(have.String("vpc_id"))})
	if err := module.Deleted(err, "InvalidVpcID.NotFound"); err != nil {
		return fmt.Errorf("delete VPC %s: %w", have.String("vpc_id"), err)
	}
	return nil
}
