package aws_elb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

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
	t module.Table
}

// healthColumns are the health check settings, changed in place.
var healthColumns = []string{"health_check_protocol", "health_check_port", "health_check_path", "health_check_interval_seconds",
	"health_check_timeout_seconds", "healthy_threshold_count", "unhealthy_threshold_count", "matcher"}

func tgRecord(region string, tg types.TargetGroup, tags []types.Tag) module.Record {
	var matcher string
	if tg.Matcher != nil {
		matcher = aws.ToString(tg.Matcher.HttpCode)
	}
	return module.Record{
		"name": aws.ToString(tg.TargetGroupName), "protocol": string(tg.Protocol), "port": tg.Port,
		"vpc_id": aws.ToString(tg.VpcId), "health_check_protocol": string(tg.HealthCheckProtocol),
		"health_check_port": aws.ToString(tg.HealthCheckPort), "health_check_path": aws.ToString(tg.HealthCheckPath),
		"health_check_interval_seconds": tg.HealthCheckIntervalSeconds, "health_check_timeout_seconds": tg.HealthCheckTimeoutSeconds,
		"healthy_threshold_count": tg.HealthyThresholdCount, "unhealthy_threshold_count": tg.UnhealthyThresholdCount,
		"matcher": matcher, "region": region, "tags": tagRecord(tags), "target_group_arn": aws.ToString(tg.TargetGroupArn),
	}
}

func (m *tgMapper) records(ctx context.Context, region string, cl *elb.Client, tgs []types.TargetGroup) ([]module.Record, error) {
	var arns []string
	for _, tg := range tgs {
		arns = append(arns, aws.ToString(tg.TargetGroupArn))
	}
	tags, err := tagsOf(ctx, cl, arns)
	if err != nil {
		return nil, err
	}
	out := make([]module.Record, 0, len(tgs))
	for _, tg := range tgs {
		out = append(out, tgRecord(region, tg, tags[aws.ToString(tg.TargetGroupArn)]))
	}
	return out, nil
}

func (m *tgMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return m.c.elb.EachRegion(ctx, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]module.Record, error) {
		tgs, err := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		return m.records(ctx, region, cl, tgs)
	})
}

func int32Of(r module.Record, col string) *int32 { return aws.Int32(int32(r.Int(col))) }

// Create creates the target group of instances with every health check
// setting given (so AWS's defaults, which vary by protocol, never differ
// from the row's). A retried create finds the name; a group of the name
// made otherwise is the row's by identity, adopted.
func (m *tgMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region, name := want.String("region"), want.String("name")
	cl := m.c.elb.Region(region)
	out, err := cl.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{
		Name:                       aws.String(name),
		Protocol:                   types.ProtocolEnum(want.String("protocol")),
		Port:                       int32Of(want, "port"),
		VpcId:                      aws.String(want.String("vpc_id")),
		TargetType:                 types.TargetTypeEnumInstance,
		HealthCheckProtocol:        types.ProtocolEnum(want.String("health_check_protocol")),
		HealthCheckPort:            aws.String(want.String("health_check_port")),
		HealthCheckPath:            aws.String(want.String("health_check_path")),
		HealthCheckIntervalSeconds: int32Of(want, "health_check_interval_seconds"),
		HealthCheckTimeoutSeconds:  int32Of(want, "health_check_timeout_seconds"),
		HealthyThresholdCount:      int32Of(want, "healthy_threshold_count"),
		UnhealthyThresholdCount:    int32Of(want, "unhealthy_threshold_count"),
		Matcher:                    &types.Matcher{HttpCode: aws.String(want.String("matcher"))},
		Tags:                       toTags(want["tags"], ""),
	})
	var tg types.TargetGroup
	switch {
	case module.IsCode(err, "DuplicateTargetGroupName"):
		tgs, derr := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{Names: []string{name}})
		if derr != nil || len(tgs) == 0 {
			return nil, terminal.Classify(err, "create target group %s in %s", name, region)
		}
		tg = tgs[0]
	case err != nil:
		return nil, terminal.Classify(err, "create target group %s in %s", name, region)
	case len(out.TargetGroups) != 1:
		return nil, fmt.Errorf("create target group %s in %s: AWS answered %d groups", name, region, len(out.TargetGroups))
	default:
		tg = out.TargetGroups[0]
	}
	recs, err := m.records(ctx, region, cl, []types.TargetGroup{tg})
	if err != nil {
		return nil, err
	}
	return recs[0], nil
}

// Update changes the health check settings (ModifyTargetGroup, all of
// them in one call) and tags in place, each only when it differs; the
// rest needs a new group (module.ErrReplace).
func (m *tgMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	for _, c := range m.t.CreateOnly {
		if !module.Same(want[c], have[c]) {
			return nil, module.ErrReplace
		}
	}
	region, arn := have.String("region"), have.String("target_group_arn")
	cl := m.c.elb.Region(region)
	got := maps.Clone(have)
	for _, c := range healthColumns {
		if module.Same(want[c], have[c]) {
			continue
		}
		out, err := cl.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{
			TargetGroupArn:             aws.String(arn),
			HealthCheckProtocol:        types.ProtocolEnum(want.String("health_check_protocol")),
			HealthCheckPort:            aws.String(want.String("health_check_port")),
			HealthCheckPath:            aws.String(want.String("health_check_path")),
			HealthCheckIntervalSeconds: int32Of(want, "health_check_interval_seconds"),
			HealthCheckTimeoutSeconds:  int32Of(want, "health_check_timeout_seconds"),
			HealthyThresholdCount:      int32Of(want, "healthy_threshold_count"),
			UnhealthyThresholdCount:    int32Of(want, "unhealthy_threshold_count"),
			Matcher:                    &types.Matcher{HttpCode: aws.String(want.String("matcher"))},
		})
		if err != nil {
			return nil, terminal.Classify(err, "modify target group %s", arn)
		}
		if len(out.TargetGroups) == 1 {
			tags := got["tags"]
			got = tgRecord(region, out.TargetGroups[0], nil)
			got["tags"] = tags
		}
		break
	}
	if !module.Same(want["tags"], have["tags"]) {
		if err := syncTags(ctx, cl, arn, want["tags"], have["tags"]); err != nil {
			return nil, err
		}
		got["tags"] = want["tags"]
	}
	return got, nil
}

// Delete deletes the target group. ResourceInUse (a listener still
// forwards to it) is retried: the listener's delete or change may come
// first in the same cycle.
func (m *tgMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	arn := have.String("target_group_arn")
	_, err := m.c.elb.Region(have.String("region")).DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String(arn)})
	if err := module.Deleted(err, "TargetGroupNotFound"); err != nil {
		return terminal.Classify(err, "delete target group %s", arn)
	}
	return nil
}

// Temporary is want under a stand-in's name, the same for the same old
// identity (a retried create finds it): iasql-, then 24 hex digits of a
// hash of the old identity (32 characters at most, as names are).
func (m *tgMapper) Temporary(want module.Record, oldCloudID string) module.Record {
	sum := sha256.Sum256([]byte(oldCloudID))
	out := maps.Clone(want)
	out["name"] = "iasql-" + hex.EncodeToString(sum[:])[:24]
	return out
}

var (
	_ module.Mapper    = (*tgMapper)(nil)
	_ module.Temporary = (*tgMapper)(nil)
)
