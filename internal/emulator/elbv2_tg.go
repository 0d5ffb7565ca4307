package emulator

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

type elbTG struct {
	arn, name, protocol, protocolVersion, vpcID, targetType, ipType string
	port                                                            int
	hc                                                              elbHealthCheck
	targets                                                         map[string]*elbTarget // by id:port
	attrs                                                           map[string]string
	tags                                                            ec2Tags
	fingerprint                                                     string
}

// elbHealthCheck are a target group's health check settings.
type elbHealthCheck struct {
	protocol, port, path, matcher         string
	interval, timeout, healthy, unhealthy int
	enabled                               bool
}

type elbTarget struct {
	id         string
	port       int
	registered time.Time
	drainUntil time.Time // set while it drains after deregistration
}

func elbTargetKey(id string, port int) string { return id + ":" + strconv.Itoa(port) }

// elbTGAttributes are a new target group's attributes (their defaults).
func elbTGAttributes() map[string]string {
	return map[string]string{
		"deregistration_delay.timeout_seconds":  "300",
		"stickiness.enabled":                    "false",
		"stickiness.type":                       "lb_cookie",
		"stickiness.lb_cookie.duration_seconds": "86400",
		"load_balancing.algorithm.type":         "round_robin",
		"slow_start.duration_seconds":           "0",
	}
}

// settle forgets the targets whose deregistration delay has passed.
func (rg *elbRegion) settle(now time.Time) {
	for _, tg := range rg.tgs {
		for k, t := range tg.targets {
			if !t.drainUntil.IsZero() && !now.Before(t.drainUntil) {
				delete(tg.targets, k)
			}
		}
	}
}

// healthCheck reads the health check parameters over hc (the defaults, or
// the group's settings for ModifyTargetGroup).
func healthCheck(p iamParams, hc elbHealthCheck) (elbHealthCheck, *elbErr) {
	for _, f := range []struct {
		key    string
		lo, hi int
		dst    *int
	}{
		{"HealthCheckIntervalSeconds", 5, 300, &hc.interval},
		{"HealthCheckTimeoutSeconds", 2, 120, &hc.timeout},
		{"HealthyThresholdCount", 2, 10, &hc.healthy},
		{"UnhealthyThresholdCount", 2, 10, &hc.unhealthy},
	} {
		n, set, e := elbInt(p, f.key, f.lo, f.hi)
		if e != nil {
			return hc, e
		}
		if set {
			*f.dst = n
		}
	}
	if hc.timeout >= hc.interval {
		return hc, elbError("ValidationError", "Health check interval must be greater than the timeout.")
	}
	if v := p.Get("HealthCheckProtocol"); v != "" {
		if !slices.Contains([]string{"HTTP", "HTTPS", "TCP"}, v) {
			return hc, elbError("ValidationError", "Health check protocol '%s' is not valid", v)
		}
		hc.protocol = v
	}
	if v := p.Get("HealthCheckPort"); v != "" {
		if n, err := strconv.Atoi(v); v != "traffic-port" && (err != nil || n < 1 || n > 65535) {
			return hc, elbError("ValidationError", "Health check port '%s' must be 'traffic-port' or a port from 1 to 65535", v)
		}
		hc.port = v
	}
	if v := p.Get("HealthCheckPath"); v != "" {
		if !strings.HasPrefix(v, "/") || len(v) > 1024 {
			return hc, elbError("ValidationError", "Health check path '%s' must begin with '/' and be at most 1024 characters", v)
		}
		hc.path = v
	}
	if v := p.Get("Matcher.HttpCode"); v != "" {
		hc.matcher = v
	}
	if v := p.Get("HealthCheckEnabled"); v == "false" {
		return hc, elbError("ValidationError", "Health checks cannot be disabled for target groups of target type 'instance'")
	}
	return hc, nil
}

