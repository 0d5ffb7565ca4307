package emulator

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// ec2Region is the EC2 state of one region.
type ec2Region struct {
	name        string
	zones       []string
	dhcpOptions string // the region's DHCP options set, shared by its VPCs
	defaultVpc  string // the default VPC's id; "" once it is deleted

	vpcs    ec2Table[ec2Vpc]
	subnets ec2Table[ec2Subnet]
	groups  ec2Table[ec2Group]
	rules   ec2Table[ec2Rule]

	instances ec2Table[ec2Instance]
	tokens    map[string]*ec2Reservation // RunInstances' client tokens
}

type ec2Vpc struct {
	id, assocID, tenancy string
	prefix               netip.Prefix
	groupNames           map[string]string     // group name -> id, "default" included
	subnets              map[string]*ec2Subnet // by id
	tags                 ec2Tags
}

type ec2Subnet struct {
	id, vpcID, zone string
	prefix          netip.Prefix
	defaultForAz    bool
	tags            ec2Tags
	used            map[netip.Addr]bool // the addresses instances hold
	lbRefs          int                 // load balancers (ELBv2) in this subnet
}

type ec2Group struct {
	id, name, description, vpcID string
	rules                        []*ec2Rule // both directions, oldest first
	refs                         int        // rules of other groups that reference this one
	lbRefs                       int        // load balancers (ELBv2) that use this group
	tags                         ec2Tags
}

// ec2Rule is one security group rule: one protocol and port range, one
// target.
type ec2Rule struct {
	id     string
	group  *ec2Group
	egress bool
	ec2Perm
	tags ec2Tags
}

// ec2Perm is what a rule allows: a normalised protocol, its port range
// (-1 when it has none) and exactly one target.
type ec2Perm struct {
	proto                              string
	from, to                           int32
	cidr4, cidr6, prefixList, refGroup string
	refUser                            string // the referenced group's owner
	description                        string
}

// same reports whether two permissions are the same rule: descriptions
// and owners aside.
func (p ec2Perm) same(q ec2Perm) bool {
	return p.proto == q.proto && p.from == q.from && p.to == q.to && p.cidr4 == q.cidr4 &&
		p.cidr6 == q.cidr6 && p.prefixList == q.prefixList && p.refGroup == q.refGroup
}

// peer describes the rule the way AWS's InvalidPermission.Duplicate does.
func (p ec2Perm) peer() string {
	target := p.cidr4 + p.cidr6 + p.prefixList + p.refGroup
	proto := strings.ToUpper(p.proto)
	if p.proto == "-1" {
		proto = "ALL"
	}
	return fmt.Sprintf("peer: %s, %s, from port: %d, to port: %d, ALLOW", target, proto, p.from, p.to)
}

// newRegion creates a region as AWS hands it over: a default VPC
// (172.31.0.0/16) with its default security group and one default /20
// subnet per zone.
func (s *ec2Service) newRegion(r Region) *ec2Region {
	rg := &ec2Region{name: r.Name, zones: r.Zones, dhcpOptions: s.newID("dopt"),
		vpcs: ec2Table[ec2Vpc]{kind: "vpc", code: "InvalidVpcID.NotFound", what: "vpc ID",
			tags: func(v *ec2Vpc) *ec2Tags { return &v.tags }},
		subnets: ec2Table[ec2Subnet]{kind: "subnet", code: "InvalidSubnetID.NotFound", what: "subnet ID",
			tags: func(sn *ec2Subnet) *ec2Tags { return &sn.tags }},
		groups: ec2Table[ec2Group]{kind: "sg", code: "InvalidGroup.NotFound", what: "security group",
			tags: func(g *ec2Group) *ec2Tags { return &g.tags }},
		rules: ec2Table[ec2Rule]{kind: "sgr", code: "InvalidSecurityGroupRuleId.NotFound", what: "security group rule ID",
			tags: func(r *ec2Rule) *ec2Tags { return &r.tags }},
		instances: ec2Table[ec2Instance]{kind: "i", code: "InvalidInstanceID.NotFound", what: "instance ID",
			tags: func(in *ec2Instance) *ec2Tags { return &in.tags }},
		tokens: map[string]*ec2Reservation{},
	}
	vpc := s.addVpc(rg, netip.MustParsePrefix("172.31.0.0/16"), "default", nil)
	rg.defaultVpc = vpc.id
	for i, zone := range r.Zones {
		cidr := netip.PrefixFrom(netip.AddrFrom4([4]byte{172, 31, byte(16 * i), 0}), 20)
		s.addSubnet(rg, vpc, cidr, zone, true, nil)
	}
	return rg
}

