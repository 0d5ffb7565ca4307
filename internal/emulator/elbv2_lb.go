package emulator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

type elbLB struct {
	arn, id, name, typ, scheme, ipType, vpcID, dns string
	subnets                                        []elbSubnet // by zone
	groups                                         []string    // sorted
	created, activeAt                              time.Time
	attrs                                          map[string]string
	tags                                           ec2Tags
	fingerprint                                    string
}

type elbSubnet struct{ id, zone string }

// state is provisioning until the load balancer's delay has passed, then
// active (LoadBalancerState).
func (lb *elbLB) state(now time.Time) string {
	if now.Before(lb.activeAt) {
		return "provisioning"
	}
	return "active"
}

// elbLBAttributes are a new application load balancer's attributes
// (DescribeLoadBalancerAttributes' defaults).
func elbLBAttributes() map[string]string {
	return map[string]string{
		"deletion_protection.enabled":                     "false",
		"idle_timeout.timeout_seconds":                    "60",
		"routing.http2.enabled":                           "true",
		"access_logs.s3.enabled":                          "false",
		"access_logs.s3.bucket":                           "",
		"access_logs.s3.prefix":                           "",
		"routing.http.drop_invalid_header_fields.enabled": "false",
	}
}

// lbNamed returns the load balancer LoadBalancerArn names.
func (rg *elbRegion) lbNamed(p iamParams) (*elbLB, *elbErr) {
	arn, e := elbRequired(p, "LoadBalancerArn")
	if e != nil {
		return nil, e
	}
	if lb := rg.lbs[arn]; lb != nil {
		return lb, nil
	}
	return nil, elbError("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
}

// lbSubnets resolves Subnets.member.N (or SubnetMappings.member.N.SubnetId)
// in EC2: each must exist (SubnetNotFound), all in one VPC, one per zone
// (InvalidConfigurationRequest), and an application load balancer needs
// two zones at least (ValidationError), as CreateLoadBalancer's and
// SetSubnets' references say.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
func lbSubnets(rg *ec2Region, p iamParams, typ string) ([]elbSubnet, string, *elbErr) {
	ids := p.list("Subnets")
	for i := 1; ; i++ {
		k := fmt.Sprintf("SubnetMappings.member.%d.SubnetId", i)
		if !p.Has(k) {
			break
		}
		ids = append(ids, p.Get(k))
	}
	var out []elbSubnet
	vpc := ""
	for _, id := range ids {
		sn := rg.subnets.get(id)
		if sn == nil {
			return nil, "", elbError("SubnetNotFound", "The subnet ID '%s' is not valid", id)
		}
		if vpc != "" && sn.vpcID != vpc {
			return nil, "", elbError("InvalidConfigurationRequest", "The subnets '%s' and '%s' are in different VPCs", out[0].id, id)
		}
		vpc = sn.vpcID
		if i := slices.IndexFunc(out, func(o elbSubnet) bool { return o.zone == sn.zone }); i >= 0 {
			if out[i].id == id {
				continue
			}
			return nil, "", elbError("InvalidConfigurationRequest", "A load balancer cannot be attached to multiple subnets in the same Availability Zone")
		}
		out = append(out, elbSubnet{id: id, zone: sn.zone})
	}
	if typ == "application" && len(out) < 2 {
		return nil, "", elbError("ValidationError", "At least two subnets in two different Availability Zones must be specified")
	}
	if len(out) == 0 {
		return nil, "", elbError("ValidationError", "At least one subnet must be specified")
	}
	slices.SortFunc(out, func(a, b elbSubnet) int { return strings.Compare(a.zone, b.zone) })
	return out, vpc, nil
}

// lbGroups resolves security group ids in the VPC: InvalidSecurityGroup
// for one that does not exist there; none means the VPC's default group.
func lbGroups(rg *ec2Region, ids []string, vpc string) ([]string, *elbErr) {
	var out []string
	for _, id := range ids {
		g := rg.groups.get(id)
		if g == nil || g.vpcID != vpc {
			return nil, elbError("InvalidSecurityGroup", "Security group '%s' does not exist in VPC '%s'", id, vpc)
		}
		out = append(out, id)
	}
	if len(out) == 0 {
		if g := rg.groupNamed(vpc, "default"); g != nil {
			out = append(out, g.id)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// reference counts (delta 1) or uncounts (-1) the load balancer's use of
// its subnets and groups in EC2, which then refuses to delete them.
func (lb *elbLB) reference(rg *ec2Region, delta int) {
	for _, sn := range lb.subnets {
		if s := rg.subnets.get(sn.id); s != nil {
			s.lbRefs += delta
		}
	}
	for _, id := range lb.groups {
		if g := rg.groups.get(id); g != nil {
			g.lbRefs += delta
		}
	}
}

// createLoadBalancer creates an application load balancer (Name, Subnets
// or SubnetMappings, SecurityGroups, Scheme, Type, IpAddressType, Tags),
// provisioning until Options.LoadBalancerActiveDelay has passed. It is
// idempotent as AWS documents: a load balancer of the same name and
// settings is answered again; other settings are DuplicateLoadBalancerName.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
func (s *elbService) createLoadBalancer(c elbCall, x *iamXML) *elbErr {
	p := c.p
	name := p.Get("Name")
	if e := elbValidName("LoadBalancer", name); e != nil {
		return e
	}
	if strings.HasPrefix(name, "internal-") {
		return elbError("ValidationError", "Load balancer name '%s' cannot begin with 'internal-'", name)
	}
	fp := elbFingerprint(p)
	for _, lb := range c.rg.lbs {
		if lb.name == name {
			if lb.fingerprint != fp {
				return elbError("DuplicateLoadBalancerName", "A load balancer with the same name '%s' exists, but with different settings", name)
			}
			x.open("LoadBalancers")
			s.writeLB(c, lb, x)
			x.close("LoadBalancers")
			return nil
		}
	}
	typ := p.Get("Type")
	switch typ {
	case "":
		typ = "application"
	case "application", "network":
	default:
		return elbError("ValidationError", "Load balancer type '%s' is not supported by the emulator (application, network)", typ)
	}
	scheme := p.Get("Scheme")
	switch scheme {
	case "":
		scheme = "internet-facing"
	case "internet-facing", "internal":
	default:
		return elbError("ValidationError", "1 validation error detected: Value '%s' at 'scheme' failed to satisfy constraint: Member must satisfy enum value set: [internet-facing, internal]", scheme)
	}
	ipType := p.Get("IpAddressType")
	switch ipType {
	case "":
		ipType = "ipv4"
	case "ipv4", "dualstack":
	default:
		return elbError("ValidationError", "IP address type '%s' is not valid", ipType)
	}
	tags, e := elbTags(p)
	if e != nil {
		return e
	}
	lb := &elbLB{name: name, typ: typ, scheme: scheme, ipType: ipType, created: c.now, activeAt: c.now.Add(s.activeDelay),
		attrs: elbLBAttributes(), tags: tags, fingerprint: fp}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		var e *elbErr
		if lb.subnets, lb.vpcID, e = lbSubnets(rg, p, typ); e != nil {
			return e
		}
		if typ == "application" {
			if lb.groups, e = lbGroups(rg, p.list("SecurityGroups"), lb.vpcID); e != nil {
				return e
			}
		}
		lb.reference(rg, 1)
		return nil
	})
	if e != nil {
		return e
	}
	lb.id = s.newID()
	kind := "app"
	if typ == "network" {
		kind = "net"
	}
	lb.arn = s.arn(c.rg, "loadbalancer/"+kind+"/"+name+"/"+lb.id)
	dnsID := strconv.FormatUint(ec2Mix(s.counter)%10_000_000_000, 10)
	lb.dns = name + "-" + dnsID + "." + c.rg.name + ".elb.amazonaws.com"
	if scheme == "internal" {
		lb.dns = "internal-" + lb.dns
	}
	c.rg.lbs[lb.arn] = lb
	x.open("LoadBalancers")
	s.writeLB(c, lb, x)
	x.close("LoadBalancers")
	return nil
}

func (s *elbService) writeLB(c elbCall, lb *elbLB, x *iamXML) {
	x.open("member")
	x.elem("LoadBalancerArn", lb.arn)
	x.elem("DNSName", lb.dns)
	x.elem("CanonicalHostedZoneId", elbHostedZones[c.rg.name])
	x.elem("CreatedTime", lb.created.UTC().Format("2006-01-02T15:04:05.000Z"))
	x.elem("LoadBalancerName", lb.name)
	x.elem("Scheme", lb.scheme)
	x.elem("VpcId", lb.vpcID)
	x.open("State").elem("Code", lb.state(c.now)).close("State")
	x.elem("Type", lb.typ)
	x.open("AvailabilityZones")
	for _, sn := range lb.subnets {
		x.open("member").elem("ZoneName", sn.zone).elem("SubnetId", sn.id).WriteString("<LoadBalancerAddresses/>")
		x.close("member")
	}
	x.close("AvailabilityZones")
	if lb.typ == "application" {
		x.open("SecurityGroups")
		for _, g := range lb.groups {
			x.elem("member", g)
		}
		x.close("SecurityGroups")
	}
	x.elem("IpAddressType", lb.ipType)
	x.close("member")
}

// describeLoadBalancers lists load balancers by name (LoadBalancerArns or
// Names, not both; Marker, PageSize); one that does not exist is
// LoadBalancerNotFound.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeLoadBalancers.html
func (s *elbService) describeLoadBalancers(c elbCall, x *iamXML) *elbErr {
	arns, names := c.p.list("LoadBalancerArns"), c.p.list("Names")
	if len(arns) > 0 && len(names) > 0 {
		return elbError("ValidationError", "Load balancer names and load balancer ARNs cannot be specified at the same time")
	}
	after, size, e := elbPage(c.p, "elb-lb:")
	if e != nil {
		return e
	}
	byName := map[string]*elbLB{}
	for _, lb := range c.rg.lbs {
		byName[lb.name] = lb
	}
	var keys []string
	switch {
	case len(arns) > 0:
		for _, arn := range arns {
			lb := c.rg.lbs[arn]
			if lb == nil {
				return elbError("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
			}
			keys = append(keys, lb.name)
		}
	case len(names) > 0:
		for _, n := range names {
			if byName[n] == nil {
				return elbError("LoadBalancerNotFound", "Load balancers '[%s]' not found", n)
			}
			keys = append(keys, n)
		}
	default:
		keys = slices.Collect(maps.Keys(byName))
	}
	writePage(x, "LoadBalancers", keys, after, size, "elb-lb:", func(k string) { s.writeLB(c, byName[k], x) })
	return nil
}

// deleteLoadBalancer deletes a load balancer and its listeners; one that
// does not exist is deleted already (success), as the reference says.
// Deletion protection makes it OperationNotPermitted.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteLoadBalancer.html
func (s *elbService) deleteLoadBalancer(c elbCall, x *iamXML) *elbErr {
	arn, e := elbRequired(c.p, "LoadBalancerArn")
	if e != nil {
		return e
	}
	lb := c.rg.lbs[arn]
	if lb == nil {
		return nil
	}
	if lb.attrs["deletion_protection.enabled"] == "true" {
		return elbError("OperationNotPermitted", "Load balancer '%s' cannot be deleted because deletion protection is enabled", arn)
	}
	_ = s.withEC2(c, func(rg *ec2Region) *elbErr {
		lb.reference(rg, -1)
		return nil
	})
	for id, l := range c.rg.listeners {
		if l.lb == arn {
			delete(c.rg.listeners, id)
		}
	}
	delete(c.rg.lbs, arn)
	return nil
}

// setSecurityGroups replaces an application load balancer's groups.
func (s *elbService) setSecurityGroups(c elbCall, x *iamXML) *elbErr {
	lb, e := c.rg.lbNamed(c.p)
	if e != nil {
		return e
	}
	if lb.typ != "application" {
		return elbError("InvalidConfigurationRequest", "Security groups cannot be set on a load balancer of type '%s' by the emulator", lb.typ)
	}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		groups, e := lbGroups(rg, c.p.list("SecurityGroups"), lb.vpcID)
		if e != nil {
			return e
		}
		lb.reference(rg, -1)
		lb.groups = groups
		lb.reference(rg, 1)
		return nil
	})
	if e != nil {
		return e
	}
	x.open("SecurityGroupIds")
	for _, g := range lb.groups {
		x.elem("member", g)
	}
	x.close("SecurityGroupIds")
	return nil
}

// setSubnets replaces a load balancer's subnets (of its VPC).
func (s *elbService) setSubnets(c elbCall, x *iamXML) *elbErr {
	lb, e := c.rg.lbNamed(c.p)
	if e != nil {
		return e
	}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		subnets, vpc, e := lbSubnets(rg, c.p, lb.typ)
		if e != nil {
			return e
		}
		if vpc != lb.vpcID {
			return elbError("InvalidConfigurationRequest", "The subnets must be in the load balancer's VPC '%s'", lb.vpcID)
		}
		lb.reference(rg, -1)
		lb.subnets = subnets
		lb.reference(rg, 1)
		return nil
	})
	if e != nil {
		return e
	}
	x.open("AvailabilityZones")
	for _, sn := range lb.subnets {
		x.open("member").elem("ZoneName", sn.zone).elem("SubnetId", sn.id).WriteString("<LoadBalancerAddresses/>")
		x.close("member")
	}
	x.close("AvailabilityZones")
	return nil
}

