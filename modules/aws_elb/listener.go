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

// AWS's pages on listeners, which this file follows:
//   - CreateListener: Protocol, Port, Certificates (HTTPS), DefaultActions,
//     Tags; idempotent for the same settings, DuplicateListener for another
//     listener on the port:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateListener.html
//   - ModifyListener: port, protocol, certificates and default actions in
//     place ("Any properties that you do not specify retain their current
//     values"):
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_ModifyListener.html
//   - DescribeListeners (by load balancer, Marker):
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeListeners.html
//   - DeleteListener: ListenerNotFound:
//     https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DeleteListener.html
//
// AWS generates a listener's identity (its ARN): the create tags it with
// the engine's client token, so that a create whose answer was lost is
// found (Find) and adopted instead of made twice. Listeners whose default
// action is not a forward to one target group of the tables (a redirect,
// a fixed response, weighted groups) are left out.

type listenerMapper struct{ c *clients }

// listenerRecord is a listener in cloud form, or nil for one the table
// does not hold. lbs and tgs name load balancers and target groups by ARN.
func listenerRecord(region string, l types.Listener, lbs, tgs map[string]string, tags []types.Tag) module.Record {
	lb, ok := lbs[aws.ToString(l.LoadBalancerArn)]
	if !ok || len(l.DefaultActions) != 1 || l.DefaultActions[0].Type != types.ActionTypeEnumForward {
		return nil
	}
	a := l.DefaultActions[0]
	tgArn := aws.ToString(a.TargetGroupArn)
	if tgArn == "" && a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) == 1 {
		tgArn = aws.ToString(a.ForwardConfig.TargetGroups[0].TargetGroupArn)
	}
	tg, ok := tgs[tgArn]
	if !ok {
		return nil
	}
	var cert string
	if len(l.Certificates) > 0 {
		cert = aws.ToString(l.Certificates[0].CertificateArn)
	}
	r := module.Record{
		"load_balancer_id": named(LoadBalancerTable(), lb, region), "protocol": string(l.Protocol), "port": l.Port,
		"certificate_arn": nilIfEmpty(cert), "target_group_id": named(TargetGroupTable(), tg, region),
		"listener_arn": aws.ToString(l.ListenerArn), "region": region,
	}
	if tok := tokenOf(tags); tok != "" {
		r[module.TokenTag] = tok
	}
	return r
}

// regionState is what listener records of a region need: the names of its
// load balancers and target groups by ARN.
func regionState(ctx context.Context, cl *elb.Client) (lbs, tgs map[string]string, err error) {
	lbList, err := loadBalancers(ctx, cl, &elb.DescribeLoadBalancersInput{})
	if err != nil {
		return nil, nil, err
	}
	tgList, err := targetGroups(ctx, cl, &elb.DescribeTargetGroupsInput{})
	if err != nil {
		return nil, nil, err
	}
	lbs, tgs = map[string]string{}, map[string]string{}
	for _, lb := range lbList {
		lbs[aws.ToString(lb.LoadBalancerArn)] = aws.ToString(lb.LoadBalancerName)
	}
	for _, tg := range tgList {
		tgs[aws.ToString(tg.TargetGroupArn)] = aws.ToString(tg.TargetGroupName)
	}
	return lbs, tgs, nil
}

// listeners lists the listeners of a load balancer as records (all pages),
// with their tags (for the token).
func listeners(ctx context.Context, cl *elb.Client, region, lbArn string, lbs, tgs map[string]string) ([]module.Record, error) {
	ls, err := regional.Pages(ctx, elb.NewDescribeListenersPaginator(cl, &elb.DescribeListenersInput{LoadBalancerArn: aws.String(lbArn), PageSize: aws.Int32(400)}),
		func(page *elb.DescribeListenersOutput) []types.Listener { return page.Listeners })
	if err != nil {
		return nil, fmt.Errorf("describe the listeners of %s: %w", lbArn, err)
	}
	var arns []string
	for _, l := range ls {
		arns = append(arns, aws.ToString(l.ListenerArn))
	}
	tagged, err := tagsOf(ctx, cl, arns)
	if err != nil {
		return nil, err
	}
	var out []module.Record
	for _, l := range ls {
		if r := listenerRecord(region, l, lbs, tgs, tagged[aws.ToString(l.ListenerArn)]); r != nil {
			out = append(out, r)
		}
	}
	return out, nil
}

