package aws_ec2_test

import (
	"context"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/module"
)

const ami = "ami-0123456789abcdef0"

// env is an emulator with a VPC, a subnet and three security groups, and an
// instance mapper for it (through the real SDK client).
type env struct {
	t      *testing.T
	em     *emulator.Emulator
	ec2    *ec2.Client
	m      module.Parts // the mapper, as the engine asks it
	subnet string
	groups []string // sorted
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{InstanceStartDelay: 30 * time.Millisecond, InstanceStopDelay: 30 * time.Millisecond})
	cfg := cl.AWS
	e := &env{t: t, em: cl.Emu, ec2: ec2.NewFromConfig(cfg),
		m: module.PartsOf(aws_ec2.NewMapper(cfg, aws_ec2.Options{PollAfter: time.Millisecond, UserDataTTL: time.Hour}))}
	ctx := t.Context()
	vpc, err := e.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.1.0.0/16")})
	if err != nil {
		t.Fatal(err)
	}
	sn, err := e.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: vpc.Vpc.VpcId, CidrBlock: aws.String("10.1.1.0/24"),
		AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	e.subnet = aws.ToString(sn.Subnet.SubnetId)
	for _, name := range []string{"web", "ssh", "db"} {
		g, err := e.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(name),
			Description: aws.String(name), VpcId: vpc.Vpc.VpcId})
		if err != nil {
			t.Fatal(err)
		}
		_ = g
		e.groups = append(e.groups, module.CloudIDOf(aws_security_group.GroupTable(),
			module.Record{"vpc_id": aws.ToString(vpc.Vpc.VpcId), "group_name": name})) // how the engine names groups
	}
	slices.Sort(e.groups)
	return e
}

func anys(ss ...string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// want is a row in cloud form.
func (e *env) want(mod func(module.Record)) module.Record {
	r := module.Record{
		"ami": ami, "instance_type": "t3.micro", "subnet_id": e.subnet, "security_group_ids": anys(e.groups[0]),
		"key_name": nil, "user_data": "#!/bin/sh\necho hello\n", "tags": map[string]any{"Name": "web-1"},
		"state": "running", "region": "us-east-1",
	}
	if mod != nil {
		mod(r)
	}
	return r
}

// settle polls the operation p names until it ends, failing the test past
// a deadline; it returns the record and error it ended with.
func (e *env) settle(p *module.Pending) (module.Record, error) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(p.RetryAfter)
		rec, err := e.m.Poller.Poll(e.t.Context(), module.Call{}, p.Handle)
		var again *module.Pending
		if !errors.As(err, &again) {
			return rec, err
		}
		p = again
	}
	e.t.Fatalf("operation %s did not end within 10 s", p.Handle)
	return nil, nil
}

