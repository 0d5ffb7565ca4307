package emulator_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

const testAMI = "ami-0123456789abcdef0"

var ec2InstanceIDRe = regexp.MustCompile(`^i-[0-9a-f]{17}$`)

// sdkEnvWith is sdkEnv with options.
func sdkEnvWith[C, O any](t testing.TB, opts emulator.Options, newClient func(aws.Config, ...func(*O)) C) (*emulator.Emulator, func(region string) C) {
	t.Helper()
	cl := testkit.StartCloud(t, opts)
	return cl.Emu, testkit.Clients(cl.AWS, newClient)
}

func mkSubnet(t testing.TB, c *ec2.Client, vpcID, cidr, zone string) string {
	t.Helper()
	out, err := c.CreateSubnet(context.Background(), &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String(cidr),
		AvailabilityZone: aws.String(zone)})
	if err != nil {
		t.Fatalf("create subnet %s: %v", cidr, err)
	}
	return aws.ToString(out.Subnet.SubnetId)
}

// run launches n instances and returns their ids.
func run(t testing.TB, c *ec2.Client, in *ec2.RunInstancesInput) []string {
	t.Helper()
	out, err := c.RunInstances(context.Background(), in)
	if err != nil {
		t.Fatalf("run instances: %v", err)
	}
	var ids []string
	for _, i := range out.Instances {
		ids = append(ids, aws.ToString(i.InstanceId))
	}
	return ids
}

func runIn(subnet string, n int32) *ec2.RunInstancesInput {
	return &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT3Micro,
		MinCount: aws.Int32(1), MaxCount: aws.Int32(n), SubnetId: aws.String(subnet)}
}

// instance describes one instance.
func instance(t testing.TB, c *ec2.Client, id string) types.Instance {
	t.Helper()
	out, err := c.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatalf("describe %s: %v", id, err)
	}
	if len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
		t.Fatalf("describe %s: %+v", id, out.Reservations)
	}
	return out.Reservations[0].Instances[0]
}

// waitState polls an instance until it is in state, failing the test
// after a deadline.
func waitState(t testing.TB, c *ec2.Client, id string, state types.InstanceStateName) {
	t.Helper()
	testkit.Wait(t, 5*time.Second, id+" to be "+string(state), func() error {
		if got := instance(t, c, id).State.Name; got != state {
			return fmt.Errorf("%s is %s", id, got)
		}
		return nil
	})
}

