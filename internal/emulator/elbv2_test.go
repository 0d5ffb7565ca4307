package emulator_test

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// elbEnv is an emulator with EC2 and ELBv2 clients for us-east-1, and a
// VPC with two subnets in two zones and a group.
type elbEnv struct {
	em                 *emulator.Emulator
	ec2                *ec2.Client
	elb                *elb.Client
	vpc, group         string
	subnetA, subnetB   string
	subnetA2, otherVpc string
}

func newELBEnv(t *testing.T, opts emulator.Options) *elbEnv {
	t.Helper()
	cl := testkit.StartCloud(t, opts)
	e := &elbEnv{em: cl.Emu, ec2: testkit.Clients(cl.AWS, ec2.NewFromConfig)("us-east-1"), elb: testkit.Clients(cl.AWS, elb.NewFromConfig)("us-east-1")}
	e.vpc = mkVpc(t, e.ec2, "10.8.0.0/16")
	e.subnetA = mkSubnet(t, e.ec2, e.vpc, "10.8.1.0/24", "us-east-1a")
	e.subnetB = mkSubnet(t, e.ec2, e.vpc, "10.8.2.0/24", "us-east-1b")
	e.subnetA2 = mkSubnet(t, e.ec2, e.vpc, "10.8.3.0/24", "us-east-1a")
	e.group = mkGroup(t, e.ec2, "lb", e.vpc)
	e.otherVpc = mkVpc(t, e.ec2, "10.9.0.0/16")
	return e
}

func (e *elbEnv) mkLB(t *testing.T, name string) types.LoadBalancer {
	t.Helper()
	out, err := e.elb.CreateLoadBalancer(t.Context(), &elb.CreateLoadBalancerInput{Name: aws.String(name),
		Subnets: []string{e.subnetA, e.subnetB}, SecurityGroups: []string{e.group}})
	if err != nil {
		t.Fatalf("create load balancer %s: %v", name, err)
	}
	return out.LoadBalancers[0]
}

func (e *elbEnv) mkTG(t *testing.T, name string) string {
	t.Helper()
	out, err := e.elb.CreateTargetGroup(t.Context(), &elb.CreateTargetGroupInput{Name: aws.String(name),
		Protocol: types.ProtocolEnumHttp, Port: aws.Int32(80), VpcId: aws.String(e.vpc)})
	if err != nil {
		t.Fatalf("create target group %s: %v", name, err)
	}
	return aws.ToString(out.TargetGroups[0].TargetGroupArn)
}

func (e *elbEnv) mkListener(t *testing.T, lb, tg string, port int32) string {
	t.Helper()
	out, err := e.elb.CreateListener(t.Context(), forward(lb, tg, port))
	if err != nil {
		t.Fatalf("create listener: %v", err)
	}
	return aws.ToString(out.Listeners[0].ListenerArn)
}

func forward(lb, tg string, port int32) *elb.CreateListenerInput {
	return &elb.CreateListenerInput{LoadBalancerArn: aws.String(lb), Protocol: types.ProtocolEnumHttp, Port: aws.Int32(port),
		DefaultActions: []types.Action{{Type: types.ActionTypeEnumForward, TargetGroupArn: aws.String(tg)}}}
}

var (
	elbLBArnRe       = regexp.MustCompile(`^arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/web/[0-9a-f]{16}$`)
	elbTGArnRe       = regexp.MustCompile(`^arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/tg/[0-9a-f]{16}$`)
	elbListenerArnRe = regexp.MustCompile(`^arn:aws:elasticloadbalancing:us-east-1:123456789012:listener/app/web/[0-9a-f]{16}/[0-9a-f]{16}$`)
)

