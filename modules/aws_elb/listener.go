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

// listenerValue is a listener in cloud form; ok false for one the table
// does not hold. lbs and tgs name load balancers and target groups by ARN.
func listenerValue(region string, l types.Listener, lbs, tgs map[string]string, tags []types.Tag) (v Listener, ok bool) {
	lb, ok := lbs[aws.ToString(l.LoadBalancerArn)]
	if !ok || len(l.DefaultActions) != 1 || l.DefaultActions[0].Type != types.ActionTypeEnumForward {
		return Listener{}, false
	}
	a := l.DefaultActions[0]
	tgArn := aws.ToString(a.TargetGroupArn)
	if tgArn == "" && a.ForwardConfig != nil && len(a.ForwardConfig.TargetGroups) == 1 {
		tgArn = aws.ToString(a.ForwardConfig.TargetGroups[0].TargetGroupArn)
	}
	tg, ok := tgs[tgArn]
	if !ok {
		return Listener{}, false
	}
	v = Listener{
		LoadBalancerID: named(LoadBalancerTable(), lb, region), Protocol: string(l.Protocol), Port: aws.ToInt32(l.Port),
		TargetGroupID: named(TargetGroupTable(), tg, region), ARN: aws.ToString(l.ListenerArn), Token: tokenOf(tags), Region: region,
	}
	if len(l.Certificates) > 0 && aws.ToString(l.Certificates[0].CertificateArn) != "" {
		v.CertificateARN = l.Certificates[0].CertificateArn
	}
	return v, true
}

// regionState is what listener values of a region need: the names of its
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

// listeners lists the listeners of a load balancer (all pages), with their
// tags (for the token).
func listeners(ctx context.Context, cl *elb.Client, region, lbArn string, lbs, tgs map[string]string) ([]Listener, error) {
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
	var out []Listener
	for _, l := range ls {
		if v, ok := listenerValue(region, l, lbs, tgs, tagged[aws.ToString(l.ListenerArn)]); ok {
			out = append(out, v)
		}
	}
	return out, nil
}

func (m *listenerMapper) Read(ctx context.Context, call module.Call) ([]Listener, error) {
	return regional.Each(ctx, m.c.elb, call.Scope, func(ctx context.Context, region string, cl *elb.Client) ([]Listener, error) {
		lbs, tgs, err := regionState(ctx, cl)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", region, err)
		}
		var out []Listener
		for arn := range lbs {
			vs, err := listeners(ctx, cl, region, arn, lbs, tgs)
			if module.IsCode(err, "LoadBalancerNotFound") {
				continue // deleted since it was listed
			} else if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	})
}