func TestEC2RunInstances(t *testing.T) {
	_, client := sdkEnvWith(t, emulator.Options{}, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.1.0.0/16")
	subnet := mkSubnet(t, c, vpc, "10.1.1.0/24", "us-east-1a")
	group := mkGroup(t, c, "web", vpc)
	otherGroup := mkGroup(t, c, "elsewhere", "")

	userData := base64.StdEncoding.EncodeToString([]byte("#!/bin/sh\necho hi\n"))
	out, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT3Micro,
		MinCount: aws.Int32(2), MaxCount: aws.Int32(3), SubnetId: aws.String(subnet), SecurityGroupIds: []string{group},
		KeyName: aws.String("mine"), UserData: aws.String(userData), ClientToken: aws.String("tok-1"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: ec2Tags("Name", "web")}}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if len(out.Instances) != 3 || !regexp.MustCompile(`^r-[0-9a-f]{17}$`).MatchString(aws.ToString(out.ReservationId)) {
		t.Fatalf("run answered %+v", out)
	}
	ips := map[string]bool{}
	for i, in := range out.Instances {
		ip := aws.ToString(in.PrivateIpAddress)
		if !ec2InstanceIDRe.MatchString(aws.ToString(in.InstanceId)) || in.State.Name != types.InstanceStateNamePending ||
			aws.ToInt32(in.State.Code) != 0 || aws.ToString(in.VpcId) != vpc || aws.ToString(in.SubnetId) != subnet ||
			!netip.MustParsePrefix("10.1.1.0/24").Contains(netip.MustParseAddr(ip)) || ips[ip] ||
			aws.ToString(in.KeyName) != "mine" || aws.ToString(in.ClientToken) != "tok-1" || aws.ToInt32(in.AmiLaunchIndex) != int32(i) ||
			len(in.SecurityGroups) != 1 || aws.ToString(in.SecurityGroups[0].GroupId) != group || aws.ToString(in.SecurityGroups[0].GroupName) != "web" ||
			ec2TagMap(in.Tags)["Name"] != "web" || in.InstanceType != types.InstanceTypeT3Micro || aws.ToString(in.PublicIpAddress) != "" ||
			in.LaunchTime == nil {
			t.Errorf("instance %d: %+v", i, in)
		}
		ips[aws.ToString(in.PrivateIpAddress)] = true
	}
	first := aws.ToString(out.Instances[0].InstanceId)

	// The same token and parameters: the same reservation, no new instance.
	again, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT3Micro,
		MinCount: aws.Int32(2), MaxCount: aws.Int32(3), SubnetId: aws.String(subnet), SecurityGroupIds: []string{group},
		KeyName: aws.String("mine"), UserData: aws.String(userData), ClientToken: aws.String("tok-1"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: ec2Tags("Name", "web")}}})
	if err != nil || aws.ToString(again.ReservationId) != aws.ToString(out.ReservationId) || len(again.Instances) != 3 ||
		aws.ToString(again.Instances[0].InstanceId) != first {
		t.Errorf("retried run: %v, %+v", err, again)
	}
	all, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{})
	if err != nil || len(all.Reservations) != 1 || len(all.Reservations[0].Instances) != 3 {
		t.Errorf("after a retried run: %v, %+v", err, all)
	}
	// By client-token.
	byToken, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("client-token", "tok-1")}})
	if err != nil || len(byToken.Reservations) != 1 || len(byToken.Reservations[0].Instances) != 3 {
		t.Errorf("by client-token: %v, %+v", err, byToken)
	}

	attr, err := c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(first), Attribute: types.InstanceAttributeNameUserData})
	if err != nil || aws.ToString(attr.UserData.Value) != userData {
		t.Errorf("user data: %v, %+v", err, attr)
	}

	// Without a subnet: the default VPC's default subnet, its default group
	// and a public address.
	def := run(t, c, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT2Micro, MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	d := instance(t, c, def[0])
	if aws.ToString(d.PublicIpAddress) == "" || len(d.SecurityGroups) != 1 || aws.ToString(d.SecurityGroups[0].GroupName) != "default" ||
		aws.ToString(d.Placement.AvailabilityZone) != "us-east-1a" {
		t.Errorf("instance in the default VPC: %+v", d)
	}

	wantCodes(t, []errCase{
		{"same token, other parameters", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT3Small,
				MinCount: aws.Int32(1), MaxCount: aws.Int32(1), SubnetId: aws.String(subnet), ClientToken: aws.String("tok-1")})
			return err
		}, "IdempotentParameterMismatch"},
		{"malformed AMI", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String("image-1"), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
			return err
		}, "InvalidAMIID.Malformed"},
		{"unknown instance type", func() error {
			_, err := c.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: "t3.gigantic",
				MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
			return err
		}, "InvalidParameterValue"},
		{"unknown subnet", func() error {
			_, err := c.RunInstances(ctx, runIn("subnet-0123456789abcdef0", 1))
			return err
		}, "InvalidSubnetID.NotFound"},
		{"unknown group", func() error {
			in := runIn(subnet, 1)
			in.SecurityGroupIds = []string{"sg-0123456789abcdef0"}
			_, err := c.RunInstances(ctx, in)
			return err
		}, "InvalidGroup.NotFound"},
		{"group of another VPC", func() error {
			in := runIn(subnet, 1)
			in.SecurityGroupIds = []string{otherGroup}
			_, err := c.RunInstances(ctx, in)
			return err
		}, "InvalidParameter"},
		{"group names with a subnet", func() error {
			in := runIn(subnet, 1)
			in.SecurityGroups = []string{"web"}
			_, err := c.RunInstances(ctx, in)
			return err
		}, "InvalidParameterCombination"},
		{"MinCount above MaxCount", func() error {
			in := runIn(subnet, 1)
			in.MinCount = aws.Int32(2)
			_, err := c.RunInstances(ctx, in)
			return err
		}, "InvalidParameterValue"},
		{"malformed instance id", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"instance-1"}})
			return err
		}, "InvalidInstanceID.Malformed"},
		{"unknown instance id", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{"i-0123456789abcdef0"}})
			return err
		}, "InvalidInstanceID.NotFound"},
		{"ids with MaxResults", func() error {
			_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{first}, MaxResults: aws.Int32(5)})
			return err
		}, "InvalidParameterCombination"},
	})
}