func TestELBLoadBalancers(t *testing.T) {
	e := newELBEnv(t, emulator.Options{LoadBalancerActiveDelay: 50 * time.Millisecond})
	ctx := t.Context()
	lb := e.mkLB(t, "web")
	arn := aws.ToString(lb.LoadBalancerArn)
	if !elbLBArnRe.MatchString(arn) || lb.State.Code != types.LoadBalancerStateEnumProvisioning || lb.Type != types.LoadBalancerTypeEnumApplication ||
		lb.Scheme != types.LoadBalancerSchemeEnumInternetFacing || aws.ToString(lb.VpcId) != e.vpc ||
		!regexp.MustCompile(`^web-[0-9]+\.us-east-1\.elb\.amazonaws\.com$`).MatchString(aws.ToString(lb.DNSName)) ||
		aws.ToString(lb.CanonicalHostedZoneId) != "Z35SXDOTRQ7X7K" || len(lb.AvailabilityZones) != 2 ||
		!slices.Equal(lb.SecurityGroups, []string{e.group}) || lb.CreatedTime == nil {
		t.Errorf("created %+v", lb)
	}
	// provisioning -> active, polled with a deadline.
	testkit.Wait(t, 5*time.Second, "the load balancer to be active", func() error {
		out, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn}})
		if err != nil {
			t.Fatal(err)
		}
		if code := out.LoadBalancers[0].State.Code; code != types.LoadBalancerStateEnumActive {
			return fmt.Errorf("still %s", code)
		}
		return nil
	})

	// The same settings: the same load balancer (AWS: idempotent).
	again := e.mkLB(t, "web")
	if aws.ToString(again.LoadBalancerArn) != arn {
		t.Errorf("created again: %s, want %s", aws.ToString(again.LoadBalancerArn), arn)
	}
	internal, err := e.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{Name: aws.String("inner"), Scheme: types.LoadBalancerSchemeEnumInternal,
		Subnets: []string{e.subnetA, e.subnetB}})
	if err != nil || !strings.HasPrefix(aws.ToString(internal.LoadBalancers[0].DNSName), "internal-inner-") || len(internal.LoadBalancers[0].SecurityGroups) != 1 {
		t.Errorf("internal load balancer: %v, %+v", err, internal)
	}

	create := func(name string, subnets []string, groups ...string) func() error {
		return func() error {
			_, err := e.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{Name: aws.String(name), Subnets: subnets, SecurityGroups: groups})
			return err
		}
	}
	wantCodes(t, []errCase{
		{"same name, other settings", create("web", []string{e.subnetA, e.subnetB}), "DuplicateLoadBalancerName"},
		{"name too long", create(strings.Repeat("a", 33), []string{e.subnetA, e.subnetB}), "ValidationError"},
		{"name ends with a hyphen", create("web-", []string{e.subnetA, e.subnetB}), "ValidationError"},
		{"name with underscore", create("we_b", []string{e.subnetA, e.subnetB}), "ValidationError"},
		{"name internal-", create("internal-web", []string{e.subnetA, e.subnetB}), "ValidationError"},
		{"one subnet", create("one", []string{e.subnetA}), "ValidationError"},
		{"two subnets in one zone", create("samezone", []string{e.subnetA, e.subnetA2}), "InvalidConfigurationRequest"},
		{"unknown subnet", create("nosubnet", []string{e.subnetA, "subnet-0123456789abcdef0"}), "SubnetNotFound"},
		{"unknown group", create("nogroup", []string{e.subnetA, e.subnetB}, "sg-0123456789abcdef0"), "InvalidSecurityGroup"},
		{"describe unknown ARN", func() error {
			_, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{LoadBalancerArns: []string{arn + "0"}})
			return err
		}, "LoadBalancerNotFound"},
		{"describe unknown name", func() error {
			_, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{Names: []string{"nope"}})
			return err
		}, "LoadBalancerNotFound"},
		{"delete subnet in use", func() error {
			_, err := e.ec2.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(e.subnetA)})
			return err
		}, "DependencyViolation"},
		{"delete group in use", func() error {
			_, err := e.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(e.group)})
			return err
		}, "DependencyViolation"},
	})

	// SetSecurityGroups frees the old group; deletion protection.
	g2 := mkGroup(t, e.ec2, "lb2", e.vpc)
	sg, err := e.elb.SetSecurityGroups(ctx, &elb.SetSecurityGroupsInput{LoadBalancerArn: aws.String(arn), SecurityGroups: []string{g2}})
	if err != nil || !slices.Equal(sg.SecurityGroupIds, []string{g2}) {
		t.Fatalf("set groups: %v, %+v", err, sg)
	}
	if _, err := e.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(e.group)}); err != nil {
		t.Errorf("delete a group no longer used: %v", err)
	}
	if _, err := e.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn),
		Attributes: []types.LoadBalancerAttribute{{Key: aws.String("deletion_protection.enabled"), Value: aws.String("true")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)}); errCode(err) != "OperationNotPermitted" {
		t.Errorf("delete a protected load balancer: %v", err)
	}
	if _, err := e.elb.ModifyLoadBalancerAttributes(ctx, &elb.ModifyLoadBalancerAttributesInput{LoadBalancerArn: aws.String(arn),
		Attributes: []types.LoadBalancerAttribute{{Key: aws.String("deletion_protection.enabled"), Value: aws.String("false")}}}); err != nil {
		t.Fatal(err)
	}
	tg := e.mkTG(t, "tg")
	l := e.mkListener(t, arn, tg, 80)
	// Deleting deletes the listeners; deleting again succeeds (AWS).
	for range 2 {
		if _, err := e.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: aws.String(arn)}); err != nil {
			t.Fatalf("delete load balancer: %v", err)
		}
	}
	if _, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{ListenerArns: []string{l}}); errCode(err) != "ListenerNotFound" {
		t.Errorf("listener of a deleted load balancer: %v", err)
	}
	if _, err := e.elb.DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg)}); err != nil {
		t.Errorf("delete a target group no longer forwarded to: %v", err)
	}
}

