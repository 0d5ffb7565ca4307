// Package webtier is a small web tier in SQL: a VPC, two subnets in two
// zones, a security group open on port 80, instances spread over the
// subnets behind an application load balancer with a target group and a
// listener, all written in one transaction of plain SQL with references
// by database id. The demo prints and runs it, the tier tests and the
// benchmark commit it; Observe says what the cloud then holds.
package webtier

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	elbtypes "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// Tier names one web tier.
type Tier struct {
	// Name prefixes everything the tier makes (tags, group, load balancer
	// and target group names): letters, digits and hyphens.
	Name string
	// Region the tier is made in; zones a and b of it.
	Region string
	// Octet is the second octet of the VPC's CIDR block (10.Octet.0.0/16).
	Octet int
	// Instances is how many instances sit behind the load balancer.
	Instances int
	// AMI and InstanceType of the instances.
	AMI, InstanceType string
}

// Default is the demo's tier: two instances in us-east-1.
func Default() Tier {
	return Tier{Name: "web", Region: "us-east-1", Octet: 20, Instances: 2, AMI: "ami-0123456789abcdef0", InstanceType: "t3.micro"}
}

// vpcOf selects the tier's VPC row.
func (t Tier) vpcOf() string {
	return fmt.Sprintf(`(SELECT id FROM vpc WHERE tags->>'Name' = '%s' AND region = '%s')`, t.Name, t.Region)
}

// groupOf selects the tier's security group row.
func (t Tier) groupOf() string {
	return fmt.Sprintf(`(SELECT id FROM security_group WHERE group_name = '%s' AND vpc_id = %s)`, t.Name, t.vpcOf())
}

// Statements are the tier's INSERTs, in an order the foreign keys accept,
// for one transaction.
func (t Tier) Statements() []string {
	out := []string{
		fmt.Sprintf(`INSERT INTO vpc (cidr_block, region, tags) VALUES ('10.%d.0.0/16', '%s', '{"Name": "%s"}')`, t.Octet, t.Region, t.Name),
	}
	for i, zone := range []string{"a", "b"} {
		out = append(out, fmt.Sprintf(`INSERT INTO subnet (vpc_id, region, cidr_block, availability_zone, tags) VALUES (%s, '%s', '10.%d.%d.0/24', '%s%s', '{"Name": "%s-%s"}')`,
			t.vpcOf(), t.Region, t.Octet, i+1, t.Region, zone, t.Name, zone))
	}
	out = append(out,
		fmt.Sprintf(`INSERT INTO security_group (group_name, description, vpc_id, region) VALUES ('%s', 'web tier: HTTP from anywhere', %s, '%s')`, t.Name, t.vpcOf(), t.Region),
		fmt.Sprintf(`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4, description) VALUES (%s, 'tcp', 80, 80, '0.0.0.0/0', 'HTTP')`, t.groupOf()),
	)
	for i := range t.Instances {
		zone := []string{"a", "b"}[i%2]
		out = append(out, fmt.Sprintf(`INSERT INTO instance (ami, instance_type, subnet_id, security_group_ids, region, tags) VALUES ('%s', '%s', (SELECT id FROM subnet WHERE tags->>'Name' = '%s-%s' AND vpc_id = %s), ARRAY[%s], '%s', '{"Name": "%s-%d"}')`,
			t.AMI, t.InstanceType, t.Name, zone, t.vpcOf(), t.groupOf(), t.Region, t.Name, i+1))
	}
	out = append(out,
		fmt.Sprintf(`INSERT INTO load_balancer (name, subnets, security_groups, region) VALUES ('%s', ARRAY(SELECT id FROM subnet WHERE vpc_id = %s ORDER BY cidr_block), ARRAY[%s], '%s')`,
			t.Name, t.vpcOf(), t.groupOf(), t.Region),
		fmt.Sprintf(`INSERT INTO target_group (name, port, vpc_id, region, health_check_path) VALUES ('%s', 80, %s, '%s', '/health')`, t.Name, t.vpcOf(), t.Region),
		fmt.Sprintf(`INSERT INTO target (target_group_id, instance_id) SELECT g.id, i.id FROM target_group g, instance i WHERE g.name = '%s' AND g.region = '%s' AND i.tags->>'Name' LIKE '%s-%%' AND i.region = '%s'`,
			t.Name, t.Region, t.Name, t.Region),
		fmt.Sprintf(`INSERT INTO listener (load_balancer_id, port, target_group_id) SELECT lb.id, 80, g.id FROM load_balancer lb, target_group g WHERE lb.name = '%s' AND lb.region = '%s' AND g.name = '%s' AND g.region = '%s'`,
			t.Name, t.Region, t.Name, t.Region),
	)
	return out
}