func TestEC2InstanceLifecycle(t *testing.T) {
	// The stop delay and the visibility are long enough for the calls made
	// while an instance is stopping, or terminated, even on a slow machine.
	const delay = 40 * time.Millisecond
	_, client := sdkEnvWith(t, emulator.Options{InstanceStartDelay: delay, InstanceStopDelay: 300 * time.Millisecond,
		TerminatedVisibleFor: time.Second}, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.2.0.0/16")
	subnet := mkSubnet(t, c, vpc, "10.2.1.0/24", "us-east-1b")
	group := mkGroup(t, c, "app", vpc)
	group2 := mkGroup(t, c, "app2", vpc)

	start := time.Now()
	id := run(t, c, runIn(subnet, 1))[0]
	if got := instance(t, c, id).State.Name; got != types.InstanceStateNamePending && time.Since(start) < delay {
		t.Errorf("%s right after launch, want pending", got)
	}
	waitState(t, c, id, types.InstanceStateNameRunning)
	if time.Since(start) < delay {
		t.Errorf("running after %v, before the start delay %v", time.Since(start), delay)
	}

	wantCodes(t, []errCase{
		{"type while running", func() error {
			_, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
				InstanceType: &types.AttributeValue{Value: aws.String("t3.large")}})
			return err
		}, "IncorrectInstanceState"},
		{"user data while running", func() error {
			_, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
				UserData: &types.SecureBlobAttributeValue{Value: []byte("x")}})
			return err
		}, "IncorrectInstanceState"},
		{"groups while running", func() error {
			_, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id), Groups: []string{group, group2}})
			return err
		}, ""},
		{"start a running instance", func() error {
			out, err := c.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id}})
			if err == nil && out.StartingInstances[0].CurrentState.Name != types.InstanceStateNameRunning {
				t.Errorf("start of a running instance answered %+v", out.StartingInstances[0])
			}
			return err
		}, ""},
	})
	groups, err := c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: types.InstanceAttributeNameGroupSet})
	if err != nil || len(groups.Groups) != 2 {
		t.Errorf("groups after modify: %v, %+v", err, groups)
	}

	stop, err := c.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{id}})
	if err != nil || len(stop.StoppingInstances) != 1 || stop.StoppingInstances[0].CurrentState.Name != types.InstanceStateNameStopping ||
		stop.StoppingInstances[0].PreviousState.Name != types.InstanceStateNameRunning {
		t.Fatalf("stop: %v, %+v", err, stop)
	}
	if _, err := c.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id}}); errCode(err) != "IncorrectInstanceState" {
		t.Errorf("start while stopping: %v, want IncorrectInstanceState", err)
	}
	waitState(t, c, id, types.InstanceStateNameStopped)
	if _, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
		InstanceType: &types.AttributeValue{Value: aws.String("t3.large")}}); err != nil {
		t.Fatalf("modify type while stopped: %v", err)
	}
	if _, err := c.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id),
		UserData: &types.SecureBlobAttributeValue{Value: []byte("echo new")}}); err != nil {
		t.Fatalf("modify user data while stopped: %v", err)
	}
	ud, err := c.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{InstanceId: aws.String(id), Attribute: types.InstanceAttributeNameUserData})
	if err != nil || aws.ToString(ud.UserData.Value) != base64.StdEncoding.EncodeToString([]byte("echo new")) {
		t.Errorf("user data after modify: %v, %+v", err, ud)
	}
	startOut, err := c.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id}})
	if err != nil || startOut.StartingInstances[0].CurrentState.Name != types.InstanceStateNamePending ||
		startOut.StartingInstances[0].PreviousState.Name != types.InstanceStateNameStopped {
		t.Fatalf("start: %v, %+v", err, startOut)
	}
	waitState(t, c, id, types.InstanceStateNameRunning)
	if got := instance(t, c, id).InstanceType; got != types.InstanceTypeT3Large {
		t.Errorf("type after restart %s, want t3.large", got)
	}

	// In use: the subnet and the groups cannot be deleted.
	if _, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(subnet)}); errCode(err) != "DependencyViolation" {
		t.Errorf("delete subnet in use: %v, want DependencyViolation", err)
	}
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(group2)}); errCode(err) != "DependencyViolation" {
		t.Errorf("delete group in use: %v, want DependencyViolation", err)
	}

	term, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil || term.TerminatingInstances[0].CurrentState.Name != types.InstanceStateNameShuttingDown ||
		term.TerminatingInstances[0].PreviousState.Name != types.InstanceStateNameRunning {
		t.Fatalf("terminate: %v, %+v", err, term)
	}
	waitState(t, c, id, types.InstanceStateNameTerminated)
	again, err := c.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
	if err != nil || again.TerminatingInstances[0].CurrentState.Name != types.InstanceStateNameTerminated {
		t.Errorf("terminate again: %v, %+v", err, again)
	}
	if _, err := c.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id}}); errCode(err) != "IncorrectInstanceState" {
		t.Errorf("start a terminated instance: %v, want IncorrectInstanceState", err)
	}
	// Terminated, the instance no longer holds its subnet and groups.
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(group2)}); err != nil {
		t.Errorf("delete group of a terminated instance: %v", err)
	}
	// Then it disappears.
	testkit.Wait(t, 10*time.Second, "the terminated instance to be no longer listed", func() error {
		_, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		switch {
		case errCode(err) == "InvalidInstanceID.NotFound":
			return nil
		case err != nil:
			t.Fatalf("terminated instance still listed: %v", err)
		}
		return errors.New("still listed")
	})
	if _, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(subnet)}); err != nil {
		t.Errorf("delete subnet after its instance is gone: %v", err)
	}
}