// addVpc creates a VPC and its default security group.
func (s *ec2Service) addVpc(rg *ec2Region, cidr netip.Prefix, tenancy string, tags ec2Tags) *ec2Vpc {
	vpc := &ec2Vpc{
		id: s.newID("vpc"), prefix: cidr, assocID: s.newID("vpc-cidr-assoc"), tenancy: tenancy, tags: tags,
		groupNames: map[string]string{}, subnets: map[string]*ec2Subnet{},
	}
	rg.vpcs.put(vpc.id, vpc)
	g := s.addGroup(rg, vpc, "default", "default VPC security group", nil)
	s.addRule(rg, g, false, ec2Perm{proto: "-1", from: -1, to: -1, refGroup: g.id, refUser: s.account}, nil)
	return vpc
}

func (s *ec2Service) addSubnet(rg *ec2Region, vpc *ec2Vpc, cidr netip.Prefix, zone string, defaultForAz bool, tags ec2Tags) *ec2Subnet {
	sn := &ec2Subnet{id: s.newID("subnet"), vpcID: vpc.id, prefix: cidr, zone: zone, defaultForAz: defaultForAz, tags: tags}
	rg.subnets.put(sn.id, sn)
	vpc.subnets[sn.id] = sn
	return sn
}

// addGroup creates a security group with AWS's default egress rule (all
// traffic to 0.0.0.0/0).
func (s *ec2Service) addGroup(rg *ec2Region, vpc *ec2Vpc, name, description string, tags ec2Tags) *ec2Group {
	g := &ec2Group{id: s.newID("sg"), name: name, description: description, vpcID: vpc.id, tags: tags}
	rg.groups.put(g.id, g)
	vpc.groupNames[name] = g.id
	s.addRule(rg, g, true, ec2Perm{proto: "-1", from: -1, to: -1, cidr4: "0.0.0.0/0"}, nil)
	return g
}

func (s *ec2Service) addRule(rg *ec2Region, g *ec2Group, egress bool, p ec2Perm, tags ec2Tags) *ec2Rule {
	r := &ec2Rule{id: s.newID("sgr"), group: g, egress: egress, ec2Perm: p, tags: tags}
	rg.rules.put(r.id, r)
	g.rules = append(g.rules, r)
	rg.reference(r, 1)
	return r
}

func (rg *ec2Region) removeRule(r *ec2Rule) {
	rg.rules.remove(r.id)
	r.group.rules = slices.DeleteFunc(r.group.rules, func(o *ec2Rule) bool { return o == r })
	rg.reference(r, -1)
}

// reference counts (delta 1) or uncounts (-1) r as a reference to the
// group it names, when that is another group.
func (rg *ec2Region) reference(r *ec2Rule, delta int) {
	if r.refGroup == "" || r.refGroup == r.group.id {
		return
	}
	if g := rg.groups.get(r.refGroup); g != nil {
		g.refs += delta
	}
}

// removeGroup deletes a group and its rules.
func (rg *ec2Region) removeGroup(g *ec2Group) {
	for _, r := range g.rules {
		rg.rules.remove(r.id)
		rg.reference(r, -1)
	}
	g.rules = nil
	rg.groups.remove(g.id)
	if vpc := rg.vpcs.get(g.vpcID); vpc != nil {
		delete(vpc.groupNames, g.name)
	}
}

// ec2ZoneID is the zone's AWS-style id: us-east-1's third zone is use1-az3.
func ec2ZoneID(region string, i int) string {
	parts := strings.Split(region, "-")
	if len(parts) != 3 {
		return fmt.Sprintf("%s-az%d", region, i+1)
	}
	dir := parts[1]
	for _, word := range []string{"north", "south", "east", "west", "central"} {
		dir = strings.ReplaceAll(dir, word, word[:1])
	}
	return fmt.Sprintf("%s%s%s-az%d", parts[0], dir, parts[2], i+1)
}

// ec2Table holds one kind of resource of a region by id, and their ids in
// order for listings: an id's insertion marks the order unsorted and its
// removal leaves it stale; both are settled by the next listing, so bulk
// changes cost O(n log n) once rather than O(n) each.
type ec2Table[T any] struct {
	kind string            // the ids' prefix: "vpc", "subnet", "sg", "sgr"
	tags func(*T) *ec2Tags // a resource's tags
	// code and what make the error for unknown ids: e.g.
	// InvalidVpcID.NotFound, "The vpc ID 'vpc-1' does not exist".
	code, what string

	byID     map[string]*T
	ids      []string // sorted unless unsorted; holds removed ids while stale > 0
	unsorted bool
	stale    int
}

func (t *ec2Table[T]) get(id string) *T { return t.byID[id] }

// find returns the resource with id, or the table's not-found error.
func (t *ec2Table[T]) find(id string) (*T, error) {
	if v := t.byID[id]; v != nil {
		return v, nil
	}
	return nil, t.notFound(id)
}

// named returns the resource the parameter key names; key is required.
func (t *ec2Table[T]) named(p ec2Params, key string) (*T, error) {
	id, err := p.required(key)
	if err != nil {
		return nil, err
	}
	return t.find(id)
}