func TestELBPagination(t *testing.T) {
	e := newELBEnv(t, emulator.Options{})
	var want, wantTGs []string
	for i := range 7 {
		want = append(want, fmt.Sprintf("lb-%d", i))
		e.mkLB(t, want[i])
		wantTGs = append(wantTGs, fmt.Sprintf("tg-%d", i))
		e.mkTG(t, wantTGs[i])
	}
	p := elb.NewDescribeLoadBalancersPaginator(e.elb, &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(3)})
	var names []string
	n := 0
	for _, out := range pages(t, p.HasMorePages, p.NextPage) {
		n++
		for _, lb := range out.LoadBalancers {
			names = append(names, aws.ToString(lb.LoadBalancerName))
		}
	}
	if !slices.Equal(names, want) || n != 3 {
		t.Errorf("%d pages of %v, want 3 of %v", n, names, want)
	}
	tp := elb.NewDescribeTargetGroupsPaginator(e.elb, &elb.DescribeTargetGroupsInput{PageSize: aws.Int32(2)})
	names = nil
	for _, out := range pages(t, tp.HasMorePages, tp.NextPage) {
		for _, tg := range out.TargetGroups {
			names = append(names, aws.ToString(tg.TargetGroupName))
		}
	}
	if !slices.Equal(names, wantTGs) {
		t.Errorf("target groups %v, want %v", names, wantTGs)
	}
	wantCodes(t, []errCase{
		{"bad marker", func() error {
			_, err := e.elb.DescribeLoadBalancers(t.Context(), &elb.DescribeLoadBalancersInput{Marker: aws.String("nonsense")})
			return err
		}, "ValidationError"},
		{"page size 401", func() error {
			_, err := e.elb.DescribeLoadBalancers(t.Context(), &elb.DescribeLoadBalancersInput{PageSize: aws.Int32(401)})
			return err
		}, "ValidationError"},
	})
}