// createTargetGroup creates a target group of instances (Name, Protocol,
// Port, VpcId, health check settings with AWS's defaults, Tags). It is
// idempotent as AWS documents: the same name and settings answer the
// existing group; other settings are DuplicateTargetGroupName.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
func (s *elbService) createTargetGroup(c elbCall, x *iamXML) *elbErr {
	p := c.p
	name := p.Get("Name")
	if e := elbValidName("Target group", name); e != nil {
		return e
	}
	fp := elbFingerprint(p)
	for _, tg := range c.rg.tgs {
		if tg.name == name {
			if tg.fingerprint != fp {
				return elbError("DuplicateTargetGroupName", "A target group with the same name '%s' exists, but with different settings", name)
			}
			x.open("TargetGroups")
			s.writeTG(c, tg, x)
			x.close("TargetGroups")
			return nil
		}
	}
	tt := p.Get("TargetType")
	if tt == "" {
		tt = "instance"
	}
	if tt != "instance" {
		return elbError("ValidationError", "Target type '%s' is not supported by the emulator (instance)", tt)
	}
	protocol := p.Get("Protocol")
	if !slices.Contains([]string{"HTTP", "HTTPS", "TCP", "TLS", "UDP", "TCP_UDP"}, protocol) {
		return elbError("ValidationError", "A valid protocol must be specified for a target group of type 'instance', not '%s'", protocol)
	}
	port, set, e := elbInt(p, "Port", 1, 65535)
	if e != nil {
		return e
	}
	if !set {
		return elbError("ValidationError", "A port must be specified")
	}
	vpc := p.Get("VpcId")
	if vpc == "" {
		return elbError("ValidationError", "A VPC ID must be specified")
	}
	if e := s.withEC2(c, func(rg *ec2Region) *elbErr {
		if rg.vpcs.get(vpc) == nil {
			return elbError("ValidationError", "The VPC ID '%s' is not found", vpc)
		}
		return nil
	}); e != nil {
		return e
	}
	// AWS's defaults (CreateTargetGroup's reference): HTTP(S) checks every
	// 30 s with a 5 s timeout, 5 successes to be healthy, 2 failures not to.
	def := elbHealthCheck{protocol: protocol, port: "traffic-port", interval: 30, timeout: 5, healthy: 5, unhealthy: 2, enabled: true}
	if protocol == "HTTP" || protocol == "HTTPS" {
		def.path, def.matcher = "/", "200"
	} else {
		def.protocol, def.timeout, def.healthy = "TCP", 10, 5
	}
	hc, e := healthCheck(p, def)
	if e != nil {
		return e
	}
	tags, e := elbTags(p)
	if e != nil {
		return e
	}
	tg := &elbTG{name: name, protocol: protocol, vpcID: vpc, targetType: tt, ipType: "ipv4", port: port, hc: hc,
		targets: map[string]*elbTarget{}, attrs: elbTGAttributes(), tags: tags, fingerprint: fp}
	if protocol == "HTTP" || protocol == "HTTPS" {
		tg.protocolVersion = p.Get("ProtocolVersion")
		if tg.protocolVersion == "" {
			tg.protocolVersion = "HTTP1"
		}
	}
	tg.arn = s.arn(c.rg, "targetgroup/"+name+"/"+s.newID())
	c.rg.tgs[tg.arn] = tg
	x.open("TargetGroups")
	s.writeTG(c, tg, x)
	x.close("TargetGroups")
	return nil
}

func (s *elbService) writeTG(c elbCall, tg *elbTG, x *iamXML) {
	x.open("member")
	x.elem("TargetGroupArn", tg.arn)
	x.elem("TargetGroupName", tg.name)
	x.elem("Protocol", tg.protocol)
	x.elem("Port", strconv.Itoa(tg.port))
	x.elem("VpcId", tg.vpcID)
	x.elem("HealthCheckProtocol", tg.hc.protocol)
	x.elem("HealthCheckPort", tg.hc.port)
	x.elem("HealthCheckEnabled", strconv.FormatBool(tg.hc.enabled))
	x.elem("HealthCheckIntervalSeconds", strconv.Itoa(tg.hc.interval))
	x.elem("HealthCheckTimeoutSeconds", strconv.Itoa(tg.hc.timeout))
	x.elem("HealthyThresholdCount", strconv.Itoa(tg.hc.healthy))
	x.elem("UnhealthyThresholdCount", strconv.Itoa(tg.hc.unhealthy))
	if tg.hc.path != "" {
		x.elem("HealthCheckPath", tg.hc.path)
	}
	if tg.hc.matcher != "" {
		x.open("Matcher").elem("HttpCode", tg.hc.matcher).close("Matcher")
	}
	x.open("LoadBalancerArns")
	for _, arn := range c.rg.lbsUsing(tg.arn) {
		x.elem("member", arn)
	}
	x.close("LoadBalancerArns")
	x.elem("TargetType", tg.targetType)
	if tg.protocolVersion != "" {
		x.elem("ProtocolVersion", tg.protocolVersion)
	}
	x.elem("IpAddressType", tg.ipType)
	x.close("member")
}

