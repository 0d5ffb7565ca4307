package aws_security_group

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

type ruleMapper struct{ g *groups }

// portless reports whether a protocol has no ports: AWS reports -1 for
// them, the table NULL.
func portless(protocol string) bool {
	switch protocol {
	case "tcp", "udp", "icmp", "icmpv6":
		return false
	}
	return true
}

// rule renders a rule; nil when a group it names is not known (created
// after the groups were read, or in another account).
func (m *ruleMapper) rule(region string, r types.SecurityGroupRule) *Rule {
	owner, ok := m.g.ref(aws.ToString(r.GroupId))
	if !ok {
		return nil
	}
	got := &Rule{
		ID: aws.ToString(r.SecurityGroupRuleId), Group: owner.cid,
		Egress: aws.ToBool(r.IsEgress), Protocol: aws.ToString(r.IpProtocol),
		Description: aws.ToString(r.Description), Region: region,
		CidrIPv4: r.CidrIpv4, CidrIPv6: r.CidrIpv6, PrefixList: r.PrefixListId,
	}
	if !portless(got.Protocol) {
		got.FromPort, got.ToPort = aws.Int32(aws.ToInt32(r.FromPort)), aws.Int32(aws.ToInt32(r.ToPort))
	}
	if r.ReferencedGroupInfo != nil {
		src, ok := m.g.ref(aws.ToString(r.ReferencedGroupInfo.GroupId))
		if !ok {
			return nil
		}
		got.Source = aws.String(src.cid)
	}
	return got
}

// Read lists the rules of every region in scope
// (DescribeSecurityGroupRules, paginated) of the groups the group mapper
// read.
func (m *ruleMapper) Read(ctx context.Context, call module.Call) ([]Rule, error) {
	found, err := regional.ListOf(ctx, m.g.c.Clients, call.Scope, ec2x.Terminal, "describe security group rules",
		func(cl *ec2.Client) *ec2.DescribeSecurityGroupRulesPaginator {
			return ec2.NewDescribeSecurityGroupRulesPaginator(cl, &ec2.DescribeSecurityGroupRulesInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		rulesOf, m.rule)
	out := make([]Rule, 0, len(found))
	for _, r := range found {
		if r != nil {
			out = append(out, *r)
		}
	}
	if failed, partial := module.FailedRegions(err); err == nil || partial {
		m.g.resetRules(out, failed)
	}
	return out, err
}

func rulesOf(page *ec2.DescribeSecurityGroupRulesOutput) []types.SecurityGroupRule {
	return page.SecurityGroupRules
}

// errNoGroup means a rule's group has no id yet (it is created in the same
// cycle): retrying after the group exists works.
var errNoGroup = errors.New("security group not known in the cloud yet")

// permission is the IpPermissions entry of a rule.
func (m *ruleMapper) permission(want Rule) (types.IpPermission, error) {
	p := types.IpPermission{IpProtocol: aws.String(want.Protocol)}
	if !portless(want.Protocol) {
		p.FromPort, p.ToPort = aws.Int32(aws.ToInt32(want.FromPort)), aws.Int32(aws.ToInt32(want.ToPort))
	}
	desc := aws.String(want.Description)
	if want.Description == "" {
		desc = nil
	}
	switch {
	case want.CidrIPv4 != nil:
		p.IpRanges = []types.IpRange{{CidrIp: want.CidrIPv4, Description: desc}}
	case want.CidrIPv6 != nil:
		p.Ipv6Ranges = []types.Ipv6Range{{CidrIpv6: want.CidrIPv6, Description: desc}}
	case want.PrefixList != nil:
		p.PrefixListIds = []types.PrefixListId{{PrefixListId: want.PrefixList, Description: desc}}
	case want.Source != nil:
		src, ok := m.g.id(*want.Source)
		if !ok {
			return p, fmt.Errorf("source group %s: %w", *want.Source, errNoGroup)
		}
		p.UserIdGroupPairs = []types.UserIdGroupPair{{GroupId: aws.String(src), Description: desc}}
	}
	return p, nil
}

func (m *ruleMapper) Create(ctx context.Context, call module.Call, want Rule) (Rule, error) {
	groupID, ok := m.g.id(want.Group)
	if !ok {
		return Rule{}, fmt.Errorf("group %s: %w", want.Group, errNoGroup)
	}
	owner, _ := m.g.ref(groupID)
	perm, err := m.permission(want)
	if err != nil {
		return Rule{}, err
	}
	rules, err := authorize(ctx, m.g.c.Region(owner.region), want.Egress, groupID, perm)
	if ec2x.Code(err) == "InvalidPermission.Duplicate" {
		// Already there (an earlier attempt, or AWS's default egress rule).
		return m.find(ctx, owner.region, groupID, want)
	}
	if err != nil {
		return Rule{}, ec2x.Terminal.Classify(err, "authorize rule on %s", groupID)
	}
	if len(rules) != 1 {
		return m.find(ctx, owner.region, groupID, want)
	}
	want.ID, want.Region = aws.ToString(rules[0].SecurityGroupRuleId), owner.region
	return want, nil
}

// authorize adds one permission to a group, ingress or egress, and returns
// the rules AWS made of it.
func authorize(ctx context.Context, cl *ec2.Client, egress bool, groupID string, perm types.IpPermission) ([]types.SecurityGroupRule, error) {
	perms := []types.IpPermission{perm}
	if egress {
		out, err := cl.AuthorizeSecurityGroupEgress(ctx, &ec2.AuthorizeSecurityGroupEgressInput{GroupId: aws.String(groupID), IpPermissions: perms})
		if err != nil {
			return nil, err
		}
		return out.SecurityGroupRules, nil
	}
	out, err := cl.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(groupID), IpPermissions: perms})
	if err != nil {
		return nil, err
	}
	return out.SecurityGroupRules, nil
}

