package emulator

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ec2TextChars are the characters AWS allows in VPC security group names
// and descriptions and in rule descriptions, besides letters and digits.
const ec2TextChars = ". _-:/()#,@[]+=&;{}!$*"

// ec2ValidText checks a group name or description, or a rule description
// (optional: it may be empty).
func ec2ValidText(what, v string, optional bool) error {
	bad := v == "" && !optional || utf8.RuneCountInString(v) > 255
	for _, c := range v {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune(ec2TextChars, c)) {
			bad = true
		}
	}
	if bad {
		return ec2Errorf("InvalidParameterValue",
			"Invalid %s '%s'. Valid values are strings of 1 to 255 characters from the following set: a-zA-Z0-9%s", what, v, ec2TextChars)
	}
	return nil
}

// createSecurityGroup creates a group (GroupName, GroupDescription, VpcId
// or the default VPC, TagSpecification) with AWS's default egress rule.
func (s *ec2Service) createSecurityGroup(rg *ec2Region, p ec2Params, x *ec2XML) error {
	name, err := p.required("GroupName")
	if err != nil {
		return err
	}
	desc, err := p.required("GroupDescription")
	if err != nil {
		return err
	}
	if err := ec2ValidText("security group name", name, false); err != nil {
		return err
	}
	if err := ec2ValidText("security group description", desc, false); err != nil {
		return err
	}
	if name == "default" {
		return ec2Errorf("InvalidParameterValue", "Value (default) for parameter GroupName is invalid. The name 'default' is reserved.")
	}
	if strings.HasPrefix(name, "sg-") {
		return ec2Errorf("InvalidParameterValue", "Value (%s) for parameter GroupName is invalid. Group names may not be in the format sg-*.", name)
	}
	vpcID := p.Get("VpcId")
	if vpcID == "" {
		if vpcID = rg.defaultVpc; vpcID == "" {
			return ec2Errorf("VPCIdNotSpecified", "No default VPC for this user")
		}
	}
	vpc, err := rg.vpcs.find(vpcID)
	if err != nil {
		return err
	}
	if _, ok := vpc.groupNames[name]; ok {
		return ec2Errorf("InvalidGroup.Duplicate", "The security group '%s' already exists for VPC '%s'", name, vpcID)
	}
	tags, err := ec2TagSpecifications(p, "security-group")
	if err != nil {
		return err
	}
	g := s.addGroup(rg, vpc, name, desc, tags)
	x.str("return", "true")
	x.str("groupId", g.id)
	x.str("securityGroupArn", s.arn(rg, "security-group", g.id))
	g.tags.write(x)
	return nil
}

// group returns the group a request names by GroupId, or (where AWS
// allows it: byName) by GroupName in the default VPC.
func (rg *ec2Region) group(p ec2Params, byName bool) (*ec2Group, error) {
	if id := p.Get("GroupId"); id != "" {
		return rg.groups.find(id)
	}
	if name := p.Get("GroupName"); byName && name != "" {
		return rg.defaultVpcGroup(name)
	}
	if byName {
		return nil, ec2Errorf("MissingParameter", "The request must contain the parameter groupName or groupId")
	}
	return nil, ec2Errorf("MissingParameter", "The request must contain the parameter groupId")
}

// defaultVpcGroup returns the group of the default VPC called name.
func (rg *ec2Region) defaultVpcGroup(name string) (*ec2Group, error) {
	if rg.defaultVpc == "" {
		return nil, ec2Errorf("InvalidGroup.NotFound", "The security group '%s' does not exist: there is no default VPC", name)
	}
	if g := rg.groupNamed(rg.defaultVpc, name); g != nil {
		return g, nil
	}
	return nil, ec2Errorf("InvalidGroup.NotFound", "The security group '%s' does not exist in default VPC '%s'", name, rg.defaultVpc)
}