// tgNamed returns the target group TargetGroupArn names.
func (rg *elbRegion) tgNamed(p iamParams) (*elbTG, *elbErr) {
	arn, e := elbRequired(p, "TargetGroupArn")
	if e != nil {
		return nil, e
	}
	if tg := rg.tgs[arn]; tg != nil {
		return tg, nil
	}
	return nil, elbError("TargetGroupNotFound", "Target group '%s' not found", arn)
}

// describeTargetGroups lists target groups by name: TargetGroupArns,
// Names or a LoadBalancerArn (one of them at most), Marker, PageSize.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTargetGroups.html
func (s *elbService) describeTargetGroups(c elbCall, x *iamXML) *elbErr {
	arns, names, lbArn := c.p.list("TargetGroupArns"), c.p.list("Names"), c.p.Get("LoadBalancerArn")
	given := 0
	for _, b := range []bool{len(arns) > 0, len(names) > 0, lbArn != ""} {
		if b {
			given++
		}
	}
	if given > 1 {
		return elbError("ValidationError", "Target group ARNs, names and a load balancer ARN cannot be combined")
	}
	after, size, e := elbPage(c.p, "elb-tg:")
	if e != nil {
		return e
	}
	byName := map[string]*elbTG{}
	for _, tg := range c.rg.tgs {
		byName[tg.name] = tg
	}
	var keys []string
	switch {
	case len(arns) > 0:
		for _, arn := range arns {
			tg := c.rg.tgs[arn]
			if tg == nil {
				return elbError("TargetGroupNotFound", "Target group '%s' not found", arn)
			}
			keys = append(keys, tg.name)
		}
	case len(names) > 0:
		for _, n := range names {
			if byName[n] == nil {
				return elbError("TargetGroupNotFound", "One or more target groups not found")
			}
			keys = append(keys, n)
		}
	case lbArn != "":
		if c.rg.lbs[lbArn] == nil {
			return elbError("LoadBalancerNotFound", "Load balancer '%s' not found", lbArn)
		}
		for _, tg := range c.rg.tgs {
			if slices.Contains(c.rg.lbsUsing(tg.arn), lbArn) {
				keys = append(keys, tg.name)
			}
		}
	default:
		keys = slices.Collect(maps.Keys(byName))
	}
	writePage(x, "TargetGroups", keys, after, size, "elb-tg:", func(k string) { s.writeTG(c, byName[k], x) })
	return nil
}

// modifyTargetGroup changes a target group's health check settings.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyTargetGroup.html
func (s *elbService) modifyTargetGroup(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	hc, e := healthCheck(c.p, tg.hc)
	if e != nil {
		return e
	}
	if hc != tg.hc {
		tg.hc = hc
		tg.fingerprint = "" // no longer as created
	}
	x.open("TargetGroups")
	s.writeTG(c, tg, x)
	x.close("TargetGroups")
	return nil
}

// deleteTargetGroup deletes a target group that no listener forwards to
// (ResourceInUse otherwise). The reference lists no TargetGroupNotFound
// for it: one that does not exist is deleted already (success).
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteTargetGroup.html
func (s *elbService) deleteTargetGroup(c elbCall, x *iamXML) *elbErr {
	arn, e := elbRequired(c.p, "TargetGroupArn")
	if e != nil {
		return e
	}
	tg := c.rg.tgs[arn]
	if tg == nil {
		return nil
	}
	if lbs := c.rg.lbsUsing(arn); len(lbs) > 0 {
		return elbError("ResourceInUse", "Target group '%s' is currently in use by a listener or a rule", arn)
	}
	delete(c.rg.tgs, arn)
	return nil
}