func (s *elbService) describeLoadBalancerAttributes(c elbCall, x *iamXML) *elbErr {
	lb, e := c.rg.lbNamed(c.p)
	if e != nil {
		return e
	}
	elbWriteAttributes(x, lb.attrs)
	return nil
}

func (s *elbService) modifyLoadBalancerAttributes(c elbCall, x *iamXML) *elbErr {
	lb, e := c.rg.lbNamed(c.p)
	if e != nil {
		return e
	}
	if e := elbModifyAttributes(c.p, lb.attrs); e != nil {
		return e
	}
	elbWriteAttributes(x, lb.attrs)
	return nil
}

// Listeners.

type elbListener struct {
	arn, lb, protocol string
	port              int
	actions           []elbAction
	certs             []string
	sslPolicy         string
	created           time.Time
	tags              ec2Tags
	fingerprint       string
}

// elbAction is a listener's default action: forward (to target groups
// with weights), fixed-response or redirect (their settings kept as
// given).
type elbAction struct {
	typ     string
	order   int
	forward []elbForward
	config  map[string]string // FixedResponseConfig.* / RedirectConfig.* as given
}

type elbForward struct {
	tg     string
	weight int
}

// targetGroups are the target groups a listener forwards to.
func (l *elbListener) targetGroups() []string {
	var out []string
	for _, a := range l.actions {
		for _, f := range a.forward {
			out = append(out, f.tg)
		}
	}
	return out
}