// describeSecurityGroups lists groups (GroupId.N, GroupName.N in the
// default VPC, Filter, MaxResults 5..1000, NextToken) with their rules in
// the legacy grouped form (IpPermissions, IpPermissionsEgress).
func (s *ec2Service) describeSecurityGroups(rg *ec2Region, p ec2Params, x *ec2XML) error {
	pg, _, keep, err := rg.groups.listing(p, map[string]ec2Field[ec2Group]{
		"group-id":    func(g *ec2Group) string { return g.id },
		"group-name":  func(g *ec2Group) string { return g.name },
		"description": func(g *ec2Group) string { return g.description },
		"vpc-id":      func(g *ec2Group) string { return g.vpcID },
		"owner-id":    func(*ec2Group) string { return s.account },
	})
	if err != nil {
		return err
	}
	want := p.strings("GroupId")
	for _, name := range p.strings("GroupName") {
		g, err := rg.defaultVpcGroup(name)
		if err != nil {
			return err
		}
		want = append(want, g.id)
	}
	ids, err := rg.groups.selected(want)
	if err != nil {
		return err
	}
	rg.groups.writePage(x, "securityGroupInfo", ids, pg, keep, func(g *ec2Group) {
		x.str("ownerId", s.account)
		x.str("groupId", g.id)
		x.str("groupName", g.name)
		x.str("groupDescription", g.description)
		x.str("vpcId", g.vpcID)
		x.str("securityGroupArn", s.arn(rg, "security-group", g.id))
		ec2WritePermissions(x, "ipPermissions", g.rules, false)
		ec2WritePermissions(x, "ipPermissionsEgress", g.rules, true)
		g.tags.write(x)
	})
	return nil
}

// ec2WritePermissions writes the rules of one direction the legacy way: one
// IpPermission per protocol and port range, holding all their targets.
func ec2WritePermissions(x *ec2XML, tag string, rules []*ec2Rule, egress bool) {
	var perms [][]ec2Perm // rules by protocol and port range, in order of first appearance
	for _, r := range rules {
		if r.egress != egress {
			continue
		}
		i := slices.IndexFunc(perms, func(ps []ec2Perm) bool {
			return ps[0].proto == r.proto && ps[0].from == r.from && ps[0].to == r.to
		})
		if i < 0 {
			perms = append(perms, nil)
			i = len(perms) - 1
		}
		perms[i] = append(perms[i], r.ec2Perm)
	}
	x.open(tag)
	for _, ps := range perms {
		ec2WritePermission(x, ps)
	}
	x.close(tag)
}

// ec2PermTargets are the lists of an IpPermission's targets, one per kind
// of target: the list's element, its items' target element, the target,
// whether items name the target's owner (userId) first.
var ec2PermTargets = []struct {
	list, elem string
	target     func(*ec2Perm) string
	owner      bool
}{
	{"groups", "groupId", func(p *ec2Perm) string { return p.refGroup }, true},
	{"ipRanges", "cidrIp", func(p *ec2Perm) string { return p.cidr4 }, false},
	{"ipv6Ranges", "cidrIpv6", func(p *ec2Perm) string { return p.cidr6 }, false},
	{"prefixListIds", "prefixListId", func(p *ec2Perm) string { return p.prefixList }, false},
}

// ec2WritePermission writes an IpPermission item of rules sharing their
// protocol and ports.
func ec2WritePermission(x *ec2XML, ps []ec2Perm) {
	x.open("item")
	x.str("ipProtocol", ps[0].proto)
	if ps[0].proto != "-1" {
		x.int("fromPort", ps[0].from)
		x.int("toPort", ps[0].to)
	}
	for _, t := range ec2PermTargets {
		x.open(t.list)
		for i := range ps {
			p := &ps[i]
			target := t.target(p)
			if target == "" {
				continue
			}
			x.open("item")
			if t.owner {
				x.str("userId", p.refUser)
			}
			x.str(t.elem, target)
			x.opt("description", p.description)
			x.close("item")
		}
		x.close(t.list)
	}
	x.close("item")
}

