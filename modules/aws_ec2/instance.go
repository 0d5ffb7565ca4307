package aws_ec2

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/internal/tags"
	"github.com/iasql/iasql/modules/module"
)

// AWS's pages on instances, which this file follows:
//   - RunInstances (ClientToken, TagSpecifications, UserData in base64):
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html
//   - Idempotency: RunInstances takes a ClientToken; a retry with the same
//     token answers the same instances (different parameters:
//     IdempotentParameterMismatch):
//     https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html
//   - DescribeInstances (filters, MaxResults not with InstanceIds):
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeInstances.html
//   - The lifecycle (pending, running, stopping, stopped, shutting-down,
//     terminated): https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-lifecycle.html
//   - StopInstances / StartInstances:
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StopInstances.html
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_StartInstances.html
//   - ModifyInstanceAttribute: one attribute per call; "to modify some
//     attributes, the instance must be stopped" (instance type, user data):
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyInstanceAttribute.html
//     https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_ChangingAttributesWhileInstanceStopped.html
//   - TerminateInstances: idempotent; "terminated instances remain visible
//     after termination (for approximately one hour)":
//     https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_TerminateInstances.html

type instanceMapper struct {
	c         *ec2x.Clients
	groups    module.Table // security_group's: how the engine names groups
	pollAfter time.Duration
	userData  *detail.Cache[string] // by instance id: the decoded user data
}

// liveStates are the states Read reports: a terminated instance (listed for
// about an hour) and one shutting down are gone as far as the table goes.
var liveStates = []string{"pending", "running", "stopping", "stopped"}

// desired is the state a user may ask for that an observed state is on its
// way to, or already in ("" for shutting-down and terminated).
func desired(observed types.InstanceStateName) string {
	switch observed {
	case types.InstanceStateNamePending, types.InstanceStateNameRunning:
		return "running"
	case types.InstanceStateNameStopping, types.InstanceStateNameStopped:
		return "stopped"
	}
	return ""
}

func stateOf(in types.Instance) types.InstanceStateName {
	if in.State == nil {
		return ""
	}
	return in.State.Name
}

// instance is an instance found in region as a row (subnet and groups by
// their cloud ids, the groups sorted), with userData its decoded user data.
func (m *instanceMapper) instance(region string, in types.Instance, userData string) Instance {
	v := Instance{
		AMI: aws.ToString(in.ImageId), Type: string(in.InstanceType), Subnet: nonEmpty(in.SubnetId), SecurityGroups: []string{},
		KeyName: nonEmpty(in.KeyName), UserData: nonEmpty(&userData), Tags: ec2x.Tags(in.Tags), // without aws:* and the token tag
		State: desired(stateOf(in)), Region: region, ID: aws.ToString(in.InstanceId),
		PrivateIP: nonEmpty(in.PrivateIpAddress), PublicIP: nonEmpty(in.PublicIpAddress), LaunchTime: aws.ToTime(in.LaunchTime),
		ObservedState: string(stateOf(in)), Token: ec2x.TokenOf(in.Tags),
	}
	for _, g := range in.SecurityGroups {
		v.SecurityGroups = append(v.SecurityGroups, ec2x.GroupCloudID(m.groups, aws.ToString(in.VpcId), aws.ToString(g.GroupName)))
	}
	slices.Sort(v.SecurityGroups)
	return v
}

// nonEmpty is s, nil when AWS leaves it out or empty: NULL in the row.
func nonEmpty(s *string) *string {
	if aws.ToString(s) == "" {
		return nil
	}
	return s
}