func TestEC2DescribeInstancesPagesAndFilters(t *testing.T) {
	_, client := sdkEnvWith(t, emulator.Options{}, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.3.0.0/16")
	a := mkSubnet(t, c, vpc, "10.3.1.0/24", "us-east-1a")
	b := mkSubnet(t, c, vpc, "10.3.2.0/24", "us-east-1b")
	g := mkGroup(t, c, "tagged", vpc)
	inA := run(t, c, runIn(a, 7))
	inB := run(t, c, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), InstanceType: types.InstanceTypeT3Small,
		MinCount: aws.Int32(5), MaxCount: aws.Int32(5), SubnetId: aws.String(b), SecurityGroupIds: []string{g},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeInstance, Tags: ec2Tags("team", "blue")}}})
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: inA[:2], Tags: ec2Tags("team", "red")}); err != nil {
		t.Fatalf("tag instances: %v", err)
	}
	// Pending when launched, running at the next call (no start delay).
	if _, err := c.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: inA[2:3]}); err != nil {
		t.Fatalf("stop: %v", err)
	}

	p := ec2.NewDescribeInstancesPaginator(c, &ec2.DescribeInstancesInput{MaxResults: aws.Int32(5)})
	var ids []string
	pageCount := 0
	for _, out := range pages(t, p.HasMorePages, p.NextPage) {
		pageCount++
		n := 0
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				ids = append(ids, aws.ToString(in.InstanceId))
				n++
			}
		}
		if n > 5 {
			t.Errorf("page of %d instances, MaxResults 5", n)
		}
	}
	want := append(slices.Clone(inA), inB...)
	slices.Sort(want)
	slices.Sort(ids) // a page lists its instances by reservation
	if !slices.Equal(ids, want) || pageCount != 3 {
		t.Errorf("paged %d pages of %v, want 3 of %v", pageCount, ids, want)
	}

	count := func(fs ...types.Filter) int {
		out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: fs})
		if err != nil {
			t.Fatalf("describe by %+v: %v", fs, err)
		}
		n := 0
		for _, r := range out.Reservations {
			n += len(r.Instances)
		}
		return n
	}
	for _, tc := range []struct {
		name    string
		filters []types.Filter
		want    int
	}{
		{"subnet-id", []types.Filter{ec2Filter("subnet-id", b)}, 5},
		{"vpc-id", []types.Filter{ec2Filter("vpc-id", vpc)}, 12},
		{"tag", []types.Filter{ec2Filter("tag:team", "red", "blue")}, 7},
		{"tag-key", []types.Filter{ec2Filter("tag-key", "team")}, 7},
		{"state stopping or stopped", []types.Filter{ec2Filter("instance-state-name", "stopping", "stopped")}, 1},
		{"instance-id", []types.Filter{ec2Filter("instance-id", inA[0], inB[0])}, 2},
		{"group-id", []types.Filter{ec2Filter("instance.group-id", g)}, 5},
		{"instance-type", []types.Filter{ec2Filter("instance-type", "t3.small"), ec2Filter("subnet-id", a)}, 0},
	} {
		if got := count(tc.filters...); got != tc.want {
			t.Errorf("%s: %d instances, want %d", tc.name, got, tc.want)
		}
	}
	if _, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("no-such-filter", "x")}}); errCode(err) != "InvalidParameterValue" {
		t.Errorf("unknown filter: %v", err)
	}
	sn, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{a}})
	if err != nil || aws.ToInt32(sn.Subnets[0].AvailableIpAddressCount) != 251-7 {
		t.Errorf("free addresses of a subnet with 7 instances: %v, %+v", err, sn)
	}
}