// deleteSecurityGroup deletes a group (GroupId, or GroupName in the
// default VPC) and its rules; not a VPC's default group, nor one another
// group's rule references.
func (s *ec2Service) deleteSecurityGroup(rg *ec2Region, p ec2Params, x *ec2XML) error {
	g, err := rg.group(p, true)
	if err != nil {
		return err
	}
	if g.name == "default" {
		return ec2Errorf("CannotDelete", "the specified group: \"%s\" name: \"default\" cannot be deleted by a user", g.id)
	}
	// A group that another group's rule references, or that an instance
	// (not terminated) or a load balancer uses, has a dependent object:
	// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html
	if g.refs > 0 || g.lbRefs > 0 || rg.instanceUsing(g.id) != nil {
		return ec2Errorf("DependencyViolation", "resource %s has a dependent object", g.id)
	}
	rg.removeGroup(g)
	x.str("return", "true")
	x.str("groupId", g.id)
	return nil
}

// ec2Protocol normalises a rule's protocol and ports like AWS: all
// protocols ("-1", "all") and protocols without ports have ports -1;
// tcp and udp need both ports; icmp and icmpv6 take a type and a code.
func ec2Protocol(proto string, from, to int32, fromSet, toSet bool) (string, int32, int32, error) {
	switch strings.ToLower(proto) {
	case "-1", "all":
		return "-1", -1, -1, nil
	case "tcp", "6", "udp", "17":
		name := "tcp"
		if p := strings.ToLower(proto); p == "udp" || p == "17" {
			name = "udp"
		}
		if !fromSet || !toSet {
			return "", 0, 0, ec2Errorf("InvalidParameterValue",
				"Invalid value 'Must specify both from and to ports with TCP/UDP.' for portRange")
		}
		if from < 0 || to > 65535 || from > to {
			return "", 0, 0, ec2Errorf("InvalidParameterValue",
				"Invalid port range %d-%d: ports must be from 0 to 65535, from port not above to port", from, to)
		}
		return name, from, to, nil
	case "icmp", "1", "icmpv6", "58":
		name := "icmp"
		if p := strings.ToLower(proto); p == "icmpv6" || p == "58" {
			name = "icmpv6"
		}
		if !fromSet {
			from = -1
		}
		if !toSet {
			to = -1
		}
		if from < -1 || from > 255 || to < -1 || to > 255 {
			return "", 0, 0, ec2Errorf("InvalidParameterValue",
				"Invalid ICMP type %d or code %d: they must be from -1 to 255", from, to)
		}
		return name, from, to, nil
	}
	n, err := strconv.Atoi(proto)
	if err != nil || n < 0 || n > 255 {
		return "", 0, 0, ec2Errorf("InvalidParameterValue", "Invalid value '%s' for IP protocol. Unknown protocol.", proto)
	}
	return strconv.Itoa(n), -1, -1, nil
}

// checkTarget validates the one target of a rule of g, filling in a
// referenced group's owner.
func (s *ec2Service) checkTarget(rg *ec2Region, g *ec2Group, p *ec2Perm) error {
	set := 0
	for _, t := range []string{p.cidr4, p.cidr6, p.prefixList, p.refGroup} {
		if t != "" {
			set++
		}
	}
	if set != 1 {
		return ec2Errorf("InvalidParameterValue",
			"A rule needs exactly one of a CIDR block, an IPv6 CIDR block, a prefix list and a security group")
	}
	switch {
	case p.cidr4 != "":
		if pfx, err := netip.ParsePrefix(p.cidr4); err != nil || !pfx.Addr().Is4() {
			return ec2Errorf("InvalidParameterValue", "CIDR block %s is malformed", p.cidr4)
		}
	case p.cidr6 != "":
		if pfx, err := netip.ParsePrefix(p.cidr6); err != nil || !pfx.Addr().Is6() || pfx.Addr().Is4In6() {
			return ec2Errorf("InvalidParameterValue", "CIDR block %s is malformed", p.cidr6)
		}
	case p.prefixList != "":
		if !strings.HasPrefix(p.prefixList, "pl-") {
			return ec2Errorf("InvalidPrefixListId.NotFound", "The prefix list ID '%s' does not exist", p.prefixList)
		}
	default:
		ref, err := rg.groups.find(p.refGroup)
		if err != nil {
			return err
		}
		if ref.vpcID != g.vpcID {
			return ec2Errorf("InvalidGroup.NotFound",
				"You have specified two resources that belong to different networks: %s is in %s, %s in %s", g.id, g.vpcID, ref.id, ref.vpcID)
		}
		p.refUser = s.account
	}
	return ec2ValidText("rule description", p.description, true)
}

