package emulator

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// EC2 instances: RunInstances, DescribeInstances, Start/Stop/
// TerminateInstances, Modify/DescribeInstanceAttribute. An instance's state
// moves on by itself, as on AWS (pending -> running, stopping -> stopped,
// shutting-down -> terminated), once its delay has passed, when EC2 is next
// called: every EC2 request first settles the transitions that are due in its
// region (advance), so no goroutine acts behind the tests' back and the call
// that starts a transition still answers its first state, as AWS's does.
// AWS's lifecycle:
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html

// The state codes of InstanceState (the low byte of AWS's code):
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceState.html
var ec2StateCodes = map[string]int32{
	"pending": 0, "running": 16, "shutting-down": 32, "terminated": 48, "stopping": 64, "stopped": 80,
}

// ec2DefaultTerminatedVisibleFor is how long a terminated instance stays
// listed when Options.TerminatedVisibleFor is 0: DescribeInstances' reference
// says recently terminated instances appear "usually less than one hour".
const ec2DefaultTerminatedVisibleFor = time.Hour

type ec2Instance struct {
	id, reservation                    string
	imageID, itype, keyName            string
	subnetID, vpcID, zone, clientToken string
	privateIP                          netip.Addr
	publicIP                           string // "" when it has none (stopped, or a subnet without public IPs)
	userData                           []byte // decoded
	groups                             []string
	launchIndex                        int
	launched                           time.Time

	state  string
	due    time.Time // when a transitional state (pending, stopping, shutting-down) ends
	gone   time.Time // for a terminated instance: when it stops being listed
	reason string    // stateTransitionReason
	tags   ec2Tags
}

// live reports whether the instance still holds its network resources
// (anything but terminated): its subnet and groups cannot be deleted.
func (in *ec2Instance) live() bool { return in.state != "terminated" }

// ec2Reservation is what one RunInstances made.
type ec2Reservation struct {
	id          string
	instances   []*ec2Instance
	fingerprint string // the request's parameters but its ClientToken, for idempotency
}

// advance settles the instance transitions of a region that are due at
// now, and forgets terminated instances whose visibility has run out.
func (s *ec2Service) advance(rg *ec2Region, now time.Time) {
	for _, id := range rg.instances.sorted() {
		in := rg.instances.get(id)
		if in == nil {
			continue
		}
		switch {
		case in.state == "pending" && !now.Before(in.due):
			in.state = "running"
		case in.state == "stopping" && !now.Before(in.due):
			in.state = "stopped"
		case in.state == "shutting-down" && !now.Before(in.due):
			in.state = "terminated"
			in.gone = in.due.Add(s.terminatedVisible)
			s.releaseIP(rg, in)
		}
		if in.state == "terminated" && !now.Before(in.gone) {
			rg.instances.remove(in.id)
		}
	}
}

// releaseIP gives the instance's private address back to its subnet.
func (s *ec2Service) releaseIP(rg *ec2Region, in *ec2Instance) {
	if sn := rg.subnets.get(in.subnetID); sn != nil {
		delete(sn.used, in.privateIP)
	}
	in.publicIP = ""
}

// ec2AMIRe is an AMI id's shape: ami- and 8 or 17 hex digits.
var ec2AMIRe = regexp.MustCompile(`^ami-([0-9a-f]{8}|[0-9a-f]{17})$`)

// ec2InstanceIDRe is an instance id's shape.
var ec2InstanceIDRe = regexp.MustCompile(`^i-([0-9a-f]{8}|[0-9a-f]{17})$`)

// ec2InstanceTypeRe accepts the instance types of the common families
// (t2.micro, m5.large, c6g.4xlarge, r7i.metal-24xl, ...).
var ec2InstanceTypeRe = regexp.MustCompile(`^(t2|t3|t3a|t4g|m5|m5a|m5n|m6a|m6g|m6i|m7a|m7g|m7i|c5|c5a|c5n|c6a|c6g|c6i|c7a|c7g|c7i|r5|r5a|r6a|r6g|r6i|r7a|r7g|r7i|x2idn|i3|i4i|p3|p4d|g4dn|g5)\.(nano|micro|small|medium|large|xlarge|[1-9][0-9]?xlarge|metal(-[0-9]+xl)?)$`)