// parseActions reads DefaultActions.member.N: forward (TargetGroupArn or
// ForwardConfig.TargetGroups.member.M.TargetGroupArn/Weight) to target
// groups of the load balancer's VPC that no other load balancer uses
// (TargetGroupAssociationLimit), fixed-response, redirect.
func (s *elbService) parseActions(c elbCall, lb *elbLB) ([]elbAction, *elbErr) {
	var out []elbAction
	for i := 1; ; i++ {
		k := fmt.Sprintf("DefaultActions.member.%d", i)
		if !c.p.Has(k + ".Type") {
			break
		}
		a := elbAction{typ: c.p.Get(k + ".Type"), order: i}
		if o, set, e := elbInt(c.p, k+".Order", 1, 50000); e != nil {
			return nil, e
		} else if set {
			a.order = o
		}
		switch a.typ {
		case "forward":
			if arn := c.p.Get(k + ".TargetGroupArn"); arn != "" {
				a.forward = append(a.forward, elbForward{tg: arn, weight: 1})
			}
			for j := 1; ; j++ {
				m := fmt.Sprintf("%s.ForwardConfig.TargetGroups.member.%d", k, j)
				if !c.p.Has(m + ".TargetGroupArn") {
					break
				}
				w, _, e := elbInt(c.p, m+".Weight", 0, 999)
				if e != nil {
					return nil, e
				}
				if !c.p.Has(m + ".Weight") {
					w = 1
				}
				arn := c.p.Get(m + ".TargetGroupArn")
				if !slices.ContainsFunc(a.forward, func(f elbForward) bool { return f.tg == arn }) {
					a.forward = append(a.forward, elbForward{tg: arn, weight: w})
				}
			}
			if len(a.forward) == 0 {
				return nil, elbError("ValidationError", "A target group ARN must be specified for a forward action")
			}
			for _, f := range a.forward {
				tg := c.rg.tgs[f.tg]
				if tg == nil {
					return nil, elbError("TargetGroupNotFound", "Target group '%s' not found", f.tg)
				}
				if tg.vpcID != lb.vpcID {
					return nil, elbError("ValidationError", "Target group '%s' is not in the load balancer's VPC '%s'", f.tg, lb.vpcID)
				}
				for _, other := range c.rg.lbsUsing(f.tg) {
					if other != lb.arn {
						return nil, elbError("TargetGroupAssociationLimit", "The following target groups cannot be associated with more than one load balancer: %s", f.tg)
					}
				}
			}
		case "fixed-response", "redirect":
			prefix := k + ".FixedResponseConfig."
			if a.typ == "redirect" {
				prefix = k + ".RedirectConfig."
			}
			a.config = map[string]string{}
			for key := range c.p.Values {
				if rest, ok := strings.CutPrefix(key, prefix); ok {
					a.config[rest] = c.p.Get(key)
				}
			}
		default:
			return nil, elbError("ValidationError", "Action type '%s' is not supported by the emulator (forward, fixed-response, redirect)", a.typ)
		}
		out = append(out, a)
	}
	if len(out) == 0 {
		return nil, elbError("ValidationError", "A default action must be specified")
	}
	slices.SortStableFunc(out, func(a, b elbAction) int { return a.order - b.order })
	return out, nil
}