func (s *elbService) describeTargetGroupAttributes(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	elbWriteAttributes(x, tg.attrs)
	return nil
}

func (s *elbService) modifyTargetGroupAttributes(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	if e := elbModifyAttributes(c.p, tg.attrs); e != nil {
		return e
	}
	elbWriteAttributes(x, tg.attrs)
	return nil
}

// targets reads Targets.member.N.Id/Port (the group's port by default).
func targets(p iamParams, tg *elbTG) ([]elbTarget, *elbErr) {
	var out []elbTarget
	for i := 1; ; i++ {
		k := fmt.Sprintf("Targets.member.%d", i)
		if !p.Has(k + ".Id") {
			break
		}
		port, set, e := elbInt(p, k+".Port", 1, 65535)
		if e != nil {
			return nil, e
		}
		if !set {
			port = tg.port
		}
		out = append(out, elbTarget{id: p.Get(k + ".Id"), port: port})
	}
	if len(out) == 0 {
		return nil, elbError("ValidationError", "Targets must not be empty")
	}
	return out, nil
}

// registerTargets registers instances with a target group: each must be
// an instance of the group's VPC that is not terminated (InvalidTarget
// otherwise, as RegisterTargets' reference describes it). Registering a
// registered target again changes nothing; one that drains is registered
// anew.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RegisterTargets.html
func (s *elbService) registerTargets(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	ts, e := targets(c.p, tg)
	if e != nil {
		return e
	}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		for _, t := range ts {
			in := rg.instances.get(t.id)
			if in == nil || in.vpcID != tg.vpcID {
				return elbError("InvalidTarget", "The following targets are not in the target group's VPC '%s': '%s'", tg.vpcID, t.id)
			}
			// "If the target is an EC2 instance, it must be in the running
			// state when you register it" (RegisterTargets): pending,
			// stopping and stopped ones too are refused.
			if in.state != "running" {
				return elbError("InvalidTarget", "The following targets are not in a running state and cannot be registered: '%s'", t.id)
			}
		}
		return nil
	})
	if e != nil {
		return e
	}
	for _, t := range ts {
		k := elbTargetKey(t.id, t.port)
		if old := tg.targets[k]; old != nil && old.drainUntil.IsZero() {
			continue
		}
		tg.targets[k] = &elbTarget{id: t.id, port: t.port, registered: c.now}
	}
	return nil
}

// deregisterTargets deregisters targets: they drain for the group's
// deregistration_delay.timeout_seconds while a load balancer uses the
// group, else go at once. A target that is not registered (another port,
// say) is left alone and the call succeeds, as AWS answers it (see
// github.com/chaostoolkit-incubator/chaostoolkit-aws issue 60); an id that
// is no instance at all is InvalidTarget.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeregisterTargets.html
func (s *elbService) deregisterTargets(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	ts, e := targets(c.p, tg)
	if e != nil {
		return e
	}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		for _, t := range ts {
			if rg.instances.get(t.id) == nil && tg.targets[elbTargetKey(t.id, t.port)] == nil {
				return elbError("InvalidTarget", "The target '%s' is not a valid instance", t.id)
			}
		}
		return nil
	})
	if e != nil {
		return e
	}
	ts = slices.DeleteFunc(ts, func(t elbTarget) bool {
		old := tg.targets[elbTargetKey(t.id, t.port)]
		return old == nil || !old.drainUntil.IsZero()
	})
	delay, _ := strconv.Atoi(tg.attrs["deregistration_delay.timeout_seconds"])
	inUse := len(c.rg.lbsUsing(tg.arn)) > 0
	for _, t := range ts {
		k := elbTargetKey(t.id, t.port)
		if !inUse || delay == 0 {
			delete(tg.targets, k)
			continue
		}
		tg.targets[k].drainUntil = c.now.Add(time.Duration(delay) * time.Second)
	}
	return nil
}

