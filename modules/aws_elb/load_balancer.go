package aws_elb

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
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
	pollAfter time.Duration
}

// lbValue is a load balancer in cloud form; groups maps its group ids to
// their identities.
func lbValue(region string, lb types.LoadBalancer, tags []types.Tag, groups map[string]string) LoadBalancer {
	v := LoadBalancer{
		Name: aws.ToString(lb.LoadBalancerName), Scheme: string(lb.Scheme), Region: region, Tags: tagRecord(tags),
		ARN: aws.ToString(lb.LoadBalancerArn), DNSName: aws.ToString(lb.DNSName),
	}
	for _, az := range lb.AvailabilityZones {
		v.Subnets = append(v.Subnets, aws.ToString(az.SubnetId))
	}
	for _, g := range lb.SecurityGroups {
		if cid, ok := groups[g]; ok {
			v.SecurityGroups = append(v.SecurityGroups, cid)
		} else {
			v.SecurityGroups = append(v.SecurityGroups, g) // a group EC2 did not list: shown as is, never equal to a row's
		}
	}
	if lb.State != nil {
		v.State = string(lb.State.Code)
	}
	return v
}

// values renders load balancers of a region with their tags and groups.
func (m *lbMapper) values(ctx context.Context, region string, cl *elb.Client, lbs []types.LoadBalancer) ([]LoadBalancer, error) {
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
	out := make([]LoadBalancer, 0, len(lbs))
	for _, lb := range lbs {
		out = append(out, lbValue(region, lb, tags[aws.ToString(lb.LoadBalancerArn)], groups))
	}
	return out, nil
}

func (m *lbMapper) Read(ctx context.Context, call module.Call) ([]LoadBalancer, error) {
	return regional.Each(ctx, m.c.elb, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]LoadBalancer, error) {
		lbs, err := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		return m.values(ctx, region, cl, lbs)
	})
}

// Create creates the load balancer (type application). A retried create
// finds the name: the same settings answer the same load balancer, and a
// load balancer of the name made otherwise (DuplicateLoadBalancerName) is
// the row's by identity, adopted (the engine then updates what differs). A
// provisioning load balancer answers a *module.Pending that Poll carries on
// until it is active.
func (m *lbMapper) Create(ctx context.Context, call module.Call, want LoadBalancer) (LoadBalancer, error) {
	region, name := want.Region, want.Name
	cl := m.c.elb.Region(region)
	groups, err := ec2x.GroupIDs(ctx, m.c.ec2.Region(region), aws_security_group.GroupTable(), want.SecurityGroups)
	if err != nil {
		return LoadBalancer{}, err
	}
	in := &elb.CreateLoadBalancerInput{
		Name:           aws.String(name),
		Type:           types.LoadBalancerTypeEnumApplication,
		Scheme:         types.LoadBalancerSchemeEnum(want.Scheme),
		Subnets:        want.Subnets,
		SecurityGroups: groups,
		Tags:           toTags(want.Tags, ""),
	}
	var lb types.LoadBalancer
	out, err := cl.CreateLoadBalancer(ctx, in)
	switch {
	case module.IsCode(err, "DuplicateLoadBalancerName"):
		lbs, derr := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{Names: []string{name}})
		if derr != nil || len(lbs) == 0 {
			return LoadBalancer{}, terminal.Classify(err, "create load balancer %s in %s", name, region)
		}
		lb = lbs[0]
	case err != nil:
		return LoadBalancer{}, terminal.Classify(err, "create load balancer %s in %s", name, region)
	case len(out.LoadBalancers) != 1:
		return LoadBalancer{}, fmt.Errorf("create load balancer %s in %s: AWS answered %d load balancers", name, region, len(out.LoadBalancers))
	default:
		lb = out.LoadBalancers[0]
	}
	return m.settled(ctx, region, cl, lb)
}

