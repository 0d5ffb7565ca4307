package bridge_test

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/module"
)

// TestDuplicatesOfOneClientToken: against an endpoint that does not honour
// RunInstances' ClientToken (the emulator's IgnoreClientToken fault), a
// launch repeated with the same token makes a second instance, tagged
// with the same token. The engine keeps the one its row holds, terminates
// the other (it made it, no row wants it) and says so in the audit trail
// and the log; it never imports it as a row. The launch is repeated by
// the SDK after a 500 that came once the instance was launched, or by the
// next sidecar after the first was SIGKILLed during RunInstances.
func TestDuplicatesOfOneClientToken(t *testing.T) {
	const n = 3
	for _, tc := range []struct {
		name string
		kill bool
	}{{"the SDK retries after a 500", false}, {"SIGKILL during RunInstances", true}} {
		t.Run(tc.name, func(t *testing.T) {
			log := &testkit.Log{}
			e := enginetest.New(t, srv, enginetest.Options{
				Modules: modules.All(),
				Install: []string{"aws_ec2"},
				Emulator: emulator.Options{InstanceStartDelay: 300 * time.Millisecond, InstanceStopDelay: 300 * time.Millisecond,
					TerminatedVisibleFor: time.Hour},
				Logger: slog.New(slog.NewTextHandler(log, nil)),
			})
			var sc *testkit.Process
			if tc.kill {
				e.Stop() // the in-process sidecar makes way for one that can be killed
				sc = startBinarySidecar(t, e)
				e.Emu.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.Latency, Delay: 2 * time.Second, Times: n})
			} else {
				e.Emu.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.ServerErrorAfter, Times: n})
			}
			e.Emu.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.IgnoreClientToken})
			var inserts []string
			for range n {
				inserts = append(inserts, `INSERT INTO instance (ami, instance_type) VALUES ('ami-0123456789abcdef0', 't3.micro')`)
			}
			e.Exec(append([]string{`CALL iasql_begin()`}, inserts...)...)
			c := ec2.NewFromConfig(e.AWS)
			if tc.kill {
				done := callAsync(t, e.DSN, `CALL iasql_commit()`, nil)
				testkit.Until(t, 30*time.Second, "every launch to reach RunInstances", func() bool {
					return e.Emu.Calls()["ec2:RunInstances"] >= n
				})
				sc.Kill()
				if err := waitCall(t, done); err == nil {
					t.Log("the commit was answered before the kill")
				}
				testkit.Until(t, 30*time.Second, "the killed sidecar's launches made", func() bool {
					return len(instancesByState(t, c)) == n
				})
				sc = startBinarySidecar(t, e)
			}
			e.Commit()

			live, dead := map[string]string{}, map[string]string{} // instance id -> token
			for id, in := range instancesByState(t, c) {
				switch in.state {
				case types.InstanceStateNamePending, types.InstanceStateNameRunning:
					live[id] = in.token
				default:
					dead[id] = in.token
				}
			}
			if len(live) != n || len(dead) != n {
				t.Errorf("%d instances live and %d terminated, want %d and %d (one kept, one terminated, per launch repeated)", len(live), len(dead), n, n)
			}
			var tokens []string
			for _, tok := range live {
				tokens = append(tokens, tok)
			}
			for id, tok := range dead {
				if !slices.Contains(tokens, tok) {
					t.Errorf("terminated instance %s carries token %q, which no live instance does", id, tok)
				}
			}
			if got := e.Count(`SELECT count(*) FROM instance`); got != n {
				t.Errorf("%d instance rows, want %d: a duplicate was imported", got, n)
			}
			for id := range live {
				if e.Count(`SELECT count(*) FROM instance WHERE instance_id = $1`, id) != 1 {
					t.Errorf("no row holds the live instance %s", id)
				}
			}
			for id, tok := range dead {
				if e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END'
					AND message LIKE '%' || $1 || '%' AND message LIKE '%client token ' || $2 || '%kept %'`, id, tok) == 0 {
					t.Errorf("no cycle record says why %s (token %s) was deleted", id, tok)
				}
			}
			out := log.String()
			if tc.kill {
				out = sc.Log.String()
			}
			if k := strings.Count(out, `msg="deleting a resource made twice by one create`); k != n {
				t.Errorf("the log says %d times that a duplicate was deleted, want %d", k, n)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
				t.Errorf("%d records not in sync after the commit", n)
			}
		})
	}
}

// launched is an instance as the cloud has it.
type launched struct {
	state types.InstanceStateName
	token string
}

// instancesByState reads every instance of the default region, with its
// state and client-token tag.
func instancesByState(t *testing.T, c *ec2.Client) map[string]launched {
	t.Helper()
	out := map[string]launched{}
	p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range page.Reservations {
			for _, in := range r.Instances {
				l := launched{state: in.State.Name}
				for _, tag := range in.Tags {
					if *tag.Key == module.TokenTag {
						l.token = *tag.Value
					}
				}
				out[*in.InstanceId] = l
			}
		}
	}
	return out
}