// resolve finds the ARNs of a listener's load balancer and target group in
// their region (the load balancer's identity names it).
func (m *listenerMapper) resolve(ctx context.Context, v Listener) (region string, cl *elb.Client, lbArn, tgArn string, err error) {
	lbName, region, err := splitNamed(LoadBalancerTable(), v.LoadBalancerID)
	if err != nil {
		return "", nil, "", "", err
	}
	tgName, tgRegion, err := splitNamed(TargetGroupTable(), v.TargetGroupID)
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

func certificates(v Listener) []types.Certificate {
	if c := aws.ToString(v.CertificateARN); c != "" {
		return []types.Certificate{{CertificateArn: aws.String(c)}}
	}
	return nil
}

func forwardTo(tgArn string) []types.Action {
	return []types.Action{{Type: types.ActionTypeEnumForward, TargetGroupArn: aws.String(tgArn)}}
}

// one renders the listener a call answered.
func one(region string, ls []types.Listener, lbArn, lbName, tgArn, tgName, token string) (Listener, error) {
	if len(ls) != 1 {
		return Listener{}, fmt.Errorf("AWS answered %d listeners", len(ls))
	}
	v, ok := listenerValue(region, ls[0], map[string]string{lbArn: lbName}, map[string]string{tgArn: tgName}, toTags(nil, token))
	if !ok {
		return Listener{}, fmt.Errorf("listener %s does not forward to %s", aws.ToString(ls[0].ListenerArn), tgArn)
	}
	return v, nil
}

// Create creates the listener, tagged with the create's client token.
func (m *listenerMapper) Create(ctx context.Context, call module.Call, want Listener) (Listener, error) {
	region, cl, lbArn, tgArn, err := m.resolve(ctx, want)
	if err != nil {
		return Listener{}, err
	}
	token := call.Token
	out, err := cl.CreateListener(ctx, &elb.CreateListenerInput{
		LoadBalancerArn: aws.String(lbArn),
		Protocol:        types.ProtocolEnum(want.Protocol),
		Port:            aws.Int32(want.Port),
		Certificates:    certificates(want),
		DefaultActions:  forwardTo(tgArn),
		Tags:            toTags(nil, token),
	})
	if err != nil {
		return Listener{}, terminal.Classify(err, "create a listener on port %d of %s", want.Port, lbArn)
	}
	lbName, _, _ := splitNamed(LoadBalancerTable(), want.LoadBalancerID)
	tgName, _, _ := splitNamed(TargetGroupTable(), want.TargetGroupID)
	return one(region, out.Listeners, lbArn, lbName, tgArn, tgName, token)
}

// Find returns the listener of want's load balancer that a create with
// this client token made (nil when none did).
func (m *listenerMapper) Find(ctx context.Context, call module.Call, want Listener) (*Listener, error) {
	token := call.Token
	lbName, region, err := splitNamed(LoadBalancerTable(), want.LoadBalancerID)
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
		vs, err := listeners(ctx, cl, region, arn, lbs, tgs)
		if err != nil {
			return nil, fmt.Errorf("find the listener of client token %s: %w", token, err)
		}
		for _, v := range vs {
			if v.Token == token {
				return &v, nil
			}
		}
	}
	return nil, nil
}

// Update changes protocol, port, certificate and target group in place
// (one ModifyListener with what differs); another load balancer needs a
// new listener (module.ErrReplace).
func (m *listenerMapper) Update(ctx context.Context, call module.Call, want, have Listener) (Listener, error) {
	if want.LoadBalancerID != have.LoadBalancerID {
		return Listener{}, module.ErrReplace
	}
	arn := have.ARN
	in := &elb.ModifyListenerInput{ListenerArn: aws.String(arn)}
	changed := false
	if want.Port != have.Port {
		in.Port, changed = aws.Int32(want.Port), true
	}
	if want.Protocol != have.Protocol || aws.ToString(want.CertificateARN) != aws.ToString(have.CertificateARN) {
		in.Protocol, in.Certificates, changed = types.ProtocolEnum(want.Protocol), certificates(want), true
	}
	region, cl, lbArn, tgArn, err := m.resolve(ctx, want)
	if err != nil {
		return Listener{}, err
	}
	if want.TargetGroupID != have.TargetGroupID {
		in.DefaultActions, changed = forwardTo(tgArn), true
	}
	if !changed {
		return have, nil
	}
	out, err := cl.ModifyListener(ctx, in)
	if err != nil {
		return Listener{}, terminal.Classify(err, "modify listener %s", arn)
	}
	lbName, _, _ := splitNamed(LoadBalancerTable(), want.LoadBalancerID)
	tgName, _, _ := splitNamed(TargetGroupTable(), want.TargetGroupID)
	return one(region, out.Listeners, lbArn, lbName, tgArn, tgName, have.Token)
}

// Delete deletes the listener (one AWS no longer knows is deleted).
func (m *listenerMapper) Delete(ctx context.Context, call module.Call, have Listener) error {
	arn := have.ARN
	region := have.Region
	if region == "" {
		_, region, _ = splitNamed(LoadBalancerTable(), have.LoadBalancerID)
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
func (*listenerMapper) DeleteBeforeCreate() bool { return true }

var (
	_ module.MapperOf[Listener] = (*listenerMapper)(nil)
	_ module.FinderOf[Listener] = (*listenerMapper)(nil)
	_ module.DeleteFirst        = (*listenerMapper)(nil)
)
