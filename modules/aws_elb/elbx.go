package aws_elb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
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
	c := &clients{cfg: cfg, ec2: ec2x.NewClients(cfg), elb: regional.NewClients(func(region string) *elb.Client {
		return elb.NewFromConfig(cfg, func(o *elb.Options) { o.Region = region })
	})}
	return map[string]module.Reader{
		"load_balancer": &lbMapper{c: c, t: LoadBalancerTable(), pollAfter: o.PollAfter},
		"target_group":  &tgMapper{c: c, t: TargetGroupTable()},
		"target":        &targetMapper{c: c},
		"listener":      &listenerMapper{c: c},
	}
}

// clients are an ELBv2 and an EC2 client per region.
type clients struct {
	cfg aws.Config
	ec2 *ec2x.Clients
	elb *regional.Clients[*elb.Client]
}

// eachRegion runs read for every region of scope concurrently (a region
// whose read fails leaves the others: regional.GatherRegions).
func (c *clients) eachRegion(ctx context.Context, scope module.Scope, read func(ctx context.Context, region string, cl *elb.Client) ([]module.Record, error)) ([]module.Record, error) {
	regions := scope.Or(c.cfg).Regions
	return regional.GatherRegions(ctx, 0, len(regions), func(i int) string { return regions[i] },
		func(ctx context.Context, i int) ([]module.Record, error) {
			return read(ctx, regions[i], c.elb.Region(regions[i]))
		})
}

// terminalCodes are ELBv2 errors that retrying cannot fix: bad input the
// database could not catch, quotas, permissions. (ResourceInUse and
// DuplicateListener are not: the listener that holds the group or the port
// may be on its way out in the same cycle.)
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/CommonErrors.html
var terminalCodes = map[string]bool{
	"ValidationError": true, "InvalidConfigurationRequest": true, "SubnetNotFound": true, "InvalidSubnet": true,
	"InvalidSecurityGroup": true, "InvalidScheme": true, "UnsupportedProtocol": true, "IncompatibleProtocols": true,
	"TooManyTags": true, "DuplicateTagKeys": true, "InvalidTarget": true, "TargetGroupAssociationLimit": true,
	"OperationNotPermitted": true, "CertificateNotFound": true, "SSLPolicyNotFound": true, "TooManyLoadBalancers": true,
	"TooManyTargetGroups": true, "TooManyListeners": true, "TooManyTargets": true, "TooManyRegistrationsForTargetId": true,
	"AccessDenied": true, "InvalidClientTokenId": true,
}

// named is the identity of a load balancer or target group: its name in
// its region, as the table (t) renders it.
func named(t module.Table, name, region string) string {
	return module.CloudIDOf(t, module.Record{"name": name, "region": region})
}

// splitNamed reads an identity named rendered back into name and region.
func splitNamed(t module.Table, cid string) (name, region string, err error) {
	parts, ok := module.SplitCloudID(cid, len(t.CloudID))
	if !ok || len(parts) != 2 {
		return "", "", &module.TerminalError{Err: fmt.Errorf("%q is not a %s identity", cid, t.Name)}
	}
	r := module.Record{}
	for i, c := range t.CloudID {
		r[c] = parts[i]
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
	var out []types.LoadBalancer
	p := elb.NewDescribeLoadBalancersPaginator(cl, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe load balancers: %w", err)
		}
		for _, lb := range page.LoadBalancers {
			if lb.Type == types.LoadBalancerTypeEnumApplication {
				out = append(out, lb)
			}
		}
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
	var out []types.TargetGroup
	p := elb.NewDescribeTargetGroupsPaginator(cl, in)
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe target groups: %w", err)
		}
		for _, tg := range page.TargetGroups {
			if (tg.Protocol == types.ProtocolEnumHttp || tg.Protocol == types.ProtocolEnumHttps) &&
				(tg.TargetType == "" || tg.TargetType == types.TargetTypeEnumInstance) {
				out = append(out, tg)
			}
		}
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

// tagRecord renders tags as a record value ({} when none), without the
// engine's client-token tag (tokenOf) and AWS's own aws: tags
// (module.ReservedTag), which no one may set or delete.
func tagRecord(tags []types.Tag) map[string]any {
	out := make(map[string]any, len(tags))
	for _, t := range tags {
		if k := aws.ToString(t.Key); k != module.TokenTag && !module.ReservedTag(k) {
			out[k] = aws.ToString(t.Value)
		}
	}
	return out
}

// tokenOf is the client token a resource was tagged with at creation.
func tokenOf(tags []types.Tag) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == module.TokenTag {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// toTags is a record's tags column (and a client token, "" for none) as
// ELBv2 tags, sorted by key.
func toTags(v any, token string) []types.Tag {
	m, _ := v.(map[string]any)
	var out []types.Tag
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(fmt.Sprint(m[k]))})
	}
	if token != "" {
		out = append(out, types.Tag{Key: aws.String(module.TokenTag), Value: aws.String(token)})
	}
	return out
}

// syncTags makes a resource's tags want (from have): AddTags for new and
// changed ones, RemoveTags for those gone; nothing when they are the same.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddTags.html
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_RemoveTags.html
func syncTags(ctx context.Context, cl *elb.Client, arn string, want, have any) error {
	w, _ := want.(map[string]any)
	h, _ := have.(map[string]any)
	var set []types.Tag
	for _, t := range toTags(w, "") {
		if old, ok := h[*t.Key]; !ok || fmt.Sprint(old) != *t.Value {
			set = append(set, t)
		}
	}
	var del []string
	for k := range h {
		if _, ok := w[k]; !ok {
			del = append(del, k)
		}
	}
	slices.Sort(del)
	if len(set) > 0 {
		if _, err := cl.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{arn}, Tags: set}); err != nil {
			return module.Classify(err, terminalCodes, "tag %s", arn)
		}
	}
	if len(del) > 0 {
		if _, err := cl.RemoveTags(ctx, &elb.RemoveTagsInput{ResourceArns: []string{arn}, TagKeys: del}); err != nil {
			return module.Classify(err, terminalCodes, "untag %s", arn)
		}
	}
	return nil
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