// lbsUsing are the load balancers with a listener that forwards to tg.
func (rg *elbRegion) lbsUsing(tg string) []string {
	var out []string
	for _, l := range rg.listeners {
		if slices.Contains(l.targetGroups(), tg) && !slices.Contains(out, l.lb) {
			out = append(out, l.lb)
		}
	}
	slices.Sort(out)
	return out
}

// listenerProtocol reads Protocol and Port of an application load
// balancer's listener: HTTP or HTTPS (which needs a certificate).
func listenerProtocol(c elbCall, lb *elbLB, protocol string, port int) (string, []string, *elbErr) {
	var certs []string
	for i := 1; ; i++ {
		k := fmt.Sprintf("Certificates.member.%d.CertificateArn", i)
		if !c.p.Has(k) {
			break
		}
		certs = append(certs, c.p.Get(k))
	}
	valid := []string{"HTTP", "HTTPS"}
	if lb.typ == "network" {
		valid = []string{"TCP", "TLS", "UDP", "TCP_UDP"}
	}
	if !slices.Contains(valid, protocol) {
		return "", nil, elbError("UnsupportedProtocol", "Protocol '%s' is not supported for a load balancer of type '%s'", protocol, lb.typ)
	}
	if (protocol == "HTTPS" || protocol == "TLS") && len(certs) == 0 {
		return "", nil, elbError("ValidationError", "A certificate must be specified for %s listeners", protocol)
	}
	return protocol, certs, nil
}