// ec2ValidInstanceType: RunInstances answers an unknown type with
// InvalidParameterValue ("Invalid value '...' for InstanceType"), see the
// error codes page:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
func ec2ValidInstanceType(t string) error {
	if !ec2InstanceTypeRe.MatchString(t) {
		return ec2Errorf("InvalidParameterValue", "Invalid value '%s' for InstanceType.", t)
	}
	return nil
}

// instanceIDs reads InstanceId.N, all of which must be well-formed
// (InvalidInstanceID.Malformed) and exist (InvalidInstanceID.NotFound).
func (rg *ec2Region) instanceIDs(p ec2Params, required bool) ([]string, error) {
	ids := p.strings("InstanceId")
	if len(ids) == 0 && required {
		return nil, ec2Errorf("MissingParameter", "The request must contain the parameter InstanceId")
	}
	for _, id := range ids {
		if !ec2InstanceIDRe.MatchString(id) {
			return nil, ec2Errorf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
		}
	}
	return rg.instances.lookup(ids)
}

// ec2RunFingerprint is a RunInstances request's parameters but those that
// may differ between retries of one request (ClientToken, DryRun).
func ec2RunFingerprint(p ec2Params) string {
	keys := make([]string, 0, len(p.Values))
	for k := range p.Values {
		switch k {
		case "ClientToken", "DryRun", "Action", "Version":
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(strings.Join(p.Values[k], "\x00"))
		b.WriteByte('\n')
	}
	return b.String()
}

// ignoreClientTokenKey marks a request's context when an IgnoreClientToken
// fault applies to it.
type ignoreClientTokenKey struct{}

// runInstances launches MaxCount instances (at least MinCount) of an AMI in
// a subnet (SubnetId, else the default subnet of the default VPC's first
// zone, or of Placement.AvailabilityZone) with security groups
// (SecurityGroupId.N or SecurityGroup.N names, else the VPC's default
// group), KeyName, UserData and TagSpecification.
//
// ClientToken makes it idempotent as AWS documents: the same token with the
// same parameters answers the first call's reservation (with the instances'
// current states), with other parameters IdempotentParameterMismatch.
// https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html
// Under an IgnoreClientToken fault an earlier request's token is not
// looked up: the instances are launched again, carrying the same token.
func (s *ec2Service) runInstances(rg *ec2Region, p ec2Params, x *ec2XML) error {
	token := p.Get("ClientToken")
	if len(token) > 64 {
		return ec2Errorf("InvalidParameterValue", "Value (%s) for parameter clientToken is invalid: at most 64 characters.", token)
	}
	fp := ec2RunFingerprint(p)
	if r, ok := rg.tokens[token]; token != "" && ok && !p.ignoreToken {
		if r.fingerprint != fp {
			return ec2Errorf("IdempotentParameterMismatch",
				"Arguments on this idempotent request are inconsistent with arguments used in previous request(s).")
		}
		s.writeReservation(rg, r, r.instances, x, true)
		return nil
	}
	image, err := p.required("ImageId")
	if err != nil {
		return err
	}
	if !ec2AMIRe.MatchString(image) {
		return ec2Errorf("InvalidAMIID.Malformed", "Invalid id: \"%s\" (expecting \"ami-...\")", image)
	}
	itype := p.Get("InstanceType")
	if itype == "" {
		itype = "m1.small" // AWS's documented default; accepted though not in the families above
	} else if err := ec2ValidInstanceType(itype); err != nil {
		return err
	}
	minCount, minSet, err := p.integer("MinCount")
	if err != nil {
		return err
	}
	maxCount, maxSet, err := p.integer("MaxCount")
	if err != nil {
		return err
	}
	if !minSet || !maxSet {
		return ec2Errorf("MissingParameter", "The request must contain the parameters MinCount and MaxCount")
	}
	if minCount < 1 || maxCount < minCount {
		return ec2Errorf("InvalidParameterValue",
			"Value (%d) for parameter minCount is invalid. Expected a number from 1 to maxCount (%d).", minCount, maxCount)
	}
	sn, err := rg.launchSubnet(p)
	if err != nil {
		return err
	}
	groups, err := rg.launchGroups(p, sn)
	if err != nil {
		return err
	}
	var userData []byte
	if v := p.Get("UserData"); v != "" {
		if userData, err = base64.StdEncoding.DecodeString(v); err != nil {
			return ec2Errorf("InvalidParameterValue", "Invalid BASE64 encoding of user data.")
		}
		if len(userData) > 16*1024 {
			return ec2Errorf("InvalidParameterValue", "User data is limited to 16384 bytes")
		}
	}
	tags, err := ec2InstanceTagSpecifications(p)
	if err != nil {
		return err
	}
	free := sn.free()
	if free < int(minCount) {
		return ec2Errorf("InsufficientFreeAddressesInSubnet",
			"There are not enough free addresses in subnet '%s' to satisfy the requested number of instances.", sn.id)
	}
	n := min(int(maxCount), free)
	now := time.Now()
	r := &ec2Reservation{id: s.newID("r"), fingerprint: fp}
	for i := range n {
		in := &ec2Instance{
			id: s.newID("i"), reservation: r.id, imageID: image, itype: itype, keyName: p.Get("KeyName"),
			subnetID: sn.id, vpcID: sn.vpcID, zone: sn.zone, clientToken: token,
			privateIP: sn.allocate(), userData: userData, groups: groups, launchIndex: i, launched: now,
			state: "pending", due: now.Add(s.startDelay), tags: slices.Clone(tags),
		}
		if sn.defaultForAz {
			in.publicIP = s.newPublicIP()
		}
		rg.instances.put(in.id, in)
		r.instances = append(r.instances, in)
	}
	if token != "" {
		rg.tokens[token] = r
	}
	s.writeReservation(rg, r, r.instances, x, true)
	return nil
}

// newPublicIP is a public address for an instance, unique in the emulator.
func (s *ec2Service) newPublicIP() string {
	s.counter++
	n := ec2Mix(s.seed + s.counter)
	return fmt.Sprintf("3.%d.%d.%d", byte(n>>16), byte(n>>8), 1+byte(n)%254)
}

// launchSubnet is the subnet RunInstances launches into.
func (rg *ec2Region) launchSubnet(p ec2Params) (*ec2Subnet, error) {
	if id := p.Get("SubnetId"); id != "" {
		return rg.subnets.find(id)
	}
	if rg.defaultVpc == "" {
		return nil, ec2Errorf("VPCIdNotSpecified", "No default VPC for this user")
	}
	zone := p.Get("Placement.AvailabilityZone")
	if zone != "" && !slices.Contains(rg.zones, zone) {
		return nil, ec2Errorf("InvalidParameterValue", "Invalid availability zone: [%s]", zone)
	}
	var best *ec2Subnet
	for _, sn := range rg.vpcs.get(rg.defaultVpc).subnets {
		if !sn.defaultForAz || zone != "" && sn.zone != zone {
			continue
		}
		if best == nil || sn.zone < best.zone {
			best = sn
		}
	}
	if best == nil {
		return nil, ec2Errorf("MissingInput", "No subnets found for the default VPC '%s'. Please specify a subnet.", rg.defaultVpc)
	}
	return best, nil
}

// launchGroups are the groups an instance in sn gets: SecurityGroupId.N
// (which must be in sn's VPC: InvalidParameter "... belong to different
// networks", as AWS answers, e.g. ansible-collections/amazon.aws issue 824)
// and SecurityGroup.N (names in the default VPC, which AWS refuses with a
// SubnetId: InvalidParameterCombination, aws/aws-cli issue 2453), else the
// VPC's default group.
func (rg *ec2Region) launchGroups(p ec2Params, sn *ec2Subnet) ([]string, error) {
	if p.Get("SubnetId") != "" && len(p.strings("SecurityGroup")) > 0 {
		return nil, ec2Errorf("InvalidParameterCombination", "The parameter groupName cannot be used with the parameter subnet")
	}
	var ids []string
	for _, id := range p.strings("SecurityGroupId") {
		g, err := rg.groups.find(id)
		if err != nil {
			return nil, err
		}
		if g.vpcID != sn.vpcID {
			return nil, ec2Errorf("InvalidParameter", "Security group %s and subnet %s belong to different networks.", g.id, sn.id)
		}
		ids = append(ids, g.id)
	}
	for _, name := range p.strings("SecurityGroup") {
		g, err := rg.vpcGroup(sn.vpcID, name)
		if err != nil {
			return nil, err
		}
		ids = append(ids, g.id)
	}
	if len(ids) == 0 {
		ids = append(ids, rg.groupNamed(sn.vpcID, "default").id)
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}

// ec2InstanceTagSpecifications reads RunInstances' tags for the instances;
// tags for the volumes and network interfaces it makes are accepted and
// dropped (the emulator has neither).
func ec2InstanceTagSpecifications(p ec2Params) (ec2Tags, error) {
	var tags ec2Tags
	for _, m := range p.members("TagSpecification") {
		rt := p.Get(m + ".ResourceType")
		switch rt {
		case "instance":
		case "volume", "network-interface", "spot-instances-request", "elastic-gpu":
			continue
		default:
			return nil, ec2Errorf("InvalidParameterValue", "'%s' is not a valid taggable resource type for this operation.", rt)
		}
		more, err := ec2ParseTags(p, m+".Tag")
		if err != nil {
			return nil, err
		}
		for _, t := range more {
			tags.set(t.key, t.value)
		}
	}
	if len(tags) > ec2MaxTags {
		return nil, ec2Errorf("TagLimitExceeded", "The maximum number of tags per resource is %d", ec2MaxTags)
	}
	return tags, nil
}

// free is how many addresses of the subnet are not in use: AWS keeps the
// first four and the last of each subnet.
func (sn *ec2Subnet) free() int {
	return 1<<(32-sn.prefix.Bits()) - 5 - len(sn.used)
}

// allocate takes the lowest free address of the subnet (free() > 0).
func (sn *ec2Subnet) allocate() netip.Addr {
	if sn.used == nil {
		sn.used = map[netip.Addr]bool{}
	}
	a := sn.prefix.Addr()
	for range 4 {
		a = a.Next()
	}
	for sn.used[a] {
		a = a.Next()
	}
	sn.used[a] = true
	return a
}

// writeReservation writes a Reservation's elements with the given
// instances of it; top is RunInstances' response, whose elements are the
// reservation's own.
func (s *ec2Service) writeReservation(rg *ec2Region, r *ec2Reservation, ins []*ec2Instance, x *ec2XML, top bool) {
	if !top {
		x.open("item")
	}
	x.str("reservationId", r.id)
	x.str("ownerId", s.account)
	x.WriteString("<groupSet/>")
	x.open("instancesSet")
	for _, in := range ins {
		x.open("item")
		s.writeInstance(rg, in, x)
		x.close("item")
	}
	x.close("instancesSet")
	if !top {
		x.close("item")
	}
}

func ec2WriteState(x *ec2XML, tag, state string) {
	x.open(tag)
	x.int("code", ec2StateCodes[state])
	x.str("name", state)
	x.close(tag)
}

// ec2DNSName is the private DNS name of an address: us-east-1 uses
// ec2.internal, other regions <region>.compute.internal.
func ec2DNSName(region string, a netip.Addr) string {
	host := "ip-" + strings.ReplaceAll(a.String(), ".", "-")
	if region == "us-east-1" {
		return host + ".ec2.internal"
	}
	return host + "." + region + ".compute.internal"
}

func (s *ec2Service) writeInstance(rg *ec2Region, in *ec2Instance, x *ec2XML) {
	x.str("instanceId", in.id)
	x.str("imageId", in.imageID)
	ec2WriteState(x, "instanceState", in.state)
	if in.state == "terminated" {
		x.WriteString("<privateDnsName/><dnsName/>")
	} else {
		x.str("privateDnsName", ec2DNSName(rg.name, in.privateIP))
		if in.publicIP != "" {
			x.str("dnsName", "ec2-"+strings.ReplaceAll(in.publicIP, ".", "-")+"."+rg.name+".compute.amazonaws.com")
		} else {
			x.WriteString("<dnsName/>")
		}
	}
	x.str("reason", in.reason)
	x.opt("keyName", in.keyName)
	x.int("amiLaunchIndex", int32(in.launchIndex))
	x.WriteString("<productCodes/>")
	x.str("instanceType", in.itype)
	x.str("launchTime", in.launched.UTC().Format("2006-01-02T15:04:05.000Z"))
	x.WriteString("<placement>")
	x.str("availabilityZone", in.zone)
	x.WriteString("<groupName/><tenancy>default</tenancy></placement>")
	x.WriteString("<monitoring><state>disabled</state></monitoring>")
	if in.state != "terminated" {
		x.str("subnetId", in.subnetID)
		x.str("vpcId", in.vpcID)
		x.str("privateIpAddress", in.privateIP.String())
		x.opt("ipAddress", in.publicIP)
	}
	x.bool("sourceDestCheck", true)
	x.open("groupSet")
	for _, id := range in.groups {
		x.open("item")
		x.str("groupId", id)
		if g := rg.groups.get(id); g != nil {
			x.str("groupName", g.name)
		}
		x.close("item")
	}
	x.close("groupSet")
	switch in.state {
	case "stopped", "stopping":
		x.WriteString("<stateReason><code>Client.UserInitiatedShutdown</code><message>Client.UserInitiatedShutdown: User initiated shutdown</message></stateReason>")
	case "terminated", "shutting-down":
		x.WriteString("<stateReason><code>Client.UserInitiatedShutdown</code><message>Client.UserInitiatedShutdown: User initiated shutdown</message></stateReason>")
	}
	arch := "x86_64"
	if family, _, _ := strings.Cut(in.itype, "."); strings.HasSuffix(family, "g") {
		arch = "arm64"
	}
	x.str("architecture", arch)
	x.str("rootDeviceType", "ebs")
	x.str("rootDeviceName", "/dev/xvda")
	x.WriteString("<blockDeviceMapping/>")
	x.str("virtualizationType", "hvm")
	x.opt("clientToken", in.clientToken)
	in.tags.write(x)
	x.str("hypervisor", "xen")
	x.bool("ebsOptimized", false)
	x.bool("enaSupport", true)
	x.str("platformDetails", "Linux/UNIX")
}

// describeInstances lists instances by reservation (InstanceId.N, Filter,
// MaxResults 5..1000 counting instances, NextToken). MaxResults cannot be
// combined with InstanceId.N, as DescribeInstances' reference says (AWS's
// answer, InvalidParameterCombination, as in aws/karpenter-provider-aws
// pull 8642):
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
func (s *ec2Service) describeInstances(rg *ec2Region, p ec2Params, x *ec2XML) error {
	ids, err := rg.instanceIDs(p, false)
	if err != nil {
		return err
	}
	if len(ids) > 0 && p.Has("MaxResults") {
		return ec2Errorf("InvalidParameterCombination", "The parameter instancesSet cannot be used with the parameter maxResults")
	}
	pg, keep, err := rg.instanceListing(p, s.account)
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		ids = rg.instances.sorted()
	}
	var page []*ec2Instance
	next := ""
	for _, id := range ids[resumeAt(ids, pg.after):] {
		in := rg.instances.get(id)
		if in == nil || !keep(in) {
			continue
		}
		if pg.max > 0 && len(page) == pg.max {
			next = pageToken("", page[len(page)-1].id)
			break
		}
		page = append(page, in)
	}
	// Group the page's instances by reservation, in order of first appearance.
	var order []string
	byRes := map[string][]*ec2Instance{}
	for _, in := range page {
		if _, ok := byRes[in.reservation]; !ok {
			order = append(order, in.reservation)
		}
		byRes[in.reservation] = append(byRes[in.reservation], in)
	}
	x.open("reservationSet")
	for _, id := range order {
		s.writeReservation(rg, &ec2Reservation{id: id}, byRes[id], x, false)
	}
	x.close("reservationSet")
	x.opt("nextToken", next)
	return nil
}

// instanceListing reads DescribeInstances' MaxResults, NextToken and
// Filter: instance-id, instance-state-name, instance-state-code,
// instance-type, image-id, vpc-id, subnet-id, availability-zone,
// key-name, client-token, reservation-id, private-ip-address, ip-address,
// owner-id, group-id / instance.group-id, and tags.
func (rg *ec2Region) instanceListing(p ec2Params, owner string) (ec2Page, func(*ec2Instance) bool, error) {
	pg, err := ec2ParsePage(p, "i")
	if err != nil {
		return pg, nil, err
	}
	fs, err := ec2ParseFilters(p)
	if err != nil {
		return pg, nil, err
	}
	var groupFilters []ec2Filter
	fs = slices.DeleteFunc(fs, func(f ec2Filter) bool {
		if f.name == "group-id" || f.name == "instance.group-id" {
			groupFilters = append(groupFilters, f)
			return true
		}
		return false
	})
	keep, err := ec2CompileFilters(fs, map[string]ec2Field[ec2Instance]{
		"instance-id":         func(in *ec2Instance) string { return in.id },
		"instance-state-name": func(in *ec2Instance) string { return in.state },
		"instance-state-code": func(in *ec2Instance) string { return strconv.Itoa(int(ec2StateCodes[in.state])) },
		"instance-type":       func(in *ec2Instance) string { return in.itype },
		"image-id":            func(in *ec2Instance) string { return in.imageID },
		"vpc-id":              func(in *ec2Instance) string { return in.vpcID },
		"subnet-id":           func(in *ec2Instance) string { return in.subnetID },
		"availability-zone":   func(in *ec2Instance) string { return in.zone },
		"key-name":            func(in *ec2Instance) string { return in.keyName },
		"client-token":        func(in *ec2Instance) string { return in.clientToken },
		"reservation-id":      func(in *ec2Instance) string { return in.reservation },
		"private-ip-address":  func(in *ec2Instance) string { return in.privateIP.String() },
		"ip-address":          func(in *ec2Instance) string { return in.publicIP },
		"owner-id":            func(*ec2Instance) string { return owner },
	}, func(in *ec2Instance) ec2Tags { return in.tags })
	if err != nil {
		return pg, nil, err
	}
	return pg, func(in *ec2Instance) bool {
		for _, f := range groupFilters {
			if !slices.ContainsFunc(in.groups, f.match) {
				return false
			}
		}
		return keep(in)
	}, nil
}

// ec2Transition is an instance state change, as Start/Stop/
// TerminateInstances answer it.
type ec2Transition struct {
	id, from, to string
}

// changeStates applies to the instances InstanceId.N names the transition
// next gives (the new state, or an error when the instance cannot make
// it), all or none, and writes the instancesSet of state changes.
func (s *ec2Service) changeStates(rg *ec2Region, p ec2Params, x *ec2XML, next func(in *ec2Instance) (string, error)) error {
	if _, err := rg.instanceIDs(p, true); err != nil {
		return err
	}
	var changes []ec2Transition
	for _, id := range p.strings("InstanceId") { // in the order asked
		if slices.ContainsFunc(changes, func(c ec2Transition) bool { return c.id == id }) {
			continue
		}
		in := rg.instances.get(id)
		to, err := next(in)
		if err != nil {
			return err
		}
		changes = append(changes, ec2Transition{id: id, from: in.state, to: to})
	}
	now := time.Now()
	x.open("instancesSet")
	for _, c := range changes {
		in := rg.instances.get(c.id)
		if c.to != c.from {
			in.state = c.to
			switch c.to {
			case "pending":
				in.due = now.Add(s.startDelay)
				in.reason = ""
				if sn := rg.subnets.get(in.subnetID); sn != nil && sn.defaultForAz {
					in.publicIP = s.newPublicIP()
				}
			case "stopping":
				in.due = now.Add(s.stopDelay)
				in.reason = "User initiated (" + now.UTC().Format("2006-01-02 15:04:05") + " GMT)"
				in.publicIP = ""
			case "shutting-down":
				in.due = now.Add(s.stopDelay)
				in.reason = "User initiated (" + now.UTC().Format("2006-01-02 15:04:05") + " GMT)"
			}
		}
		x.open("item")
		x.str("instanceId", c.id)
		ec2WriteState(x, "currentState", c.to)
		ec2WriteState(x, "previousState", c.from)
		x.close("item")
	}
	x.close("instancesSet")
	return nil
}

// stopInstances: running -> stopping -> stopped; a stopping or stopped
// instance stays as it is; any other state is IncorrectInstanceState.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html
func (s *ec2Service) stopInstances(rg *ec2Region, p ec2Params, x *ec2XML) error {
	return s.changeStates(rg, p, x, func(in *ec2Instance) (string, error) {
		switch in.state {
		case "running":
			return "stopping", nil
		case "stopping", "stopped":
			return in.state, nil
		case "pending":
			// As AWS answers it (cloud-custodian/cloud-custodian pull 6014).
			return "", ec2Errorf("IncorrectInstanceState", "Instance '%s' cannot be stopped as it has never reached the 'running' state.", in.id)
		}
		return "", ec2Errorf("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be stopped.", in.id)
	})
}

// startInstances: stopped -> pending -> running; a pending or running
// instance stays as it is; any other state is IncorrectInstanceState.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StartInstances.html
func (s *ec2Service) startInstances(rg *ec2Region, p ec2Params, x *ec2XML) error {
	return s.changeStates(rg, p, x, func(in *ec2Instance) (string, error) {
		switch in.state {
		case "stopped":
			return "pending", nil
		case "pending", "running":
			return in.state, nil
		}
		return "", ec2Errorf("IncorrectInstanceState", "The instance '%s' is not in a state from which it can be started.", in.id)
	})
}

// terminateInstances: any state -> shutting-down -> terminated; it is
// idempotent (a terminated instance answers terminated), as the
// idempotency page lists it.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_TerminateInstances.html
func (s *ec2Service) terminateInstances(rg *ec2Region, p ec2Params, x *ec2XML) error {
	return s.changeStates(rg, p, x, func(in *ec2Instance) (string, error) {
		switch in.state {
		case "shutting-down", "terminated":
			return in.state, nil
		}
		return "shutting-down", nil
	})
}

// instance returns the instance InstanceId names.
func (rg *ec2Region) instance(p ec2Params) (*ec2Instance, error) {
	id, err := p.required("InstanceId")
	if err != nil {
		return nil, err
	}
	if !ec2InstanceIDRe.MatchString(id) {
		return nil, ec2Errorf("InvalidInstanceID.Malformed", "Invalid id: \"%s\"", id)
	}
	return rg.instances.find(id)
}

// ec2NotStopped is AWS's answer to changing an attribute that needs a
// stopped instance (instance type, user data).
func ec2NotStopped(in *ec2Instance) error {
	return ec2Errorf("IncorrectInstanceState", "The instance '%s' is not in the 'stopped' state.", in.id)
}

// modifyInstanceAttribute changes one attribute: InstanceType.Value and
// UserData.Value (base64) of a stopped instance, GroupId.N (groups of
// the instance's VPC) of one not terminated; or the older Attribute and
// Value (instanceType, userData).
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyInstanceAttribute.html
func (s *ec2Service) modifyInstanceAttribute(rg *ec2Region, p ec2Params, x *ec2XML) error {
	in, err := rg.instance(p)
	if err != nil {
		return err
	}
	itype, userData, hasType, hasData := p.Get("InstanceType.Value"), p.Get("UserData.Value"), p.Has("InstanceType.Value"), p.Has("UserData.Value")
	switch p.Get("Attribute") {
	case "":
	case "instanceType":
		itype, hasType = p.Get("Value"), true
	case "userData":
		userData, hasData = p.Get("Value"), true
	default:
		return ec2Errorf("InvalidParameterValue", "Value (%s) for parameter attribute is invalid. The emulator changes instanceType, userData and groupSet.", p.Get("Attribute"))
	}
	groups := p.strings("GroupId")
	set := 0
	for _, b := range []bool{hasType, hasData, len(groups) > 0} {
		if b {
			set++
		}
	}
	if set != 1 {
		return ec2Errorf("InvalidParameterCombination", "Exactly one attribute must be modified per request.")
	}
	switch {
	case hasType:
		if err := ec2ValidInstanceType(itype); err != nil {
			return err
		}
		if in.state != "stopped" {
			return ec2NotStopped(in)
		}
		in.itype = itype
	case hasData:
		raw, err := base64.StdEncoding.DecodeString(userData)
		if err != nil {
			return ec2Errorf("InvalidParameterValue", "Invalid BASE64 encoding of user data.")
		}
		if in.state != "stopped" {
			return ec2NotStopped(in)
		}
		in.userData = raw
	default:
		if !in.live() {
			return ec2Errorf("IncorrectInstanceState", "The instance '%s' is not in a state from which its groups can be changed.", in.id)
		}
		var ids []string
		for _, id := range groups {
			g, err := rg.groups.find(id)
			if err != nil {
				return err
			}
			if g.vpcID != in.vpcID {
				return ec2Errorf("InvalidGroup.NotFound", "The security group '%s' does not exist in VPC '%s'", id, in.vpcID)
			}
			ids = append(ids, id)
		}
		slices.Sort(ids)
		in.groups = slices.Compact(ids)
	}
	x.bool("return", true)
	return nil
}

// describeInstanceAttribute answers instanceType, userData (base64) and
// groupSet.
func (s *ec2Service) describeInstanceAttribute(rg *ec2Region, p ec2Params, x *ec2XML) error {
	attr, err := p.required("Attribute")
	if err != nil {
		return err
	}
	in, err := rg.instance(p)
	if err != nil {
		return err
	}
	x.str("instanceId", in.id)
	switch attr {
	case "instanceType":
		x.WriteString("<instanceType>")
		x.str("value", in.itype)
		x.WriteString("</instanceType>")
	case "userData":
		if len(in.userData) == 0 {
			x.WriteString("<userData/>")
			break
		}
		x.WriteString("<userData>")
		x.str("value", base64.StdEncoding.EncodeToString(in.userData))
		x.WriteString("</userData>")
	case "groupSet":
		x.open("groupSet")
		for _, id := range in.groups {
			x.open("item")
			x.str("groupId", id)
			x.close("item")
		}
		x.close("groupSet")
	default:
		return ec2Errorf("InvalidParameterValue", "Value (%s) for parameter attribute is invalid. The emulator answers instanceType, userData and groupSet.", attr)
	}
	return nil
}

// instanceUsing reports a live instance that uses a group or is in a
// subnet (id), for DependencyViolation; nil when none does.
func (rg *ec2Region) instanceUsing(id string) *ec2Instance {
	for _, iid := range rg.instances.sorted() {
		in := rg.instances.get(iid)
		if in != nil && in.live() && (in.subnetID == id || slices.Contains(in.groups, id)) {
			return in
		}
	}
	return nil
}
