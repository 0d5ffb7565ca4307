package aws_vpc

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

type subnetMapper struct{ c *ec2x.Clients }

var subnetColumns = []string{"vpc_id", "region", "cidr_block", "availability_zone", "tags"}

func subnetRecord(region string, s types.Subnet) module.Record {
	return module.Record{
		"subnet_id": aws.ToString(s.SubnetId), "vpc_id": aws.ToString(s.VpcId), "region": region,
		"cidr_block": aws.ToString(s.CidrBlock), "availability_zone": aws.ToString(s.AvailabilityZone),
		"tags": ec2x.Tags(s.Tags), "is_default_for_az": aws.ToBool(s.DefaultForAz), "state": string(s.State),
	}
}

func (m *subnetMapper) Read(ctx context.Context) ([]module.Record, error) {
	return m.c.EachRegion(ctx, func(ctx context.Context, region string, cl *ec2.Client) ([]module.Record, error) {
		var out []module.Record
		p := ec2.NewDescribeSubnetsPaginator(cl, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describe subnets: %w", err)
			}
			for _, s := range page.Subnets {
				out = append(out, subnetRecord(region, s))
			}
		}
		return out, nil
	})
}

func (m *subnetMapper) Create(ctx context.Context, want module.Record) (module.Record, error) {
	region := want.String("region")
	out, err := m.c.Region(region).CreateSubnet(ctx, &ec2.CreateSubnetInput{
		VpcId:             aws.String(want.String("vpc_id")),
		CidrBlock:         aws.String(want.String("cidr_block")),
		AvailabilityZone:  aws.String(want.String("availability_zone")),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeSubnet, want["tags"]),
	})
	if err != nil {
		return nil, ec2x.Terminal(fmt.Errorf("create subnet %s in %s: %w", want.String("cidr_block"), want.String("vpc_id"), err))
	}
	return subnetRecord(region, *out.Subnet), nil
}

// Update changes tags; anything else needs a new subnet.
func (m *subnetMapper) Update(ctx context.Context, want, have module.Record) (module.Record, error) {
	return m.c.UpdateTags(ctx, subnetColumns, "subnet_id", want, have)
}

func (m *subnetMapper) Delete(ctx context.Context, have module.Record) error {
	_, err := m.c.Region(have.String("region")).DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(have.String("subnet_id"))})
	if ec2x.Code(err) == "InvalidSubnetID.NotFound" {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete subnet %s: %w", have.String("subnet_id"), err)
	}
	return nil
}

func (m *subnetMapper) Equal(db, cloud module.Record) bool {
	return module.CompareDeclarative(subnetColumns, db, cloud)
}