// done runs a mapper call's answer to its end: a *module.Pending is
// polled until the operation ends.
func (e *env) done(rec module.Record, err error) module.Record {
	e.t.Helper()
	var p *module.Pending
	if errors.As(err, &p) {
		rec, err = e.settle(p)
	}
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// create launches want with token and waits until it is as wanted.
func (e *env) create(want module.Record, token string) module.Record {
	e.t.Helper()
	rec, err := e.m.Mapper.Create(e.t.Context(), module.Call{Token: token}, want)
	var p *module.Pending
	if !errors.As(err, &p) {
		// Only an instance already as wanted (a repeated create) is done at once.
		if err != nil || rec.String("observed_state") != rec.String("state") {
			e.t.Fatalf("create: got %v, %v; want a *module.Pending", rec, err)
		}
		return rec
	}
	if !strings.HasPrefix(p.Record.String("instance_id"), "i-") {
		e.t.Fatalf("create: the pending record has no instance id: %v", p.Record)
	}
	got := e.done(nil, err)
	if got.String("instance_id") != p.Record.String("instance_id") {
		e.t.Fatalf("create: pending for %s, ended with %s", p.Record.String("instance_id"), got.String("instance_id"))
	}
	return got
}

func (e *env) read() []module.Record {
	e.t.Helper()
	recs, err := e.m.Read(e.t.Context(), module.Call{Fresh: module.Fresh{All: true}})
	if err != nil {
		e.t.Fatal(err)
	}
	return recs
}

func (e *env) readOne(id string) module.Record {
	e.t.Helper()
	for _, r := range e.read() {
		if r.String("instance_id") == id {
			return r
		}
	}
	e.t.Fatalf("Read does not list %s", id)
	return nil
}

// mutating are the calls of c that change something (not Describe*).
func mutating(c map[string]int) map[string]int {
	out := map[string]int{}
	for op, n := range c {
		if !emulator.IsRead(op) {
			out[op] = n
		}
	}
	return out
}

func TestCreateThenPollUntilRunning(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.want(func(r module.Record) { r["security_group_ids"] = anys(e.groups[2], e.groups[0]) })
	got := e.create(want, "token-1")
	if !module.Equal(aws_ec2.InstanceTable(), e.m, want, got) {
		t.Errorf("created %v, want %v", got, want)
	}
	for col, v := range map[string]string{"observed_state": "running", "state": "running", "subnet_id": e.subnet, "region": "us-east-1"} {
		if got.String(col) != v {
			t.Errorf("%s = %q, want %q", col, got.String(col), v)
		}
	}
	if got.String("private_ip_address") == "" || got.String("launch_time") == "" {
		t.Errorf("feedback missing: %v", got)
	}
	if !slices.Equal(got["security_group_ids"].([]any), anys(e.groups[0], e.groups[2])) {
		t.Errorf("security_group_ids = %v, want sorted %v", got["security_group_ids"], anys(e.groups[0], e.groups[2]))
	}
	read := e.readOne(got.String("instance_id"))
	if read.String(module.TokenTag) != "token-1" {
		t.Errorf("Read's token = %q, want token-1", read.String(module.TokenTag))
	}
	if _, ok := read["tags"].(map[string]any)[module.TokenTag]; ok {
		t.Errorf("the token tag is among the tags: %v", read["tags"])
	}
	if !module.Equal(aws_ec2.InstanceTable(), e.m, want, read) {
		t.Errorf("read %v, want %v", read, want)
	}
	found, err := e.m.Finder.Find(t.Context(), module.Call{Token: "token-1"}, want)
	if err != nil || found.String("instance_id") != got.String("instance_id") {
		t.Errorf("Find(token-1) = %v, %v; want %s", found, err, got.String("instance_id"))
	}
	if none, err := e.m.Finder.Find(t.Context(), module.Call{Token: "token-2"}, want); err != nil || none != nil {
		t.Errorf("Find(token-2) = %v, %v; want nothing", none, err)
	}
	gets, err := e.m.Getter.Get(t.Context(), module.Call{}, []string{got.String("instance_id"), "i-0000000000000dead"})
	if err != nil || len(gets) != 1 || !maps.EqualFunc(gets[0], read, module.Same) {
		t.Errorf("Get = %v, %v; want [%v]", gets, err, read)
	}
}

func TestSameClientTokenMakesOneInstance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.want(nil)
	a := e.create(want, "same-token")
	b := e.create(want, "same-token")
	if a.String("instance_id") != b.String("instance_id") {
		t.Errorf("two creates with one token made %s and %s", a.String("instance_id"), b.String("instance_id"))
	}
	if n := len(e.read()); n != 1 {
		t.Errorf("Read lists %d instances, want 1", n)
	}
	if n := e.em.Calls()["ec2:RunInstances"]; n != 2 {
		t.Errorf("RunInstances calls = %d, want 2", n)
	}
}

func TestCreateStopped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := e.create(e.want(func(r module.Record) { r["state"] = "stopped" }), "t")
	if got.String("observed_state") != "stopped" || got.String("state") != "stopped" {
		t.Errorf("state %s, observed %s; want stopped", got.String("state"), got.String("observed_state"))
	}
}

// TestStopModifyStart: an instance type or user data change of a running
// instance stops it, modifies it and starts it again through Poll; of a
// stopped one, modifies it and leaves it stopped.
func TestStopModifyStart(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		state  string
		change func(module.Record)
		calls  map[string]int
	}{
		{"type while running", "running", func(r module.Record) { r["instance_type"] = "t3.small" },
			map[string]int{"ec2:StopInstances": 1, "ec2:ModifyInstanceAttribute": 1, "ec2:StartInstances": 1}},
		{"user data while running", "running", func(r module.Record) { r["user_data"] = "#!/bin/sh\necho bye\n" },
			map[string]int{"ec2:StopInstances": 1, "ec2:ModifyInstanceAttribute": 1, "ec2:StartInstances": 1}},
		{"both while running", "running", func(r module.Record) { r["instance_type"] = "m5.large"; r["user_data"] = nil },
			map[string]int{"ec2:StopInstances": 1, "ec2:ModifyInstanceAttribute": 2, "ec2:StartInstances": 1}},
		{"type while stopped", "stopped", func(r module.Record) { r["instance_type"] = "t3.small" },
			map[string]int{"ec2:ModifyInstanceAttribute": 1}},
		{"type and start", "stopped", func(r module.Record) { r["instance_type"] = "t3.small"; r["state"] = "running" },
			map[string]int{"ec2:ModifyInstanceAttribute": 1, "ec2:StartInstances": 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			want := e.want(func(r module.Record) { r["state"] = tc.state })
			have := e.create(want, "t")
			e.em.Reset()
			want = maps.Clone(want)
			tc.change(want)
			rec, err := e.m.Mapper.Update(t.Context(), module.Call{}, want, have)
			var p *module.Pending
			if waits := tc.calls["ec2:StopInstances"]+tc.calls["ec2:StartInstances"] > 0; waits != errors.As(err, &p) {
				t.Fatalf("update: got %v, %v; a *module.Pending: %v", rec, err, waits)
			}
			got := e.done(rec, err)
			if !module.Equal(aws_ec2.InstanceTable(), e.m, want, got) {
				t.Errorf("after the update %v, want %v", got, want)
			}
			if read := e.readOne(have.String("instance_id")); !module.Equal(aws_ec2.InstanceTable(), e.m, want, read) {
				t.Errorf("read back %v, want %v", read, want)
			}
			if calls := mutating(e.em.Calls()); !maps.Equal(calls, tc.calls) {
				t.Errorf("mutating calls %v, want %v", calls, tc.calls)
			}
		})
	}
}

