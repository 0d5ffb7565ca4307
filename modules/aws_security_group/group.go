package aws_security_group

import (
	"context"
	"fmt"
	"slices"
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
	rules map[string]Rule     // rule id -> the rule, as the last read of rules found it (for events that name rules by id)
}

type groupRef struct{ cid, region string }

// remember adds a group just created.
func (g *groups) remember(sg Group) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.add(sg)
}

// reset makes the groups those of a read, but for the regions whose read
// failed: their groups stay as last seen.
func (g *groups) reset(found []Group, failed map[string]error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	byID := g.byID
	g.byID, g.byCID = make(map[string]groupRef, len(found)), make(map[string]string, len(found))
	for id, ref := range byID {
		if _, kept := failed[ref.region]; kept {
			g.byID[id], g.byCID[ref.cid] = ref, id
		}
	}
	for _, sg := range found {
		g.add(sg)
	}
}

// add indexes a group; g.mu is held.
func (g *groups) add(sg Group) {
	cid := g.cid(sg)
	g.byID[sg.ID] = groupRef{cid: cid, region: sg.Region}
	g.byCID[cid] = sg.ID
}

func (g *groups) forget(sg Group) {
	g.mu.Lock()
	delete(g.byID, sg.ID)
	delete(g.byCID, g.cid(sg))
	g.mu.Unlock()
}

// cid is a group's identity.
func (g *groups) cid(sg Group) string { return ec2x.GroupCloudID(g.t, sg.VPC, sg.Name) }

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

// group is a security group found in a region as a row.
func group(region string, sg types.SecurityGroup) Group {
	return Group{
		ID: aws.ToString(sg.GroupId), Name: aws.ToString(sg.GroupName),
		Description: aws.ToString(sg.Description), VPC: aws.ToString(sg.VpcId),
		Region: region, Tags: ec2x.Tags(sg.Tags),
	}
}

// Read lists the security groups of every region in scope
// (DescribeSecurityGroups, paginated), and remembers them for the rules.
func (m *groupMapper) Read(ctx context.Context, call module.Call) ([]Group, error) {
	found, err := regional.ListOf(ctx, m.g.c.Clients, call.Scope, ec2x.Terminal, "describe security groups",
		func(cl *ec2.Client) *ec2.DescribeSecurityGroupsPaginator {
			return ec2.NewDescribeSecurityGroupsPaginator(cl, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeSecurityGroupsOutput) []types.SecurityGroup { return page.SecurityGroups }, group)
	failed, partial := module.FailedRegions(err)
	if err != nil && !partial {
		return nil, err
	}
	m.g.reset(found, failed)
	return found, err
}

// Get reads the groups of ids (identities: VPC and name), fresh, as Read
// would: by vpc-id and group-name filters in each region of the scope (a
// filter, unlike GroupIds, answers a missing group with nothing instead of
// an error), keeping the pairs asked for; it remembers them for the rules.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeSecurityGroups.html
func (m *groupMapper) Get(ctx context.Context, call module.Call, ids []string) ([]Group, error) {
	want := map[string]bool{}
	var vpcs, names []string
	for _, cid := range ids {
		id, ok := module.IdentityOf(m.g.t, cid)
		if !ok {
			continue
		}
		want[cid] = true
		vpcs, names = append(vpcs, id.String("vpc_id")), append(names, id.String("group_name"))
	}
	if len(want) == 0 {
		return nil, nil
	}
	filters := []types.Filter{{Name: aws.String("vpc-id"), Values: slices.Compact(slices.Sorted(slices.Values(vpcs)))},
		{Name: aws.String("group-name"), Values: slices.Compact(slices.Sorted(slices.Values(names)))}}
	found, err := regional.ListOf(ctx, m.g.c.Clients, call.Scope, ec2x.Terminal, "describe security groups",
		func(cl *ec2.Client) *ec2.DescribeSecurityGroupsPaginator {
			return ec2.NewDescribeSecurityGroupsPaginator(cl, &ec2.DescribeSecurityGroupsInput{Filters: filters, MaxResults: aws.Int32(ec2x.PageSize)})
		},
		func(page *ec2.DescribeSecurityGroupsOutput) []types.SecurityGroup { return page.SecurityGroups }, group)
	if err != nil {
		return nil, err
	}
	out := found[:0]
	for _, sg := range found {
		if want[m.g.cid(sg)] {
			m.g.remember(sg)
			out = append(out, sg)
		}
	}
	return out, nil
}

// Create creates the group. AWS gives a new group an egress rule allowing
// everything; it shows up as a rule like any other.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html
func (m *groupMapper) Create(ctx context.Context, call module.Call, want Group) (Group, error) {
	cl := m.g.c.Region(want.Region)
	out, err := cl.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName:         aws.String(want.Name),
		Description:       aws.String(want.Description),
		VpcId:             aws.String(want.VPC),
		TagSpecifications: ec2x.TagSpec(types.ResourceTypeSecurityGroup, want.Tags, ""), // no token: the name in its VPC makes a retried create find the group
	})
	if ec2x.Code(err) == "InvalidGroup.Duplicate" {
		// Made by an earlier attempt whose answer was lost: read it back.
		return m.find(ctx, want.Region, want.VPC, want.Name)
	}
	if err != nil {
		return Group{}, ec2x.Terminal.Classify(err, "create security group %s in %s", want.Name, want.VPC)
	}
	want.ID = aws.ToString(out.GroupId)
	m.g.remember(want)
	return want, nil
}

func (m *groupMapper) find(ctx context.Context, region, vpc, name string) (Group, error) {
	out, err := m.g.c.Region(region).DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
		{Name: aws.String("vpc-id"), Values: []string{vpc}}, {Name: aws.String("group-name"), Values: []string{name}}}})
	if err != nil {
		return Group{}, fmt.Errorf("find security group %s in %s: %w", name, vpc, err)
	}
	if len(out.SecurityGroups) != 1 {
		return Group{}, fmt.Errorf("find security group %s in %s: %d found", name, vpc, len(out.SecurityGroups))
	}
	got := group(region, out.SecurityGroups[0])
	m.g.remember(got)
	return got, nil
}

// Update changes tags; a new description needs a new group.
func (m *groupMapper) Update(ctx context.Context, call module.Call, want, have Group) (Group, error) {
	if want.Name != have.Name || want.Description != have.Description || want.VPC != have.VPC || want.Region != have.Region {
		return Group{}, module.ErrReplace
	}
	if err := ec2x.SyncTags(ctx, m.g.c.Region(have.Region), have.ID, want.Tags, have.Tags); err != nil {
		return Group{}, err
	}
	have.Tags = want.Tags
	return have, nil
}

// Temporary is want under its stand-in's name while the group is
// replaced (names are unique in a VPC): the name with a suffix derived
// from the old group's identity, so a retry finds the same one.
func (m *groupMapper) Temporary(want Group, oldCloudID string) Group {
	want.Name = module.StandInName(want.Name, oldCloudID, 255)
	return want
}

func (m *groupMapper) Delete(ctx context.Context, call module.Call, have Group) error {
	_, err := m.g.c.Region(have.Region).DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(have.ID)})
	if ec2x.Code(err) == "CannotDelete" {
		return fmt.Errorf("security group %s (%s): %w", have.Name, have.ID, module.ErrKeep)
	}
	if err := module.Deleted(err, "InvalidGroup.NotFound"); err != nil {
		return fmt.Errorf("delete security group %s: %w", have.ID, err)
	}
	m.g.forget(have)
	return nil
}

var _ module.MapperOf[Group] = (*groupMapper)(nil)