func (m *listenerMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	return m.c.elb.EachRegion(ctx, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]module.Record, error) {
		lbs, tgs, err := regionState(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		var out []module.Record
		for arn := range lbs {
			recs, err := listeners(ctx, cl, region, arn, lbs, tgs)
			if module.IsCode(err, "LoadBalancerNotFound") {
				continue // deleted since it was listed
			} else if err != nil {
				return nil, err
			}
			out = append(out, recs...)
		}
		return out, nil
	})
}

// resolve finds the ARNs of a record's load balancer and target group in
// their region (the load balancer's identity names it).
func (m *listenerMapper) resolve(ctx context.Context, r module.Record) (region string, cl *elb.Client, lbArn, tgArn string, err error) {
	lbName, region, err := splitNamed(LoadBalancerTable(), r.String("load_balancer_id"))
	if err != nil {
		return "", nil, "", "", err
	}
	tgName, tgRegion, err := splitNamed(TargetGroupTable(), r.String("target_group_id"))
	if err != nil {
		return "", nil, "", "", err
	}
	if tgRegion != region {
		return "", nil, "", "", &module.TerminalError{Err: fmt.Errorf("listener: target group %s is not in the load balancer's region %s", tgName, region)}
	}
	cl = m.c.elb.Region(region)
	if lbArn, err = loadBalancerArn(ctx, cl, lbName); err != nil {
		return "", nil, "", "", err
	}
	if lbArn == "" {
		return "", nil, "", "", fmt.Errorf("listener: load balancer %s does not exist (yet) in %s", lbName, region)
	}
	if tgArn, err = targetGroupArn(ctx, cl, tgName); err != nil {
		return "", nil, "", "", err
	}
	if tgArn == "" {
		return "", nil, "", "", fmt.Errorf("listener: target group %s does not exist (yet) in %s", tgName, region)
	}
	return region, cl, lbArn, tgArn, nil
}

func certificates(r module.Record) []types.Certificate {
	if c := r.String("certificate_arn"); c != "" {
		return []types.Certificate{{CertificateArn: aws.String(c)}}
	}
	return nil
}

func forwardTo(tgArn string) []types.Action {
	return []types.Action{{Type: types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgArn)}}
}

// one renders the listener a call answered.
func one(region string, ls []types.Listener, lbArn, lbName, tgArn, tgName, token string) (module.Record, error) {
	if len(ls) != 1 {
		return nil, fmt.Errorf("AWS answered %d listeners", len(ls))
	}
	r := listenerRecord(region, ls[0], map[string]string{lbArn: lbName}, map[string]string{tgArn: tgName}, toTags(nil, token))
	if r == nil {
		return nil, fmt.Errorf("listener %s does not forward to %s", aws.ToString(ls[0].ListenerArn), tgArn)
	}
	return r, nil
}

// Create creates the listener, tagged with the create's client token.
func (m *listenerMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region, cl, lbArn, tgArn, err := m.resolve(ctx, want)
	if err != nil {
		return nil, err
	}
	token := call.Token
	out, err := cl.CreateListener(ctx, &elb.CreateListenerInput{
		LoadBalancerArn: aws.String(lbArn),
		Protocol:        types.ProtocolEnum(want.String("protocol")),
		Port:            aws.Int32(int32(want.Int("port"))),
		Certificates:    certificates(want),
		DefaultActions:  forwardTo(tgArn),
		Tags:            toTags(nil, token),
	})
	if err != nil {
		return nil, terminal.Classify(err, "create a listener on port %d of %s", want.Int("port"), lbArn)
	}
	lbName, _, _ := splitNamed(LoadBalancerTable(), want.String("load_balancer_id"))
	tgName, _, _ := splitNamed(TargetGroupTable(), want.String("target_group_id"))
	return one(region, out.Listeners, lbArn, lbName, tgArn, tgName, token)
}