// createListener adds a listener (LoadBalancerArn, Protocol, Port,
// DefaultActions, Certificates, SslPolicy, Tags) to a load balancer. It is
// idempotent as AWS documents: the same settings on a port answer the
// existing listener; other settings are DuplicateListener.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
func (s *elbService) createListener(c elbCall, x *iamXML) *elbErr {
	lb, e := c.rg.lbNamed(c.p)
	if e != nil {
		return e
	}
	port, set, e := elbInt(c.p, "Port", 1, 65535)
	if e != nil {
		return e
	}
	if !set {
		return elbError("ValidationError", "A listener port must be specified")
	}
	fp := elbFingerprint(c.p)
	for _, l := range c.rg.listeners {
		if l.lb == lb.arn && l.port == port {
			if l.fingerprint != fp {
				return elbError("DuplicateListener", "A listener already exists on this port for this load balancer '%s'", lb.arn)
			}
			x.open("Listeners")
			s.writeListener(l, x)
			x.close("Listeners")
			return nil
		}
	}
	protocol := c.p.Get("Protocol")
	if protocol == "" {
		protocol = "HTTP"
	}
	protocol, certs, e := listenerProtocol(c, lb, protocol, port)
	if e != nil {
		return e
	}
	actions, e := s.parseActions(c, lb)
	if e != nil {
		return e
	}
	tags, e := elbTags(c.p)
	if e != nil {
		return e
	}
	l := &elbListener{lb: lb.arn, protocol: protocol, port: port, actions: actions, certs: certs, created: c.now, tags: tags, fingerprint: fp}
	if protocol == "HTTPS" || protocol == "TLS" {
		l.sslPolicy = c.p.Get("SslPolicy")
		if l.sslPolicy == "" {
			l.sslPolicy = "ELBSecurityPolicy-2016-08"
		}
	}
	kind, _, _ := strings.Cut(strings.TrimPrefix(lb.arn[strings.Index(lb.arn, ":loadbalancer/"):], ":loadbalancer/"), "/")
	l.arn = s.arn(c.rg, "listener/"+kind+"/"+lb.name+"/"+lb.id+"/"+s.newID())
	c.rg.listeners[l.arn] = l
	x.open("Listeners")
	s.writeListener(l, x)
	x.close("Listeners")
	return nil
}

