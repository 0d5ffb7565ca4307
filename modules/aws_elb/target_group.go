package aws_elb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// AWS's pages on target groups, which this file follows:
//   - CreateTargetGroup: names unique per region and account; idempotent
//     for the same settings, DuplicateTargetGroupName otherwise; protocol,
//     port, VPC and target type are given at creation only:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateTargetGroup.html
//   - ModifyTargetGroup: the health check settings, in place:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyTargetGroup.html
//   - DeleteTargetGroup: "You can delete a target group if it is not
//     referenced by any actions" (ResourceInUse otherwise); it lists no
//     not-found error:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteTargetGroup.html
//
// A change of name, protocol, port, VPC or region replaces the group
// through a stand-in (module.Temporary) under a name derived from the old
// identity: the listeners that forward to it and its targets move to the
// stand-in, the old group is deleted, the new one created, and everything
// moves back.

type tgMapper struct {
	c *clients
}

func tgValue(region string, tg types.TargetGroup, tags []types.Tag) TargetGroup {
	var matcher string
	if tg.Matcher != nil {
		matcher = aws.ToString(tg.Matcher.HttpCode)
	}
	return TargetGroup{
		Name: aws.ToString(tg.TargetGroupName), Protocol: string(tg.Protocol), Port: aws.ToInt32(tg.Port),
		VpcID: aws.ToString(tg.VpcId), HealthCheckProtocol: string(tg.HealthCheckProtocol),
		HealthCheckPort: aws.ToString(tg.HealthCheckPort), HealthCheckPath: aws.ToString(tg.HealthCheckPath),
		HealthCheckIntervalSeconds: aws.ToInt32(tg.HealthCheckIntervalSeconds), HealthCheckTimeoutSeconds: aws.ToInt32(tg.HealthCheckTimeoutSeconds),
		HealthyThresholdCount: aws.ToInt32(tg.HealthyThresholdCount), UnhealthyThresholdCount: aws.ToInt32(tg.UnhealthyThresholdCount),
		Matcher: matcher, Region: region, Tags: tagRecord(tags), ARN: aws.ToString(tg.TargetGroupArn),
	}
}

func (m *tgMapper) values(ctx context.Context, region string, cl *elb.Client, tgs []types.TargetGroup) ([]TargetGroup, error) {
	var arns []string
	for _, tg := range tgs {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	tags, err := tagsOf(ctx, cl, arns)
	if err != nil {
		return nil, err
	}
	out := make([]TargetGroup, 0, len(tgs))
	for _, tg := range tgs {
		out = append(out, tgValue(region, tg, tags[aws.ToString(tg.TargetGroupArn)]))
	}
	return out, nil
}

func (m *tgMapper) Read(ctx context.Context, call module.Call) ([]TargetGroup, error) {
	return regional.Each(ctx, m.c.elb, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]TargetGroup, error) {
		tgs, err := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		return m.values(ctx, region, cl, tgs)
	})
}

// healthSettings is want's health check settings, as CreateTargetGroup and
// ModifyTargetGroup take them.
type healthSettings struct {
	protocol                                      types.ProtocolEnum
	port, path                                    *string
	interval, timeout, healthyCount, unhealthyCnt *int32
	matcher                                       *types.Matcher
}

func healthOf(tg TargetGroup) healthSettings {
	return healthSettings{
		protocol: types.ProtocolEnum(tg.HealthCheckProtocol), port: aws.String(tg.HealthCheckPort), path: aws.String(tg.HealthCheckPath),
		interval: aws.Int32(tg.HealthCheckIntervalSeconds), timeout: aws.Int32(tg.HealthCheckTimeoutSeconds),
		healthyCount: aws.Int32(tg.HealthyThresholdCount), unhealthyCnt: aws.Int32(tg.UnhealthyThresholdCount),
		matcher: &types.Matcher{HttpCode: aws.String(tg.Matcher)},
	}
}

// sameHealth: a and b have the same health check settings.
func sameHealth(a, b TargetGroup) bool {
	return a.HealthCheckProtocol == b.HealthCheckProtocol && a.HealthCheckPort == b.HealthCheckPort && a.HealthCheckPath == b.HealthCheckPath &&
		a.HealthCheckIntervalSeconds == b.HealthCheckIntervalSeconds && a.HealthCheckTimeoutSeconds == b.HealthCheckTimeoutSeconds &&
		a.HealthyThresholdCount == b.HealthyThresholdCount && a.UnhealthyThresholdCount == b.UnhealthyThresholdCount && a.Matcher == b.Matcher
}

