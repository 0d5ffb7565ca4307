package aws_elb

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

// AWS's pages on load balancers, which this file follows:
//   - CreateLoadBalancer: names unique per region and account; "This
//     operation is idempotent ... If you attempt to create multiple load
//     balancers with the same settings, each call succeeds"; other settings
//     under the name are DuplicateLoadBalancerName:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
//   - LoadBalancerState (provisioning, active, active_impaired, failed):
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancerState.html
//   - SetSubnets, SetSecurityGroups (in place):
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetSubnets.html
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetSecurityGroups.html
//   - DeleteLoadBalancer: deletes its listeners too; "If the load balancer
//     does not exist or has already been deleted, the call succeeds":
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteLoadBalancer.html
//
// Name, scheme and region cannot change: a change replaces the load
// balancer, deleted first (its name must stay unique, and a target group
// can serve only one load balancer, so no stand-in can take its listeners).

type lbMapper struct {
	c         *clients
	t         module.Table
	pollAfter time.Duration
}

// lbRecord is a load balancer in cloud form; groups maps its group ids to
// their identities.
func lbRecord(region string, lb types.LoadBalancer, tags []types.Tag, groups map[string]string) module.Record {
	var subnets, sgs []string
	for _, az := range lb.AvailabilityZones {
		subnets = append(subnets, aws.ToString(az.SubnetId))
	}
	for _, g := range lb.SecurityGroups {
		if cid, ok := groups[g]; ok {
			sgs = append(sgs, cid)
		} else {
			sgs = append(sgs, g) // a group EC2 did not list: shown as is, never equal to a row's
		}
	}
	var state string
	if lb.State != nil {
		state = string(lb.State.Code)
	}
	return module.Record{
		"name": aws.ToString(lb.LoadBalancerName), "scheme": string(lb.Scheme),
		"subnets": module.Strings(subnets), "security_groups": module.Strings(sgs),
		"region": region, "tags": tagRecord(tags),
		"load_balancer_arn": aws.ToString(lb.LoadBalancerArn), "dns_name": aws.ToString(lb.DNSName), "state": state,
	}
}

// records renders load balancers of a region with their tags and groups.
func (m *lbMapper) records(ctx context.Context, region string, cl *elb.Client, lbs []types.LoadBalancer) ([]module.Record, error) {
	var arns, gids []string
	for _, lb := range lbs {
		arns = append(arns, aws.ToString(lb.LoadBalancerArn))
		gids = append(gids, lb.SecurityGroups...)
	}
	tags, err := tagsOf(ctx, cl, arns)
	if err != nil {
		return nil, err
	}
	groups, err := ec2x.GroupCloudIDs(ctx, m.c.ec2.Region(region), aws_security_group.GroupTable(), gids)
	if err != nil {
		return nil, err
	}
	out := make([]module.Record, 0, len(lbs))
	for _, lb := range lbs {
		out = append(out, lbRecord(region, lb, tags[aws.ToString(lb.LoadBalancerArn)], groups))
	}
	return out, nil
}

func (m *lbMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return m.c.elb.EachRegion(ctx, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]module.Record, error) {
		lbs, err := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		return m.records(ctx, region, cl, lbs)
	})
}

// Create creates the load balancer (type application). A retried create
// finds the name: the same settings answer the same load balancer, and a
// load balancer of the name made otherwise (DuplicateLoadBalancerName) is
// the row's by identity, adopted (the engine then updates what differs). A
// provisioning load balancer answers a *module.Pending that Poll carries on
// until it is active.
func (m *lbMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region, name := want.String("region"), want.String("name")
	cl := m.c.elb.Region(region)
	groups, err := ec2x.GroupIDs(ctx, m.c.ec2.Region(region), aws_security_group.GroupTable(), module.Strings(want["security_groups"]))
	if err != nil {
		return nil, err
	}
	in := &elb.CreateLoadBalancerInput{
		Name:           aws.String(name),
		Type:           types.LoadBalancerTypeEnumApplication,
		Scheme:         types.LoadBalancerSchemeEnum(want.String("scheme")),
		Subnets:        module.Strings(want["subnets"]),
		SecurityGroups: groups,
		Tags:           toTags(want["tags"], ""),
	}
	var lb types.LoadBalancer
	out, err := cl.CreateLoadBalancer(ctx, in)
	switch {
	case module.IsCode(err, "DuplicateLoadBalancerName"):
		lbs, derr := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{Names: []string{name}})
		if derr != nil || len(lbs) == 0 {
			return nil, terminal.Classify(err, "create load balancer %s in %s", name, region)
		}
		lb = lbs[0]
	case err != nil:
		return nil, terminal.Classify(err, "create load balancer %s in %s", name, region)
	case len(out.LoadBalancers) != 1:
		return nil, fmt.Errorf("create load balancer %s in %s: AWS answered %d load balancers", name, region, len(out.LoadBalancers))
	default:
		lb = out.LoadBalancers[0]
	}
	return m.settled(ctx, region, cl, lb)
}