// notFound is the table's error naming unknown ids, worded like AWS's.
func (t *ec2Table[T]) notFound(ids ...string) *ec2Error {
	if len(ids) == 1 {
		return ec2Errorf(t.code, "The %s '%s' does not exist", t.what, ids[0])
	}
	return ec2Errorf(t.code, "The %ss '%s' do not exist", t.what, strings.Join(ids, ", "))
}

func (t *ec2Table[T]) put(id string, v *T) {
	if t.byID == nil {
		t.byID = map[string]*T{}
	}
	t.byID[id] = v
	if n := len(t.ids); n > 0 && t.ids[n-1] > id {
		t.unsorted = true
	}
	t.ids = append(t.ids, id)
}

func (t *ec2Table[T]) remove(id string) {
	if _, ok := t.byID[id]; ok {
		delete(t.byID, id)
		t.stale++
	}
}

// sorted returns the ids of the table's resources in order.
func (t *ec2Table[T]) sorted() []string {
	if t.stale > 0 {
		t.ids = slices.DeleteFunc(t.ids, func(id string) bool { return t.byID[id] == nil })
		t.stale = 0
	}
	if t.unsorted {
		slices.Sort(t.ids)
		t.unsorted = false
	}
	return t.ids
}

// ec2Page is a listing's MaxResults and NextToken.
type ec2Page struct {
	max   int    // 0: everything
	after string // the last id of the previous page
}

// ec2ParsePage reads MaxResults (5..1000 when given) and NextToken, the
// pageToken of the last id returned (of kind prefix).
func ec2ParsePage(p ec2Params, prefix string) (ec2Page, error) {
	var pg ec2Page
	if n, set, err := p.integer("MaxResults"); err != nil {
		return pg, err
	} else if set {
		if n < 5 || n > 1000 {
			return pg, ec2Errorf("InvalidParameterValue",
				"Value ( %d ) for parameter maxResults is invalid. Expecting a value between 5 and 1000.", n)
		}
		pg.max = int(n)
	}
	if tok := p.Get("NextToken"); tok != "" {
		id, ok := pageAfter("", tok)
		if !ok || !strings.HasPrefix(id, prefix+"-") {
			return pg, ec2Errorf("InvalidPaginationToken", "The pagination token '%s' is not valid", tok)
		}
		pg.after = id
	}
	return pg, nil
}

// listing reads what a Describe of the table's resources takes besides
// their ids: MaxResults and NextToken, and filters on fields and tags
// (keep is their predicate).
func (t *ec2Table[T]) listing(p ec2Params, fields map[string]ec2Field[T]) (pg ec2Page, fs []ec2Filter, keep func(*T) bool, err error) {
	if pg, err = ec2ParsePage(p, t.kind); err != nil {
		return pg, nil, nil, err
	}
	if fs, err = ec2ParseFilters(p); err != nil {
		return pg, nil, nil, err
	}
	keep, err = ec2CompileFilters(fs, fields, func(v *T) ec2Tags { return *t.tags(v) })
	return pg, fs, keep, err
}

// selected returns the ids a Describe lists: want (see lookup), or every
// id in order when want is empty.
func (t *ec2Table[T]) selected(want []string) ([]string, error) {
	if len(want) == 0 {
		return t.sorted(), nil
	}
	return t.lookup(want)
}

// writePage writes as set's items the page of the resources with ids
// (sorted) that keep accepts (write writes one's elements), then the next
// page's token, if there is a next page.
func (t *ec2Table[T]) writePage(x *ec2XML, set string, ids []string, pg ec2Page, keep func(*T) bool, write func(*T)) {
	x.open(set)
	n, last, next := 0, "", ""
	for _, id := range ids[resumeAt(ids, pg.after):] {
		v := t.get(id)
		if v == nil || !keep(v) {
			continue
		}
		if pg.max > 0 && n == pg.max {
			next = pageToken("", last)
			break
		}
		x.open("item")
		write(v)
		x.close("item")
		n, last = n+1, id
	}
	x.close(set)
	x.opt("nextToken", next)
}

// tagsOf returns the tags of the resource with id, or the table's
// not-found error.
func (t *ec2Table[T]) tagsOf(id string) (*ec2Tags, error) {
	v, err := t.find(id)
	if err != nil {
		return nil, err
	}
	return t.tags(v), nil
}

// lookup returns the given ids, sorted and without repeats, or the
// table's not-found error naming those of no resource.
func (t *ec2Table[T]) lookup(ids []string) ([]string, error) {
	var unknown []string
	for _, id := range ids {
		if t.get(id) == nil && !slices.Contains(unknown, id) {
			unknown = append(unknown, id)
		}
	}
	if len(unknown) > 0 {
		return nil, t.notFound(unknown...)
	}
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