// permissions reads the rules a request names, one per target:
// IpPermissions.N (IpProtocol, FromPort, ToPort, IpRanges.M.CidrIp,
// Ipv6Ranges.M.CidrIpv6, PrefixListIds.M.PrefixListId, Groups.M.GroupId
// or .GroupName, each with its Description), or the older top-level
// IpProtocol, FromPort, ToPort with CidrIp or SourceSecurityGroupName.
func (s *ec2Service) permissions(rg *ec2Region, g *ec2Group, p ec2Params) ([]ec2Perm, error) {
	var perms []ec2Perm
	for _, m := range p.members("IpPermissions") {
		base, err := ec2PermBase(p, m+".")
		if err != nil {
			return nil, err
		}
		start := len(perms)
		for _, t := range p.members(m + ".IpRanges") {
			perms = append(perms, ec2WithTarget(base, p, t, ec2Perm{cidr4: p.Get(t + ".CidrIp")}))
		}
		for _, t := range p.members(m + ".Ipv6Ranges") {
			perms = append(perms, ec2WithTarget(base, p, t, ec2Perm{cidr6: p.Get(t + ".CidrIpv6")}))
		}
		for _, t := range p.members(m + ".PrefixListIds") {
			perms = append(perms, ec2WithTarget(base, p, t, ec2Perm{prefixList: p.Get(t + ".PrefixListId")}))
		}
		for _, t := range p.members(m + ".Groups") {
			id := p.Get(t + ".GroupId")
			if name := p.Get(t + ".GroupName"); id == "" && name != "" {
				ref, err := rg.vpcGroup(g.vpcID, name)
				if err != nil {
					return nil, err
				}
				id = ref.id
			}
			perms = append(perms, ec2WithTarget(base, p, t, ec2Perm{refGroup: id}))
		}
		if len(perms) == start {
			return nil, ec2Errorf("MissingParameter", "%s has no source or destination (IpRanges, Ipv6Ranges, PrefixListIds or Groups)", m)
		}
	}
	if p.Has("IpProtocol") || p.Has("CidrIp") || p.Has("SourceSecurityGroupName") {
		base := ec2Perm{proto: "-1", from: -1, to: -1}
		if p.Has("IpProtocol") {
			var err error
			if base, err = ec2PermBase(p, ""); err != nil {
				return nil, err
			}
		}
		switch {
		case p.Get("CidrIp") != "":
			base.cidr4 = p.Get("CidrIp")
		case p.Get("SourceSecurityGroupName") != "":
			ref, err := rg.vpcGroup(g.vpcID, p.Get("SourceSecurityGroupName"))
			if err != nil {
				return nil, err
			}
			base.refGroup = ref.id
		}
		perms = append(perms, base)
	}
	if len(perms) == 0 {
		return nil, ec2Errorf("MissingParameter", "The request must contain the parameter ipPermissions")
	}
	for i := range perms {
		if err := s.checkTarget(rg, g, &perms[i]); err != nil {
			return nil, err
		}
	}
	return perms, nil
}