func TestELBTargetGroupsAndListeners(t *testing.T) {
	e := newELBEnv(t, emulator.Options{})
	ctx := t.Context()
	lb := aws.ToString(e.mkLB(t, "web").LoadBalancerArn)
	tg := e.mkTG(t, "tg")
	if !elbTGArnRe.MatchString(tg) {
		t.Errorf("target group ARN %s", tg)
	}
	out, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{Names: []string{"tg"}})
	if err != nil {
		t.Fatal(err)
	}
	g := out.TargetGroups[0]
	if aws.ToInt32(g.HealthCheckIntervalSeconds) != 30 || aws.ToInt32(g.HealthCheckTimeoutSeconds) != 5 || aws.ToInt32(g.HealthyThresholdCount) != 5 ||
		aws.ToInt32(g.UnhealthyThresholdCount) != 2 || aws.ToString(g.HealthCheckPath) != "/" || aws.ToString(g.HealthCheckPort) != "traffic-port" ||
		g.HealthCheckProtocol != types.ProtocolEnumHttp || aws.ToString(g.Matcher.HttpCode) != "200" || g.TargetType != types.TargetTypeEnumInstance ||
		len(g.LoadBalancerArns) != 0 {
		t.Errorf("target group defaults: %+v", g)
	}
	mod, err := e.elb.ModifyTargetGroup(ctx, &elb.ModifyTargetGroupInput{TargetGroupArn: aws.String(tg), HealthCheckPath: aws.String("/health"),
		HealthCheckIntervalSeconds: aws.Int32(10)})
	if err != nil || aws.ToString(mod.TargetGroups[0].HealthCheckPath) != "/health" || aws.ToInt32(mod.TargetGroups[0].HealthCheckIntervalSeconds) != 10 {
		t.Errorf("modify target group: %v, %+v", err, mod)
	}

	l := e.mkListener(t, lb, tg, 80)
	if !elbListenerArnRe.MatchString(l) {
		t.Errorf("listener ARN %s", l)
	}
	// The same settings: the same listener (AWS: idempotent).
	if again := e.mkListener(t, lb, tg, 80); again != l {
		t.Errorf("listener created again: %s, want %s", again, l)
	}
	byLB, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{LoadBalancerArn: aws.String(lb)})
	if err != nil || len(byLB.TargetGroups) != 1 || !slices.Equal(byLB.TargetGroups[0].LoadBalancerArns, []string{lb}) {
		t.Errorf("target groups of the load balancer: %v, %+v", err, byLB)
	}
	tg2 := e.mkTG(t, "tg2")
	other := aws.ToString(e.mkLB(t, "other").LoadBalancerArn)
	otherVpcTG, err := e.elb.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{Name: aws.String("far"), Protocol: types.ProtocolEnumHttp,
		Port: aws.Int32(80), VpcId: aws.String(e.otherVpc)})
	if err != nil {
		t.Fatal(err)
	}
	wantCodes(t, []errCase{
		{"target group, same name, other settings", func() error {
			_, err := e.elb.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{Name: aws.String("tg"), Protocol: types.ProtocolEnumHttp,
				Port: aws.Int32(8080), VpcId: aws.String(e.vpc)})
			return err
		}, "DuplicateTargetGroupName"},
		{"target group in no VPC", func() error {
			_, err := e.elb.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{Name: aws.String("x"), Protocol: types.ProtocolEnumHttp,
				Port: aws.Int32(80), VpcId: aws.String("vpc-0123456789abcdef0")})
			return err
		}, "ValidationError"},
		{"listener on a taken port", func() error {
			_, err := e.elb.CreateListener(ctx, forward(lb, tg2, 80))
			return err
		}, "DuplicateListener"},
		{"listener to a target group of another VPC", func() error {
			_, err := e.elb.CreateListener(ctx, forward(lb, aws.ToString(otherVpcTG.TargetGroups[0].TargetGroupArn), 81))
			return err
		}, "ValidationError"},
		{"listener to an unknown target group", func() error {
			_, err := e.elb.CreateListener(ctx, forward(lb, strings.Replace(tg, "/tg/", "/nope/", 1), 82))
			return err
		}, "TargetGroupNotFound"},
		{"a second load balancer for the target group", func() error {
			_, err := e.elb.CreateListener(ctx, forward(other, tg, 80))
			return err
		}, "TargetGroupAssociationLimit"},
		{"HTTPS without a certificate", func() error {
			in := forward(lb, tg, 443)
			in.Protocol = types.ProtocolEnumHttps
			_, err := e.elb.CreateListener(ctx, in)
			return err
		}, "ValidationError"},
		{"delete a forwarded-to target group", func() error {
			_, err := e.elb.DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg)})
			return err
		}, "ResourceInUse"},
		{"describe unknown target group", func() error {
			_, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{TargetGroupArns: []string{tg + "0"}})
			return err
		}, "TargetGroupNotFound"},
		{"describe listeners of nothing", func() error {
			_, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{})
			return err
		}, "ValidationError"},
	})

	// ModifyListener: another port, forwarding to another group.
	l2 := e.mkListener(t, lb, tg2, 8080)
	if _, err := e.elb.ModifyListener(ctx, &elb.ModifyListenerInput{ListenerArn: aws.String(l2), Port: aws.Int32(80)}); errCode(err) != "DuplicateListener" {
		t.Errorf("move a listener to a taken port: %v", err)
	}
	m, err := e.elb.ModifyListener(ctx, &elb.ModifyListenerInput{ListenerArn: aws.String(l), Port: aws.Int32(81),
		DefaultActions: []types.Action{{Type: types.ActionTypeEnumForward, TargetGroupArn: aws.String(tg2)}}})
	if err != nil || aws.ToInt32(m.Listeners[0].Port) != 81 || aws.ToString(m.Listeners[0].DefaultActions[0].TargetGroupArn) != tg2 {
		t.Fatalf("modify listener: %v, %+v", err, m)
	}
	if _, err := e.elb.DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: aws.String(tg)}); err != nil {
		t.Errorf("delete a target group no longer forwarded to: %v", err)
	}
	ls, err := e.elb.DescribeListeners(ctx, &elb.DescribeListenersInput{LoadBalancerArn: aws.String(lb), PageSize: aws.Int32(1)})
	if err != nil || len(ls.Listeners) != 1 || ls.NextMarker == nil {
		t.Errorf("first page of listeners: %v, %+v", err, ls)
	}
	if _, err := e.elb.DeleteListener(ctx, &elb.DeleteListenerInput{ListenerArn: aws.String(l)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.DeleteListener(ctx, &elb.DeleteListenerInput{ListenerArn: aws.String(l)}); errCode(err) != "ListenerNotFound" {
		t.Errorf("delete a deleted listener: %v", err)
	}
}

// health returns the state and reason of each target of a group, by id.
func health(t *testing.T, c *elb.Client, tg string) map[string]string {
	t.Helper()
	out, err := c.DescribeTargetHealth(t.Context(), &elb.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg)})
	if err != nil {
		t.Fatalf("describe target health: %v", err)
	}
	m := map[string]string{}
	for _, d := range out.TargetHealthDescriptions {
		m[aws.ToString(d.Target.Id)] = string(d.TargetHealth.State) + "/" + string(d.TargetHealth.Reason)
	}
	return m
}