// Script is the tier as one transaction to paste into psql, with a commit.
func (t Tier) Script() string {
	return "CALL iasql_begin();\n" + strings.Join(t.Statements(), ";\n") + ";\nCALL iasql_commit();\n"
}

// Delete is what deletes the tier: its VPC row (subnets and groups go with
// it by cascade) after what uses them.
func (t Tier) Delete() []string {
	return []string{
		fmt.Sprintf(`DELETE FROM load_balancer WHERE name = '%s' AND region = '%s'`, t.Name, t.Region), // listeners cascade
		fmt.Sprintf(`DELETE FROM target_group WHERE name = '%s' AND region = '%s'`, t.Name, t.Region),  // targets cascade
		fmt.Sprintf(`DELETE FROM instance WHERE tags->>'Name' LIKE '%s-%%' AND region = '%s'`, t.Name, t.Region),
		fmt.Sprintf(`DELETE FROM vpc WHERE tags->>'Name' = '%s' AND region = '%s'`, t.Name, t.Region),
	}
}

// Cloud is what the cloud holds of a tier.
type Cloud struct {
	VPCs, Subnets, Groups int
	// Instances are the ids of the tier's instances that are not
	// terminated (or shutting down), by state.
	Instances map[string]string
	Types     map[string]string // instance id -> type
	AMIs      map[string]string // instance id -> image
	// LoadBalancer is its state ("" when there is none); LoadBalancers
	// how many carry the tier's name.
	LoadBalancer  string
	LoadBalancers int
	TargetGroups  int
	// Targets are the instance ids registered with the tier's group (and
	// not draining).
	Targets   []string
	Listeners int
}