// Find returns the listener of want's load balancer that a create with
// this client token made (nil when none did).
func (m *listenerMapper) Find(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	token := call.Token
	lbName, region, err := splitNamed(LoadBalancerTable(), want.String("load_balancer_id"))
	if err != nil {
		return nil, err
	}
	cl := m.c.elb.Region(region)
	lbs, tgs, err := regionState(ctx, cl)
	if err != nil {
		return nil, err
	}
	for arn, name := range lbs {
		if name != lbName {
			continue
		}
		recs, err := listeners(ctx, cl, region, arn, lbs, tgs)
		if err != nil {
			return nil, fmt.Errorf("find the listener of client token %s: %w", token, err)
		}
		for _, r := range recs {
			if r.String(module.TokenTag) == token {
				return r, nil
			}
		}
	}
	return nil, nil
}

// Update changes protocol, port, certificate and target group in place
// (one ModifyListener with what differs); another load balancer needs a
// new listener (module.ErrReplace).
func (m *listenerMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	if !module.Same(want["load_balancer_id"], have["load_balancer_id"]) {
		return nil, module.ErrReplace
	}
	arn := have.String("listener_arn")
	in := &elb.ModifyListenerInput{ListenerArn: aws.String(arn)}
	changed := false
	if !module.Same(want["port"], have["port"]) {
		in.Port, changed = aws.Int32(int32(want.Int("port"))), true
	}
	if !module.Same(want["protocol"], have["protocol"]) || !module.Same(want["certificate_arn"], have["certificate_arn"]) {
		in.Protocol, in.Certificates, changed = types.ProtocolEnum(want.String("protocol")), certificates(want), true
	}
	region, cl, lbArn, tgArn, err := m.resolve(ctx, want)
	if err != nil {
		return nil, err
	}
	if !module.Same(want["target_group_id"], have["target_group_id"]) {
		in.DefaultActions, changed = forwardTo(tgArn), true
	}
	if !changed {
		return have, nil
	}
	out, err := cl.ModifyListener(ctx, in)
	if err != nil {
		return nil, terminal.Classify(err, "modify listener %s", arn)
	}
	lbName, _, _ := splitNamed(LoadBalancerTable(), want.String("load_balancer_id"))
	tgName, _, _ := splitNamed(TargetGroupTable(), want.String("target_group_id"))
	return one(region, out.Listeners, lbArn, lbName, tgArn, tgName, have.String(module.TokenTag))
}

// Delete deletes the listener (one AWS no longer knows is deleted).
func (m *listenerMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	arn := have.String("listener_arn")
	region := have.String("region")
	if region == "" {
		_, region, _ = splitNamed(LoadBalancerTable(), have.String("load_balancer_id"))
	}
	_, err := m.c.elb.Region(region).DeleteListener(ctx, &elb.DeleteListenerInput{ListenerArn: aws.String(arn)})
	if err := module.Deleted(err, "ListenerNotFound"); err != nil {
		return terminal.Classify(err, "delete listener %s", arn)
	}
	return nil
}

// DeleteBeforeCreate: a listener moved to another load balancer is
// deleted first, then created: nothing references a listener, and while
// the old one exists its target group serves its load balancer, which AWS
// lets no second load balancer share (TargetGroupAssociationLimit).
func (m *listenerMapper) DeleteBeforeCreate() bool { return true }

var (
	_ module.Mapper      = (*listenerMapper)(nil)
	_ module.DeleteFirst = (*listenerMapper)(nil)
	_ module.Finder      = (*listenerMapper)(nil)
)
