package bridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

// TestTierSurvivesSIGKILL: the sidecar process is killed while the web
// tier's commit has launched its instances and asked for its load
// balancer, both still on their way in the cloud; the next sidecar
// finishes the tier with each resource made once: no second instance, no
// second load balancer, no row imported twice.
func TestTierSurvivesSIGKILL(t *testing.T) {
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: modules.All(),
		Install: []string{"aws_elb"},
		Emulator: emulator.Options{InstanceStartDelay: 2 * time.Second, InstanceStopDelay: 500 * time.Millisecond,
			LoadBalancerActiveDelay: 3 * time.Second},
	})
	e.Stop() // the in-process sidecar makes way for one that can be killed
	sc := startBinarySidecar(t, e)

	tier := webtier.Default()
	e.Exec(append([]string{`CALL iasql_begin()`}, tier.Statements()...)...)
	done := callAsync(t, e.DSN, `CALL iasql_commit()`, nil)
	testkit.Until(t, 30*time.Second, "the instances launched and the load balancer asked for", func() bool {
		calls := e.Emu.Calls()
		return calls["ec2:RunInstances"] >= tier.Instances && calls["elasticloadbalancing:CreateLoadBalancer"] > 0
	})
	sc.Kill()
	if err := waitCall(t, done); err == nil {
		t.Log("the commit was answered before the kill")
	}

	startBinarySidecar(t, e)
	e.Commit()
	checkTierAfterKill(t, e, tier)
}

// TestTierKilledMidCall: the sidecar process is killed while one cloud
// call of the web tier's commit is on its way (the emulator holds it until
// the caller is gone, then does it, as AWS does a request whose answer is
// lost), before the engine could record its answer. The next sidecar's
// commit finishes the tier with each resource made once, and reports it
// in sync only when every row has its resource's identity.
func TestTierKilledMidCall(t *testing.T) {
	cases := []struct {
		name string
		op   string // the call the kill cuts short
		n    int    // how many such calls the tier makes
		// startDelay: how long instances stay pending: long enough, for
		// RunInstances, that the resumed create finds its instance still
		// pending (its targets must wait for it).
		startDelay time.Duration
	}{
		{"RunInstances, its handle never saved", "ec2:RunInstances", 2, 5 * time.Second},
		{"CreateListener, its ARN never written back", "elasticloadbalancing:CreateListener", 1, 500 * time.Millisecond},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := enginetest.New(t, srv, enginetest.Options{
				Modules: modules.All(),
				Install: []string{"aws_elb"},
				Emulator: emulator.Options{InstanceStartDelay: tc.startDelay, InstanceStopDelay: 500 * time.Millisecond,
					LoadBalancerActiveDelay: time.Second},
			})
			e.Stop() // the in-process sidecar makes way for one that can be killed
			sc := startBinarySidecar(t, e)
			e.Emu.Inject(emulator.Fault{Op: tc.op, Kind: emulator.Latency, Delay: time.Minute})

			tier := webtier.Default()
			e.Exec(append([]string{`CALL iasql_begin()`}, tier.Statements()...)...)
			done := callAsync(t, e.DSN, `CALL iasql_commit()`, nil)
			testkit.Until(t, 60*time.Second, tc.op+" to be asked for", func() bool { return e.Emu.Calls()[tc.op] >= tc.n })
			sc.Kill()
			e.Emu.ClearFaults()
			if err := waitCall(t, done); err == nil {
				t.Fatal("the commit was answered before the kill")
			}
			// The held call is done once its caller is gone.
			testkit.Until(t, 30*time.Second, "the cut-short call to be done in the cloud", func() bool {
				c, err := tier.Observe(context.Background(), e.AWS)
				if err != nil {
					t.Fatal(err)
				}
				if tc.op == "ec2:RunInstances" {
					return len(c.Instances) == tc.n
				}
				return c.Listeners == tc.n
			})

			startBinarySidecar(t, e)
			e.Commit()
			checkTierAfterKill(t, e, tier)
			if n := e.Count(`SELECT count(*) FROM listener WHERE listener_arn IS NULL`) + e.Count(`SELECT count(*) FROM instance WHERE instance_id IS NULL`); n != 0 {
				t.Errorf("%d listener or instance rows without their resource's identity after the commit", n)
			}
			arn := e.String(`SELECT coalesce(listener_arn, '') FROM listener`)
			cfg := e.AWS.Copy()
			cfg.Region = tier.Region
			lbs, err := elb.NewFromConfig(cfg).DescribeListeners(context.Background(), &elb.DescribeListenersInput{
				LoadBalancerArn: aws.String(e.String(`SELECT load_balancer_arn FROM load_balancer`))})
			if err != nil {
				t.Fatal(err)
			}
			if len(lbs.Listeners) != 1 || aws.ToString(lbs.Listeners[0].ListenerArn) != arn {
				t.Errorf("the listener row has ARN %q; the cloud has %d listener(s) (want the row's)", arn, len(lbs.Listeners))
			}
		})
	}
}

// checkTierAfterKill checks, after a kill and a new sidecar's commit,
// that the tier is whole in the cloud, each of its resources has one row,
// and no record is out of sync.
func checkTierAfterKill(t *testing.T, e *enginetest.Env, tier webtier.Tier) {
	t.Helper()
	c, err := tier.Observe(context.Background(), e.AWS)
	if err != nil {
		t.Fatal(err)
	}
	if bad := c.Complete(tier.Instances); bad != "" {
		t.Fatalf("after the kill and a new sidecar's commit: %s", bad)
	}
	for table, want := range map[string]int{"vpc": 1, "subnet": 2, "security_group": 1, "instance": tier.Instances, "load_balancer": 1,
		"target_group": 1, "target": tier.Instances, "listener": 1} {
		where := ""
		switch table {
		case "vpc", "subnet":
			where = ` WHERE tags->>'Name' LIKE 'web%'`
		case "security_group":
			where = ` WHERE group_name = 'web'`
		}
		if n := e.Count(fmt.Sprintf(`SELECT count(*) FROM %s%s`, table, where)); n != want {
			t.Errorf("%d %s rows, want %d", n, table, want)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the new sidecar's commit", n)
	}
}