// Read lists the instances of every region in scope that are not
// terminated or shutting down (DescribeInstances, all pages, filtered by
// state), each with its user data (DescribeInstanceAttribute, which
// DescribeInstances does not carry; reused from an earlier read within the
// TTL unless the call asks for it fresh).
func (m *instanceMapper) Read(ctx context.Context, call module.Call) ([]Instance, error) {
	due := m.userData.Due()
	return regional.Each(ctx, m.c.Clients, call.Scope, func(ctx context.Context, region string, cl *ec2.Client) ([]Instance, error) {
		return m.describe(ctx, call.Fresh, region, cl, &ec2.DescribeInstancesInput{
			MaxResults: aws.Int32(ec2x.PageSize),
			Filters:    []types.Filter{{Name: aws.String("instance-state-name"), Values: liveStates}},
		}, due)
	})
}

// describe lists the instances in matches (all pages) as rows.
func (m *instanceMapper) describe(ctx context.Context, fresh module.Fresh, region string, cl *ec2.Client, in *ec2.DescribeInstancesInput, due map[string]bool) ([]Instance, error) {
	insts, err := regional.Pages(ctx, ec2.NewDescribeInstancesPaginator(cl, in), func(page *ec2.DescribeInstancesOutput) []types.Instance {
		var out []types.Instance
		for _, res := range page.Reservations {
			out = append(out, res.Instances...)
		}
		return out
	})
	if err != nil {
		return nil, fmt.Errorf("describe instances in %s: %w", region, err)
	}
	var out []Instance
	for _, inst := range insts {
		if desired(stateOf(inst)) == "" {
			continue
		}
		ud, err := m.readUserData(ctx, fresh, cl, aws.ToString(inst.InstanceId), due)
		if module.IsCode(err, "InvalidInstanceID.NotFound") {
			continue // gone since it was listed
		} else if err != nil {
			return nil, err
		}
		out = append(out, m.instance(region, inst, ud))
	}
	return out, nil
}

// readUserData is an instance's user data, decoded (reused from the cache
// when fresh and due allow it).
func (m *instanceMapper) readUserData(ctx context.Context, fresh module.Fresh, cl *ec2.Client, id string, due map[string]bool) (string, error) {
	if ud, ok := m.userData.Get(fresh, id, id, due); ok {
		return ud, nil
	}
	out, err := cl.DescribeInstanceAttribute(ctx, &ec2.DescribeInstanceAttributeInput{
		InstanceId: aws.String(id), Attribute: types.InstanceAttributeNameUserData,
	})
	if err != nil {
		return "", fmt.Errorf("read the user data of %s: %w", id, err)
	}
	var ud string
	if out.UserData != nil && aws.ToString(out.UserData.Value) != "" {
		b, err := base64.StdEncoding.DecodeString(aws.ToString(out.UserData.Value))
		if err != nil {
			return "", fmt.Errorf("read the user data of %s: %w", id, err)
		}
		ud = string(b)
	}
	m.userData.Put(id, id, ud)
	return ud, nil
}

// Get reads the instances of ids (instance ids), fresh, as Read would: by an
// instance-id filter in each region of the scope (a filter, unlike
// InstanceIds, answers a missing id with nothing instead of an error).
func (m *instanceMapper) Get(ctx context.Context, call module.Call, ids []string) ([]Instance, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	return regional.Each(ctx, m.c.Clients, call.Scope, func(ctx context.Context, region string, cl *ec2.Client) ([]Instance, error) {
		var out []Instance
		for chunk := range slices.Chunk(ids, 200) {
			vs, err := m.describe(ctx, module.Fresh{All: true}, region, cl, &ec2.DescribeInstancesInput{
				MaxResults: aws.Int32(ec2x.PageSize),
				Filters: []types.Filter{
					{Name: aws.String("instance-id"), Values: chunk},
					{Name: aws.String("instance-state-name"), Values: liveStates},
				},
			}, nil)
			if err != nil {
				return nil, err
			}
			out = append(out, vs...)
		}
		return out, nil
	})
}