func TestEC2StopPending(t *testing.T) {
	_, client := sdkEnvWith(t, emulator.Options{InstanceStartDelay: time.Hour}, ec2.NewFromConfig)
	c := client("us-east-1")
	ids := run(t, c, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if got := instance(t, c, ids[0]).State.Name; got != types.InstanceStateNamePending {
		t.Errorf("%s during the start delay, want pending", got)
	}
	if _, err := c.StopInstances(t.Context(), &ec2.StopInstancesInput{InstanceIds: ids}); errCode(err) != "IncorrectInstanceState" {
		t.Errorf("stop a pending instance: %v, want IncorrectInstanceState", err)
	}
	term, err := c.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: ids})
	if err != nil || term.TerminatingInstances[0].PreviousState.Name != types.InstanceStateNamePending {
		t.Errorf("terminate a pending instance: %v, %+v", err, term)
	}
}

func TestEC2InstanceFaults(t *testing.T) {
	em, client := sdkEnvWith(t, emulator.Options{}, ec2.NewFromConfig)
	c := client("us-east-1")
	em.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.Throttle, Times: 1})
	_, err := c.RunInstances(t.Context(), &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1)})
	if errCode(err) != "RequestLimitExceeded" {
		t.Fatalf("throttled run: %v, want RequestLimitExceeded", err)
	}
	out, err := c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{})
	if err != nil || len(out.Reservations) != 0 {
		t.Errorf("a throttled run launched something: %v, %+v", err, out)
	}
	// A run that happened though its answer was lost: the retry with its
	// token adopts what it made.
	em.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.ServerErrorAfter, Times: 1})
	in := &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String("lost")}
	if _, err := c.RunInstances(t.Context(), in); errCode(err) != "InternalError" {
		t.Fatalf("run failing after acting: %v", err)
	}
	retried, err := c.RunInstances(t.Context(), in)
	if err != nil {
		t.Fatalf("retried run: %v", err)
	}
	out, err = c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{})
	if err != nil || len(out.Reservations) != 1 || aws.ToString(out.Reservations[0].ReservationId) != aws.ToString(retried.ReservationId) {
		t.Errorf("after a lost answer and a retry: %v, %+v", err, out)
	}
}

// TestEC2IgnoreClientToken: under the IgnoreClientToken fault, a repeated
// RunInstances with one token launches again (an endpoint that does not
// honour ClientToken), and both instances carry the token; the fault
// applies together with a Latency fault on the same operation; once it is
// cleared, the token answers the last launch again, as AWS does.
func TestEC2IgnoreClientToken(t *testing.T) {
	em, client := sdkEnvWith(t, emulator.Options{}, ec2.NewFromConfig)
	c := client("us-east-1")
	em.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.Latency, Delay: time.Millisecond, Times: 1})
	em.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.IgnoreClientToken, Times: 2})
	in := &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), ClientToken: aws.String("twice")}
	var ids []string
	for range 3 {
		out, err := c.RunInstances(t.Context(), in)
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		ids = append(ids, aws.ToString(out.Instances[0].InstanceId))
	}
	if ids[0] == ids[1] || ids[2] != ids[1] {
		t.Errorf("instances answered %v: want two launches, then the second answered again", ids)
	}
	out, err := c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{Filters: []types.Filter{ec2Filter("client-token", "twice")}})
	if err != nil || len(out.Reservations) != 2 {
		t.Errorf("reservations with the token: %v, %+v; want 2", err, out)
	}
}
