package aws_elb_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_elb"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is a database with aws_elb (and what it depends on) installed, and
// out-of-band ELBv2 and EC2 clients for us-east-1.
type env struct {
	*enginetest.Env
	elb *elb.Client
	ec2 *ec2.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module(),
			aws_elb.ModuleWith(aws_elb.Options{PollAfter: 100 * time.Millisecond})},
		Install: []string{"aws_elb"},
		Emulator: emulator.Options{LoadBalancerActiveDelay: 300 * time.Millisecond, TargetHealthyDelay: 200 * time.Millisecond,
			InstanceStartDelay: 100 * time.Millisecond, InstanceStopDelay: 100 * time.Millisecond},
	})
	return &env{Env: e, elb: elb.NewFromConfig(e.AWS), ec2: ec2.NewFromConfig(e.AWS)}
}

// Two default subnets (zones a and b) and a third (zone c) of us-east-1's
// default VPC, and its default group.
const (
	twoSubnets   = `ARRAY(SELECT id FROM subnet WHERE region = 'us-east-1' AND is_default_for_az ORDER BY availability_zone LIMIT 2)`
	threeSubnets = `ARRAY(SELECT id FROM subnet WHERE region = 'us-east-1' AND is_default_for_az ORDER BY availability_zone LIMIT 3)`
	defaultGroup = `ARRAY(SELECT g.id FROM security_group g JOIN vpc v ON v.id = g.vpc_id WHERE v.is_default AND v.region = 'us-east-1' AND g.group_name = 'default')`
	defaultVpc   = `(SELECT id FROM vpc WHERE is_default AND region = 'us-east-1')`
)

func (e *env) lb(name string) (types.LoadBalancer, bool) {
	e.T.Helper()
	out, err := e.elb.DescribeLoadBalancers(context.Background(), &elb.DescribeLoadBalancersInput{Names: []string{name}})
	if module.IsCode(err, "LoadBalancerNotFound") {
		return types.LoadBalancer{}, false
	}
	if err != nil || len(out.LoadBalancers) != 1 {
		e.T.Fatalf("describe load balancer %s: %v", name, err)
	}
	return out.LoadBalancers[0], true
}

func (e *env) tg(name string) (types.TargetGroup, bool) {
	e.T.Helper()
	out, err := e.elb.DescribeTargetGroups(context.Background(), &elb.DescribeTargetGroupsInput{Names: []string{name}})
	if module.IsCode(err, "TargetGroupNotFound") {
		return types.TargetGroup{}, false
	}
	if err != nil || len(out.TargetGroups) != 1 {
		e.T.Fatalf("describe target group %s: %v", name, err)
	}
	return out.TargetGroups[0], true
}

func (e *env) tags(arn string) map[string]string {
	e.T.Helper()
	out, err := e.elb.DescribeTags(context.Background(), &elb.DescribeTagsInput{ResourceArns: []string{arn}})
	if err != nil {
		e.T.Fatal(err)
	}
	m := map[string]string{}
	for _, t := range out.TagDescriptions[0].Tags {
		if k := aws.ToString(t.Key); k != module.TokenTag {
			m[k] = aws.ToString(t.Value)
		}
	}
	return m
}

func subnetsOf(lb types.LoadBalancer) []string {
	var out []string
	for _, az := range lb.AvailabilityZones {
		out = append(out, aws.ToString(az.SubnetId))
	}
	slices.Sort(out)
	return out
}

