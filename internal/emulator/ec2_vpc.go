package emulator

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// describeRegions lists the emulator's regions (RegionName.N, Filter
// region-name / endpoint / opt-in-status); AllRegions changes nothing
// since every region is enabled.
func (s *ec2Service) describeRegions(_ *ec2Region, p ec2Params, x *ec2XML) error {
	names := p.strings("RegionName")
	var unknown []string
	for _, n := range names {
		if !slices.ContainsFunc(Regions(), func(r Region) bool { return r.Name == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return ec2Errorf("InvalidParameterValue", "Invalid region names: [%s]", strings.Join(unknown, ", "))
	}
	// The emulator's regions are AWS's default regions, but for those the
	// account has not enabled (Options.DisabledRegions): those play opt-in
	// regions not opted in. They are listed with AllRegions, or when named.
	status := func(r *Region) string {
		if s.disabled[r.Name] {
			return "not-opted-in"
		}
		return "opt-in-not-required"
	}
	all := p.Get("AllRegions") == "true"
	fs, err := ec2ParseFilters(p)
	if err != nil {
		return err
	}
	keep, err := ec2CompileFilters(fs, map[string]ec2Field[Region]{
		"region-name":   func(r *Region) string { return r.Name },
		"endpoint":      func(r *Region) string { return "ec2." + r.Name + ".amazonaws.com" },
		"opt-in-status": status,
	}, func(*Region) ec2Tags { return nil })
	if err != nil {
		return err
	}
	x.open("regionInfo")
	for _, r := range Regions() {
		named := slices.Contains(names, r.Name)
		if len(names) > 0 && !named || s.disabled[r.Name] && !all && !named || !keep(&r) {
			continue
		}
		x.open("item")
		x.str("regionName", r.Name)
		x.str("regionEndpoint", "ec2."+r.Name+".amazonaws.com")
		x.str("optInStatus", status(&r))
		x.close("item")
	}
	x.close("regionInfo")
	return nil
}

// ec2Zone is an availability zone, for DescribeAvailabilityZones' filters.
type ec2Zone struct{ name, id, region string }

// describeAvailabilityZones lists the request region's zones (ZoneName.N,
// ZoneId.N, Filter zone-name / zone-id / region-name / state / zone-type).
func (s *ec2Service) describeAvailabilityZones(rg *ec2Region, p ec2Params, x *ec2XML) error {
	zones := make([]ec2Zone, len(rg.zones))
	for i, z := range rg.zones {
		zones[i] = ec2Zone{name: z, id: ec2ZoneID(rg.name, i), region: rg.name}
	}
	names, ids := p.strings("ZoneName"), p.strings("ZoneId")
	var unknown []string
	for _, n := range names {
		if !slices.ContainsFunc(zones, func(z ec2Zone) bool { return z.name == n }) {
			unknown = append(unknown, n)
		}
	}
	for _, n := range ids {
		if !slices.ContainsFunc(zones, func(z ec2Zone) bool { return z.id == n }) {
			unknown = append(unknown, n)
		}
	}
	if len(unknown) > 0 {
		return ec2Errorf("InvalidParameterValue", "Invalid availability zone: [%s]", strings.Join(unknown, ", "))
	}
	fs, err := ec2ParseFilters(p)
	if err != nil {
		return err
	}
	keep, err := ec2CompileFilters(fs, map[string]ec2Field[ec2Zone]{
		"zone-name":   func(z *ec2Zone) string { return z.name },
		"zone-id":     func(z *ec2Zone) string { return z.id },
		"region-name": func(z *ec2Zone) string { return z.region },
		"state":       func(*ec2Zone) string { return "available" },
		"zone-type":   func(*ec2Zone) string { return "availability-zone" },
	}, func(*ec2Zone) ec2Tags { return nil })
	if err != nil {
		return err
	}
	x.open("availabilityZoneInfo")
	for _, z := range zones {
		if (len(names) > 0 || len(ids) > 0) && !slices.Contains(names, z.name) && !slices.Contains(ids, z.id) || !keep(&z) {
			continue
		}
		x.open("item")
		x.str("zoneName", z.name)
		x.str("zoneId", z.id)
		x.str("zoneState", "available")
		x.str("regionName", z.region)
		x.str("groupName", z.region+"-zg-1")
		x.str("networkBorderGroup", z.region)
		x.str("optInStatus", "opt-in-not-required")
		x.str("zoneType", "availability-zone")
		x.WriteString("<messageSet/>")
		x.close("item")
	}
	x.close("availabilityZoneInfo")
	return nil
}

// ec2ParseCIDR reads an IPv4 CIDR block of a VPC or subnet: /16 to /28,
// without host bits (rangeCode's error otherwise).
func ec2ParseCIDR(param, v, rangeCode string) (netip.Prefix, error) {
	pfx, err := netip.ParsePrefix(v)
	if err != nil || !pfx.Addr().Is4() || pfx.Masked() != pfx {
		return netip.Prefix{}, ec2Errorf("InvalidParameterValue",
			"Value (%s) for parameter %s is invalid. This is not a valid CIDR block.", v, param)
	}
	if pfx.Bits() < 16 || pfx.Bits() > 28 {
		return netip.Prefix{}, ec2Errorf(rangeCode, "The CIDR '%s' is invalid.", v)
	}
	return pfx, nil
}

// createVpc creates a VPC (CidrBlock, InstanceTenancy, TagSpecification)
// with its default security group.
func (s *ec2Service) createVpc(rg *ec2Region, p ec2Params, x *ec2XML) error {
	if !p.Has("CidrBlock") {
		return ec2Errorf("MissingParameter", "Either 'cidrBlock' or 'ipv4IpamPoolId' should be provided.")
	}
	cidr, err := ec2ParseCIDR("cidrBlock", p.Get("CidrBlock"), "InvalidVpc.Range")
	if err != nil {
		return err
	}
	tenancy := p.Get("InstanceTenancy")
	switch tenancy {
	case "":
		tenancy = "default"
	case "default", "dedicated":
	default:
		return ec2Errorf("InvalidParameterValue", "Value (%s) for parameter instanceTenancy is invalid.", tenancy)
	}
	tags, err := ec2TagSpecifications(p, "vpc")
	if err != nil {
		return err
	}
	vpc := s.addVpc(rg, cidr, tenancy, tags)
	x.open("vpc")
	s.writeVpc(rg, vpc, x, "pending")
	x.close("vpc")
	return nil
}

func (s *ec2Service) writeVpc(rg *ec2Region, v *ec2Vpc, x *ec2XML, state string) {
	x.str("vpcId", v.id)
	x.str("ownerId", s.account)
	x.str("state", state)
	x.str("cidrBlock", v.prefix.String())
	x.open("cidrBlockAssociationSet")
	x.open("item")
	x.str("cidrBlock", v.prefix.String())
	x.str("associationId", v.assocID)
	x.WriteString("<cidrBlockState><state>associated</state></cidrBlockState>")
	x.close("item")
	x.close("cidrBlockAssociationSet")
	x.str("dhcpOptionsId", rg.dhcpOptions)
	x.str("instanceTenancy", v.tenancy)
	x.bool("isDefault", v.id == rg.defaultVpc)
	v.tags.write(x)
}

// describeVpcs lists VPCs (VpcId.N, Filter, MaxResults 5..1000,
// NextToken).
func (s *ec2Service) describeVpcs(rg *ec2Region, p ec2Params, x *ec2XML) error {
	cidr := func(v *ec2Vpc) string { return v.prefix.String() }
	pg, _, keep, err := rg.vpcs.listing(p, map[string]ec2Field[ec2Vpc]{
		"vpc-id":                                func(v *ec2Vpc) string { return v.id },
		"is-default":                            func(v *ec2Vpc) string { return strconv.FormatBool(v.id == rg.defaultVpc) },
		"cidr":                                  cidr,
		"cidr-block-association.cidr-block":     cidr,
		"cidr-block-association.association-id": func(v *ec2Vpc) string { return v.assocID },
		"cidr-block-association.state":          func(*ec2Vpc) string { return "associated" },
		"state":                                 func(*ec2Vpc) string { return "available" },
		"instance-tenancy":                      func(v *ec2Vpc) string { return v.tenancy },
		"owner-id":                              func(*ec2Vpc) string { return s.account },
		"dhcp-options-id":                       func(*ec2Vpc) string { return rg.dhcpOptions },
	})
	if err != nil {
		return err
	}
	ids, err := rg.vpcs.selected(p.strings("VpcId"))
	if err != nil {
		return err
	}
	rg.vpcs.writePage(x, "vpcSet", ids, pg, keep, func(v *ec2Vpc) { s.writeVpc(rg, v, x, "available") })
	return nil
}

// deleteVpc deletes a VPC without subnets or security groups but its
// default one, which goes with it.
func (s *ec2Service) deleteVpc(rg *ec2Region, p ec2Params, x *ec2XML) error {
	vpc, err := rg.vpcs.named(p, "VpcId")
	if err != nil {
		return err
	}
	if len(vpc.subnets) > 0 || len(vpc.groupNames) > 1 {
		return ec2Errorf("DependencyViolation", "The vpc '%s' has dependencies and cannot be deleted.", vpc.id)
	}
	if g := rg.groups.get(vpc.groupNames["default"]); g != nil {
		rg.removeGroup(g)
	}
	rg.vpcs.remove(vpc.id)
	if rg.defaultVpc == vpc.id {
		rg.defaultVpc = ""
	}
	x.bool("return", true)
	return nil
}

// createSubnet creates a subnet (VpcId, CidrBlock, AvailabilityZone or
// AvailabilityZoneId, TagSpecification) inside its VPC's CIDR block,
// overlapping none of its other subnets.
func (s *ec2Service) createSubnet(rg *ec2Region, p ec2Params, x *ec2XML) error {
	vpcID, err := p.required("VpcId")
	if err != nil {
		return err
	}
	block, err := p.required("CidrBlock")
	if err != nil {
		return err
	}
	vpc, err := rg.vpcs.find(vpcID)
	if err != nil {
		return err
	}
	cidr, err := ec2ParseCIDR("cidrBlock", block, "InvalidSubnet.Range")
	if err != nil {
		return err
	}
	if !vpc.prefix.Contains(cidr.Addr()) || cidr.Bits() < vpc.prefix.Bits() {
		return ec2Errorf("InvalidSubnet.Range", "The CIDR '%s' is invalid.", block)
	}
	for _, other := range vpc.subnets {
		if other.prefix.Overlaps(cidr) {
			return ec2Errorf("InvalidSubnet.Conflict", "The CIDR '%s' conflicts with another subnet", block)
		}
	}
	zone, err := rg.subnetZone(p, vpc)
	if err != nil {
		return err
	}
	tags, err := ec2TagSpecifications(p, "subnet")
	if err != nil {
		return err
	}
	sn := s.addSubnet(rg, vpc, cidr, zone, false, tags)
	x.open("subnet")
	s.writeSubnet(rg, sn, x, "pending")
	x.close("subnet")
	return nil
}

// subnetZone is the zone a new subnet goes in: the one asked for (by
// name or id), else the zone where the VPC has fewest subnets.
func (rg *ec2Region) subnetZone(p ec2Params, vpc *ec2Vpc) (string, error) {
	name, id := p.Get("AvailabilityZone"), p.Get("AvailabilityZoneId")
	if name == "" && id == "" {
		counts := make([]int, len(rg.zones))
		for _, sn := range vpc.subnets {
			counts[slices.Index(rg.zones, sn.zone)]++
		}
		return rg.zones[slices.Index(counts, slices.Min(counts))], nil
	}
	for i, z := range rg.zones {
		if name == z && (id == "" || id == ec2ZoneID(rg.name, i)) || name == "" && id == ec2ZoneID(rg.name, i) {
			return z, nil
		}
	}
	if name == "" {
		return "", ec2Errorf("InvalidParameterValue", "Value (%s) for parameter availabilityZoneId is invalid. Subnets can currently only be created in the following availability zones: %s.", id, strings.Join(rg.zones, ", "))
	}
	return "", ec2Errorf("InvalidParameterValue", "Value (%s) for parameter availabilityZone is invalid. Subnets can currently only be created in the following availability zones: %s.", name, strings.Join(rg.zones, ", "))
}

func (s *ec2Service) writeSubnet(rg *ec2Region, sn *ec2Subnet, x *ec2XML, state string) {
	x.str("subnetId", sn.id)
	x.str("subnetArn", s.arn(rg, "subnet", sn.id))
	x.str("state", state)
	x.str("vpcId", sn.vpcID)
	x.str("ownerId", s.account)
	x.str("cidrBlock", sn.prefix.String())
	x.str("availableIpAddressCount", strconv.Itoa(sn.free()))
	x.str("availabilityZone", sn.zone)
	x.str("availabilityZoneId", ec2ZoneID(rg.name, slices.Index(rg.zones, sn.zone)))
	x.bool("defaultForAz", sn.defaultForAz)
	x.bool("mapPublicIpOnLaunch", sn.defaultForAz)
	x.bool("mapCustomerOwnedIpOnLaunch", false)
	x.bool("assignIpv6AddressOnCreation", false)
	x.WriteString("<ipv6CidrBlockAssociationSet/>")
	x.bool("ipv6Native", false)
	x.bool("enableDns64", false)
	x.WriteString("<privateDnsNameOptionsOnLaunch><hostnameType>ip-name</hostnameType>" +
		"<enableResourceNameDnsARecord>false</enableResourceNameDnsARecord>" +
		"<enableResourceNameDnsAAAARecord>false</enableResourceNameDnsAAAARecord></privateDnsNameOptionsOnLaunch>")
	sn.tags.write(x)
}

// describeSubnets lists subnets (SubnetId.N, Filter, MaxResults 5..1000,
// NextToken).
func (s *ec2Service) describeSubnets(rg *ec2Region, p ec2Params, x *ec2XML) error {
	zoneIDs := map[string]string{}
	for i, z := range rg.zones {
		zoneIDs[z] = ec2ZoneID(rg.name, i)
	}
	cidr := func(sn *ec2Subnet) string { return sn.prefix.String() }
	pg, _, keep, err := rg.subnets.listing(p, map[string]ec2Field[ec2Subnet]{
		"subnet-id":               func(sn *ec2Subnet) string { return sn.id },
		"vpc-id":                  func(sn *ec2Subnet) string { return sn.vpcID },
		"default-for-az":          func(sn *ec2Subnet) string { return strconv.FormatBool(sn.defaultForAz) },
		"defaultForAz":            func(sn *ec2Subnet) string { return strconv.FormatBool(sn.defaultForAz) },
		"map-public-ip-on-launch": func(sn *ec2Subnet) string { return strconv.FormatBool(sn.defaultForAz) },
		"availability-zone":       func(sn *ec2Subnet) string { return sn.zone },
		"availabilityZone":        func(sn *ec2Subnet) string { return sn.zone },
		"availability-zone-id":    func(sn *ec2Subnet) string { return zoneIDs[sn.zone] },
		"cidr-block":              cidr,
		"cidr":                    cidr,
		"cidrBlock":               cidr,
		"state":                   func(*ec2Subnet) string { return "available" },
		"owner-id":                func(*ec2Subnet) string { return s.account },
	})
	if err != nil {
		return err
	}
	ids, err := rg.subnets.selected(p.strings("SubnetId"))
	if err != nil {
		return err
	}
	rg.subnets.writePage(x, "subnetSet", ids, pg, keep, func(sn *ec2Subnet) { s.writeSubnet(rg, sn, x, "available") })
	return nil
}

func (s *ec2Service) deleteSubnet(rg *ec2Region, p ec2Params, x *ec2XML) error {
	sn, err := rg.subnets.named(p, "SubnetId")
	if err != nil {
		return err
	}
	// A subnet that holds an instance (not terminated) is in use:
	// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSubnet.html
	if rg.instanceUsing(sn.id) != nil || sn.lbRefs > 0 {
		return ec2Errorf("DependencyViolation", "The subnet '%s' has dependencies and cannot be deleted.", sn.id)
	}
	rg.subnets.remove(sn.id)
	delete(rg.vpcs.get(sn.vpcID).subnets, sn.id)
	x.bool("return", true)
	return nil
}