func TestELBTargets(t *testing.T) {
	e := newELBEnv(t, emulator.Options{TargetHealthyDelay: 30 * time.Millisecond})
	ctx := t.Context()
	ids := run(t, e.ec2, runIn(e.subnetA, 2))
	waitState(t, e.ec2, ids[0], ec2types.InstanceStateNameRunning)
	far := mkSubnet(t, e.ec2, e.otherVpc, "10.9.1.0/24", "us-east-1a")
	farID := run(t, e.ec2, runIn(far, 1))[0]
	tg := e.mkTG(t, "tg")

	if _, err := e.elb.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(tg),
		Targets: []types.TargetDescription{{Id: aws.String(ids[0])}, {Id: aws.String(ids[1])}}}); err != nil {
		t.Fatalf("register: %v", err)
	}
	if got := health(t, e.elb, tg); got[ids[0]] != "unused/Target.NotInUse" || len(got) != 2 {
		t.Errorf("targets of an unused group: %v", got)
	}
	lb := aws.ToString(e.mkLB(t, "web").LoadBalancerArn)
	e.mkListener(t, lb, tg, 80)
	// initial, then healthy: polled with a deadline.
	testkit.Wait(t, 5*time.Second, "the targets to be healthy", func() error {
		got := health(t, e.elb, tg)
		if got[ids[0]] == "healthy/" && got[ids[1]] == "healthy/" {
			return nil
		}
		if !strings.HasPrefix(got[ids[0]], "initial/") && got[ids[0]] != "healthy/" {
			t.Fatalf("target health %v, want initial then healthy", got)
		}
		return fmt.Errorf("target health %v", got)
	})
	// A stopped instance is unused (Target.InvalidState).
	if _, err := e.ec2.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	waitState(t, e.ec2, ids[1], ec2types.InstanceStateNameStopped)
	if got := health(t, e.elb, tg); got[ids[1]] != "unused/Target.InvalidState" {
		t.Errorf("stopped target: %v", got)
	}
	// Deregistered: draining for the deregistration delay, then gone.
	if _, err := e.elb.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: aws.String(tg),
		Targets: []types.TargetDescription{{Id: aws.String(ids[0])}}}); err != nil {
		t.Fatal(err)
	}
	if got := health(t, e.elb, tg); got[ids[0]] != "draining/Target.DeregistrationInProgress" {
		t.Errorf("deregistered target: %v", got)
	}
	if _, err := e.elb.ModifyTargetGroupAttributes(ctx, &elb.ModifyTargetGroupAttributesInput{TargetGroupArn: aws.String(tg),
		Attributes: []types.TargetGroupAttribute{{Key: aws.String("deregistration_delay.timeout_seconds"), Value: aws.String("0")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: aws.String(tg),
		Targets: []types.TargetDescription{{Id: aws.String(ids[1])}}}); err != nil {
		t.Fatal(err)
	}
	asked, err := e.elb.DescribeTargetHealth(ctx, &elb.DescribeTargetHealthInput{TargetGroupArn: aws.String(tg),
		Targets: []types.TargetDescription{{Id: aws.String(ids[1])}}})
	if err != nil || len(asked.TargetHealthDescriptions) != 1 || asked.TargetHealthDescriptions[0].TargetHealth.Reason != types.TargetHealthReasonEnumNotRegistered {
		t.Errorf("a deregistered target without delay: %v, %+v", err, asked)
	}

	register := func(id string) func() error {
		return func() error {
			_, err := e.elb.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(tg), Targets: []types.TargetDescription{{Id: aws.String(id)}}})
			return err
		}
	}
	wantCodes(t, []errCase{
		{"unknown instance", register("i-0123456789abcdef0"), "InvalidTarget"},
		{"instance of another VPC", register(farID), "InvalidTarget"},
		{"deregister an unregistered target", func() error {
			_, err := e.elb.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: aws.String(tg), Targets: []types.TargetDescription{{Id: aws.String(ids[1])}}})
			return err
		}, ""},
		{"deregister what is no instance", func() error {
			_, err := e.elb.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: aws.String(tg), Targets: []types.TargetDescription{{Id: aws.String("i-0123456789abcdef0")}}})
			return err
		}, "InvalidTarget"},
		{"register with an unknown group", func() error {
			_, err := e.elb.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(tg + "0"), Targets: []types.TargetDescription{{Id: aws.String(ids[0])}}})
			return err
		}, "TargetGroupNotFound"},
	})
	if _, err := e.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: ids[1:]}); err != nil {
		t.Fatal(err)
	}
	waitState(t, e.ec2, ids[1], ec2types.InstanceStateNameTerminated)
	if err := register(ids[1])(); errCode(err) != "InvalidTarget" {
		t.Errorf("register a terminated instance: %v", err)
	}
}

