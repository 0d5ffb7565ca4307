package bridge_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
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
	enginetest.WaitUntil(t, 30*time.Second, "the instances launched and the load balancer asked for", func() bool {
		calls := e.Emu.Calls()
		return calls["ec2:RunInstances"] >= tier.Instances && calls["elasticloadbalancing:CreateLoadBalancer"] > 0
	})
	sc.kill()
	if err := waitCall(t, done); err == nil {
		t.Log("the commit was answered before the kill")
	}

	startBinarySidecar(t, e)
	e.Commit()
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