// ids runs a query returning text values.
func (e *env) ids(q string) []string {
	e.T.Helper()
	rows, err := e.DB.Query(context.Background(), q)
	if err != nil {
		e.T.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

// noMutations commits and fails when the commit made a mutating call.
func (e *env) noMutations(what string) {
	e.T.Helper()
	e.Emu.Reset()
	e.Commit()
	if m := e.Mutations(); len(m) != 0 {
		e.T.Errorf("%s: the commit made %v", what, m)
	}
}

// TestLoadBalancer: create (provisioning, then active), update subnets,
// groups and tags in place, a no-op (the same subnets in another order,
// the same tags rewritten), replace (scheme), import one made elsewhere,
// drop one deleted elsewhere, delete.
func TestLoadBalancer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	e.Exec(`INSERT INTO load_balancer (name, subnets, security_groups, tags) VALUES ('web', ` + twoSubnets + `, ` + defaultGroup + `, '{"a": "1"}')`)
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM load_balancer WHERE name = 'web' AND state = 'active' AND load_balancer_arn LIKE 'arn:aws:elasticloadbalancing:us-east-1:%' AND dns_name <> ''`); n != 1 {
		t.Fatalf("the load balancer's feedback: %d rows active with an ARN", n)
	}
	lb, ok := e.lb("web")
	if !ok || lb.Scheme != types.LoadBalancerSchemeEnumInternetFacing || !slices.Equal(subnetsOf(lb), e.ids(`SELECT subnet_id FROM subnet WHERE id = ANY(`+twoSubnets+`)`)) {
		t.Fatalf("in the cloud: %v %+v", ok, lb)
	}
	arn := aws.ToString(lb.LoadBalancerArn)

	// In place: a third subnet, tags.
	e.Exec(`UPDATE load_balancer SET subnets = ` + threeSubnets + `, tags = '{"a": "2", "b": "x"}'`)
	e.Emu.Reset()
	e.Commit()
	lb, _ = e.lb("web")
	if got := subnetsOf(lb); len(got) != 3 || aws.ToString(lb.LoadBalancerArn) != arn {
		t.Errorf("after the update: subnets %v, ARN %s (was %s)", got, aws.ToString(lb.LoadBalancerArn), arn)
	}
	if tags := e.tags(arn); tags["a"] != "2" || tags["b"] != "x" || len(tags) != 2 {
		t.Errorf("tags %v", tags)
	}
	if m := e.Mutations(); m["elasticloadbalancing:DeleteLoadBalancer"] != 0 || m["elasticloadbalancing:SetSubnets"] != 1 {
		t.Errorf("an in-place update made %v", m)
	}

	// No-op: the same subnets in another order, the same tags rewritten.
	e.Exec(`UPDATE load_balancer SET subnets = ARRAY(SELECT unnest(subnets) ORDER BY 1 DESC), tags = '{ "b":"x", "a":"2"}'`)
	e.noMutations("the same subnets in another order and the same tags")

	// Replace: the scheme is fixed at creation.
	e.Exec(`UPDATE load_balancer SET scheme = 'internal'`)
	e.Commit()
	lb, _ = e.lb("web")
	if lb.Scheme != types.LoadBalancerSchemeEnumInternal || aws.ToString(lb.LoadBalancerArn) == arn {
		t.Errorf("after the scheme change: %s, ARN %s (was %s)", lb.Scheme, aws.ToString(lb.LoadBalancerArn), arn)
	}
	if got := e.String(`SELECT load_balancer_arn FROM load_balancer WHERE name = 'web'`); got != aws.ToString(lb.LoadBalancerArn) {
		t.Errorf("the row says ARN %s, the cloud %s", got, aws.ToString(lb.LoadBalancerArn))
	}

	// Import: one made elsewhere.
	subnets := e.ids(`SELECT subnet_id FROM subnet WHERE id = ANY(` + twoSubnets + `)`)
	if _, err := e.elb.CreateLoadBalancer(ctx, &elb.CreateLoadBalancerInput{Name: aws.String("oob"), Subnets: subnets,
		Tags: []types.Tag{{Key: aws.String("made"), Value: aws.String("elsewhere")}}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM load_balancer WHERE name = 'oob' AND region = 'us-east-1' AND tags->>'made' = 'elsewhere' AND cardinality(subnets) = 2 AND cardinality(security_groups) = 1`); n != 1 {
		t.Errorf("the load balancer made elsewhere was not imported (%d rows)", n)
	}
	e.noMutations("a commit after an import")

	// Deleted elsewhere: the row goes.
	oob, _ := e.lb("oob")
	if _, err := e.elb.DeleteLoadBalancer(ctx, &elb.DeleteLoadBalancerInput{LoadBalancerArn: oob.LoadBalancerArn}); err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM load_balancer WHERE name = 'oob'`); n != 0 {
		t.Error("the row of a load balancer deleted elsewhere is still there")
	}

	// Delete the row: the load balancer goes.
	e.Exec(`DELETE FROM load_balancer WHERE name = 'web'`)
	e.Commit()
	if _, ok := e.lb("web"); ok {
		t.Error("the load balancer of a deleted row is still in the cloud")
	}
}
