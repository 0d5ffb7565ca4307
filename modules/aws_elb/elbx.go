package aws_elb

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/internal/tags"
	"github.com/iasql/iasql/modules/module"
)

// Options tune the mappers.
type Options struct {
	// PollAfter is the RetryAfter of a provisioning load balancer's
	// Pending; 0 lets the engine choose (soon at first, then less often:
	// AWS takes minutes).
	PollAfter time.Duration
}

// Mappers returns the module's mappers for cfg.
func Mappers(cfg aws.Config, o Options) map[string]module.Reader {
	c := &clients{ec2: ec2x.NewClients(cfg), elb: regional.NewClients(cfg, func(region string) *elb.Client {
		return elb.NewFromConfig(cfg, func(o *elb.Options) { o.Region = region })
	})}
	return map[string]module.Reader{
		"load_balancer": loadBalancersTable.Mapper(&lbMapper{c: c, pollAfter: o.PollAfter}),
		"target_group":  targetGroupsTable.Mapper(&tgMapper{c: c}),
		"target":        targetsTable.Mapper(&targetMapper{c: c}),
		"listener":      listenersTable.Mapper(&listenerMapper{c: c}),
	}
}

// clients are an ELBv2 and an EC2 client per region.
type clients struct {
	ec2 *ec2x.Clients
	elb *regional.Clients[*elb.Client]
}

// terminal are ELBv2 errors that retrying cannot fix: bad input the
// database could not catch, quotas, permissions. (ResourceInUse and
// DuplicateListener are not: the listener that holds the group or the port
// may be on its way out in the same cycle.)
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/CommonErrors.html
var terminal = module.TerminalCodes(
	"ValidationError", "InvalidConfigurationRequest", "SubnetNotFound", "InvalidSubnet",
	"InvalidSecurityGroup", "InvalidScheme", "UnsupportedProtocol", "IncompatibleProtocols",
	"TooManyTags", "DuplicateTagKeys", "InvalidTarget", "TargetGroupAssociationLimit",
	"OperationNotPermitted", "CertificateNotFound", "SSLPolicyNotFound", "TooManyLoadBalancers",
	"TooManyTargetGroups", "TooManyListeners", "TooManyTargets", "TooManyRegistrationsForTargetId",
	"AccessDenied", "InvalidClientTokenId")

// named is the identity of a load balancer or target group: its name in
// its region, as the table (t) renders it.
func named(t module.Table, name, region string) string {
	return module.CloudIDOf(t, module.Record{"name": name, "region": region})
}

// splitNamed reads an identity named rendered back into name and region.
func splitNamed(t module.Table, cid string) (name, region string, err error) {
	r, ok := module.IdentityOf(t, cid)
	if !ok || len(r) != 2 {
		return "", "", &module.TerminalError{Err: fmt.Errorf("%q is not a %s identity", cid, t.Name)}
	}
	return r.String("name"), r.String("region"), nil
}

// loadBalancers lists a region's application load balancers (all pages;
// Marker, PageSize 400).
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeLoadBalancers.html
func loadBalancers(ctx context.Context, cl *elb.Client, in *elb.DescribeLoadBalancersInput) ([]types.LoadBalancer, error) {
	if len(in.Names) == 0 && len(in.LoadBalancerArns) == 0 {
		in.PageSize = aws.Int32(400)
	}
	out, err := regional.Pages(ctx, elb.NewDescribeLoadBalancersPaginator(cl, in), func(page *elb.DescribeLoadBalancersOutput) []types.LoadBalancer {
		return slices.DeleteFunc(page.LoadBalancers, func(lb types.LoadBalancer) bool { return lb.Type != types.LoadBalancerTypeEnumApplication })
	})
	if err != nil {
		return nil, fmt.Errorf("describe load balancers: %w", err)
	}
	return out, nil
}

