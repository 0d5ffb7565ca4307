package aws_elb

import (
	"strings"

	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

// CloudTrail logs ELBv2's calls with their parameters as the API names
// them, lists as arrays; a resource is mostly named by its ARN
// (arn:aws:elasticloadbalancing:REGION:ACCOUNT:loadbalancer/app/NAME/ID,
// targetgroup/NAME/ID, listener/app/LB/LBID/ID):
// https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-cloudtrail-logs.html
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Operations.html

const elbSource = "elasticloadbalancing.amazonaws.com"

var (
	_ module.Noticer = (*lbMapper)(nil)
	_ module.Noticer = (*tgMapper)(nil)
	_ module.Noticer = (*targetMapper)(nil)
	_ module.Noticer = (*listenerMapper)(nil)
)

// elbARN reads an ELBv2 ARN whose resource begins with prefix into the
// resource's name (the part after prefix, up to the next /) and region.
func elbARN(arn, prefix string) (name, region string, ok bool) {
	a, ok := trail.ParseARN(arn)
	if !ok || a.Service != "elasticloadbalancing" {
		return "", "", false
	}
	rest, ok := strings.CutPrefix(a.Resource, prefix)
	if !ok {
		return "", "", false
	}
	name, _, _ = strings.Cut(rest, "/")
	return name, a.Region, name != ""
}

// namedBy are the identities (name and region, in t) of the resources of
// arns that are of prefix.
func namedBy(t module.Table, prefix string, arns []string) []string {
	var ids []string
	for _, arn := range arns {
		if name, region, ok := elbARN(arn, prefix); ok {
			ids = append(ids, named(t, name, region))
		}
	}
	return trail.Unique(ids)
}

// tagged are the ARNs an AddTags or RemoveTags call changed the tags of
// (requestParameters.resourceArns).
func tagged(ev module.Event) []string {
	if !trail.Is(ev, elbSource, "AddTags", "RemoveTags") {
		return nil
	}
	return trail.Strings(ev.Request, "resourceArns")
}

// created names what a create made: the resources of prefix among the
// ARNs the response lists (responseElements.LIST[].MEMBER), else the
// requestParameters.name in the event's region, when the request's type
// is typ (or says none).
func created(ev module.Event, t module.Table, prefix, list, member, typ string) []string {
	if ids := namedBy(t, prefix, trail.Strings(ev.Response, list, member)); len(ids) > 0 {
		return ids
	}
	name := trail.String(ev.Request, "name")
	if kind := trail.String(ev.Request, "type"); name == "" || ev.Region == "" || (kind != "" && !strings.EqualFold(kind, typ)) {
		return nil
	}
	return []string{named(t, name, ev.Region)}
}

// Noticed names the application load balancer a call created, deleted,
// moved (subnets, security groups) or tagged, by name in its region
// (the table's identity): CreateLoadBalancer's responseElements
// loadBalancers[].loadBalancerArn (else requestParameters.name in the
// event's region), and the loadBalancerArn of DeleteLoadBalancer,
// SetSubnets and SetSecurityGroups, and AddTags' and RemoveTags'
// resourceArns.
func (m *lbMapper) Noticed(ev module.Event) []string {
	t := loadBalancersTable.Table()
	switch {
	case trail.Is(ev, elbSource, "CreateLoadBalancer"):
		return created(ev, t, "loadbalancer/app/", "loadBalancers", "loadBalancerArn", "application")
	case trail.Is(ev, elbSource, "DeleteLoadBalancer", "SetSubnets", "SetSecurityGroups"):
		return namedBy(t, "loadbalancer/app/", trail.Strings(ev.Request, "loadBalancerArn"))
	}
	return namedBy(t, "loadbalancer/app/", tagged(ev))
}

// Noticed names the instance target group a call created, deleted,
// changed (its health check) or tagged, by name in its region (the
// table's identity): CreateTargetGroup's responseElements
// targetGroups[].targetGroupArn (else requestParameters.name in the
// event's region), and the targetGroupArn of DeleteTargetGroup and
// ModifyTargetGroup, and AddTags' and RemoveTags' resourceArns.
func (m *tgMapper) Noticed(ev module.Event) []string {
	t := targetGroupsTable.Table()
	switch {
	case trail.Is(ev, elbSource, "CreateTargetGroup"):
		if kind := trail.String(ev.Request, "targetType"); kind != "" && kind != "instance" {
			return nil
		}
		return created(ev, t, "targetgroup/", "targetGroups", "targetGroupArn", "")
	case trail.Is(ev, elbSource, "DeleteTargetGroup", "ModifyTargetGroup"):
		return namedBy(t, "targetgroup/", trail.Strings(ev.Request, "targetGroupArn"))
	}
	return namedBy(t, "targetgroup/", tagged(ev))
}

// Noticed names the targets a RegisterTargets or DeregisterTargets call
// added or removed: the requestParameters' targetGroupArn and each of
// targets[] (id, port)
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RegisterTargets.html).
// A target whose port the request leaves to the group's is not named:
// its identity holds the port, which the call does not say.
func (m *targetMapper) Noticed(ev module.Event) []string {
	if !trail.Is(ev, elbSource, "RegisterTargets", "DeregisterTargets") {
		return nil
	}
	groups := namedBy(targetGroupsTable.Table(), "targetgroup/", trail.Strings(ev.Request, "targetGroupArn"))
	if len(groups) != 1 {
		return nil
	}
	var ids []string
	for _, tg := range trail.Values(ev.Request, "targets") {
		id := trail.String(tg, "id")
		port, ok := trail.Int(trail.Field(tg, "port"))
		if id == "" || !ok {
			continue
		}
		rec, err := targetsTable.Record(Target{TargetGroupID: groups[0], InstanceID: id, Port: &port})
		if err == nil {
			ids = append(ids, module.CloudIDOf(targetsTable.Table(), rec))
		}
	}
	return trail.Unique(ids)
}

// Noticed names the listener a call created, deleted, changed or tagged,
// by ARN (the table's identity): CreateListener's responseElements
// listeners[].listenerArn, the listenerArn of DeleteListener and
// ModifyListener, and AddTags' and RemoveTags' resourceArns that are
// listeners'. (A load balancer's delete deletes its listeners too: the
// next read finds them gone.)
func (m *listenerMapper) Noticed(ev module.Event) []string {
	var arns []string
	switch {
	case trail.Is(ev, elbSource, "CreateListener"):
		arns = trail.Strings(ev.Response, "listeners", "listenerArn")
	case trail.Is(ev, elbSource, "DeleteListener", "ModifyListener"):
		arns = trail.Strings(ev.Request, "listenerArn")
	default:
		arns = tagged(ev)
	}
	var ids []string
	for _, arn := range arns {
		if _, _, ok := elbARN(arn, "listener/app/"); ok {
			ids = append(ids, arn)
		}
	}
	return ids
}