// describeTargetHealth answers the health of a group's targets (all, or
// Targets.member.N), worked out from what the emulator knows, per the
// TargetHealth reference's states and reasons:
//   - draining (Target.DeregistrationInProgress) after deregistration;
//   - unused: Target.NotRegistered, Target.NotInUse (no listener forwards
//     to the group), Target.InvalidState (the instance is not running);
//   - initial: Elb.RegistrationInProgress while the load balancer is
//     provisioning or the instance pending, Elb.InitialHealthChecking until
//     Options.TargetHealthyDelay has passed since the target was registered,
//     the group first used or the load balancer became active (the latest);
//   - healthy after that (the emulator's targets always pass their checks).
//
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html
func (s *elbService) describeTargetHealth(c elbCall, x *iamXML) *elbErr {
	tg, e := c.rg.tgNamed(c.p)
	if e != nil {
		return e
	}
	var asked []elbTarget
	if c.p.Has("Targets.member.1.Id") {
		if asked, e = targets(c.p, tg); e != nil {
			return e
		}
	} else {
		keys := slices.Sorted(maps.Keys(tg.targets))
		for _, k := range keys {
			asked = append(asked, *tg.targets[k])
		}
	}
	// When the group came into use and its load balancers became active.
	var usedSince, activeAt time.Time
	lbs := c.rg.lbsUsing(tg.arn)
	for _, l := range c.rg.listeners {
		if slices.Contains(l.targetGroups(), tg.arn) && (usedSince.IsZero() || l.created.Before(usedSince)) {
			usedSince = l.created
		}
	}
	for _, arn := range lbs {
		if a := c.rg.lbs[arn].activeAt; activeAt.IsZero() || a.Before(activeAt) {
			activeAt = a
		}
	}
	states := map[string]string{}
	e = s.withEC2(c, func(rg *ec2Region) *elbErr {
		for _, t := range asked {
			in := rg.instances.get(t.id)
			if in == nil {
				if tg.targets[elbTargetKey(t.id, t.port)] == nil {
					return elbError("InvalidTarget", "The target '%s' does not exist", t.id)
				}
				states[t.id] = "terminated"
				continue
			}
			states[t.id] = in.state
		}
		return nil
	})
	if e != nil {
		return e
	}
	x.open("TargetHealthDescriptions")
	for _, t := range asked {
		state, reason, desc := "healthy", "", ""
		reg := tg.targets[elbTargetKey(t.id, t.port)]
		switch {
		case reg == nil:
			state, reason, desc = "unused", "Target.NotRegistered", "Target is not registered to the target group"
		case !reg.drainUntil.IsZero():
			state, reason, desc = "draining", "Target.DeregistrationInProgress", "Target deregistration is in progress"
		case len(lbs) == 0:
			state, reason, desc = "unused", "Target.NotInUse", "Target group is not configured to receive traffic from the load balancer"
		case states[t.id] == "pending" || c.now.Before(activeAt):
			state, reason, desc = "initial", "Elb.RegistrationInProgress", "Target registration is in progress"
		case states[t.id] != "running":
			state, reason, desc = "unused", "Target.InvalidState", "Target is in the "+states[t.id]+" state"
		default:
			since := reg.registered
			for _, tm := range []time.Time{usedSince, activeAt} {
				if tm.After(since) {
					since = tm
				}
			}
			if c.now.Before(since.Add(s.healthDelay)) {
				state, reason, desc = "initial", "Elb.InitialHealthChecking", "Initial health checks in progress"
			}
		}
		x.open("member")
		x.open("Target").elem("Id", t.id).elem("Port", strconv.Itoa(t.port)).close("Target")
		hcPort := tg.hc.port
		if hcPort == "traffic-port" {
			hcPort = strconv.Itoa(t.port)
		}
		x.elem("HealthCheckPort", hcPort)
		x.open("TargetHealth").elem("State", state)
		if reason != "" {
			x.elem("Reason", reason).elem("Description", desc)
		}
		x.close("TargetHealth")
		x.close("member")
	}
	x.close("TargetHealthDescriptions")
	return nil
}
