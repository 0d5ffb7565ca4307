package aws_security_group

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

type ruleMapper struct {
	g *groups
	t module.Table // security_group_rule's declaration
}

// portless reports whether a protocol has no ports: AWS reports -1 for
// them, the table NULL.
func portless(protocol string) bool {
	switch protocol {
	case "tcp", "udp", "icmp", "icmpv6":
		return false
	}
	return true
}

// record renders a rule; nil when a group it names is not known (created
// after the groups were read, or in another account).
func (m *ruleMapper) record(region string, r types.SecurityGroupRule) module.Record {
	owner, ok := m.g.ref(aws.ToString(r.GroupId))
	if !ok {
		return nil
	}
	rec := module.Record{
		"rule_id": aws.ToString(r.SecurityGroupRuleId), "security_group_id": owner.cid,
		"is_egress": aws.ToBool(r.IsEgress), "ip_protocol": aws.ToString(r.IpProtocol),
		"description": aws.ToString(r.Description), "region": region,
	}
	if !portless(rec.String("ip_protocol")) {
		// Numbers as the engine has them: find compares identities.
		rec["from_port"] = module.Number(int64(aws.ToInt32(r.FromPort)))
		rec["to_port"] = module.Number(int64(aws.ToInt32(r.ToPort)))
	}
	for col, v := range map[string]*string{"cidr_ipv4": r.CidrIpv4, "cidr_ipv6": r.CidrIpv6, "prefix_list_id": r.PrefixListId} {
		if v != nil {
			rec[col] = *v
		}
	}
	if r.ReferencedGroupInfo != nil {
		src, ok := m.g.ref(aws.ToString(r.ReferencedGroupInfo.GroupId))
		if !ok {
			return nil
		}
		rec["source_security_group_id"] = src.cid
	}
	return rec
}