// Find returns the instance a create with this client token made in want's
// region (nil when none did), by its token tag. RunInstances' own
// ClientToken already makes a repeated create answer the same instance;
// this lets the engine adopt it without calling RunInstances again.
func (m *instanceMapper) Find(ctx context.Context, call module.Call, want Instance) (*Instance, error) {
	token := call.Token
	region := m.c.RegionOr(call.Scope, want.Region)
	vs, err := m.describe(ctx, module.Fresh{All: true}, region, m.c.Region(region), &ec2.DescribeInstancesInput{
		Filters: append(ec2x.TokenFilter(token),
			types.Filter{Name: aws.String("instance-state-name"), Values: liveStates}),
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("find the instance of client token %s in %s: %w", token, region, err)
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return &vs[0], nil
}

// terminal are the errors retrying cannot fix: bad input the database
// could not catch (an AMI that does not exist, a type AWS does not offer),
// a token reused with other parameters, missing permissions; with EC2's
// common ones (ec2x). IncorrectInstanceState (an instance that moved on
// since it was described) is not: it is retried. RunInstances' errors:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
var terminal = ec2x.Terminal.With("InvalidAMIID.Malformed", "InvalidAMIID.NotFound", "InvalidAMIID.Unavailable",
	"IdempotentParameterMismatch", "InvalidKeyPair.NotFound", "InvalidInstanceType", "Unsupported")

// Create launches the instance: RunInstances with MinCount = MaxCount = 1
// and the create's client token as ClientToken. RunInstances is idempotent
// by ClientToken (a repeat answers the instance the first call made), so
// unlike CreateVpc the SDK may retry it; the token is also a tag
// (TagSpecifications apply atomically with the launch), so Find and the
// engine's adoption by token work as for VPCs. The instance starts
// pending: Create answers a *module.Pending whose Record is the instance
// (its instance_id) and whose Poll waits for running, then stops it when
// the row wants it stopped (a pending instance cannot be stopped).
func (m *instanceMapper) Create(ctx context.Context, call module.Call, want Instance) (Instance, error) {
	region := m.c.RegionOr(call.Scope, want.Region)
	token := call.Token
	groups, err := ec2x.GroupIDs(ctx, m.c.Region(region), m.groups, module.Strings(want.SecurityGroups))
	if err != nil {
		return Instance{}, err
	}
	in := &ec2.RunInstancesInput{
		ImageId:           aws.String(want.AMI),
		InstanceType:      types.InstanceType(want.Type),
		MinCount:          aws.Int32(1),
		MaxCount:          aws.Int32(1),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeInstance, want.Tags, token),
		SecurityGroupIds:  groups,
		SubnetId:          nonEmpty(want.Subnet),
		KeyName:           nonEmpty(want.KeyName),
	}
	if token != "" {
		in.ClientToken = aws.String(token) // else the SDK makes one per call, kept across its retries
	}
	ud := aws.ToString(want.UserData)
	if ud != "" {
		in.UserData = aws.String(base64.StdEncoding.EncodeToString([]byte(ud)))
	}
	out, err := m.c.Region(region).RunInstances(ctx, in)
	if err != nil {
		return Instance{}, terminal.Classify(err, "launch an instance of %s in %s", want.AMI, region)
	}
	if len(out.Instances) != 1 {
		return Instance{}, fmt.Errorf("launch an instance of %s in %s: AWS answered %d instances", want.AMI, region, len(out.Instances))
	}
	inst := out.Instances[0]
	id := aws.ToString(inst.InstanceId)
	m.userData.Put(id, id, ud)
	steps := []string{stepStart}
	if want.State == "stopped" {
		steps = append(steps, stepStop)
	}
	return m.settle(ctx, call.Fresh, region, id, steps, &inst)
}

// The steps of an operation a Pending's handle carries, done in order by
// Poll: each waits for the state it needs, then makes its call.
const (
	stepStart = "start" // running: StartInstances when stopped; wait while pending or stopping
	stepStop  = "stop"  // stopped: StopInstances when running; wait while pending or stopping
	stepGone  = "gone"  // terminated: TerminateInstances, then wait
	// stepType and stepUserData are prefixes (type=t3.small,
	// userdata=<base64>): ModifyInstanceAttribute once stopped.
	stepType     = "type="
	stepUserData = "userdata="
)

// handle renders an operation's handle: region:instance-id:step:step…
// (no part holds a colon: regions, ids, types and base64 have none).
func handle(region, id string, steps []string) string {
	return strings.Join(append([]string{region, id}, steps...), ":")
}

func parseHandle(h string) (region, id string, steps []string, err error) {
	parts := strings.Split(h, ":")
	if len(parts) < 2 || parts[0] == "" || !strings.HasPrefix(parts[1], "i-") {
		return "", "", nil, &module.TerminalError{Err: fmt.Errorf("not an instance operation handle: %q", h)}
	}
	return parts[0], parts[1], parts[2:], nil
}

// Poll carries on with the operation a handle names (see advance).
func (m *instanceMapper) Poll(ctx context.Context, call module.Call, h string) (*Instance, error) {
	region, id, steps, err := parseHandle(h)
	if err != nil {
		return nil, err
	}
	return m.advance(ctx, call.Fresh, region, id, steps, nil)
}

// describeOne is the instance id in region, nil when AWS does not know it
// (never launched, or terminated over an hour ago; also, for a moment,
// one just launched: DescribeInstances is eventually consistent).
func (m *instanceMapper) describeOne(ctx context.Context, cl *ec2.Client, id string) (*types.Instance, error) {
	out, err := cl.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if module.IsCode(err, "InvalidInstanceID.NotFound") {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("describe instance %s: %w", id, err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if aws.ToString(in.InstanceId) == id {
				return &in, nil
			}
		}
	}
	return nil, nil
}

// advance does what it can of steps on instance id now: it makes the call
// of each step whose state the instance is in and moves on; it stops at a
// step that must wait for a transition, answering a *module.Pending with
// the handle of what is left. With every step done it answers the instance
// as Read would (nil after stepGone). known is the instance as a call just
// answered it (nil: describe it).
func (m *instanceMapper) advance(ctx context.Context, fresh module.Fresh, region, id string, steps []string, known *types.Instance) (*Instance, error) {
	cl := m.c.Region(region)
	inst := known
	for {
		if inst == nil {
			var err error
			if inst, err = m.describeOne(ctx, cl, id); err != nil {
				return nil, err
			}
		}
		if inst == nil {
			if len(steps) > 0 && steps[0] == stepGone {
				m.userData.Forget(id)
				return nil, nil
			}
			// Just launched and not yet visible, as DescribeInstances is
			// eventually consistent: ask again later.
			return nil, m.pending(region, id, steps, nil)
		}
		state := stateOf(*inst)
		if len(steps) == 0 {
			ud, err := m.readUserData(ctx, fresh, cl, id, nil)
			if err != nil {
				return nil, err
			}
			v := m.instance(region, *inst, ud)
			return &v, nil
		}
		step := steps[0]
		if step == stepGone {
			switch state {
			case types.InstanceStateNameTerminated:
				m.userData.Forget(id)
				return nil, nil
			case types.InstanceStateNameShuttingDown:
				return nil, m.pending(region, id, steps, nil)
			}
			_, err := cl.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
			if module.IsCode(err, "InvalidInstanceID.NotFound") {
				m.userData.Forget(id)
				return nil, nil
			} else if err != nil {
				return nil, terminal.Classify(err, "terminate instance %s", id)
			}
			return nil, m.pending(region, id, steps, nil)
		}
		if state == types.InstanceStateNameTerminated || state == types.InstanceStateNameShuttingDown {
			// A launch that failed (an EBS volume limit, an insufficient
			// capacity, …) ends terminated while pending; StateReason says why.
			reason := "no reason given"
			if inst.StateReason != nil {
				reason = aws.ToString(inst.StateReason.Message)
			}
			return nil, &module.TerminalError{Err: fmt.Errorf("instance %s is %s: %s", id, state, reason)}
		}
		var err error
		switch {
		case step == stepStart:
			switch state {
			case types.InstanceStateNameRunning:
				steps = steps[1:]
				continue
			case types.InstanceStateNameStopped:
				_, err = cl.StartInstances(ctx, &ec2.StartInstancesInput{InstanceIds: []string{id}})
				err = terminal.Classify(err, "start instance %s", id)
			}
			if err != nil {
				return nil, err
			}
			return nil, m.pending(region, id, steps, inst)
		case step == stepStop:
			switch state {
			case types.InstanceStateNameStopped:
				steps = steps[1:]
				continue
			case types.InstanceStateNameRunning:
				_, err = cl.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{id}})
				err = terminal.Classify(err, "stop instance %s", id)
			}
			if err != nil {
				return nil, err
			}
			return nil, m.pending(region, id, steps, inst)
		case strings.HasPrefix(step, stepType), strings.HasPrefix(step, stepUserData):
			if state != types.InstanceStateNameStopped {
				// Only a stopped instance takes these; stop it first.
				steps = append([]string{stepStop}, steps...)
				continue
			}
			in := &ec2.ModifyInstanceAttributeInput{InstanceId: aws.String(id)}
			if t, ok := strings.CutPrefix(step, stepType); ok {
				in.InstanceType = &types.AttributeValue{Value: aws.String(t)}
			} else {
				b, derr := base64.StdEncoding.DecodeString(strings.TrimPrefix(step, stepUserData))
				if derr != nil {
					return nil, &module.TerminalError{Err: fmt.Errorf("instance %s: bad user data step: %w", id, derr)}
				}
				// The SDK encodes the blob in base64 on the wire.
				in.UserData = &types.SecureBlobAttributeValue{Value: b}
				m.userData.Forget(id)
			}
			if _, err := cl.ModifyInstanceAttribute(ctx, in); err != nil {
				return nil, terminal.Classify(err, "modify instance %s", id)
			}
			steps = steps[1:]
			inst = nil // describe again: the type changed
			continue
		default:
			return nil, &module.TerminalError{Err: fmt.Errorf("instance %s: unknown step %q", id, step)}
		}
	}
}

