package aws_security_group

import (
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

// CloudTrail logs EC2's calls with their parameters and response as EC2's
// XML names them, lists as sets ({"items": [...]}):
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html
// A group is known by its name in its VPC, which most calls do not say
// (they name the group by id): those ids are the groups the last read
// found (groups.ref), and a group it did not find is left to the next
// read.

var (
	_ module.Noticer = (*groupMapper)(nil)
	_ module.Noticer = (*ruleMapper)(nil)
)

// Noticed names the groups an EC2 call created, deleted or tagged:
// CreateSecurityGroup's requestParameters groupName and vpcId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html;
// a group of the default VPC, whose request names no VPC, is left to the
// next read), DeleteSecurityGroup's requestParameters.groupId, and the
// sg- ids of CreateTags and DeleteTags.
func (m *groupMapper) Noticed(ev module.Event) []string {
	switch {
	case trail.Is(ev, trail.EC2, "CreateSecurityGroup"):
		if cid := m.g.created(ev); cid != "" {
			return []string{cid}
		}
		return nil
	case trail.Is(ev, trail.EC2, "DeleteSecurityGroup"):
		return m.g.known(trail.Strings(ev.Request, "groupId"))
	}
	return m.g.known(trail.EC2Tagged(ev, "sg-"))
}

// created is the identity of the group a CreateSecurityGroup event made;
// "" when its request names no VPC.
func (g *groups) created(ev module.Event) string {
	name, vpc := trail.String(ev.Request, "groupName"), trail.String(ev.Request, "vpcId")
	if name == "" || vpc == "" {
		return ""
	}
	return ec2x.GroupCloudID(g.t, vpc, name)
}

// known are the identities of the groups of ids the last read found.
func (g *groups) known(ids []string) []string {
	var cids []string
	for _, id := range ids {
		if ref, ok := g.ref(id); ok {
			cids = append(cids, ref.cid)
		}
	}
	return trail.Unique(cids)
}

// resetRules makes the rules known by id those of a read, but for the
// regions whose read failed: their rules stay as last seen.
func (g *groups) resetRules(found []Rule, failed map[string]error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	old := g.rules
	g.rules = make(map[string]Rule, len(found))
	for id, r := range old {
		if _, kept := failed[r.Region]; kept {
			g.rules[id] = r
		}
	}
	for _, r := range found {
		g.rules[r.ID] = r
	}
}

// ruleByID is the rule of a rule id the last read of rules found.
func (g *groups) ruleByID(id string) (Rule, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.rules[id]
	return r, ok
}

// Noticed names the rules an EC2 call added, removed or described, by
// what they allow (the table's identity), of groups the last read found:
//
//   - AuthorizeSecurityGroupIngress and -Egress: the rules AWS made,
//     responseElements.securityGroupRuleSet.items[]
//     (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_AuthorizeSecurityGroupIngress.html);
//
//   - RevokeSecurityGroupIngress and -Egress: the rules AWS removed,
//     responseElements.revokedSecurityGroupRuleSet.items[]
//     (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RevokeSecurityGroupIngress.html),
//     else the request's groupId and ipPermissions;
//
//   - UpdateSecurityGroupRuleDescriptionsIngress and -Egress: the
//     request's groupId and ipPermissions;
//
//   - CreateSecurityGroup: the egress rule AWS gives a new group (all
//     traffic to 0.0.0.0/0), when the request names the VPC
//     (https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html).
//
//   - ModifySecurityGroupRules: the rules of the request's
//     securityGroupRuleSet.items[].securityGroupRuleId as they were, and
//     as its securityGroupRule makes them
//     (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifySecurityGroupRules.html).
//
// A rule named by rule id alone (a revoke or a description's update by
// SecurityGroupRuleIds) is the one the last read of rules found; one it
// did not find is left to the next read.
func (m *ruleMapper) Noticed(ev module.Event) []string {
	if ev.Source != trail.EC2 {
		return nil
	}
	egress := strings.HasSuffix(ev.Name, "Egress")
	var rules []types.SecurityGroupRule
	var byID []string // rules named by rule id alone
	switch ev.Name {
	case "AuthorizeSecurityGroupIngress", "AuthorizeSecurityGroupEgress":
		rules = loggedRules(trail.Values(ev.Response, "securityGroupRuleSet", "items"), egress)
	case "RevokeSecurityGroupIngress", "RevokeSecurityGroupEgress":
		rules = loggedRules(trail.Values(ev.Response, "revokedSecurityGroupRuleSet", "items"), egress)
		if len(rules) == 0 {
			rules = permissionRules(trail.String(ev.Request, "groupId"), egress, trail.Values(ev.Request, "ipPermissions", "items"))
			byID = trail.Find(ev.Request, "securityGroupRuleId")
		}
	case "UpdateSecurityGroupRuleDescriptionsIngress", "UpdateSecurityGroupRuleDescriptionsEgress":
		rules = permissionRules(trail.String(ev.Request, "groupId"), egress, trail.Values(ev.Request, "ipPermissions", "items"))
		byID = trail.Find(ev.Request, "securityGroupRuleId")
	case "ModifySecurityGroupRules":
		byID, rules = m.modified(ev)
	case "CreateSecurityGroup":
		if cid := m.g.created(ev); cid != "" && trail.String(ev.Response, "groupId") != "" {
			// The group is not read yet: its identity is the request's.
			r := Rule{Group: cid, Egress: true, Protocol: "-1", CidrIPv4: aws.String("0.0.0.0/0")}
			if id, err := cloudID(r); err == nil {
				return []string{id}
			}
		}
		return nil
	}
	var ids []string
	for _, id := range byID {
		if r, ok := m.g.ruleByID(id); ok {
			if cid, err := cloudID(r); err == nil {
				ids = append(ids, cid)
			}
		}
	}
	for _, r := range rules {
		if got := m.rule(ev.Region, r); got != nil {
			if id, err := cloudID(*got); err == nil {
				ids = append(ids, id)
			}
		}
	}
	return trail.Unique(ids)
}

// modified are a ModifySecurityGroupRules call's rules: the ids of
// those it changed, and what it made of each (the rule as the last read
// found it, with what the request's securityGroupRule says: a
// SecurityGroupRuleRequest, which replaces the rule's protocol, ports and
// target).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_SecurityGroupRuleRequest.html
func (m *ruleMapper) modified(ev module.Event) (ids []string, rules []types.SecurityGroupRule) {
	group := trail.String(ev.Request, "groupId")
	for _, it := range trail.Values(ev.Request, "securityGroupRuleSet", "items") {
		id := trail.String(it, "securityGroupRuleId")
		old, ok := m.g.ruleByID(id)
		req := trail.Field(it, "securityGroupRule")
		if !ok || req == nil || group == "" {
			continue
		}
		ids = append(ids, id)
		r := loggedRules([]any{req}, old.Egress)[0]
		r.GroupId = aws.String(group)
		rules = append(rules, r)
	}
	return ids, rules
}

// loggedRules reads the rules of a logged SecurityGroupRule or
// RevokedSecurityGroupRule set (their members: groupId, isEgress,
// ipProtocol, fromPort, toPort, cidrIpv4, cidrIpv6, prefixListId, and
// referencedGroupInfo.groupId or referencedGroupId); a rule that does not
// say its direction is the call's.
func loggedRules(items []any, egress bool) []types.SecurityGroupRule {
	var rules []types.SecurityGroupRule
	for _, it := range items {
		r := types.SecurityGroupRule{
			GroupId:      text(trail.Field(it, "groupId")),
			IsEgress:     aws.Bool(egress),
			IpProtocol:   aws.String(protocol(trail.String(it, "ipProtocol"))),
			FromPort:     number(trail.Field(it, "fromPort")),
			ToPort:       number(trail.Field(it, "toPort")),
			CidrIpv4:     text(trail.Field(it, "cidrIpv4")),
			CidrIpv6:     text(trail.Field(it, "cidrIpv6")),
			PrefixListId: text(trail.Field(it, "prefixListId")),
		}
		if b, ok := trail.Bool(trail.Field(it, "isEgress")); ok {
			r.IsEgress = aws.Bool(b)
		}
		src := trail.String(it, "referencedGroupInfo", "groupId")
		if src == "" {
			src = trail.String(it, "referencedGroupId")
		}
		if src != "" {
			r.ReferencedGroupInfo = &types.ReferencedSecurityGroup{GroupId: aws.String(src)}
		}
		rules = append(rules, r)
	}
	return rules
}

// permissionRules are the rules of a group's logged IpPermissions (each
// permission's ipRanges, ipv6Ranges, prefixListIds and groups, a rule
// per target, as AWS makes them).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpPermission.html
func permissionRules(group string, egress bool, perms []any) []types.SecurityGroupRule {
	if group == "" {
		return nil
	}
	var rules []types.SecurityGroupRule
	for _, p := range perms {
		base := types.SecurityGroupRule{
			GroupId: aws.String(group), IsEgress: aws.Bool(egress),
			IpProtocol: aws.String(protocol(trail.String(p, "ipProtocol"))),
			FromPort:   number(trail.Field(p, "fromPort")), ToPort: number(trail.Field(p, "toPort")),
		}
		for _, c := range trail.Strings(p, "ipRanges", "items", "cidrIp") {
			r := base
			r.CidrIpv4 = aws.String(c)
			rules = append(rules, r)
		}
		for _, c := range trail.Strings(p, "ipv6Ranges", "items", "cidrIpv6") {
			r := base
			r.CidrIpv6 = aws.String(c)
			rules = append(rules, r)
		}
		for _, id := range trail.Strings(p, "prefixListIds", "items", "prefixListId") {
			r := base
			r.PrefixListId = aws.String(id)
			rules = append(rules, r)
		}
		for _, id := range trail.Strings(p, "groups", "items", "groupId") {
			r := base
			r.ReferencedGroupInfo = &types.ReferencedSecurityGroup{GroupId: aws.String(id)}
			rules = append(rules, r)
		}
	}
	return rules
}

// protocol is a rule's protocol as AWS reports it (and the table's
// security_group_rule_normalize writes it): all is -1, the numbers of
// tcp, udp, icmp and icmpv6 their names.
func protocol(p string) string {
	p = strings.ToLower(p)
	switch p {
	case "all":
		return "-1"
	case "6":
		return "tcp"
	case "17":
		return "udp"
	case "1":
		return "icmp"
	case "58":
		return "icmpv6"
	}
	return p
}

// text is a logged string value; nil for none.
func text(v any) *string {
	if s, ok := trail.Text(v); ok && s != "" {
		return aws.String(s)
	}
	return nil
}

// number is a logged integer value; nil for none.
func number(v any) *int32 {
	if n, ok := trail.Int(v); ok {
		return aws.Int32(n)
	}
	return nil
}