// settled answers a load balancer as Read would once it is active, a
// *module.Pending (holding it as a record) while it provisions, a terminal
// error when it failed.
func (m *lbMapper) settled(ctx context.Context, region string, cl *elb.Client, lb types.LoadBalancer) (LoadBalancer, error) {
	vs, err := m.values(ctx, region, cl, []types.LoadBalancer{lb})
	if err != nil {
		return LoadBalancer{}, err
	}
	v := vs[0]
	switch v.State {
	case string(types.LoadBalancerStateEnumProvisioning):
		return LoadBalancer{}, loadBalancersTable.Pending(region+" "+aws.ToString(lb.LoadBalancerArn), m.pollAfter, &v)
	case string(types.LoadBalancerStateEnumFailed):
		reason := "no reason given"
		if lb.State != nil && lb.State.Reason != nil {
			reason = aws.ToString(lb.State.Reason)
		}
		return LoadBalancer{}, &module.TerminalError{Err: fmt.Errorf("load balancer %s failed: %s", aws.ToString(lb.LoadBalancerName), reason)}
	}
	return v, nil
}

// Poll asks about a provisioning load balancer (handle: region and ARN).
func (m *lbMapper) Poll(ctx context.Context, call module.Call, handle string) (*LoadBalancer, error) {
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
	v, err := m.settled(ctx, region, cl, lbs[0])
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// Update changes subnets (SetSubnets), security groups (SetSecurityGroups)
// and tags in place, each only when it differs; name, scheme and region
// need a new load balancer (module.ErrReplace).
func (m *lbMapper) Update(ctx context.Context, call module.Call, want, have LoadBalancer) (LoadBalancer, error) {
	if want.Name != have.Name || want.Scheme != have.Scheme || want.Region != have.Region {
		return LoadBalancer{}, module.ErrReplace
	}
	region, arn := have.Region, have.ARN
	cl := m.c.elb.Region(region)
	got := have
	if !slices.Equal(module.Strings(want.Subnets), module.Strings(have.Subnets)) {
		if _, err := cl.SetSubnets(ctx, &elb.SetSubnetsInput{LoadBalancerArn: aws.String(arn), Subnets: want.Subnets}); err != nil {
			return LoadBalancer{}, terminal.Classify(err, "set the subnets of %s", arn)
		}
		got.Subnets = want.Subnets
	}
	if !sameGroups(want.SecurityGroups, have.SecurityGroups) {
		groups, err := ec2x.GroupIDs(ctx, m.c.ec2.Region(region), aws_security_group.GroupTable(), want.SecurityGroups)
		if err != nil {
			return LoadBalancer{}, err
		}
		if _, err := cl.SetSecurityGroups(ctx, &elb.SetSecurityGroupsInput{LoadBalancerArn: aws.String(arn), SecurityGroups: groups}); err != nil {
			return LoadBalancer{}, terminal.Classify(err, "set the security groups of %s", arn)
		}
		got.SecurityGroups = want.SecurityGroups
	}
	if !module.Same(want.Tags, have.Tags) {
		if err := syncTags(ctx, cl, arn, want.Tags, have.Tags); err != nil {
			return LoadBalancer{}, err
		}
		got.Tags = want.Tags
	}
	return got, nil
}

// sameGroups: the row's security groups (db) and the cloud's are the same
// set, or the row names none (AWS's choice at creation, which any groups
// satisfy).
func sameGroups(db, cloud []string) bool {
	d := module.Strings(db)
	return len(d) == 0 || slices.Equal(d, module.Strings(cloud))
}

// Delete deletes the load balancer (and, as AWS does, its listeners).
func (m *lbMapper) Delete(ctx context.Context, call module.Call, have LoadBalancer) error {
	arn := have.ARN
	_, err := m.c.elb.Region(have.Region).DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)})
	if err := module.Deleted(err, "LoadBalancerNotFound"); err != nil {
		return terminal.Classify(err, "delete load balancer %s", arn)
	}
	return nil
}

// Differing compares as the engine does (subnets and security groups are
// many-valued references: sets), except that no security groups in the
// row is AWS's choice at creation, which any groups satisfy.
func (m *lbMapper) Differing(cols []string, db, cloud LoadBalancer) []string {
	return slices.DeleteFunc(loadBalancersTable.Differing(cols, db, cloud), func(c string) bool {
		return c == "security_groups" && len(module.Strings(db.SecurityGroups)) == 0
	})
}

var (
	_ module.MapperOf[LoadBalancer]   = (*lbMapper)(nil)
	_ module.PollerOf[LoadBalancer]   = (*lbMapper)(nil)
	_ module.ComparerOf[LoadBalancer] = (*lbMapper)(nil)
)
