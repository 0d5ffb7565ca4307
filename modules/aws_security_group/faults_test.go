package aws_security_group_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/emulator"
)

// TestFaultsConverge: throttling, 5xx answers (some after AWS acted) and
// slow answers on the calls a commit makes; once they stop, the next commit
// converges, and nothing was applied twice.
func TestFaultsConverge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	groups := []string{"f1", "f2", "f3"}
	for _, g := range groups {
		e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('`+g+`', 'faulty')`,
			`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4)
			   SELECT id, 'tcp', p, p, '10.1.0.0/16' FROM security_group, (VALUES (22), (443)) v(p) WHERE group_name = '`+g+`'`)
	}
	for _, f := range []emulator.Fault{
		{Op: "ec2:CreateSecurityGroup", Kind: emulator.Throttle, Times: 4},
		{Op: "ec2:CreateSecurityGroup", Kind: emulator.ServerErrorAfter, Times: 1},
		{Op: "ec2:AuthorizeSecurityGroupIngress", Kind: emulator.ServerErrorAfter, Times: 2},
		{Op: "ec2:AuthorizeSecurityGroupIngress", Kind: emulator.ServerError, Times: 3},
		{Op: "ec2:DescribeSecurityGroupRules", Kind: emulator.ServerError, Times: 1},
		{Op: "ec2:DescribeSecurityGroups", Kind: emulator.Latency, Delay: 300e6, Times: 2},
	} {
		e.Emu.Inject(f)
	}
	// The SDK's retries and the cycle's absorb these.
	e.Commit()

	for _, g := range groups {
		cg, ok := e.cloudGroup(g) // fails the test if the name appears twice
		if !ok {
			t.Fatalf("group %s was never created", g)
		}
		rules := e.cloudRules(*cg.GroupId)
		want := []string{"in tcp 22 10.1.0.0/16", "in tcp 443 10.1.0.0/16", "out -1 -1 0.0.0.0/0"}
		if !slices.Equal(rules, want) {
			t.Errorf("rules of %s: %v, want %v", g, rules, want)
		}
	}
	if n := e.Count(`SELECT count(*) FROM security_group WHERE group_name LIKE 'f_' AND group_id IS NOT NULL`); n != 3 {
		t.Errorf("%d of 3 group rows have their group_id", n)
	}
	if n := e.Count(`SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id WHERE g.group_name LIKE 'f_'`); n != 9 {
		t.Errorf("%d rule rows for the three groups, want 9 (2 each and AWS's default egress rule)", n)
	}
	if n := e.Count(`SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id WHERE g.group_name LIKE 'f_' AND r.rule_id IS NULL`); n != 0 {
		t.Errorf("%d rule rows without rule_id", n)
	}
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the cycle after convergence changes the cloud: %v", m)
	}

	// Throttling that outlasts every retry: the commit fails naming the
	// rule; the group it belongs to is created all the same.
	e.Emu.Inject(emulator.Fault{Op: "ec2:AuthorizeSecurityGroupIngress", Kind: emulator.Throttle})
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('f4', 'faulty')`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4)
		   SELECT id, 'udp', 53, 53, '10.2.0.0/16' FROM security_group WHERE group_name = 'f4'`)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
	if err == nil || !strings.Contains(err.Error(), "security_group_rule") || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Fatalf("commit under persistent throttling: %v", err)
	}
	cg, ok := e.cloudGroup("f4")
	if !ok {
		t.Fatal("the group whose rule was throttled was not created")
	}
	e.Emu.ClearFaults()
	e.Commit()
	if rules := e.cloudRules(*cg.GroupId); !slices.Equal(rules, []string{"in udp 53 10.2.0.0/16", "out -1 -1 0.0.0.0/0"}) {
		t.Errorf("rules of f4 once throttling stopped: %v", rules)
	}
}

// TestFailureHoldsUpOnlyDependents: when a group cannot be created, its
// rule is not even tried (it waits for the group), while a rule of another
// group goes ahead; once the fault stops, the next commit finishes.
func TestFailureHoldsUpOnlyDependents(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('ok', 'exists')`)
	e.Commit()
	e.Emu.Inject(emulator.Fault{Op: "ec2:CreateSecurityGroup", Kind: emulator.Throttle})
	e.Emu.Reset()
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('blocked', 'cannot be created yet')`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4)
		   SELECT id, 'tcp', 8080, 8080, '10.3.0.0/16' FROM security_group WHERE group_name IN ('ok', 'blocked')`)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
	blockedID := e.String(`SELECT id::text FROM security_group WHERE group_name = 'blocked'`)
	if err == nil || !strings.Contains(err.Error(), "waiting for security_group "+blockedID) {
		t.Fatalf("commit with a group that cannot be created: %v", err)
	}
	if n := e.Emu.Calls()["ec2:AuthorizeSecurityGroupIngress"]; n != 1 {
		t.Errorf("%d AuthorizeSecurityGroupIngress calls, want 1 (the rule of ok; the rule of blocked waits)", n)
	}
	ok, _ := e.cloudGroup("ok")
	if rules := e.cloudRules(*ok.GroupId); !slices.Contains(rules, "in tcp 8080 10.3.0.0/16") {
		t.Errorf("the rule of the group that exists was held up too: %v", rules)
	}
	e.Emu.ClearFaults()
	e.Commit()
	blocked, found := e.cloudGroup("blocked")
	if !found || !slices.Contains(e.cloudRules(*blocked.GroupId), "in tcp 8080 10.3.0.0/16") {
		t.Errorf("after the fault stopped: group %v, rules %v", found, e.cloudRules(aws.ToString(blocked.GroupId)))
	}
}