// Observe reads what the cloud holds of t with the SDK, as an AWS user
// would check it.
func (t Tier) Observe(ctx context.Context, cfg aws.Config) (Cloud, error) {
	cfg = cfg.Copy()
	cfg.Region = t.Region
	e := ec2.NewFromConfig(cfg)
	c := Cloud{Instances: map[string]string{}, Types: map[string]string{}, AMIs: map[string]string{}}
	name := []ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{t.Name}}}
	vpcs, err := e.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: name})
	if err != nil {
		return c, fmt.Errorf("describe VPCs: %w", err)
	}
	c.VPCs = len(vpcs.Vpcs)
	for _, v := range vpcs.Vpcs {
		in := []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{aws.ToString(v.VpcId)}}}
		subnets, err := e.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: in})
		if err != nil {
			return c, fmt.Errorf("describe subnets: %w", err)
		}
		c.Subnets += len(subnets.Subnets)
		groups, err := e.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: append(in,
			ec2types.Filter{Name: aws.String("group-name"), Values: []string{t.Name}})})
		if err != nil {
			return c, fmt.Errorf("describe security groups: %w", err)
		}
		c.Groups += len(groups.SecurityGroups)
	}
	p := ec2.NewDescribeInstancesPaginator(e, &ec2.DescribeInstancesInput{Filters: []ec2types.Filter{
		{Name: aws.String("tag:Name"), Values: []string{t.Name + "-*"}}}})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return c, fmt.Errorf("describe instances: %w", err)
		}
		for _, r := range page.Reservations {
			for _, i := range r.Instances {
				state := string(i.State.Name)
				if state == "terminated" || state == "shutting-down" {
					continue
				}
				id := aws.ToString(i.InstanceId)
				c.Instances[id], c.Types[id], c.AMIs[id] = state, string(i.InstanceType), aws.ToString(i.ImageId)
			}
		}
	}
	lb := elb.NewFromConfig(cfg)
	lbs, err := lb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{})
	if err != nil {
		return c, fmt.Errorf("describe load balancers: %w", err)
	}
	for _, l := range lbs.LoadBalancers {
		if aws.ToString(l.LoadBalancerName) != t.Name {
			continue
		}
		c.LoadBalancers++
		c.LoadBalancer = string(l.State.Code)
		ls, err := lb.DescribeListeners(ctx, &elb.DescribeListenersInput{LoadBalancerArn: l.LoadBalancerArn})
		if err != nil {
			return c, fmt.Errorf("describe listeners: %w", err)
		}
		c.Listeners += len(ls.Listeners)
	}
	tgs, err := lb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{})
	if err != nil {
		return c, fmt.Errorf("describe target groups: %w", err)
	}
	for _, g := range tgs.TargetGroups {
		if aws.ToString(g.TargetGroupName) != t.Name {
			continue
		}
		c.TargetGroups++
		h, err := lb.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: g.TargetGroupArn})
		if err != nil {
			return c, fmt.Errorf("describe target health: %w", err)
		}
		for _, d := range h.TargetHealthDescriptions {
			// A deregistered target drains for the group's deregistration
			// delay (300 s by default) before it is gone: no longer the
			// group's, as a user reads it.
			if d.TargetHealth != nil && d.TargetHealth.State == elbtypes.TargetHealthStateEnumDraining {
				continue
			}
			c.Targets = append(c.Targets, aws.ToString(d.Target.Id))
		}
	}
	slices.Sort(c.Targets)
	return c, nil
}

// Complete reports, in one line, how c differs from a tier made whole
// with want instances all running and registered ("" when it is whole).
func (c Cloud) Complete(want int) string {
	var bad []string
	if c.VPCs != 1 || c.Subnets != 2 || c.Groups != 1 {
		bad = append(bad, fmt.Sprintf("%d VPCs, %d subnets, %d groups (want 1, 2, 1)", c.VPCs, c.Subnets, c.Groups))
	}
	running := 0
	for _, s := range c.Instances {
		if s == "running" {
			running++
		}
	}
	if len(c.Instances) != want || running != want {
		bad = append(bad, fmt.Sprintf("%d instances, %d running (want %d)", len(c.Instances), running, want))
	}
	if c.LoadBalancers != 1 || c.LoadBalancer != "active" || c.TargetGroups != 1 || c.Listeners != 1 {
		bad = append(bad, fmt.Sprintf("%d load balancers (%q), %d target groups, %d listeners (want 1 active, 1, 1)", c.LoadBalancers, c.LoadBalancer, c.TargetGroups, c.Listeners))
	}
	var ids []string
	for id := range c.Instances {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, c.Targets) {
		bad = append(bad, fmt.Sprintf("targets %v, instances %v", c.Targets, ids))
	}
	return strings.Join(bad, "; ")
}

// Empty reports, in one line, what is left of the tier after a delete
// ("" when nothing is).
func (c Cloud) Empty() string {
	if c.VPCs+c.Subnets+c.Groups+len(c.Instances)+c.LoadBalancers+c.TargetGroups+c.Listeners+len(c.Targets) == 0 {
		return ""
	}
	return fmt.Sprintf("left: %d VPCs, %d subnets, %d groups, %d instances, %d load balancers, %d target groups, %d listeners, %d targets",
		c.VPCs, c.Subnets, c.Groups, len(c.Instances), c.LoadBalancers, c.TargetGroups, c.Listeners, len(c.Targets))
}