func TestELBTags(t *testing.T) {
	e := newELBEnv(t, emulator.Options{})
	ctx := t.Context()
	out, err := e.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{Name: aws.String("web"), Subnets: []string{e.subnetA, e.subnetB},
		Tags: []types.Tag{{Key: aws.String("env"), Value: aws.String("test")}}})
	if err != nil {
		t.Fatal(err)
	}
	lb := aws.ToString(out.LoadBalancers[0].LoadBalancerArn)
	tg := e.mkTG(t, "tg")
	if _, err := e.elb.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{lb, tg},
		Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("blue")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.RemoveTags(ctx, &elb.RemoveTagsInput{ResourceArns: []string{lb}, TagKeys: []string{"env"}}); err != nil {
		t.Fatal(err)
	}
	d, err := e.elb.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: []string{lb, tg}})
	if err != nil || len(d.TagDescriptions) != 2 {
		t.Fatalf("describe tags: %v, %+v", err, d)
	}
	for _, td := range d.TagDescriptions {
		if len(td.Tags) != 1 || aws.ToString(td.Tags[0].Key) != "team" || aws.ToString(td.Tags[0].Value) != "blue" {
			t.Errorf("tags of %s: %+v", aws.ToString(td.ResourceArn), td.Tags)
		}
	}
	wantCodes(t, []errCase{
		{"duplicate keys", func() error {
			_, err := e.elb.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{lb},
				Tags: []types.Tag{{Key: aws.String("a"), Value: aws.String("1")}, {Key: aws.String("a"), Value: aws.String("2")}}})
			return err
		}, "DuplicateTagKeys"},
		{"unknown load balancer", func() error {
			_, err := e.elb.DescribeTags(ctx, &elb.DescribeTagsInput{ResourceArns: []string{lb + "0"}})
			return err
		}, "LoadBalancerNotFound"},
		{"too many tags", func() error {
			var tags []types.Tag
			for i := range 50 {
				tags = append(tags, types.Tag{Key: aws.String(fmt.Sprintf("k%d", i)), Value: aws.String("v")})
			}
			_, err := e.elb.AddTags(ctx, &elb.AddTagsInput{ResourceArns: []string{tg}, Tags: tags})
			return err
		}, "TooManyTags"},
	})
}