// ec2PermBase reads a permission's protocol and ports (prefix+IpProtocol,
// FromPort, ToPort).
func ec2PermBase(p ec2Params, prefix string) (ec2Perm, error) {
	proto, err := p.required(prefix + "IpProtocol")
	if err != nil {
		return ec2Perm{}, err
	}
	from, fromSet, err := p.integer(prefix + "FromPort")
	if err != nil {
		return ec2Perm{}, err
	}
	to, toSet, err := p.integer(prefix + "ToPort")
	if err != nil {
		return ec2Perm{}, err
	}
	var perm ec2Perm
	perm.proto, perm.from, perm.to, err = ec2Protocol(proto, from, to, fromSet, toSet)
	return perm, err
}

// ec2WithTarget is base with target's target and the Description of the
// target's parameters (prefix t).
func ec2WithTarget(base ec2Perm, p ec2Params, t string, target ec2Perm) ec2Perm {
	base.cidr4, base.cidr6, base.prefixList, base.refGroup = target.cidr4, target.cidr6, target.prefixList, target.refGroup
	base.description = p.Get(t + ".Description")
	return base
}

// vpcGroup returns the group called name in a VPC.
func (rg *ec2Region) vpcGroup(vpcID, name string) (*ec2Group, error) {
	if g := rg.groupNamed(vpcID, name); g != nil {
		return g, nil
	}
	return nil, ec2Errorf("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", name, vpcID)
}

// groupNamed returns the group called name in a VPC, nil if there is none.
func (rg *ec2Region) groupNamed(vpcID, name string) *ec2Group {
	if vpc := rg.vpcs.get(vpcID); vpc != nil {
		if id, ok := vpc.groupNames[name]; ok {
			return rg.groups.get(id)
		}
	}
	return nil
}

// ec2FindRule returns g's rule of a direction that is the same as perm.
func ec2FindRule(g *ec2Group, egress bool, perm ec2Perm) *ec2Rule {
	for _, r := range g.rules {
		if r.egress == egress && r.same(perm) {
			return r
		}
	}
	return nil
}

// authorize adds rules to a group, one per target, all or none: a rule
// that exists already fails the request with InvalidPermission.Duplicate.
func (s *ec2Service) authorize(rg *ec2Region, p ec2Params, x *ec2XML, egress bool) error {
	g, err := rg.group(p, !egress)
	if err != nil {
		return err
	}
	perms, err := s.permissions(rg, g, p)
	if err != nil {
		return err
	}
	for i, perm := range perms {
		if ec2FindRule(g, egress, perm) != nil || slices.ContainsFunc(perms[:i], perm.same) {
			return ec2Errorf("InvalidPermission.Duplicate", "the specified rule %q already exists", perm.peer())
		}
	}
	tags, err := ec2TagSpecifications(p, "security-group-rule")
	if err != nil {
		return err
	}
	x.str("return", "true")
	x.open("securityGroupRuleSet")
	for _, perm := range perms {
		r := s.addRule(rg, g, egress, perm, slices.Clone(tags))
		x.open("item")
		s.writeRule(rg, r, x)
		x.close("item")
	}
	x.close("securityGroupRuleSet")
	return nil
}