func (s *elbService) writeListener(l *elbListener, x *iamXML) {
	x.open("member")
	x.elem("ListenerArn", l.arn)
	x.elem("LoadBalancerArn", l.lb)
	x.elem("Port", strconv.Itoa(l.port))
	x.elem("Protocol", l.protocol)
	if len(l.certs) > 0 {
		x.open("Certificates")
		for _, cert := range l.certs {
			x.open("member").elem("CertificateArn", cert).close("member")
		}
		x.close("Certificates")
	}
	if l.sslPolicy != "" {
		x.elem("SslPolicy", l.sslPolicy)
	}
	x.open("DefaultActions")
	for _, a := range l.actions {
		x.open("member").elem("Type", a.typ).elem("Order", strconv.Itoa(a.order))
		switch a.typ {
		case "forward":
			if len(a.forward) == 1 {
				x.elem("TargetGroupArn", a.forward[0].tg)
			}
			x.open("ForwardConfig").open("TargetGroups")
			for _, f := range a.forward {
				x.open("member").elem("TargetGroupArn", f.tg).elem("Weight", strconv.Itoa(f.weight)).close("member")
			}
			x.close("TargetGroups").close("ForwardConfig")
		case "fixed-response", "redirect":
			tag := "FixedResponseConfig"
			if a.typ == "redirect" {
				tag = "RedirectConfig"
			}
			keys := slices.Sorted(maps.Keys(a.config))
			x.open(tag)
			for _, k := range keys {
				x.elem(k, a.config[k])
			}
			x.close(tag)
		}
		x.close("member")
	}
	x.close("DefaultActions")
	x.close("member")
}