// Create creates the target group of instances with every health check
// setting given (so AWS's defaults, which vary by protocol, never differ
// from the row's). A retried create finds the name; a group of the name
// made otherwise is the row's by identity, adopted.
func (m *tgMapper) Create(ctx context.Context, call module.Call, want TargetGroup) (TargetGroup, error) {
	region, name := want.Region, want.Name
	cl := m.c.elb.Region(region)
	h := healthOf(want)
	out, err := cl.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{
		Name:                       aws.String(name),
		Protocol:                   types.ProtocolEnum(want.Protocol),
		Port:                       aws.Int32(want.Port),
		VpcId:                      aws.String(want.VpcID),
		TargetType:                 types.TargetTypeEnumInstance,
		HealthCheckProtocol:        h.protocol,
		HealthCheckPort:            h.port,
		HealthCheckPath:            h.path,
		HealthCheckIntervalSeconds: h.interval,
		HealthCheckTimeoutSeconds:  h.timeout,
		HealthyThresholdCount:      h.healthyCount,
		UnhealthyThresholdCount:    h.unhealthyCnt,
		Matcher:                    h.matcher,
		Tags:                       toTags(want.Tags, ""),
	})
	var tg types.TargetGroup
	switch {
	case module.IsCode(err, "DuplicateTargetGroupName"):
		tgs, derr := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{Names: []string{name}})
		if derr != nil || len(tgs) == 0 {
			return TargetGroup{}, terminal.Classify(err, "create target group %s in %s", name, region)
		}
		tg = tgs[0]
	case err != nil:
		return TargetGroup{}, terminal.Classify(err, "create target group %s in %s", name, region)
	case len(out.TargetGroups) != 1:
		return TargetGroup{}, fmt.Errorf("create target group %s in %s: AWS answered %d groups", name, region, len(out.TargetGroups))
	default:
		tg = out.TargetGroups[0]
	}
	vs, err := m.values(ctx, region, cl, []types.TargetGroup{tg})
	if err != nil {
		return TargetGroup{}, err
	}
	return vs[0], nil
}

// Update changes the health check settings (ModifyTargetGroup, all of
// them in one call) and tags in place, each only when it differs; the
// rest needs a new group (module.ErrReplace).
func (m *tgMapper) Update(ctx context.Context, call module.Call, want, have TargetGroup) (TargetGroup, error) {
	if want.Name != have.Name || want.Protocol != have.Protocol || want.Port != have.Port || want.VpcID != have.VpcID || want.Region != have.Region {
		return TargetGroup{}, module.ErrReplace
	}
	region, arn := have.Region, have.ARN
	cl := m.c.elb.Region(region)
	got := have
	if !sameHealth(want, have) {
		h := healthOf(want)
		out, err := cl.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{
			TargetGroupArn:             aws.String(arn),
			HealthCheckProtocol:        h.protocol,
			HealthCheckPort:            h.port,
			HealthCheckPath:            h.path,
			HealthCheckIntervalSeconds: h.interval,
			HealthCheckTimeoutSeconds:  h.timeout,
			HealthyThresholdCount:      h.healthyCount,
			UnhealthyThresholdCount:    h.unhealthyCnt,
			Matcher:                    h.matcher,
		})
		if err != nil {
			return TargetGroup{}, terminal.Classify(err, "modify target group %s", arn)
		}
		if len(out.TargetGroups) == 1 {
			tags := got.Tags
			got = tgValue(region, out.TargetGroups[0], nil)
			got.Tags = tags
		}
	}
	if !module.Same(want.Tags, have.Tags) {
		if err := syncTags(ctx, cl, arn, want.Tags, have.Tags); err != nil {
			return TargetGroup{}, err
		}
		got.Tags = want.Tags
	}
	return got, nil
}

// Delete deletes the target group. ResourceInUse (a listener still
// forwards to it) is retried: the listener's delete or change may come
// first in the same cycle.
func (m *tgMapper) Delete(ctx context.Context, call module.Call, have TargetGroup) error {
	arn := have.ARN
	_, err := m.c.elb.Region(have.Region).DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
	if err := module.Deleted(err, "TargetGroupNotFound"); err != nil {
		return terminal.Classify(err, "delete target group %s", arn)
	}
	return nil
}

// Temporary is want under a stand-in's name while the target group is
// replaced, the same for the same old identity (a retried create finds
// it): iasql-, then 24 hex digits of a hash of the old identity (32
// characters at most, as names are).
func (m *tgMapper) Temporary(want TargetGroup, oldCloudID string) TargetGroup {
	sum := sha256.Sum256([]byte(oldCloudID))
	want.Name = "iasql-" + hex.EncodeToString(sum[:])[:24]
	return want
}

var (
	_ module.MapperOf[TargetGroup]    = (*tgMapper)(nil)
	_ module.TemporaryOf[TargetGroup] = (*tgMapper)(nil)
)