// settled answers a load balancer as Read would once it is active, a
// *module.Pending while it provisions, a terminal error when it failed.
func (m *lbMapper) settled(ctx context.Context, region string, cl *elb.Client, lb types.LoadBalancer) (module.Record, error) {
	recs, err := m.records(ctx, region, cl, []types.LoadBalancer{lb})
	if err != nil {
		return nil, err
	}
	rec := recs[0]
	switch rec.String("state") {
	case string(types.LoadBalancerStateEnumProvisioning):
		return nil, &module.Pending{Handle: region + " " + aws.ToString(lb.LoadBalancerArn), RetryAfter: m.pollAfter, Record: rec}
	case string(types.LoadBalancerStateEnumFailed):
		reason := "no reason given"
		if lb.State != nil && lb.State.Reason != nil {
			reason = aws.ToString(lb.State.Reason)
		}
		return nil, &module.TerminalError{Err: fmt.Errorf("load balancer %s failed: %s", aws.ToString(lb.LoadBalancerName), reason)}
	}
	return rec, nil
}

// Poll asks about a provisioning load balancer (handle: region and ARN).
func (m *lbMapper) Poll(ctx context.Context, call module.Call, handle string) (module.Record, error) {
	region, arn, ok := strings.Cut(handle, " ")
	if !ok || !strings.Contains(arn, ":loadbalancer/") {
		return nil, &module.TerminalError{Err: fmt.Errorf("not a load balancer operation handle: %q", handle)}
	}
	cl := m.c.elb.Region(region)
	lbs, err := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})
	if module.IsCode(err, "LoadBalancerNotFound") || err == nil && len(lbs) == 0 {
		return nil, fmt.Errorf("load balancer %s is gone while it was provisioning", arn)
	} else if err != nil {
		return nil, err
	}
	return m.settled(ctx, region, cl, lbs[0])
}

// Update changes subnets (SetSubnets), security groups (SetSecurityGroups)
// and tags in place, each only when it differs; name, scheme and region
// need a new load balancer (module.ErrReplace).
func (m *lbMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	if len(m.Differing(m.t.CreateOnly, want, have)) > 0 {
		return nil, module.ErrReplace
	}
	region, arn := have.String("region"), have.String("load_balancer_arn")
	cl := m.c.elb.Region(region)
	got := maps.Clone(have)
	if len(m.Differing([]string{"subnets"}, want, have)) > 0 {
		if _, err := cl.SetSubnets(ctx, &elb.SetSubnetsInput{LoadBalancerArn: aws.String(arn), Subnets: module.Strings(want["subnets"])}); err != nil {
			return nil, terminal.Classify(err, "set the subnets of %s", arn)
		}
		got["subnets"] = want["subnets"]
	}
	if len(m.Differing([]string{"security_groups"}, want, have)) > 0 {
		groups, err := ec2x.GroupIDs(ctx, m.c.ec2.Region(region), aws_security_group.GroupTable(), module.Strings(want["security_groups"]))
		if err != nil {
			return nil, err
		}
		if _, err := cl.SetSecurityGroups(ctx, &elb.SetSecurityGroupsInput{LoadBalancerArn: aws.String(arn), SecurityGroups: groups}); err != nil {
			return nil, terminal.Classify(err, "set the security groups of %s", arn)
		}
		got["security_groups"] = want["security_groups"]
	}
	if !module.Same(want["tags"], have["tags"]) {
		if err := syncTags(ctx, cl, arn, want["tags"], have["tags"]); err != nil {
			return nil, err
		}
		got["tags"] = want["tags"]
	}
	return got, nil
}

// Delete deletes the load balancer (and, as AWS does, its listeners).
func (m *lbMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	arn := have.String("load_balancer_arn")
	_, err := m.c.elb.Region(have.String("region")).DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
	if err := module.Deleted(err, "LoadBalancerNotFound"); err != nil {
		return terminal.Classify(err, "delete load balancer %s", arn)
	}
	return nil
}

// Differing compares as the engine does (subnets and security groups are
// many-valued references: sets), except that no security groups in the
// row is AWS's choice at creation, which any groups satisfy.
func (m *lbMapper) Differing(cols []string, db, cloud module.Record) []string {
	var out []string
	for _, c := range m.t.Differing(cols, db, cloud) {
		if c == "security_groups" && len(module.Strings(db[c])) == 0 {
			continue
		}
		out = append(out, c)
	}
	return out
}

var (
	_ module.Mapper   = (*lbMapper)(nil)
	_ module.Poller   = (*lbMapper)(nil)
	_ module.Comparer = (*lbMapper)(nil)
)