// settle is advance for a create or an update, which end with the
// instance (only stepGone ends with none).
func (m *instanceMapper) settle(ctx context.Context, fresh module.Fresh, region, id string, steps []string, known *types.Instance) (Instance, error) {
	v, err := m.advance(ctx, fresh, region, id, steps, known)
	if err != nil {
		return Instance{}, err
	}
	return *v, nil
}

// pending answers a step that waits: the handle of the steps left, and what
// is known of the instance (its id and region at least).
func (m *instanceMapper) pending(region, id string, steps []string, inst *types.Instance) error {
	v := Instance{ID: id, Region: region}
	if inst != nil {
		ud, _ := m.userData.Get(module.Fresh{}, id, id, nil)
		v = m.instance(region, *inst, ud)
	}
	return instances.Pending(handle(region, id, steps), m.pollAfter, &v)
}

// Update makes the instance have want's declarative columns: ami, subnet,
// key pair and region need a new instance (module.ErrReplace); tags change
// in place (CreateTags, DeleteTags) and so do security groups
// (ModifyInstanceAttribute Groups, in any state but terminated); instance
// type and user data need a stopped instance (ModifyInstanceAttribute
// refuses them otherwise), so the instance is stopped, modified and, if
// the row wants it running, started again; a state change stops or starts
// it. Waiting for a transition answers a *module.Pending whose handle names
// what is left (e.g. us-east-1:i-…:stop:type=t3.small:start), which Poll
// carries on. Nothing differing, nothing is called.
//
// User data: AWS lets it change only while the instance is stopped, so a
// change takes the stop/modify/start path of an instance type change
// rather than a replacement (the instance and its disks stay); cloud-init
// runs user data at the first boot only, which the column's comment says.
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/user-data.html
func (m *instanceMapper) Update(ctx context.Context, call module.Call, want, have Instance) (Instance, error) {
	if len(m.Differing(instances.Table().CreateOnly, want, have)) > 0 {
		return Instance{}, module.ErrReplace
	}
	region, id := have.Region, have.ID
	cl := m.c.Region(region)
	got := have
	if !tags.Same(want.Tags, have.Tags) {
		if err := ec2x.SyncTags(ctx, cl, id, want.Tags, have.Tags); err != nil {
			return Instance{}, err
		}
		got.Tags = want.Tags
	}
	// No groups wanted is AWS's choice at launch (see Differing), not
	// "none": an instance in a VPC has at least one group.
	if len(m.Differing([]string{"security_group_ids"}, want, have)) > 0 {
		groups, err := ec2x.GroupIDs(ctx, cl, m.groups, module.Strings(want.SecurityGroups))
		if err != nil {
			return Instance{}, err
		}
		if _, err := cl.ModifyInstanceAttribute(ctx, &ec2.ModifyInstanceAttributeInput{
			InstanceId: aws.String(id), Groups: groups,
		}); err != nil {
			return Instance{}, terminal.Classify(err, "change the security groups of %s", id)
		}
		got.SecurityGroups = want.SecurityGroups
	}
	var steps []string
	if want.Type != have.Type {
		steps = append(steps, stepType+want.Type)
	}
	if ud := aws.ToString(want.UserData); ud != aws.ToString(have.UserData) {
		steps = append(steps, stepUserData+base64.StdEncoding.EncodeToString([]byte(ud)))
	}
	wantState := orRunning(want.State)
	switch {
	case len(steps) > 0:
		steps = append([]string{stepStop}, steps...)
		if wantState == "running" {
			steps = append(steps, stepStart)
		}
	case wantState != orRunning(have.State):
		if wantState == "running" {
			steps = []string{stepStart}
		} else {
			steps = []string{stepStop}
		}
	}
	if len(steps) == 0 {
		return got, nil
	}
	return m.settle(ctx, call.Fresh, region, id, steps, nil)
}

