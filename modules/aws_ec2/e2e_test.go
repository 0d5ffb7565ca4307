package aws_ec2_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

// pgtestConnect opens another user session (a commit that runs while the
// test goes on).
func pgtestConnect(dsn string) (*pgx.Conn, error) { return pgx.Connect(context.Background(), dsn) }

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// TestInstanceEndToEnd: an instance written in SQL with its subnet and
// two security groups (one created in the same commit) is launched once
// its groups exist; its groups change in place; a group it stops using is
// deleted after the instance is moved off it; deleting the row terminates
// it.
func TestInstanceEndToEnd(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install:  []string{"aws_ec2"},
		Emulator: emulator.Options{InstanceStartDelay: 300 * time.Millisecond, InstanceStopDelay: 300 * time.Millisecond},
	})
	ctx := context.Background()
	client := ec2.NewFromConfig(e.AWS)
	describe := func(id string) types.Instance {
		t.Helper()
		out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
			t.Fatalf("describe %s: %v", id, err)
		}
		return out.Reservations[0].Instances[0]
	}
	groupsOf := func(in types.Instance) []string {
		var out []string
		for _, g := range in.SecurityGroups {
			out = append(out, aws.ToString(g.GroupId))
		}
		slices.Sort(out)
		return out
	}
	groupID := func(name string) string {
		return e.String(`SELECT group_id FROM security_group WHERE group_name = $1 AND region = 'us-east-1'`, name)
	}

	// Two new groups and an instance using both, in one commit.
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('web', 'web servers'), ('admin', 'ssh')`,
		`INSERT INTO instance (ami, instance_type, subnet_id, security_group_ids, tags)
		 SELECT 'ami-0123456789abcdef0', 't3.micro', (SELECT id FROM subnet WHERE region = 'us-east-1' ORDER BY id LIMIT 1),
		        ARRAY(SELECT id FROM security_group WHERE group_name IN ('web', 'admin') ORDER BY id), '{"role": "web"}'`)
	e.Commit()
	id := e.String(`SELECT instance_id FROM instance`)
	if id == "" {
		t.Fatal("the instance's id did not come back")
	}
	in := describe(id)
	if want := []string{groupID("admin"), groupID("web")}; !slices.Equal(groupsOf(in), sortStrings(want)) || in.State.Name != types.InstanceStateNameRunning {
		t.Fatalf("instance %s: groups %v (want %v), state %s", id, groupsOf(in), want, in.State.Name)
	}
	if n := e.Count(`SELECT count(*) FROM instance WHERE observed_state = 'running' AND private_ip_address IS NOT NULL`); n != 1 {
		t.Error("the instance's feedback was not written back")
	}
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over a running instance in sync made %v", m)
	}

	// Drop 'admin' from the instance and delete the group, in one commit:
	// the group's delete waits for the instance to leave it.
	admin := groupID("admin")
	e.Exec(`UPDATE instance SET security_group_ids = ARRAY(SELECT id FROM security_group WHERE group_name = 'web')`,
		`DELETE FROM security_group WHERE group_name = 'admin'`)
	e.Emu.Reset()
	e.Commit()
	if got := groupsOf(describe(id)); !slices.Equal(got, []string{groupID("web")}) {
		t.Errorf("groups after the change %v, want only web", got)
	}
	if m := e.Mutations(); m["ec2:StopInstances"] != 0 {
		t.Errorf("a group change stopped the instance: %v", m)
	}
	if out, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{admin}}); err == nil && len(out.SecurityGroups) > 0 {
		t.Errorf("the group the instance left is still in the cloud")
	}

	// Deleting the row terminates the instance.
	e.Exec(`DELETE FROM instance`)
	e.Commit()
	if s := describe(id).State.Name; s != types.InstanceStateNameTerminated {
		t.Errorf("after the delete the instance is %s", s)
	}
}

// TestInstanceTypeChangeKeepsUserEdit: while an instance type change runs
// (stop, modify, start: a long operation), the user edits the same row's
// tags; the change completes and the user's edit is not lost: it is
// enacted by the cycle after.
func TestInstanceTypeChangeKeepsUserEdit(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install:  []string{"aws_ec2"},
		Emulator: emulator.Options{InstanceStartDelay: time.Second, InstanceStopDelay: time.Second},
	})
	ctx := context.Background()
	client := ec2.NewFromConfig(e.AWS)
	e.Exec(`INSERT INTO instance (ami, instance_type, subnet_id, tags)
		SELECT 'ami-0123456789abcdef0', 't3.micro', (SELECT id FROM subnet WHERE region = 'us-east-1' ORDER BY id LIMIT 1), '{"team": "a"}'`)
	e.Commit()
	id := e.String(`SELECT instance_id FROM instance`)

	e.Exec(`UPDATE instance SET instance_type = 't3.small'`)
	done := make(chan error, 1)
	go func() {
		conn, err := pgtestConnect(e.DSN)
		if err != nil {
			done <- err
			return
		}
		defer conn.Close(ctx)
		_, err = conn.Exec(ctx, `CALL iasql_commit()`)
		done <- err
	}()
	testkit.Until(t, 30*time.Second, "the instance to stop for the type change", func() bool {
		return e.Emu.Calls()["ec2:StopInstances"] > 0
	})
	e.Exec(`UPDATE instance SET tags = '{"team": "b"}'`)
	if err := <-done; err != nil {
		t.Fatalf("the commit of the type change: %v", err)
	}
	e.Commit() // the user's tag edit, made while the change ran
	out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	in := out.Reservations[0].Instances[0]
	tags := map[string]string{}
	for _, tg := range in.Tags {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	if in.InstanceType != types.InstanceTypeT3Small || in.State.Name != types.InstanceStateNameRunning || tags["team"] != "b" {
		t.Errorf("instance: type %s, state %s, tags %v; want t3.small, running, team b", in.InstanceType, in.State.Name, tags)
	}
	if got := e.String(`SELECT tags->>'team' FROM instance`); got != "b" {
		t.Errorf("the row's tags say team %q; the user's edit was lost", got)
	}
}

func sortStrings(s []string) []string {
	slices.Sort(s)
	return s
}

// TestDeleteInstanceWithItsGroupAndSubnet: one commit deletes an instance
// row together with the security group and the subnet it used. AWS refuses
// to delete a group or a subnet an instance still uses (DeleteSecurityGroup
// and DeleteSubnet answer DependencyViolation, also while the instance is
// shutting down), so the instance is terminated first and waited for (a
// long operation), and only then are the group and the subnet deleted: the
// commit succeeds, the cloud has none of the three, no delete was refused
// and nothing is left failed in iasql_status.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSecurityGroup.html
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DeleteSubnet.html
func TestDeleteInstanceWithItsGroupAndSubnet(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install: []string{"aws_ec2"},
		// Shutting down takes a while, and a terminated instance stays
		// listed, as on AWS.
		Emulator: emulator.Options{InstanceStartDelay: 200 * time.Millisecond, InstanceStopDelay: 700 * time.Millisecond,
			TerminatedVisibleFor: time.Hour},
	})
	ctx := context.Background()
	client := ec2.NewFromConfig(e.AWS)
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('web', 'web servers')`,
		`INSERT INTO subnet (vpc_id, region, cidr_block, availability_zone)
		 SELECT id, region, '172.31.200.0/24', 'us-east-1a' FROM vpc WHERE region = 'us-east-1' AND is_default`,
		`INSERT INTO instance (ami, instance_type, subnet_id, security_group_ids)
		 SELECT 'ami-0123456789abcdef0', 't3.micro', (SELECT id FROM subnet WHERE cidr_block = '172.31.200.0/24'),
		        ARRAY(SELECT id FROM security_group WHERE group_name = 'web' AND region = 'us-east-1')`)
	e.Commit()
	id := e.String(`SELECT instance_id FROM instance`)
	group := e.String(`SELECT group_id FROM security_group WHERE group_name = 'web'`)
	subnet := e.String(`SELECT subnet_id FROM subnet WHERE cidr_block = '172.31.200.0/24'`)
	if id == "" || group == "" || subnet == "" {
		t.Fatalf("instance %q, group %q, subnet %q: not all made", id, group, subnet)
	}

	// One commit deletes all three rows (the instance's first: the group
	// and subnet rows cannot go while an instance row uses them).
	e.Exec(`DELETE FROM instance`,
		`DELETE FROM security_group WHERE group_name = 'web'`,
		`DELETE FROM subnet WHERE cidr_block = '172.31.200.0/24'`)
	e.Emu.Reset()
	e.Commit()

	out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || out.Reservations[0].Instances[0].State.Name != types.InstanceStateNameTerminated {
		t.Errorf("the instance after the commit: %v, %v; want terminated", out, err)
	}
	if g, err := client.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: aws.String("group-id"), Values: []string{group}}}}); err != nil || len(g.SecurityGroups) != 0 {
		t.Errorf("the group is still in the cloud: %v, %v", g, err)
	}
	if s, err := client.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		{Name: aws.String("subnet-id"), Values: []string{subnet}}}}); err != nil || len(s.Subnets) != 0 {
		t.Errorf("the subnet is still in the cloud: %v, %v", s, err)
	}
	calls := e.Emu.Calls()
	if calls["ec2:DeleteSecurityGroup"] != 1 || calls["ec2:DeleteSubnet"] != 1 {
		t.Errorf("DeleteSecurityGroup called %d times, DeleteSubnet %d; want once each, after the instance is gone",
			calls["ec2:DeleteSecurityGroup"], calls["ec2:DeleteSubnet"])
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE last_error LIKE '%DependencyViolation%' OR state = 'failed'`); n != 0 {
		t.Errorf("%d failure(s) left in iasql_status", n)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name IN ('instance', 'security_group', 'subnet')`); n != 0 {
		t.Errorf("%d row(s) of the deleted records left in iasql_status: %s", n,
			e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, cloud_id, state, action, last_error), '; ') FROM iasql_status`))
	}
}

// TestInstanceOutOfBand: an instance launched elsewhere is imported with
// its subnet and groups as references to their rows; the user stops and
// starts it by its state column; an instance terminated elsewhere leaves
// the table.
func TestInstanceOutOfBand(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install:  []string{"aws_ec2"},
		Emulator: emulator.Options{InstanceStartDelay: 300 * time.Millisecond, InstanceStopDelay: 300 * time.Millisecond},
	})
	ctx := context.Background()
	client := ec2.NewFromConfig(e.AWS)
	subnet := e.String(`SELECT subnet_id FROM subnet WHERE region = 'us-east-1' ORDER BY availability_zone LIMIT 1`)
	out, err := client.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeT3Micro,
		SubnetId: aws.String(subnet), MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: []types.Tag{{Key: aws.String("made"), Value: aws.String("elsewhere")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	id := aws.ToString(out.Instances[0].InstanceId)
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM instance i JOIN subnet s ON s.id = i.subnet_id
		JOIN security_group g ON g.id = ANY (i.security_group_ids) AND g.group_name = 'default'
		WHERE i.instance_id = $1 AND s.subnet_id = $2 AND i.tags->>'made' = 'elsewhere' AND i.ami = 'ami-0123456789abcdef0'`, id, subnet); n != 1 {
		t.Fatalf("instance %s was not imported with its subnet and default group as row references", id)
	}
	state := func() types.InstanceStateName {
		d, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil {
			t.Fatal(err)
		}
		return d.Reservations[0].Instances[0].State.Name
	}
	e.Exec(`UPDATE instance SET state = 'stopped' WHERE instance_id = '` + id + `'`)
	e.Commit()
	if s := state(); s != types.InstanceStateNameStopped {
		t.Errorf("after state = 'stopped' the instance is %s", s)
	}
	e.Exec(`UPDATE instance SET state = 'running' WHERE instance_id = '` + id + `'`)
	e.Commit()
	if s := state(); s != types.InstanceStateNameRunning {
		t.Errorf("after state = 'running' the instance is %s", s)
	}
	if _, err := client.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the instance terminated elsewhere", func() bool { return state() == types.InstanceStateNameTerminated })
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM instance WHERE instance_id = $1`, id); n != 0 {
		t.Errorf("the row of an instance terminated elsewhere is still there")
	}
}

// TestInstanceDefaultsFilledIn: an instance inserted without a subnet or
// groups launches where AWS puts it: a default subnet of the default VPC
// (https://docs.aws.amazon.com/vpc/latest/userguide/default-vpc.html) and,
// RunInstances' SecurityGroups says, "Default: Amazon EC2 uses the default
// security group" (CreateSecurityGroup: "If you don't specify a security
// group when you launch an instance, the instance is launched into the
// appropriate default security group";
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html,
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html).
// The row then names those resources' rows, and stays in sync.
func TestInstanceDefaultsFilledIn(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install:  []string{"aws_ec2"},
		Emulator: emulator.Options{InstanceStartDelay: 300 * time.Millisecond},
	})
	e.Exec(`INSERT INTO instance (ami, instance_type) VALUES ('ami-0123456789abcdef0', 't3.micro')`)
	e.Commit()
	id := e.String(`SELECT instance_id FROM instance`)
	out, err := ec2.NewFromConfig(e.AWS).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("describe %q: %v", id, err)
	}
	in := out.Reservations[0].Instances[0]
	if len(in.SecurityGroups) != 1 {
		t.Fatalf("instance %s launched with groups %v; want the default group", id, in.SecurityGroups)
	}
	if n := e.Count(`SELECT count(*) FROM instance i JOIN subnet s ON s.id = i.subnet_id JOIN vpc v ON v.id = s.vpc_id
		JOIN security_group g ON i.security_group_ids = ARRAY[g.id::bigint]
		WHERE s.subnet_id = $1 AND g.group_id = $2 AND g.group_name = 'default' AND g.vpc_id = v.id AND v.is_default`,
		aws.ToString(in.SubnetId), aws.ToString(in.SecurityGroups[0].GroupId)); n != 1 {
		t.Fatalf("the row names subnet %s and groups %s; want the rows of the default subnet %s and the default group %s",
			e.String(`SELECT subnet_id::text FROM instance`), e.String(`SELECT security_group_ids::text FROM instance`),
			aws.ToString(in.SubnetId), aws.ToString(in.SecurityGroups[0].GroupId))
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d record(s) not in sync: %s", n, e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, state, action, last_error), '; ') FROM iasql_status`))
	}
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over the instance in sync made %v", m)
	}
	if calls := e.Emu.Calls(); calls["ec2:RunInstances"] != 0 {
		t.Errorf("RunInstances called again: %v", calls)
	}
}