// listenerNamed returns the listener ListenerArn names.
func (rg *elbRegion) listenerNamed(p iamParams) (*elbListener, *elbErr) {
	arn, e := elbRequired(p, "ListenerArn")
	if e != nil {
		return nil, e
	}
	if l := rg.listeners[arn]; l != nil {
		return l, nil
	}
	return nil, elbError("ListenerNotFound", "Listener '%s' not found", arn)
}

// describeListeners lists the listeners of a load balancer
// (LoadBalancerArn) or by ListenerArns, one of which is required, by ARN
// (Marker, PageSize).
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListeners.html
func (s *elbService) describeListeners(c elbCall, x *iamXML) *elbErr {
	arns := c.p.list("ListenerArns")
	lbArn := c.p.Get("LoadBalancerArn")
	if len(arns) > 0 && lbArn != "" || len(arns) == 0 && lbArn == "" {
		return elbError("ValidationError", "Listener ARNs or a load balancer ARN must be specified, not both")
	}
	after, size, e := elbPage(c.p, "elb-listener:")
	if e != nil {
		return e
	}
	var keys []string
	if lbArn != "" {
		if c.rg.lbs[lbArn] == nil {
			return elbError("LoadBalancerNotFound", "Load balancer '%s' not found", lbArn)
		}
		for arn, l := range c.rg.listeners {
			if l.lb == lbArn {
				keys = append(keys, arn)
			}
		}
	}
	for _, arn := range arns {
		if c.rg.listeners[arn] == nil {
			return elbError("ListenerNotFound", "Listener '%s' not found", arn)
		}
		keys = append(keys, arn)
	}
	writePage(x, "Listeners", keys, after, size, "elb-listener:", func(arn string) { s.writeListener(c.rg.listeners[arn], x) })
	return nil
}

// modifyListener changes a listener's Port (DuplicateListener when another
// listener has it), Protocol, Certificates, SslPolicy, DefaultActions.
func (s *elbService) modifyListener(c elbCall, x *iamXML) *elbErr {
	l, e := c.rg.listenerNamed(c.p)
	if e != nil {
		return e
	}
	lb := c.rg.lbs[l.lb]
	port, set, e := elbInt(c.p, "Port", 1, 65535)
	if e != nil {
		return e
	}
	if !set {
		port = l.port
	}
	for _, o := range c.rg.listeners {
		if o != l && o.lb == l.lb && o.port == port {
			return elbError("DuplicateListener", "A listener already exists on port %d for this load balancer '%s'", port, l.lb)
		}
	}
	protocol := c.p.Get("Protocol")
	if protocol == "" {
		protocol = l.protocol
	}
	certs := l.certs
	if c.p.Has("Certificates.member.1.CertificateArn") || protocol != l.protocol {
		var e *elbErr
		if protocol, certs, e = listenerProtocol(c, lb, protocol, port); e != nil {
			return e
		}
	}
	actions := l.actions
	if c.p.Has("DefaultActions.member.1.Type") {
		var e *elbErr
		if actions, e = s.parseActions(c, lb); e != nil {
			return e
		}
	}
	l.port, l.protocol, l.certs, l.actions = port, protocol, certs, actions
	if p := c.p.Get("SslPolicy"); p != "" {
		l.sslPolicy = p
	}
	if protocol == "HTTP" {
		l.sslPolicy, l.certs = "", nil
	} else if l.sslPolicy == "" {
		l.sslPolicy = "ELBSecurityPolicy-2016-08"
	}
	l.fingerprint = "" // no longer as created: a create of the port is a duplicate
	x.open("Listeners")
	s.writeListener(l, x)
	x.close("Listeners")
	return nil
}

// deleteListener deletes a listener: ListenerNotFound when there is none.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteListener.html
func (s *elbService) deleteListener(c elbCall, x *iamXML) *elbErr {
	l, e := c.rg.listenerNamed(c.p)
	if e != nil {
		return e
	}
	delete(c.rg.listeners, l.arn)
	return nil
}