// cloudID is a rule's identity, as the engine renders it.
func cloudID(r Rule) (string, error) {
	rec, err := ruleTable.Record(r)
	if err != nil {
		return "", fmt.Errorf("rule on %s: %w", r.Group, err)
	}
	return module.CloudIDOf(ruleTable.Table(), rec), nil
}

// find reads back the group's rule with want's identity.
func (m *ruleMapper) find(ctx context.Context, region, groupID string, want Rule) (Rule, error) {
	cid, err := cloudID(want)
	if err != nil {
		return Rule{}, err
	}
	rules, err := regional.Pages(ctx, ec2.NewDescribeSecurityGroupRulesPaginator(m.g.c.Region(region), &ec2.DescribeSecurityGroupRulesInput{
		Filters: []types.Filter{{Name: aws.String("group-id"), Values: []string{groupID}}}, MaxResults: aws.Int32(ec2x.PageSize)}), rulesOf)
	if err != nil {
		return Rule{}, fmt.Errorf("read the rules of %s: %w", groupID, err)
	}
	for _, r := range rules {
		if got := m.rule(region, r); got != nil {
			if id, err := cloudID(*got); err == nil && id == cid {
				return *got, nil
			}
		}
	}
	return Rule{}, fmt.Errorf("rule %s on %s: AWS says it exists but does not list it", cid, groupID)
}

// Update changes the description; anything else is another rule.
func (m *ruleMapper) Update(ctx context.Context, call module.Call, want, have Rule) (Rule, error) {
	wantID, err := cloudID(want)
	if err != nil {
		return Rule{}, err
	}
	haveID, err := cloudID(have)
	if err != nil {
		return Rule{}, err
	}
	if wantID != haveID {
		return Rule{}, module.ErrReplace
	}
	groupID, ok := m.g.id(have.Group)
	if !ok {
		return Rule{}, fmt.Errorf("rule %s: group %s: %w", have.ID, have.Group, errNoGroup)
	}
	cl := m.g.c.Region(have.Region)
	desc := []types.SecurityGroupRuleDescription{{SecurityGroupRuleId: aws.String(have.ID), Description: aws.String(want.Description)}}
	if have.Egress {
		_, err = cl.UpdateSecurityGroupRuleDescriptionsEgress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsEgressInput{
			GroupId: aws.String(groupID), SecurityGroupRuleDescriptions: desc})
	} else {
		_, err = cl.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
			GroupId: aws.String(groupID), SecurityGroupRuleDescriptions: desc})
	}
	if err != nil {
		return Rule{}, fmt.Errorf("describe rule %s: %w", have.ID, err)
	}
	have.Description = want.Description
	return have, nil
}

// Delete revokes the rule. Its group is the one its record names: a group
// no longer known is gone, and its rules with it.
func (m *ruleMapper) Delete(ctx context.Context, call module.Call, have Rule) error {
	groupID, ok := m.g.id(have.Group)
	if !ok {
		return nil
	}
	cl := m.g.c.Region(have.Region)
	ids := []string{have.ID}
	var err error
	if have.Egress {
		_, err = cl.RevokeSecurityGroupEgress(ctx, &ec2.RevokeSecurityGroupEgressInput{GroupId: aws.String(groupID), SecurityGroupRuleIds: ids})
	} else {
		_, err = cl.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(groupID), SecurityGroupRuleIds: ids})
	}
	if err := module.Deleted(err, "InvalidSecurityGroupRuleId.NotFound", "InvalidGroup.NotFound", "InvalidPermission.NotFound"); err != nil {
		return fmt.Errorf("revoke rule %s: %w", have.ID, err)
	}
	return nil
}

var _ module.MapperOf[Rule] = (*ruleMapper)(nil)