// Delete terminates the instance (TerminateInstances is idempotent; an
// instance AWS no longer knows is done) and answers a *module.Pending
// until it is terminated.
func (m *instanceMapper) Delete(ctx context.Context, call module.Call, have Instance) error {
	_, err := m.advance(ctx, call.Fresh, m.c.RegionOr(call.Scope, have.Region), have.ID, []string{stepGone}, nil)
	return err
}

// Differing names the columns of cols in which db and cloud differ
// (module.Comparer: the engine also judges create-only changes by it): as
// the engine compares by value (security groups, a many-valued reference,
// as a set), except tags as maps without AWS's own aws:* keys, the desired
// state with pending as running and stopping as stopped, and a NULL
// subnet or an empty list of groups in the database as "AWS's choice at
// launch" (the default subnet, the VPC's default group), which any cloud
// value satisfies. (The engine then writes the references to the rows of
// what AWS chose into the row: snapshot.TakeChoices.)
func (m *instanceMapper) Differing(cols []string, db, cloud Instance) []string {
	return slices.DeleteFunc(instances.Differing(cols, db, cloud), func(c string) bool {
		switch c {
		case "security_group_ids":
			return len(module.Strings(db.SecurityGroups)) == 0
		case "subnet_id":
			return aws.ToString(db.Subnet) == ""
		case "tags":
			return tags.Same(db.Tags, cloud.Tags)
		case "state":
			return orRunning(db.State) == orRunning(cloud.State)
		}
		return false
	})
}

func orRunning(s string) string {
	if s == "" {
		return "running"
	}
	return s
}

var (
	_ module.MapperOf[Instance]   = (*instanceMapper)(nil)
	_ module.PollerOf[Instance]   = (*instanceMapper)(nil)
	_ module.GetterOf[Instance]   = (*instanceMapper)(nil)
	_ module.FinderOf[Instance]   = (*instanceMapper)(nil)
	_ module.ComparerOf[Instance] = (*instanceMapper)(nil)
)
