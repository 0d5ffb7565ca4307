package aws_security_group

import (
	"context"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// groups is what the two mappers share: the clients, and the groups last
// seen, so that rules (which AWS gives by group id) can name their groups
// by identity, and rules to create can find their group's id.
type groups struct {
	c *ec2x.Clients
	t module.Table // security_group's declaration: group identities

	mu    sync.Mutex
	byID  map[string]groupRef // group id -> the group
	byCID map[string]string   // group identity -> group id
}

type groupRef struct{ cid, region string }

// remember adds a group just created.
func (g *groups) remember(r module.Record) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.add(r)
}

// reset makes the groups those of a read, but for the regions whose read
// failed: their groups stay as last seen.
func (g *groups) reset(recs []module.Record, failed map[string]error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	byID := g.byID
	g.byID, g.byCID = make(map[string]groupRef, len(recs)), make(map[string]string, len(recs))
	for id, ref := range byID {
		if _, kept := failed[ref.region]; kept {
			g.byID[id], g.byCID[ref.cid] = ref, id
		}
	}
	for _, r := range recs {
		g.add(r)
	}
}

// add indexes a group; g.mu is held.
func (g *groups) add(r module.Record) {
	cid := module.CloudIDOf(g.t, r)
	g.byID[r.String("group_id")] = groupRef{cid: cid, region: r.String("region")}
	g.byCID[cid] = r.String("group_id")
}

func (g *groups) forget(r module.Record) {
	g.mu.Lock()
	delete(g.byID, r.String("group_id"))
	delete(g.byCID, module.CloudIDOf(g.t, r))
	g.mu.Unlock()
}

// id returns the group id of a group identity.
func (g *groups) id(cid string) (string, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	id, ok := g.byCID[cid]
	return id, ok
}

// ref returns the group of a group id.
func (g *groups) ref(id string) (groupRef, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.byID[id]
	return r, ok
}

type groupMapper struct{ g *groups }

func groupRecord(region string, sg types.SecurityGroup) module.Record {
	return module.Record{
		"group_id": aws.ToString(sg.GroupId), "group_name": aws.ToString(sg.GroupName),
		"description": aws.ToString(sg.Description), "vpc_id": aws.ToString(sg.VpcId),
		"region": region, "tags": ec2x.Tags(sg.Tags),
	}
}

// Read lists the security groups of every region in scope
// (DescribeSecurityGroups, paginated), and remembers them for the rules.
func (m *groupMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	recs, err := regional.List(ctx, m.g.c.Clients, call.Scope, ec2x.Terminal, "describe security groups",
		func(cl *ec2.Client) *ec2.DescribeSecurityGroupsPaginator {
			return ec2.NewDescribeSecurityGroupsPaginator(cl, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeSecurityGroupsOutput) []types.SecurityGroup { return page.SecurityGroups }, groupRecord)
	failed, partial := module.FailedRegions(err)
	if err != nil && !partial {
		return nil, err
	}
	m.g.reset(recs, failed)
	return recs, err
}

// Create creates the group. AWS gives a new group an egress rule allowing
// everything; it shows up as a rule like any other.
func (m *groupMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	region := want.String("region")
	cl := m.g.c.Region(region)
	out, err := cl.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         aws.String(want.String("group_name")),
		Description:       aws.String(want.String("description")),
		VpcId:             aws.String(want.String("vpc_id")),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeSecurityGroup, want["tags"], ""), // no token: the name in its VPC makes a retried create find the group
	})
	if ec2x.Code(err) == "InvalidGroup.Duplicate" {
		// Made by an earlier attempt whose answer was lost: read it back.
		return m.find(ctx, region, want.String("vpc_id"), want.String("group_name"))
	}
	if err != nil {
		return nil, ec2x.Terminal.Classify(err, "create security group %s in %s", want.String("group_name"), want.String("vpc_id"))
	}
	got := declared(m.g.t, want)
	got["group_id"] = aws.ToString(out.GroupId)
	m.g.remember(got)
	return got, nil
}

func (m *groupMapper) find(ctx context.Context, region, vpc, name string) (module.Record, error) {
	out, err := m.g.c.Region(region).DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}}, {Name: aws.String("group-name"), Values: []string{name}}}})
	if err != nil {
		return nil, fmt.Errorf("find security group %s in %s: %w", name, vpc, err)
	}
	if len(out.SecurityGroups) != 1 {
		return nil, fmt.Errorf("find security group %s in %s: %d found", name, vpc, len(out.SecurityGroups))
	}
	got := groupRecord(region, out.SecurityGroups[0])
	m.g.remember(got)
	return got, nil
}

// Update changes tags; a new description needs a new group.
func (m *groupMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return m.g.c.UpdateTags(ctx, m.g.t, "group_id", want, have)
}

// Temporary names the stand-in of a replacement: the name with a suffix
// derived from the old group's identity, so a retry finds the same one.
func (m *groupMapper) Temporary(want module.Record, oldCloudID string) module.Record {
	return module.StandIn(want, "group_name", oldCloudID, 255)
}

func (m *groupMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	_, err := m.g.c.Region(have.String("region")).DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(have.String("group_id"))})
	if ec2x.Code(err) == "CannotDelete" {
		return fmt.Errorf("security group %s (%s): %w", have.String("group_name"), have.String("group_id"), module.ErrKeep)
	}
	if err := module.Deleted(err, "InvalidGroup.NotFound"); err != nil {
		return fmt.Errorf("delete security group %s: %w", have.String("group_id"), err)
	}
	m.g.forget(have)
	return nil
}

// declared is r with only the columns t declares: a record the engine gave
// (which carries the row's id too) made into one a mapper may answer.
func declared(t module.Table, r module.Record) module.Record {
	out := make(module.Record, len(t.Columns))
	for _, c := range t.Columns {
		if v, ok := r[c.Name]; ok {
			out[c.Name] = v
		}
	}
	return out
}