// revoke removes rules from a group: by SecurityGroupRuleId.N (all must
// exist) or by the permissions they allow (those that match nothing are
// returned as unknown; matching nothing at all is an error).
func (s *ec2Service) revoke(rg *ec2Region, p ec2Params, x *ec2XML, egress bool) error {
	g, err := rg.group(p, !egress)
	if err != nil {
		return err
	}
	var gone []*ec2Rule
	var unknown []ec2Perm
	if ids := p.strings("SecurityGroupRuleId"); len(ids) > 0 {
		if gone, err = ec2GroupRules(rg, g, egress, ids); err != nil {
			return err
		}
	} else {
		perms, err := s.permissions(rg, g, p)
		if err != nil {
			return err
		}
		for _, perm := range perms {
			if r := ec2FindRule(g, egress, perm); r != nil && !slices.Contains(gone, r) {
				gone = append(gone, r)
			} else if r == nil {
				unknown = append(unknown, perm)
			}
		}
		if len(gone) == 0 {
			return ec2Errorf("InvalidPermission.NotFound", "The specified rule does not exist in this security group.")
		}
	}
	x.str("return", "true")
	x.open("revokedSecurityGroupRuleSet")
	for _, r := range gone {
		rg.removeRule(r)
		x.open("item")
		x.str("securityGroupRuleId", r.id)
		x.str("groupId", g.id)
		ec2WriteRuleMatch(x, r)
		x.opt("referencedGroupId", r.refGroup)
		x.opt("description", r.description)
		x.close("item")
	}
	x.close("revokedSecurityGroupRuleSet")
	if len(unknown) > 0 {
		x.open("unknownIpPermissionSet")
		for _, perm := range unknown {
			ec2WritePermission(x, []ec2Perm{perm})
		}
		x.close("unknownIpPermissionSet")
	}
	return nil
}

// ec2GroupRules returns the rules with ids of g in one direction, or
// InvalidSecurityGroupRuleId.NotFound.
func ec2GroupRules(rg *ec2Region, g *ec2Group, egress bool, ids []string) ([]*ec2Rule, error) {
	var rules []*ec2Rule
	for _, id := range ids {
		r := rg.rules.get(id)
		if r == nil || r.group != g || r.egress != egress {
			return nil, rg.rules.notFound(id)
		}
		if !slices.Contains(rules, r) {
			rules = append(rules, r)
		}
	}
	return rules, nil
}

// ec2WriteRuleMatch writes what a rule matches, as SecurityGroupRule and
// RevokedSecurityGroupRule tell it: direction, protocol, ports, and a
// target other than a group.
func ec2WriteRuleMatch(x *ec2XML, r *ec2Rule) {
	x.bool("isEgress", r.egress)
	x.str("ipProtocol", r.proto)
	x.int("fromPort", r.from)
	x.int("toPort", r.to)
	x.opt("cidrIpv4", r.cidr4)
	x.opt("cidrIpv6", r.cidr6)
	x.opt("prefixListId", r.prefixList)
}

// writeRule writes a SecurityGroupRule's elements.
func (s *ec2Service) writeRule(rg *ec2Region, r *ec2Rule, x *ec2XML) {
	x.str("securityGroupRuleId", r.id)
	x.str("groupId", r.group.id)
	x.str("groupOwnerId", s.account)
	ec2WriteRuleMatch(x, r)
	if r.refGroup != "" {
		x.open("referencedGroupInfo")
		x.str("groupId", r.refGroup)
		x.str("userId", r.refUser)
		x.close("referencedGroupInfo")
	}
	x.opt("description", r.description)
	r.tags.write(x)
	x.str("securityGroupRuleArn", s.arn(rg, "security-group-rule", r.id))
}