// Read lists the rules of every region in scope
// (DescribeSecurityGroupRules, paginated) of the groups the group mapper
// read.
func (m *ruleMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return regional.List(ctx, m.g.c.Clients, call.Scope, ec2x.Terminal, "describe security group rules",
		func(cl *ec2.Client) *ec2.DescribeSecurityGroupRulesPaginator {
			return ec2.NewDescribeSecurityGroupRulesPaginator(cl, &ec2.DescribeSecurityGroupRulesInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		rulesOf, m.record)
}

func rulesOf(page *ec2.DescribeSecurityGroupRulesOutput) []types.SecurityGroupRule {
	return page.SecurityGroupRules
}

// errNoGroup means a rule's group has no id yet (it is created in the same
// cycle): retrying after the group exists works.
var errNoGroup = errors.New("security group not known in the cloud yet")

// permission is the IpPermissions entry of a rule.
func (m *ruleMapper) permission(want module.Record) (types.IpPermission, error) {
	p := types.IpPermission{IpProtocol: aws.String(want.String("ip_protocol"))}
	if !portless(want.String("ip_protocol")) {
		p.FromPort = aws.Int32(int32(want.Int("from_port")))
		p.ToPort = aws.Int32(int32(want.Int("to_port")))
	}
	desc := aws.String(want.String("description"))
	if want.String("description") == "" {
		desc = nil
	}
	switch {
	case want["cidr_ipv4"] != nil:
		p.IpRanges = []types.IpRange{{CidrIp: aws.String(want.String("cidr_ipv4")), Description: desc}}
	case want["cidr_ipv6"] != nil:
		p.Ipv6Ranges = []types.Ipv6Range{{CidrIpv6: aws.String(want.String("cidr_ipv6")), Description: desc}}
	case want["prefix_list_id"] != nil:
		p.PrefixListIds = []types.PrefixListId{{PrefixListId: aws.String(want.String("prefix_list_id")), Description: desc}}
	case want["source_security_group_id"] != nil:
		src, ok := m.g.id(want.String("source_security_group_id"))
		if !ok {
			return p, fmt.Errorf("source group %s: %w", want.String("source_security_group_id"), errNoGroup)
		}
		p.UserIdGroupPairs = []types.UserIdGroupPair{{GroupId: aws.String(src), Description: desc}}
	}
	return p, nil
}

func (m *ruleMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	groupID, ok := m.g.id(want.String("security_group_id"))
	if !ok {
		return nil, fmt.Errorf("group %s: %w", want.String("security_group_id"), errNoGroup)
	}
	owner, _ := m.g.ref(groupID)
	perm, err := m.permission(want)
	if err != nil {
		return nil, err
	}
	rules, err := authorize(ctx, m.g.c.Region(owner.region), want.Bool("is_egress"), groupID, perm)
	if ec2x.Code(err) == "InvalidPermission.Duplicate" {
		// Already there (an earlier attempt, or AWS's default egress rule).
		return m.find(ctx, owner.region, groupID, want)
	}
	if err != nil {
		return nil, ec2x.Terminal.Classify(err, "authorize rule on %s", groupID)
	}
	if len(rules) != 1 {
		return m.find(ctx, owner.region, groupID, want)
	}
	got := declared(m.t, want)
	got["rule_id"] = aws.ToString(rules[0].SecurityGroupRuleId)
	got["region"] = owner.region
	return got, nil
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

// find reads back the group's rule with want's identity.
func (m *ruleMapper) find(ctx context.Context, region, groupID string, want module.Record) (module.Record, error) {
	cid := module.CloudIDOf(m.t, want)
	rules, err := regional.Pages(ctx, ec2.NewDescribeSecurityGroupRulesPaginator(m.g.c.Region(region), &ec2.DescribeSecurityGroupRulesInput{
		Filters: []types.Filter{{Name: aws.String("group-id"), Values: []string{groupID}}}, MaxResults: aws.Int32(ec2x.PageSize)}), rulesOf)
	if err != nil {
		return nil, fmt.Errorf("read the rules of %s: %w", groupID, err)
	}
	for _, r := range rules {
		if rec := m.record(region, r); rec != nil && module.CloudIDOf(m.t, rec) == cid {
			return rec, nil
		}
	}
	return nil, fmt.Errorf("rule %s on %s: AWS says it exists but does not list it", cid, groupID)
}

// Update changes the description; anything else is another rule.
func (m *ruleMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	if module.CloudIDOf(m.t, want) != module.CloudIDOf(m.t, have) {
		return nil, module.ErrReplace
	}
	groupID, ok := m.g.id(have.String("security_group_id"))
	if !ok {
		return nil, fmt.Errorf("rule %s: group %s: %w", have.String("rule_id"), have.String("security_group_id"), errNoGroup)
	}
	cl := m.g.c.Region(have.String("region"))
	desc := []types.SecurityGroupRuleDescription{{SecurityGroupRuleId: aws.String(have.String("rule_id")), Description: aws.String(want.String("description"))}}
	var err error
	if have.Bool("is_egress") {
		_, err = cl.UpdateSecurityGroupRuleDescriptionsEgress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsEgressInput{
			GroupId: aws.String(groupID), SecurityGroupRuleDescriptions: desc})
	} else {
		_, err = cl.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{
			GroupId: aws.String(groupID), SecurityGroupRuleDescriptions: desc})
	}
	if err != nil {
		return nil, fmt.Errorf("describe rule %s: %w", have.String("rule_id"), err)
	}
	got := maps.Clone(have)
	got["description"] = want["description"]
	return got, nil
}

// Delete revokes the rule. Its group is the one its record names: a group
// no longer known is gone, and its rules with it.
func (m *ruleMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	groupID, ok := m.g.id(have.String("security_group_id"))
	if !ok {
		return nil
	}
	cl := m.g.c.Region(have.String("region"))
	ids := []string{have.String("rule_id")}
	var err error
	if have.Bool("is_egress") {
		_, err = cl.RevokeSecurityGroupEgress(ctx, &ec2.RevokeSecurityGroupEgressInput{GroupId: aws.String(groupID), SecurityGroupRuleIds: ids})
	} else {
		_, err = cl.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(groupID), SecurityGroupRuleIds: ids})
	}
	if err := module.Deleted(err, "InvalidSecurityGroupRuleId.NotFound", "InvalidGroup.NotFound", "InvalidPermission.NotFound"); err != nil {
		return fmt.Errorf("revoke rule %s: %w", have.String("rule_id"), err)
	}
	return nil
}
