package aws_elb_test

import (
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
)

// groupsOf are a load balancer's security group ids (sg-...), sorted.
func groupsOf(lb types.LoadBalancer) []string {
	out := slices.Clone(lb.SecurityGroups)
	slices.Sort(out)
	return out
}

// TestLoadBalancerDefaultGroups: a load balancer row naming no security
// groups leaves them to AWS. CreateLoadBalancer's SecurityGroups is
// optional for an application load balancer
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html);
// created by the API without one, a load balancer in a VPC "is
// automatically associated with the default security group for the VPC"
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/classic/elb-vpc-security-groups.html;
// that page's default_elb_ group of a default VPC is the Classic Load
// Balancer's alone). The user checks: the cloud gives it the VPC's default
// group and the row then lists that group's row; a commit with nothing to
// do and a refresh call nothing that mutates and leave the row alone; a
// group the user then names is set in place (SetSecurityGroups, "override
// the previously associated security groups":
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_SetSecurityGroups.html)
// and stays, in the cloud and in the row.
func TestLoadBalancerDefaultGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const row = `SELECT security_groups::text FROM load_balancer WHERE name = 'web'`
	const version = `SELECT xmin::text FROM load_balancer WHERE name = 'web'`
	defaultRow := e.String(`SELECT (` + defaultGroup + `)::text`)
	defaultID := e.String(`SELECT group_id FROM security_group WHERE id = (` + defaultGroup + `)[1]`)

	e.Exec(`INSERT INTO load_balancer (name, subnets) VALUES ('web', ` + twoSubnets + `)`)
	e.Emu.Reset()
	e.Commit()
	if m := e.Mutations(); m["elasticloadbalancing:CreateLoadBalancer"] != 1 || len(m) != 1 {
		t.Errorf("the create made %v, want one CreateLoadBalancer", m)
	}
	lb, ok := e.lb("web")
	if !ok || !slices.Equal(groupsOf(lb), []string{defaultID}) {
		t.Fatalf("in the cloud: %v, groups %v, want the VPC's default group %s", ok, lb.SecurityGroups, defaultID)
	}
	if got := e.String(row); got != defaultRow {
		t.Fatalf("the row's security_groups after the create: %s, want the default group's row %s", got, defaultRow)
	}

	// Cycles after it: a commit with nothing to do and a fresh read of
	// everything make no mutating call and leave the row as it is.
	e.quietCycles("after the create", version)

	// The user names a group of their own: set in place, and it stays.
	e.Exec(`INSERT INTO security_group (group_name, description, vpc_id) VALUES ('lb', 'load balancer', ` + defaultVpc + `)`)
	e.Commit()
	groupID := e.String(`SELECT group_id FROM security_group WHERE group_name = 'lb'`)
	if groupID == "" {
		t.Fatal("the new group has no group_id after its commit")
	}
	arn := aws.ToString(lb.LoadBalancerArn)
	e.Exec(`UPDATE load_balancer SET security_groups = ARRAY(SELECT id FROM security_group WHERE group_name = 'lb') WHERE name = 'web'`)
	want := e.String(row)
	e.Emu.Reset()
	e.Commit()
	lb, _ = e.lb("web")
	if !slices.Equal(groupsOf(lb), []string{groupID}) || aws.ToString(lb.LoadBalancerArn) != arn {
		t.Errorf("in the cloud after the update: groups %v (want %s), ARN %s (was %s)", lb.SecurityGroups, groupID, aws.ToString(lb.LoadBalancerArn), arn)
	}
	if m := e.Mutations(); m["elasticloadbalancing:SetSecurityGroups"] != 1 || len(m) != 1 {
		t.Errorf("the update made %v, want one SetSecurityGroups", m)
	}
	e.quietCycles("after the update", version)
	if got := e.String(row); got != want {
		t.Errorf("the row's security_groups after the cycles: %s, want %s", got, want)
	}
	if lb, _ = e.lb("web"); !slices.Equal(groupsOf(lb), []string{groupID}) {
		t.Errorf("in the cloud at the end: groups %v, want %s", lb.SecurityGroups, groupID)
	}
}

// quietCycles runs a commit with nothing to do, then a refresh (a fresh
// read of everything), and fails when either makes a mutating call or
// rewrites a row (version: a query of the rows' xmin).
func (e *env) quietCycles(when, version string) {
	e.T.Helper()
	for _, c := range []struct {
		name  string
		cycle func()
	}{
		{"a commit", e.Commit},
		{"a refresh", e.Refresh},
	} {
		before := e.String(version)
		e.Emu.Reset()
		c.cycle()
		if m := e.Mutations(); len(m) != 0 {
			e.T.Errorf("%s %s made %v", c.name, when, m)
		}
		if got := e.String(version); got != before {
			e.T.Errorf("%s %s rewrote the row (xmin %s, was %s)", c.name, when, got, before)
		}
	}
}
