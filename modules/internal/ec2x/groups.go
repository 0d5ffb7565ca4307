package ec2x

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// Security groups by identity. The engine knows a group by its VPC and
// name (aws_security_group's table declaration, passed as groups: this
// package cannot import that module); AWS's calls on other resources (a
// load balancer's, an instance's) take and answer group ids.

// GroupCloudID renders a group's identity by its table's declaration.
func GroupCloudID(groups module.Table, vpc, name string) string {
	return module.CloudIDOf(groups, module.Record{"vpc_id": vpc, "group_name": name})
}

// GroupCloudIDs maps group ids to their identities, with one
// DescribeSecurityGroups call (a group-id filter, which answers a missing
// id with nothing instead of an error: such an id is left out).
func GroupCloudIDs(ctx context.Context, cl *ec2.Client, groups module.Table, ids []string) (map[string]string, error) {
	out := map[string]string{}
	ids = slices.Compact(slices.Sorted(slices.Values(ids)))
	if len(ids) == 0 {
		return out, nil
	}
	found, err := regional.Pages(ctx, ec2.NewDescribeSecurityGroupsPaginator(cl, &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("group-id"), Values: ids}}, MaxResults: aws.Int32(PageSize),
	}), func(page *ec2.DescribeSecurityGroupsOutput) []types.SecurityGroup { return page.SecurityGroups })
	if err != nil {
		return nil, fmt.Errorf("describe security groups %v: %w", ids, err)
	}
	for _, g := range found {
		out[aws.ToString(g.GroupId)] = GroupCloudID(groups, aws.ToString(g.VpcId), aws.ToString(g.GroupName))
	}
	return out, nil
}

// GroupIDs turns groups' identities (GroupCloudID) into their group ids,
// in the same order, with one DescribeSecurityGroups call; a group that
// does not exist (yet) is an error.
func GroupIDs(ctx context.Context, cl *ec2.Client, groups module.Table, cids []string) ([]string, error) {
	if len(cids) == 0 {
		return nil, nil
	}
	var vpcs, names []string
	for _, cid := range cids {
		g, ok := module.IdentityOf(groups, cid)
		if !ok {
			return nil, &module.TerminalError{Err: fmt.Errorf("security group %q is not a group identity", cid)}
		}
		vpcs, names = append(vpcs, g.String("vpc_id")), append(names, g.String("group_name"))
	}
	out, err := cl.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: aws.String("vpc-id"), Values: slices.Compact(slices.Sorted(slices.Values(vpcs)))},
		{Name: aws.String("group-name"), Values: slices.Compact(slices.Sorted(slices.Values(names)))},
	}})
	if err != nil {
		return nil, fmt.Errorf("look up security groups %v: %w", cids, err)
	}
	byCID := map[string]string{}
	for _, g := range out.SecurityGroups {
		byCID[GroupCloudID(groups, aws.ToString(g.VpcId), aws.ToString(g.GroupName))] = aws.ToString(g.GroupId)
	}
	ids := make([]string, 0, len(cids))
	for _, cid := range cids {
		id, ok := byCID[cid]
		if !ok {
			return nil, fmt.Errorf("security group %s does not exist (yet)", cid)
		}
		ids = append(ids, id)
	}
	return ids, nil
}
