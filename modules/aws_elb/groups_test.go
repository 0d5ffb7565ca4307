package aws_elb_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// targets are a group's targets but draining ones, as instance:port.
func (e *env) targets(arn string) []string {
	e.T.Helper()
	out, err := e.elb.DescribeTargetHealth(context.Background(), &elb.DescribeTargetHealthInput{TargetGroupArn: aws.String(arn)})
	if err != nil {
		e.T.Fatal(err)
	}
	var got []string
	for _, d := range out.TargetHealthDescriptions {
		if d.TargetHealth.State != types.TargetHealthStateEnumDraining {
			got = append(got, aws.ToString(d.Target.Id)+":"+itoa(aws.ToInt32(d.Target.Port)))
		}
	}
	return got
}

func itoa(n int32) string {
	return string(rune('0'+n/1000%10)) + string(rune('0'+n/100%10)) + string(rune('0'+n/10%10)) + string(rune('0'+n%10))
}

func (e *env) listeners(lbArn string) []types.Listener {
	e.T.Helper()
	out, err := e.elb.DescribeListeners(context.Background(), &elb.DescribeListenersInput{LoadBalancerArn: aws.String(lbArn)})
	if err != nil {
		e.T.Fatal(err)
	}
	return out.Listeners
}

// TestGroupsListenersTargets: a target group, a load balancer with a
// listener forwarding to it and an instance registered with it, all in one
// commit; health checks, listener port and tags in place; no-ops; the
// group replaced (port) with its listener and target moved to the new
// one; a target replaced (port); a listener moved to another load
// balancer; a group, target and listener made elsewhere imported and
// deleted elsewhere; every row deleted in one commit (the group after the
// listener that uses it).
func TestGroupsListenersTargets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()

	e.Exec(`INSERT INTO target_group (name, port, vpc_id, tags) VALUES ('tg1', 80, `+defaultVpc+`, '{"a": "1"}')`,
		`INSERT INTO load_balancer (name, subnets) VALUES ('web', `+twoSubnets+`)`,
		`INSERT INTO instance (ami, instance_type, subnet_id) SELECT 'ami-0123456789abcdef0', 't3.micro', id FROM subnet WHERE id = (`+twoSubnets+`)[1]`,
		`INSERT INTO listener (load_balancer_id, port, target_group_id) SELECT l.id, 80, g.id FROM load_balancer l, target_group g`,
		`INSERT INTO target (target_group_id, instance_id) SELECT g.id, i.id FROM target_group g, instance i`)
	e.Commit()
	tg, ok := e.tg("tg1")
	if !ok || aws.ToInt32(tg.Port) != 80 || aws.ToString(tg.HealthCheckPath) != "/" {
		t.Fatalf("target group in the cloud: %v %+v", ok, tg)
	}
	tgArn := aws.ToString(tg.TargetGroupArn)
	instance := e.String(`SELECT instance_id FROM instance`)
	if got := e.targets(tgArn); len(got) != 1 || got[0] != instance+":0080" {
		t.Errorf("targets %v, want %s on 80", got, instance)
	}
	if n := e.Count(`SELECT count(*) FROM target WHERE port = 80 AND health_state IS NOT NULL`); n != 1 {
		t.Errorf("the target row's port and health: %d rows", n)
	}
	lb, _ := e.lb("web")
	lbArn := aws.ToString(lb.LoadBalancerArn)
	ls := e.listeners(lbArn)
	if len(ls) != 1 || aws.ToInt32(ls[0].Port) != 80 || aws.ToString(ls[0].DefaultActions[0].TargetGroupArn) != tgArn {
		t.Fatalf("listeners %+v", ls)
	}
	if got := e.String(`SELECT listener_arn FROM listener`); got != aws.ToString(ls[0].ListenerArn) {
		t.Errorf("the listener's ARN: row %s, cloud %s", got, aws.ToString(ls[0].ListenerArn))
	}

	// In place: health checks, tags, the listener's port.
	e.Exec(`UPDATE target_group SET health_check_path = '/health', health_check_interval_seconds = 10, matcher = '200-299', tags = '{"a": "2"}'`,
		`UPDATE listener SET port = 8080`)
	e.Commit()
	tg, _ = e.tg("tg1")
	if aws.ToString(tg.HealthCheckPath) != "/health" || aws.ToInt32(tg.HealthCheckIntervalSeconds) != 10 || aws.ToString(tg.Matcher.HttpCode) != "200-299" ||
		aws.ToString(tg.TargetGroupArn) != tgArn || e.tags(tgArn)["a"] != "2" {
		t.Errorf("target group after the update: %+v, tags %v", tg, e.tags(tgArn))
	}
	if ls := e.listeners(lbArn); len(ls) != 1 || aws.ToInt32(ls[0].Port) != 8080 {
		t.Errorf("listener after the update: %+v", ls)
	}

	// No-ops: the same tags rewritten, the same port, a target's port set
	// to what it is.
	e.Exec(`UPDATE target_group SET tags = '{ "a":"2" }', health_check_path = '/health'`, `UPDATE listener SET port = 8080`, `UPDATE target SET port = 80`)
	e.noMutations("the same values written again")

	// Replace a target: another port.
	e.Exec(`UPDATE target SET port = 8081`)
	e.Commit()
	if got := e.targets(tgArn); len(got) != 1 || got[0] != instance+":8081" {
		t.Errorf("targets after the port change %v", got)
	}

	// Move the listener to another load balancer (a replacement).
	e.Exec(`INSERT INTO load_balancer (name, subnets) VALUES ('web2', ` + twoSubnets + `)`)
	e.Commit()
	e.Exec(`UPDATE listener SET load_balancer_id = (SELECT id FROM load_balancer WHERE name = 'web2')`)
	e.Commit()
	lb2, _ := e.lb("web2")
	if ls, ls2 := e.listeners(lbArn), e.listeners(aws.ToString(lb2.LoadBalancerArn)); len(ls) != 0 || len(ls2) != 1 || aws.ToInt32(ls2[0].Port) != 8080 {
		t.Errorf("after the move: %d listeners on web, %+v on web2", len(ls), ls2)
	}

	// Made elsewhere: a group with the instance, and a listener on web.
	oob, err := e.elb.CreateTargetGroup(ctx, &elb.CreateTargetGroupInput{Name: aws.String("oob"), Protocol: types.ProtocolEnumHttp,
		Port: aws.Int32(9000), VpcId: tg.VpcId})
	if err != nil {
		t.Fatal(err)
	}
	oobArn := oob.TargetGroups[0].TargetGroupArn
	if _, err := e.elb.RegisterTargets(ctx, &elb.RegisterTargetsInput{TargetGroupArn: oobArn, Targets: []types.TargetDescription{{Id: aws.String(instance)}}}); err != nil {
		t.Fatal(err)
	}
	ol, err := e.elb.CreateListener(ctx, &elb.CreateListenerInput{LoadBalancerArn: aws.String(lbArn), Protocol: types.ProtocolEnumHttp, Port: aws.Int32(9090),
		DefaultActions: []types.Action{{Type: types.ActionTypeEnumForward, TargetGroupArn: oobArn}}})
	if err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM target_group WHERE name = 'oob' AND port = 9000 AND health_check_path = '/'`); n != 1 {
		t.Error("the group made elsewhere was not imported")
	}
	if n := e.Count(`SELECT count(*) FROM target t JOIN target_group g ON g.id = t.target_group_id WHERE g.name = 'oob' AND t.port = 9000`); n != 1 {
		t.Error("the target made elsewhere was not imported")
	}
	if n := e.Count(`SELECT count(*) FROM listener l JOIN load_balancer b ON b.id = l.load_balancer_id JOIN target_group g ON g.id = l.target_group_id
		WHERE b.name = 'web' AND g.name = 'oob' AND l.port = 9090 AND l.listener_arn = $1`, aws.ToString(ol.Listeners[0].ListenerArn)); n != 1 {
		t.Error("the listener made elsewhere was not imported")
	}
	e.noMutations("a commit after imports")

	// Deleted elsewhere: the rows go.
	if _, err := e.elb.DeleteListener(ctx, &elb.DeleteListenerInput{ListenerArn: ol.Listeners[0].ListenerArn}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.elb.DeregisterTargets(ctx, &elb.DeregisterTargetsInput{TargetGroupArn: oobArn, Targets: []types.TargetDescription{{Id: aws.String(instance)}}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM listener WHERE port = 9090`) + e.Count(`SELECT count(*) FROM target WHERE port = 9000`); n != 0 {
		t.Errorf("%d rows of a listener and a target deleted elsewhere are left", n)
	}
	if _, err := e.elb.DeleteTargetGroup(ctx, &elb.DeleteTargetGroupInput{TargetGroupArn: oobArn}); err != nil {
		t.Fatal(err)
	}
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM target_group WHERE name = 'oob'`); n != 0 {
		t.Error("the row of a group deleted elsewhere is left")
	}

	// Delete the rows in one commit: the group goes after the listener.
	e.Exec(`DELETE FROM listener`, `DELETE FROM target`, `DELETE FROM target_group`)
	e.Commit()
	if _, ok := e.tg("tg1"); ok {
		t.Error("the group of a deleted row is still in the cloud")
	}
	if ls := e.listeners(aws.ToString(lb2.LoadBalancerArn)); len(ls) != 0 {
		t.Errorf("listeners of deleted rows are left: %+v", ls)
	}
}

// TestTargetGroupReplacement: a group whose port changes is replaced
// through a stand-in; its target moves to the new group, and so does the
// listener that forwards to it.
//
// It fails on the engine as of 9ac158e: the listener is pushed twice in the
// cycle (to the stand-in, then back to the group's new resource), and the
// engine's notTaken check keys pushes of a table with generated identities
// by row id only (plan.PushKey), so the second push is reported as "the
// cloud did not take the change" although the row's cloud form changed (its
// reference now renders another identity). A second commit completes it.
func TestTargetGroupReplacement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.Exec(`INSERT INTO target_group (name, port, vpc_id) VALUES ('tg1', 80, `+defaultVpc+`)`,
		`INSERT INTO instance (ami, instance_type, subnet_id) SELECT 'ami-0123456789abcdef0', 't3.micro', id FROM subnet WHERE id = (`+twoSubnets+`)[1]`,
		`INSERT INTO target (target_group_id, instance_id) SELECT g.id, i.id FROM target_group g, instance i`)
	e.Commit()
	tg, _ := e.tg("tg1")
	tgArn := aws.ToString(tg.TargetGroupArn)
	instance := e.String(`SELECT instance_id FROM instance`)

	// Without a listener: the target moves to the new group.
	e.Exec(`UPDATE target_group SET port = 8000`)
	e.Commit()
	tg, ok := e.tg("tg1")
	if !ok || aws.ToInt32(tg.Port) != 8000 || aws.ToString(tg.TargetGroupArn) == tgArn {
		t.Fatalf("after the port change: %+v", tg)
	}
	tgArn = aws.ToString(tg.TargetGroupArn)
	if got := e.targets(tgArn); len(got) != 1 || got[0] != instance+":0080" {
		t.Errorf("targets of the new group %v", got)
	}
	out, err := e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{})
	if err != nil || len(out.TargetGroups) != 1 {
		t.Errorf("after the replacement the cloud has %d groups (want 1): %v", len(out.TargetGroups), err)
	}

	// With a listener forwarding to it.
	e.Exec(`INSERT INTO load_balancer (name, subnets) VALUES ('web', `+twoSubnets+`)`,
		`INSERT INTO listener (load_balancer_id, port, target_group_id) SELECT l.id, 80, g.id FROM load_balancer l, target_group g`)
	e.Commit()
	lb, _ := e.lb("web")
	lbArn := aws.ToString(lb.LoadBalancerArn)
	// Replace the group (its port is fixed at creation): the listener and
	// the target move to the new one.
	e.Exec(`UPDATE target_group SET port = 9000`)
	e.Commit()
	tg, ok = e.tg("tg1")
	if !ok || aws.ToInt32(tg.Port) != 9000 || aws.ToString(tg.TargetGroupArn) == tgArn {
		t.Fatalf("after the port change: %+v", tg)
	}
	tgArn = aws.ToString(tg.TargetGroupArn)
	if ls := e.listeners(lbArn); len(ls) != 1 || aws.ToString(ls[0].DefaultActions[0].TargetGroupArn) != tgArn {
		t.Errorf("the listener does not forward to the new group: %+v", ls)
	}
	if got := e.targets(tgArn); len(got) != 1 || got[0] != instance+":0080" {
		t.Errorf("targets of the new group %v", got)
	}
	out, err = e.elb.DescribeTargetGroups(ctx, &elb.DescribeTargetGroupsInput{})
	if err != nil || len(out.TargetGroups) != 1 {
		t.Errorf("after the replacement the cloud has %d groups (want 1): %v", len(out.TargetGroups), err)
	}

}
