package webtier_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// newTier starts a sidecar with every module, aws_elb installed (and what
// it depends on), against an emulator where launches and load balancers
// take a little while, as on AWS.
func newTier(t *testing.T) (*enginetest.Env, webtier.Tier) {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: modules.All(),
		Install: []string{"aws_elb"},
		Emulator: emulator.Options{InstanceStartDelay: 300 * time.Millisecond, InstanceStopDelay: 300 * time.Millisecond,
			LoadBalancerActiveDelay: time.Second},
	})
	return e, webtier.Default()
}

// commitTier writes the tier in one transaction and commits it.
func commitTier(e *enginetest.Env, tier webtier.Tier) {
	e.T.Helper()
	e.Exec(append(append([]string{`CALL iasql_begin()`}, tier.Statements()...), `CALL iasql_commit()`)...)
}

// whole fails the test unless the cloud holds the tier made whole, and
// every row has its cloud identity.
func whole(t *testing.T, e *enginetest.Env, tier webtier.Tier) webtier.Cloud {
	t.Helper()
	c, err := tier.Observe(context.Background(), e.AWS)
	if err != nil {
		t.Fatal(err)
	}
	if bad := c.Complete(tier.Instances); bad != "" {
		t.Fatalf("the cloud after the commit: %s", bad)
	}
	for table, id := range map[string]string{"vpc": "vpc_id", "subnet": "subnet_id", "security_group": "group_id", "instance": "instance_id",
		"load_balancer": "load_balancer_arn", "target_group": "target_group_arn", "listener": "listener_arn"} {
		if n := e.Count(fmt.Sprintf(`SELECT count(*) FROM %s WHERE %s IS NULL`, table, id)); n != 0 {
			t.Errorf("%d %s rows without %s", n, table, id)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the commit: %s", n, e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, cloud_id, state, action, last_error), '; ') FROM iasql_status`))
	}
	return c
}

// TestTierInOneCommit: the web tier written in one transaction and
// committed converges, each resource created exactly once, the commit
// returning once the instances run and the load balancer is active.
func TestTierInOneCommit(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	calls := e.Emu.Calls()
	for op, want := range map[string]int{
		"ec2:CreateVpc": 1, "ec2:CreateSubnet": 2, "ec2:CreateSecurityGroup": 1, "ec2:RunInstances": tier.Instances,
		"elasticloadbalancing:CreateLoadBalancer": 1, "elasticloadbalancing:CreateTargetGroup": 1, "elasticloadbalancing:CreateListener": 1,
	} {
		if calls[op] != want {
			t.Errorf("%s called %d times, want %d", op, calls[op], want)
		}
	}
	if n := e.Count(`SELECT count(*) FROM load_balancer WHERE state = 'active' AND dns_name IS NOT NULL`); n != 1 {
		t.Errorf("the load_balancer row is not active with a DNS name when the commit returns")
	}
	if n := e.Count(`SELECT count(*) FROM instance WHERE observed_state = 'running' AND private_ip_address IS NOT NULL`); n != tier.Instances {
		t.Errorf("%d instance rows running with an address when the commit returns, want %d", n, tier.Instances)
	}
}

// TestTierThrottled: throttling injected into every EC2 and ELBv2 call
// during the tier's creation; the commit still converges to the whole
// tier, nothing made twice.
func TestTierThrottled(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	for _, op := range []string{"ec2:CreateVpc", "ec2:CreateSubnet", "ec2:CreateSecurityGroup", "ec2:RunInstances", "ec2:DescribeInstances",
		"elasticloadbalancing:*"} {
		e.Emu.Inject(emulator.Fault{Op: op, Kind: emulator.Throttle, Times: 3})
	}
	commitTier(e, tier)
	whole(t, e, tier) // one VPC, two subnets, one group, one load balancer ... (Complete counts them)
	if n := e.Count(`SELECT count(*) FROM instance`); n != tier.Instances {
		t.Errorf("%d instance rows, want %d", n, tier.Instances)
	}
}

// TestTierNoOps: once the tier is in sync, changes that change nothing a
// user could tell (the same set in another order, the same JSON, a
// protocol in other case, values set to what they are) make no mutating
// call.
func TestTierNoOps(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	before := e.Mutations()
	e.Exec(
		`UPDATE load_balancer SET subnets = ARRAY(SELECT unnest(subnets) ORDER BY 1 DESC)`,
		`UPDATE load_balancer SET tags = '{}'::jsonb, scheme = 'internet-facing'`,
		`UPDATE instance SET security_group_ids = security_group_ids || '{}', state = 'running', tags = tags || '{}'`,
		`UPDATE security_group_rule SET ip_protocol = 'TCP' WHERE ip_protocol = 'tcp'`,
		`UPDATE target_group SET matcher = '200', health_check_port = 'traffic-port', port = 80`,
		`UPDATE listener SET port = 80, protocol = 'HTTP'`,
		`UPDATE vpc SET cidr_block = '10.20.0.0/16' WHERE tags->>'Name' = 'web'`,
		`UPDATE subnet SET tags = jsonb_build_object('Name', tags->>'Name')`,
	)
	e.Commit()
	after := e.Mutations()
	for op, n := range after {
		if n != before[op] {
			t.Errorf("%s called %d more times by a commit of no-op changes", op, n-before[op])
		}
	}
	whole(t, e, tier)
}

// TestTierReplaceInstance: a new AMI replaces an instance; the target
// that registered it moves to the new one and the old one is terminated.
func TestTierReplaceInstance(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	old := e.String(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'web-2'`)
	e.Exec(`UPDATE instance SET ami = 'ami-0fedcba9876543210' WHERE tags->>'Name' = 'web-2'`)
	e.Commit()
	now := e.String(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'web-2'`)
	if now == old {
		t.Fatalf("the row still names the old instance %s", old)
	}
	c := whole(t, e, tier)
	if c.AMIs[now] != "ami-0fedcba9876543210" {
		t.Errorf("the new instance runs %q", c.AMIs[now])
	}
	if _, ok := c.Instances[old]; ok {
		t.Errorf("the old instance %s is %s, want it terminated", old, c.Instances[old])
	}
}

// TestTierDelete: the tier's rows deleted in one transaction; the commit
// deletes everything in the cloud, each after what depends on it.
func TestTierDelete(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	e.Exec(append(append([]string{`CALL iasql_begin()`}, tier.Delete()...), `CALL iasql_commit()`)...)
	c, err := tier.Observe(context.Background(), e.AWS)
	if err != nil {
		t.Fatal(err)
	}
	if left := c.Empty(); left != "" {
		t.Errorf("after the delete: %s", left)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the delete: %s", n, e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, cloud_id, state, action, last_error), '; ') FROM iasql_status`))
	}
}

// TestTierLoadBalancerReplaced: a new scheme replaces the load balancer
// (AWS fixes it at creation, and deletes its listeners with it); the
// listener row stays and is created again on the new one.
func TestTierLoadBalancerReplaced(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	oldLB := e.String(`SELECT load_balancer_arn FROM load_balancer`)
	oldListener := e.String(`SELECT listener_arn FROM listener`)
	e.Exec(`UPDATE load_balancer SET scheme = 'internal'`)
	e.Commit()
	whole(t, e, tier)
	if arn := e.String(`SELECT load_balancer_arn FROM load_balancer WHERE scheme = 'internal'`); arn == oldLB || arn == "" {
		t.Errorf("load balancer ARN %q after the replacement, was %q", arn, oldLB)
	}
	if arn := e.String(`SELECT listener_arn FROM listener WHERE port = 80`); arn == oldListener || arn == "" {
		t.Errorf("listener ARN %q after the replacement, was %q", arn, oldListener)
	}
}

// TestTierLoadBalancerReplacedAcrossCycles: the replacement's create
// fails (access denied, not retried) after the old load balancer (and
// with it, on AWS, its listener) is gone; the listener row is kept, and the next commit, a new cycle,
// makes both again.
func TestTierLoadBalancerReplacedAcrossCycles(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	commitTier(e, tier)
	whole(t, e, tier)
	e.Emu.Inject(emulator.Fault{Op: "elasticloadbalancing:CreateLoadBalancer", Kind: emulator.Denied})
	e.Exec(`UPDATE load_balancer SET scheme = 'internal'`)
	if _, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`); err == nil {
		t.Fatal("the commit succeeded though the load balancer could not be created")
	}
	if n := e.Count(`SELECT count(*) FROM listener`); n != 1 {
		t.Fatalf("%d listener rows after the failed replacement, want the user's one kept", n)
	}
	e.Emu.ClearFaults()
	e.Commit()
	whole(t, e, tier)
}

// TestTierEnforceRelaunch: an instance under ENFORCE is terminated by
// someone else; one commit launches its replacement and moves the target
// that registered it to the new instance (the target row references the
// instance row, so it registers the instance id the row now has).
func TestTierEnforceRelaunch(t *testing.T) {
	t.Parallel()
	e, tier := newTier(t)
	// The rule comes with the tier: no cycle ever sees the instance without it.
	e.Exec(append(append([]string{`CALL iasql_begin()`}, tier.Statements()...),
		`INSERT INTO iasql_mode (table_name, record_id, mode) SELECT 'instance', id, 'ENFORCE' FROM instance WHERE tags->>'Name' = 'web-2'`,
		`CALL iasql_commit()`)...)
	whole(t, e, tier)
	id := e.String(`SELECT id::text FROM instance WHERE tags->>'Name' = 'web-2'`)
	old := e.String(`SELECT instance_id FROM instance WHERE id = ` + id)

	cfg := e.AWS.Copy()
	cfg.Region = tier.Region
	cl := ec2.NewFromConfig(cfg)
	if _, err := cl.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{old}}); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "the instance to be terminated", func() bool {
		out, err := cl.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{old}})
		if err != nil {
			t.Fatal(err)
		}
		return len(out.Reservations) == 1 && out.Reservations[0].Instances[0].State.Name == ec2types.InstanceStateNameTerminated
	})

	e.Commit()
	now := e.String(`SELECT coalesce(instance_id, '') FROM instance WHERE id = ` + id)
	if now == old || now == "" {
		t.Fatalf("the row names %q after the commit; want a new instance in place of the terminated %s", now, old)
	}
	c := whole(t, e, tier)
	if c.Instances[now] != "running" {
		t.Errorf("the new instance %s is %q, want running", now, c.Instances[now])
	}
	if n := e.Count(`SELECT count(*) FROM target`); n != tier.Instances {
		t.Errorf("%d target rows, want %d (the moved one kept, none imported)", n, tier.Instances)
	}
}