// describeSecurityGroupRules lists rules (SecurityGroupRuleId.N, Filter
// group-id / security-group-rule-id / tag, MaxResults 5..1000,
// NextToken). A group-id filter without wildcards reads only those
// groups' rules.
func (s *ec2Service) describeSecurityGroupRules(rg *ec2Region, p ec2Params, x *ec2XML) error {
	pg, fs, keep, err := rg.rules.listing(p, map[string]ec2Field[ec2Rule]{
		"group-id":               func(r *ec2Rule) string { return r.group.id },
		"security-group-rule-id": func(r *ec2Rule) string { return r.id },
	})
	if err != nil {
		return err
	}
	var ids []string
	groupIDs, byGroup := ec2FilterValues(fs, "group-id")
	want := p.strings("SecurityGroupRuleId")
	if len(want) == 0 && byGroup && !slices.ContainsFunc(groupIDs, func(v string) bool { return strings.ContainsAny(v, `*?\`) }) {
		for _, id := range groupIDs {
			if g := rg.groups.get(id); g != nil {
				for _, r := range g.rules {
					ids = append(ids, r.id)
				}
			}
		}
		slices.Sort(ids)
		ids = slices.Compact(ids)
	} else if ids, err = rg.rules.selected(want); err != nil {
		return err
	}
	rg.rules.writePage(x, "securityGroupRuleSet", ids, pg, keep, func(r *ec2Rule) { s.writeRule(rg, r, x) })
	return nil
}

// modifySecurityGroupRules replaces rules of a group (GroupId,
// SecurityGroupRule.N.SecurityGroupRuleId and .SecurityGroupRule.*), all
// or none.
func (s *ec2Service) modifySecurityGroupRules(rg *ec2Region, p ec2Params, x *ec2XML) error {
	g, err := rg.groups.named(p, "GroupId")
	if err != nil {
		return err
	}
	members := p.members("SecurityGroupRule")
	if len(members) == 0 {
		return ec2Errorf("MissingParameter", "The request must contain the parameter SecurityGroupRule")
	}
	updates := make(map[*ec2Rule]ec2Perm, len(members))
	for _, m := range members {
		id, err := p.required(m + ".SecurityGroupRuleId")
		if err != nil {
			return err
		}
		r := rg.rules.get(id)
		if r == nil || r.group != g {
			return rg.rules.notFound(id)
		}
		q := m + ".SecurityGroupRule."
		perm, err := ec2PermBase(p, q)
		if err != nil {
			return err
		}
		perm.cidr4, perm.cidr6 = p.Get(q+"CidrIpv4"), p.Get(q+"CidrIpv6")
		perm.prefixList, perm.refGroup = p.Get(q+"PrefixListId"), p.Get(q+"ReferencedGroupId")
		perm.description = p.Get(q + "Description")
		if err := s.checkTarget(rg, g, &perm); err != nil {
			return err
		}
		updates[r] = perm
	}
	for r, perm := range updates {
		for _, o := range g.rules {
			other := o.ec2Perm
			if u, ok := updates[o]; ok {
				other = u
			}
			if o != r && o.egress == r.egress && other.same(perm) {
				return ec2Errorf("InvalidPermission.Duplicate", "the specified rule %q already exists", perm.peer())
			}
		}
	}
	for r, perm := range updates {
		rg.reference(r, -1)
		r.ec2Perm = perm
		rg.reference(r, 1)
	}
	x.str("return", "true")
	return nil
}

// updateDescriptions sets the descriptions of rules of a group, named by
// SecurityGroupRuleDescription.N (SecurityGroupRuleId, Description) or by
// the permissions they allow (IpPermissions, the descriptions of their
// targets), all or none.
func (s *ec2Service) updateDescriptions(rg *ec2Region, p ec2Params, x *ec2XML, egress bool) error {
	g, err := rg.group(p, true)
	if err != nil {
		return err
	}
	updates := map[*ec2Rule]string{}
	if members := p.members("SecurityGroupRuleDescription"); len(members) > 0 {
		for _, m := range members {
			rules, err := ec2GroupRules(rg, g, egress, []string{p.Get(m + ".SecurityGroupRuleId")})
			if err != nil {
				return err
			}
			desc := p.Get(m + ".Description")
			if err := ec2ValidText("rule description", desc, true); err != nil {
				return err
			}
			updates[rules[0]] = desc
		}
	} else {
		perms, err := s.permissions(rg, g, p)
		if err != nil {
			return err
		}
		for _, perm := range perms {
			r := ec2FindRule(g, egress, perm)
			if r == nil {
				return ec2Errorf("InvalidPermission.NotFound", "The specified rule %q does not exist in this security group.", perm.peer())
			}
			updates[r] = perm.description
		}
	}
	for r, desc := range updates {
		r.description = desc
	}
	x.str("return", "true")
	return nil
}
