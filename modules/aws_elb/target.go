package aws_elb

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// AWS's pages on targets, which this file follows:
//   - RegisterTargets: an instance of the group's VPC, not terminated
//     (InvalidTarget otherwise); registering it again changes nothing:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RegisterTargets.html
//   - DeregisterTargets: the target drains for the group's deregistration
//     delay; TargetGroupNotFound, InvalidTarget:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeregisterTargets.html
//   - DescribeTargetHealth and TargetHealth's states (initial, healthy,
//     unhealthy, unhealthy.draining, unused, draining, unavailable):
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTargetHealth.html
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html
//
// A target is all identity (group, instance, port): there is nothing to
// change in place. A draining target is on its way out (the row that asked
// for it is gone) and is left out of reads.

type targetMapper struct{ c *clients }

func targetValue(region, group string, d types.TargetHealthDescription) Target {
	v := Target{TargetGroupID: group, Region: region}
	if d.TargetHealth != nil {
		v.HealthState = string(d.TargetHealth.State)
	}
	if d.Target != nil {
		v.InstanceID, v.Port = aws.ToString(d.Target.Id), d.Target.Port
	}
	return v
}

// health lists a group's targets but draining ones.
func health(ctx context.Context, cl *elb.Client, region, group, arn string, only []types.TargetDescription) ([]Target, error) {
	out, err := cl.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn), Targets: only})
	if err != nil {
		return nil, fmt.Errorf("describe the targets of %s: %w", arn, err)
	}
	var vs []Target
	for _, d := range out.TargetHealthDescriptions {
		if d.TargetHealth != nil && (d.TargetHealth.State == types.TargetHealthStateEnumDraining ||
			d.TargetHealth.State == types.TargetHealthStateEnumUnhealthyDraining ||
			d.TargetHealth.Reason == types.TargetHealthReasonEnumNotRegistered) {
			continue
		}
		vs = append(vs, targetValue(region, group, d))
	}
	return vs, nil
}

func (m *targetMapper) Read(ctx context.Context, call module.Call) ([]Target, error) {
	t := TargetGroupTable()
	return regional.Each(ctx, m.c.elb, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]Target, error) {
		tgs, err := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		var out []Target
		for _, tg := range tgs {
			vs, err := health(ctx, cl, region, named(t, aws.ToString(tg.TargetGroupName), region), aws.ToString(tg.TargetGroupArn), nil)
			if module.IsCode(err, "TargetGroupNotFound") {
				continue // deleted since it was listed
			} else if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	})
}

// group resolves a target's group identity to its region, client and ARN
// ("" when the group does not exist).
func (m *targetMapper) group(ctx context.Context, v Target) (region string, cl *elb.Client, arn string, err error) {
	name, region, err := splitNamed(TargetGroupTable(), v.TargetGroupID)
	if err != nil {
		return "", nil, "", err
	}
	cl = m.c.elb.Region(region)
	arn, err = targetGroupArn(ctx, cl, name)
	return region, cl, arn, err
}

func description(v Target) types.TargetDescription {
	return types.TargetDescription{Id: aws.String(v.InstanceID), Port: v.Port}
}

// Create registers the instance with the group (RegisterTargets of a
// registered target changes nothing, so a retry is harmless) and answers
// its health.
func (m *targetMapper) Create(ctx context.Context, call module.Call, want Target) (Target, error) {
	region, cl, arn, err := m.group(ctx, want)
	if err != nil {
		return Target{}, err
	}
	if arn == "" {
		return Target{}, fmt.Errorf("register %s: target group %s does not exist (yet)", want.InstanceID, want.TargetGroupID)
	}
	d := description(want)
	if _, err := cl.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: []types.TargetDescription{d}}); err != nil {
		return Target{}, terminal.Classify(err, "register %s with %s", want.InstanceID, arn)
	}
	vs, err := health(ctx, cl, region, want.TargetGroupID, arn, []types.TargetDescription{d})
	if err != nil {
		return Target{}, err
	}
	if len(vs) != 1 {
		return Target{}, fmt.Errorf("register %s with %s: AWS does not show the target", want.InstanceID, arn)
	}
	return vs[0], nil
}

// Update: a target's columns are all its identity; another value is
// another target (the engine deregisters the old and registers the new).
func (m *targetMapper) Update(ctx context.Context, call module.Call, want, have Target) (Target, error) {
	return Target{}, module.ErrReplace
}

// Delete deregisters the target. A group that is gone, or an instance that
// is neither registered nor exists (terminated), leaves nothing to do.
func (m *targetMapper) Delete(ctx context.Context, call module.Call, have Target) error {
	_, cl, arn, err := m.group(ctx, have)
	if err != nil || arn == "" {
		return err
	}
	_, err = cl.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: aws.String(arn), Targets: []types.TargetDescription{description(have)}})
	if err := module.Deleted(err, "TargetGroupNotFound", "InvalidTarget"); err != nil {
		return terminal.Classify(err, "deregister %s from %s", have.InstanceID, arn)
	}
	return nil
}

var _ module.MapperOf[Target] = (*targetMapper)(nil)