func TestELBFaultsAndProtocol(t *testing.T) {
	e := newELBEnv(t, emulator.Options{})
	ctx := t.Context()
	e.em.Inject(emulator.Fault{Op: "elasticloadbalancing:DescribeLoadBalancers", Kind: emulator.Throttle, Times: 1})
	if _, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); errCode(err) != "Throttling" {
		t.Errorf("throttled: %v, want Throttling", err)
	}
	if _, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); err != nil {
		t.Errorf("after the fault: %v", err)
	}
	if n := e.em.Calls()["elasticloadbalancing:DescribeLoadBalancers"]; n != 2 {
		t.Errorf("%d calls counted, want 2", n)
	}
	e.em.Inject(emulator.Fault{Op: "elasticloadbalancing:*", Kind: emulator.Denied, Times: 1})
	if _, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{}); errCode(err) != "InvalidClientTokenId" {
		t.Errorf("denied: %v, want InvalidClientTokenId", err)
	}
	e.em.Inject(emulator.Fault{Op: "elasticloadbalancing:CreateLoadBalancer", Kind: emulator.ServerErrorAfter, Times: 1})
	if _, err := e.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{Name: aws.String("lost"), Subnets: []string{e.subnetA, e.subnetB}, SecurityGroups: []string{e.group}}); errCode(err) != "InternalError" {
		t.Fatalf("create failing after acting: %v", err)
	}
	e.mkLB(t, "lost") // the same settings: adopted
	if out, err := e.elb.DescribeLoadBalancers(ctx, &elb.DescribeLoadBalancersInput{}); err != nil || len(out.LoadBalancers) != 1 {
		t.Errorf("after a lost answer and a retry: %v, %+v", err, out)
	}
	if _, err := e.elb.DescribeRules(ctx, &elb.DescribeRulesInput{ListenerArn: aws.String("x")}); errCode(err) != "NotImplemented" {
		t.Errorf("an operation not emulated: %v, want NotImplemented", err)
	}
}

// TestELBRegisterNeedsRunning: RegisterTargets refuses an instance that is
// not running yet (AWS: "it must be in the running state when you register
// it"), with InvalidTarget, and takes it once it runs.
func TestELBRegisterNeedsRunning(t *testing.T) {
	e := newELBEnv(t, emulator.Options{InstanceStartDelay: 200 * time.Millisecond})
	ctx := t.Context()
	id := run(t, e.ec2, runIn(e.subnetA, 1))[0]
	tg := e.mkTG(t, "tg")
	register := func() error {
		_, err := e.elb.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: aws.String(tg),
			Targets: []types.TargetDescription{{Id: aws.String(id)}}})
		return err
	}
	if err := register(); err == nil || !strings.Contains(err.Error(), "InvalidTarget") {
		t.Errorf("register a pending instance: %v, want InvalidTarget", err)
	}
	waitState(t, e.ec2, id, ec2types.InstanceStateNameRunning)
	if err := register(); err != nil {
		t.Errorf("register the running instance: %v", err)
	}
}