func TestSecurityGroupsChangeInPlace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.want(nil)
	have := e.create(want, "t")
	e.em.Reset()
	want = maps.Clone(want)
	want["security_group_ids"] = anys(e.groups[2], e.groups[1])
	want["tags"] = map[string]any{"Name": "web-2", "team": "a"}
	got, err := e.m.Mapper.Update(t.Context(), module.Call{}, want, have)
	if err != nil {
		t.Fatalf("update: %v (groups and tags change without waiting)", err)
	}
	if !module.Equal(aws_ec2.InstanceTable(), e.m, want, got) {
		t.Errorf("update answered %v, want %v", got, want)
	}
	if read := e.readOne(have.String("instance_id")); !module.Equal(aws_ec2.InstanceTable(), e.m, want, read) || read.String("observed_state") != "running" {
		t.Errorf("read back %v, want %v, running", read, want)
	}
	calls := mutating(e.em.Calls())
	if calls["ec2:StopInstances"] != 0 || calls["ec2:ModifyInstanceAttribute"] != 1 {
		t.Errorf("mutating calls %v: want one ModifyInstanceAttribute and no stop", calls)
	}
}

func TestStateChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.want(nil)
	have := e.create(want, "t")
	for _, state := range []string{"stopped", "running", "stopped"} {
		want = maps.Clone(want)
		want["state"] = state
		got := e.done(e.m.Mapper.Update(t.Context(), module.Call{}, want, have))
		if got.String("observed_state") != state || !module.Equal(aws_ec2.InstanceTable(), e.m, want, got) {
			t.Fatalf("after asking %s: %v", state, got)
		}
		have = got
	}
}

func TestDeleteTerminatesAndReadLeavesItOut(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keep := e.create(e.want(nil), "keep")
	gone := e.create(e.want(nil), "gone")
	err := e.m.Mapper.Delete(t.Context(), module.Call{}, gone)
	var p *module.Pending
	if !errors.As(err, &p) {
		t.Fatalf("delete: %v, want a *module.Pending", err)
	}
	if rec := e.done(nil, err); rec != nil {
		t.Errorf("a finished delete answered %v", rec)
	}
	out, err := e.ec2.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{gone.String("instance_id")}})
	if err != nil || out.Reservations[0].Instances[0].State.Name != "terminated" {
		t.Fatalf("AWS should still list the terminated instance: %v", err)
	}
	recs := e.read()
	if len(recs) != 1 || recs[0].String("instance_id") != keep.String("instance_id") {
		t.Errorf("Read lists %v, want only %s", recs, keep.String("instance_id"))
	}
	if got, _ := e.m.Getter.Get(t.Context(), module.Call{}, []string{gone.String("instance_id")}); len(got) != 0 {
		t.Errorf("Get lists the terminated instance: %v", got)
	}
	// Deleting again (a retried delete) is done at once.
	if err := e.m.Mapper.Delete(t.Context(), module.Call{}, gone); err != nil {
		t.Errorf("delete of a terminated instance: %v", err)
	}
	// An instance AWS no longer knows is done too.
	if err := e.m.Mapper.Delete(t.Context(), module.Call{}, module.Record{"instance_id": "i-0000000000000dead", "region": "us-east-1"}); err != nil {
		t.Errorf("delete of an unknown instance: %v", err)
	}
	// One terminated out of band (shutting-down, then terminated) is left out.
	if _, err := e.ec2.TerminateInstances(t.Context(), &ec2.TerminateInstancesInput{InstanceIds: []string{keep.String("instance_id")}}); err != nil {
		t.Fatal(err)
	}
	if recs := e.read(); len(recs) != 0 {
		t.Errorf("Read lists %v after the terminations", recs)
	}
}