// targetGroups lists a region's target groups of instances for
// application load balancers (HTTP or HTTPS): those the tables hold.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTargetGroups.html
func targetGroups(ctx context.Context, cl *elb.Client, in *elb.DescribeTargetGroupsInput) ([]types.TargetGroup, error) {
	if len(in.Names) == 0 && len(in.TargetGroupArns) == 0 {
		in.PageSize = aws.Int32(400)
	}
	out, err := regional.Pages(ctx, elb.NewDescribeTargetGroupsPaginator(cl, in), func(page *elb.DescribeTargetGroupsOutput) []types.TargetGroup {
		return slices.DeleteFunc(page.TargetGroups, func(tg types.TargetGroup) bool {
			return (tg.Protocol != types.ProtocolEnumHttp && tg.Protocol != types.ProtocolEnumHttps) ||
				(tg.TargetType != "" && tg.TargetType != types.TargetTypeEnumInstance)
		})
	})
	if err != nil {
		return nil, fmt.Errorf("describe target groups: %w", err)
	}
	return out, nil
}

// loadBalancerArn is the ARN of the load balancer named name, "" when
// there is none.
func loadBalancerArn(ctx context.Context, cl *elb.Client, name string) (string, error) {
	lbs, err := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{Names: []string{name}})
	if module.IsCode(err, "LoadBalancerNotFound") || err == nil && len(lbs) == 0 {
		return "", nil
	} else if err != nil {
		return "", err
	}
	return aws.ToString(lbs[0].LoadBalancerArn), nil
}

// targetGroupArn is the ARN of the target group named name, "" when there
// is none.
func targetGroupArn(ctx context.Context, cl *elb.Client, name string) (string, error) {
	tgs, err := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{Names: []string{name}})
	if module.IsCode(err, "TargetGroupNotFound") || err == nil && len(tgs) == 0 {
		return "", nil
	} else if err != nil {
		return "", err
	}
	return aws.ToString(tgs[0].TargetGroupArn), nil
}

// tagsOf reads the tags of resources (DescribeTags takes 20 ARNs a call),
// by ARN.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTags.html
func tagsOf(ctx context.Context, cl *elb.Client, arns []string) (map[string][]types.Tag, error) {
	out := map[string][]types.Tag{}
	for chunk := range slices.Chunk(arns, 20) {
		got, err := cl.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: chunk})
		if err != nil {
			return nil, fmt.Errorf("describe tags: %w", err)
		}
		for _, d := range got.TagDescriptions {
			out[aws.ToString(d.ResourceArn)] = d.Tags
		}
	}
	return out, nil
}

// tag reads an ELBv2 tag.
func tag(t types.Tag) tags.Tag {
	return tags.Tag{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value)}
}

// tagRecord renders tags as a tags column value (tags.Record: without the
// client-token tag, tokenOf, and AWS's own aws: tags).
func tagRecord(ts []types.Tag) map[string]any { return tags.Record(ts, tag) }

// tokenOf is the client token a resource was tagged with at creation.
func tokenOf(ts []types.Tag) string { return tags.Token(ts, tag) }

// toTags is a record's tags column (and a client token, "" for none) as
// ELBv2 tags, sorted by key (nil for none).
func toTags(v any, token string) []types.Tag { return elbTags(tags.List(v, token)) }

func elbTags(ts []tags.Tag) []types.Tag {
	var out []types.Tag
	for _, t := range ts {
		out = append(out, types.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
	}
	return out
}

// syncTags makes a resource's tags want (from have): AddTags for new and
// changed ones, RemoveTags for those gone (tags.Diff); nothing when they
// are the same.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddTags.html
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveTags.html
func syncTags(ctx context.Context, cl *elb.Client, arn string, want, have any) error {
	set, remove := tags.Diff(want, have)
	if len(set) > 0 {
		if _, err := cl.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{arn}, Tags: elbTags(set)}); err != nil {
			return terminal.Classify(err, "tag %s", arn)
		}
	}
	if len(remove) > 0 {
		if _, err := cl.RemoveTags(ctx, &elb.RemoveTagsInput{ResourceArns: []string{arn}, TagKeys: remove}); err != nil {
			return terminal.Classify(err, "untag %s", arn)
		}
	}
	return nil
}