func TestNoOpUpdateMakesNoCall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	want := e.want(nil)
	have := e.create(want, "t")
	e.em.Reset()
	for _, w := range []module.Record{
		want,
		e.want(func(r module.Record) { r["security_group_ids"] = anys(e.groups[0], e.groups[0]) }),
		e.want(func(r module.Record) { r["subnet_id"] = nil; r["security_group_ids"] = []any{} }),
		e.want(func(r module.Record) {
			r["tags"] = map[string]any{"Name": "web-1", "aws:cloudformation:stack-name": "x"}
		}),
	} {
		if !module.Equal(aws_ec2.InstanceTable(), e.m, w, have) {
			t.Errorf("Equal(%v, %v) = false", w, have)
		}
		if _, err := e.m.Mapper.Update(t.Context(), module.Call{}, w, have); err != nil {
			t.Errorf("no-op update: %v", err)
		}
	}
	if calls := e.em.Calls(); len(calls) != 0 {
		t.Errorf("no-op updates called %v", calls)
	}
}

func TestCreateOnlyChangesReplace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	have := e.want(func(r module.Record) { r["instance_id"] = "i-0123456789abcdef0" })
	e.em.Reset()
	for col, v := range map[string]any{"ami": "ami-0123456789abcdef1", "subnet_id": "subnet-0123456789abcdef0",
		"key_name": "ops", "region": "us-west-2"} {
		want := maps.Clone(have)
		want[col] = v
		if _, err := e.m.Mapper.Update(t.Context(), module.Call{}, want, have); !errors.Is(err, module.ErrReplace) {
			t.Errorf("%s change: %v, want ErrReplace", col, err)
		}
		if d := e.m.Comparer.Differing(aws_ec2.InstanceTable().CreateOnly, want, have); !slices.Equal(d, []string{col}) {
			t.Errorf("%s change: Differing = %v", col, d)
		}
	}
	if calls := e.em.Calls(); len(calls) != 0 {
		t.Errorf("replacements called %v", calls)
	}
}

func TestEqual(t *testing.T) {
	t.Parallel()
	m := aws_ec2.NewMapper(aws.Config{Region: "us-east-1"}, aws_ec2.Options{})
	cloud := module.Record{
		"ami": ami, "instance_type": "t3.micro", "subnet_id": "subnet-1", "security_group_ids": anys("sg-1", "sg-2"),
		"key_name": nil, "user_data": nil, "tags": map[string]any{"a": "1", "aws:autoscaling:groupName": "g"},
		"state": "running", "region": "us-east-1", "instance_id": "i-1", "observed_state": "pending",
	}
	cases := []struct {
		name  string
		db    func(module.Record)
		equal bool
	}{
		{"same", func(module.Record) {}, true},
		{"groups in another order", func(r module.Record) { r["security_group_ids"] = anys("sg-2", "sg-1") }, true},
		{"a group fewer", func(r module.Record) { r["security_group_ids"] = anys("sg-2") }, false},
		{"a group more", func(r module.Record) { r["security_group_ids"] = anys("sg-1", "sg-2", "sg-3") }, false},
		{"no groups: AWS's default", func(r module.Record) { r["security_group_ids"] = []any{} }, true},
		{"no subnet: AWS's default", func(r module.Record) { r["subnet_id"] = nil }, true},
		{"another subnet", func(r module.Record) { r["subnet_id"] = "subnet-2" }, false},
		{"aws:* tags aside", func(r module.Record) { r["tags"] = map[string]any{"a": "1"} }, true},
		{"a tag changed", func(r module.Record) { r["tags"] = map[string]any{"a": "2"} }, false},
		{"a tag more", func(r module.Record) { r["tags"] = map[string]any{"a": "1", "b": "2"} }, false},
		{"empty user data is none", func(r module.Record) { r["user_data"] = "" }, true},
		{"user data", func(r module.Record) { r["user_data"] = "x" }, false},
		{"stopped", func(r module.Record) { r["state"] = "stopped" }, false},
		{"feedback differs", func(r module.Record) { r["observed_state"] = "running"; r["instance_id"] = nil }, true},
		{"type", func(r module.Record) { r["instance_type"] = "t3.small" }, false},
	}
	for _, tc := range cases {
		db := maps.Clone(cloud)
		tc.db(db)
		if got := module.Equal(aws_ec2.InstanceTable(), m, db, cloud); got != tc.equal {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.equal)
		}
	}
}

func TestBadInputIsTerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cases := map[string]func(module.Record){
		"malformed AMI": func(r module.Record) { r["ami"] = "ami-nothex" },
		"unknown type":  func(r module.Record) { r["instance_type"] = "z9.huge" },
		"token reused":  func(r module.Record) { r["instance_type"] = "t3.large" },
	}
	e.create(e.want(nil), "reused")
	for name, mod := range cases {
		_, err := e.m.Mapper.Create(t.Context(), module.Call{Token: "reused"}, e.want(mod))
		var te *module.TerminalError
		if !errors.As(err, &te) {
			t.Errorf("%s: %v, want a TerminalError", name, err)
		}
	}
}

// TestPollRefusesForeignHandles: a handle the mapper did not make is a
// terminal error, not a retry forever.
func TestPollRefusesForeignHandles(t *testing.T) {
	t.Parallel()
	m := aws_ec2.NewMapper(aws.Config{Region: "us-east-1"}, aws_ec2.Options{})
	var te *module.TerminalError
	if _, err := module.PartsOf(m).Poller.Poll(context.Background(), module.Call{}, "req-123"); !errors.As(err, &te) {
		t.Errorf("Poll(req-123) = %v, want a TerminalError", err)
	}
}

// TestReadReusesUserData: DescribeInstances does not carry user data; a
// read that may reuse details (an automatic cycle's) costs the describe
// pages only once the user data was read, and a fresh read reads it again.
func TestReadReusesUserData(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tok := range []string{"a", "b", "c"} {
		e.create(e.want(nil), tok)
	}
	e.em.Reset()
	recs, err := e.m.Read(t.Context(), module.Call{})
	if err != nil || len(recs) != 3 {
		t.Fatalf("read: %d records, %v", len(recs), err)
	}
	for _, r := range recs {
		if r.String("user_data") != "#!/bin/sh\necho hello\n" {
			t.Errorf("user data of %s = %q", r.String("instance_id"), r.String("user_data"))
		}
	}
	if calls := e.em.Calls(); !maps.Equal(calls, map[string]int{"ec2:DescribeInstances": 1}) {
		t.Errorf("an automatic read called %v, want one DescribeInstances", calls)
	}
	e.em.Reset()
	e.read()
	if calls := e.em.Calls(); !maps.Equal(calls, map[string]int{"ec2:DescribeInstances": 1, "ec2:DescribeInstanceAttribute": 3}) {
		t.Errorf("a fresh read called %v, want the user data of each instance", calls)
	}
}

// TestReadRecord pins what Read and a create answer, in the engine's form
// (Table.Canonical), to what the record mapper gave before the table was
// declared by a type: every column, a NULL as nil (no key pair, no user
// data, no public address in a subnet that gives none), the groups
// sorted, the launch time in RFC 3339 UTC, and the client token under
// module.TokenTag.
func TestReadRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	got := e.create(e.want(func(r module.Record) {
		r["security_group_ids"] = anys(e.groups[2], e.groups[0])
		r["user_data"] = nil
	}), "token-r")
	table := aws_ec2.InstanceTable()
	id := got.String("instance_id")
	read, err := table.Canonical(e.readOne(id))
	if err != nil {
		t.Fatal(err)
	}
	launched, err := time.Parse(time.RFC3339Nano, read.String("launch_time"))
	if err != nil || !strings.HasSuffix(read.String("launch_time"), "Z") || time.Since(launched) > time.Minute {
		t.Errorf("launch_time = %q (%v), want a recent RFC 3339 UTC time", read.String("launch_time"), err)
	}
	want := module.Record{
		"ami": ami, "instance_type": "t3.micro", "subnet_id": e.subnet, "security_group_ids": anys(e.groups[0], e.groups[2]),
		"key_name": nil, "user_data": nil, "tags": map[string]any{"Name": "web-1"}, "state": "running", "region": "us-east-1",
		"instance_id": id, "private_ip_address": "10.1.1.4", "public_ip_address": nil, "launch_time": read["launch_time"],
		"observed_state": "running", module.TokenTag: "token-r",
	}
	if !strings.HasPrefix(id, "i-") || !reflect.DeepEqual(read, want) {
		t.Errorf("Read's record\n%#v\nwant\n%#v", read, want)
	}
	if created, err := table.Canonical(got); err != nil || !reflect.DeepEqual(created, want) {
		t.Errorf("the create answered\n%#v (%v)\nwant\n%#v", created, err, want)
	}
}
