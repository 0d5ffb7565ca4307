package aws_security_group_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is a database with aws_security_group (and what it depends on)
// installed, and an out-of-band EC2 client for us-east-1.
type env struct {
	*enginetest.Env
	ec2 *ec2.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module()},
		Install: []string{"aws_security_group"},
	})
	return &env{Env: e, ec2: ec2.NewFromConfig(e.AWS)}
}

// cloudGroup returns the group of that name in us-east-1's default VPC.
func (e *env) cloudGroup(name string) (types.SecurityGroup, bool) {
	e.T.Helper()
	out, err := e.ec2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{
		Filters: []types.Filter{{Name: aws.String("group-name"), Values: []string{name}}}})
	if err != nil {
		e.T.Fatalf("describe group %s: %v", name, err)
	}
	if len(out.SecurityGroups) > 1 {
		e.T.Fatalf("%d groups named %s", len(out.SecurityGroups), name)
	}
	if len(out.SecurityGroups) == 0 {
		return types.SecurityGroup{}, false
	}
	return out.SecurityGroups[0], true
}

// cloudRules returns the rules of a group as "in tcp 80 0.0.0.0/0" lines.
func (e *env) cloudRules(groupID string) []string {
	e.T.Helper()
	out, err := e.ec2.DescribeSecurityGroupRules(context.Background(), &ec2.DescribeSecurityGroupRulesInput{
		Filters: []types.Filter{{Name: aws.String("group-id"), Values: []string{groupID}}}})
	if err != nil {
		e.T.Fatalf("describe rules of %s: %v", groupID, err)
	}
	var lines []string
	for _, r := range out.SecurityGroupRules {
		dir := "in"
		if aws.ToBool(r.IsEgress) {
			dir = "out"
		}
		target := aws.ToString(r.CidrIpv4)
		if r.ReferencedGroupInfo != nil {
			target = aws.ToString(r.ReferencedGroupInfo.GroupId)
		}
		lines = append(lines, strings.Join([]string{dir, aws.ToString(r.IpProtocol), fmtPort(r.FromPort), target}, " "))
	}
	slices.Sort(lines)
	return lines
}

func fmtPort(p *int32) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(int(*p))
}

// TestImportsDefaults: every enabled region's default VPC, its subnets and
// its default security group (with AWS's two default rules) are imported.
func TestImportsDefaults(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	regions := len(emulator.Regions())
	if n := e.Count(`SELECT count(*) FROM aws_regions WHERE is_enabled`); n != regions {
		t.Fatalf("%d regions imported, want %d", n, regions)
	}
	if r := e.String(`SELECT default_aws_region()`); r != "us-east-1" {
		t.Errorf("default region %q, want the SDK's us-east-1", r)
	}
	if n := e.Count(`SELECT count(*) FROM vpc WHERE is_default`); n != regions {
		t.Errorf("%d default VPCs, want one per region (%d)", n, regions)
	}
	if n := e.Count(`SELECT count(*) FROM subnet s JOIN vpc v ON v.id = s.vpc_id WHERE v.is_default AND s.is_default_for_az AND s.region = v.region`); n != 3*regions {
		t.Errorf("%d default subnets, want 3 per region", n)
	}
	if n := e.Count(`SELECT count(*) FROM security_group WHERE group_name = 'default'`); n != regions {
		t.Errorf("%d default groups, want one per region", n)
	}
	if n := e.Count(`SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id
		WHERE g.group_name = 'default' AND g.region = 'us-east-1'
		  AND ((NOT r.is_egress AND r.source_security_group_id = g.id) OR (r.is_egress AND r.cidr_ipv4 = '0.0.0.0/0'))`); n != 2 {
		t.Errorf("the default group's rules: %d of 2 imported", n)
	}
	// The default group cannot be deleted: deleting its row brings it back.
	e.Exec(`DELETE FROM security_group WHERE group_name = 'default' AND region = 'us-east-1'`)
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM security_group WHERE group_name = 'default' AND region = 'us-east-1'`); n != 1 {
		t.Error("the default group's row did not come back after AWS refused to delete it")
	}
}

// TestGroupLifecycle: create, update and delete from the database; import,
// update and delete made in the cloud by others.
func TestGroupLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.Exec(`INSERT INTO security_group (group_name, description, tags) VALUES ('web', 'web servers', '{"team":"a"}')`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4)
		   SELECT id, 'TCP', 443, 443, '0.0.0.0/0' FROM security_group WHERE group_name = 'web'`)
	e.Commit()
	g, ok := e.cloudGroup("web")
	if !ok || aws.ToString(g.Description) != "web servers" {
		t.Fatalf("group web in the cloud: %v %+v", ok, g)
	}
	if id := e.String(`SELECT group_id FROM security_group WHERE group_name = 'web'`); id != aws.ToString(g.GroupId) {
		t.Errorf("row's group_id %q, cloud's %q", id, aws.ToString(g.GroupId))
	}
	if got := e.cloudRules(*g.GroupId); !slices.Equal(got, []string{"in tcp 443 0.0.0.0/0", "out -1 -1 0.0.0.0/0"}) {
		t.Errorf("rules of web in the cloud: %v", got)
	}
	// AWS's default egress rule of a new group is the user's to keep or drop:
	// it is imported like any rule.
	if n := e.Count(`SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id WHERE g.group_name = 'web' AND r.rule_id IS NOT NULL`); n != 2 {
		t.Errorf("%d rule rows of web with a rule_id, want 2", n)
	}

	// Update tags and a rule's description: in place.
	e.Emu.Reset()
	e.Exec(`UPDATE security_group SET tags = '{"team":"b"}' WHERE group_name = 'web'`,
		`UPDATE security_group_rule SET description = 'https' WHERE from_port = 443`)
	e.Commit()
	g, _ = e.cloudGroup("web")
	if len(g.Tags) != 1 || aws.ToString(g.Tags[0].Value) != "b" {
		t.Errorf("tags after update: %+v", g.Tags)
	}
	if calls := e.Mutations(); calls["ec2:CreateSecurityGroup"] != 0 || calls["ec2:DeleteSecurityGroup"] != 0 {
		t.Errorf("a tag change replaced the group: %v", calls)
	}

	// Others create a group with a rule; it is imported.
	out, err := e.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("oob"), Description: aws.String("made elsewhere")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.ec2.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: out.GroupId,
		IpPermissions: []types.IpPermission{{IpProtocol: aws.String("udp"), FromPort: aws.Int32(53), ToPort: aws.Int32(53),
			UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: g.GroupId}}}}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if n := e.Count(`SELECT count(*) FROM security_group_rule r JOIN security_group g ON g.id = r.security_group_id JOIN security_group s ON s.id = r.source_security_group_id
		WHERE g.group_name = 'oob' AND s.group_name = 'web' AND r.ip_protocol = 'udp' AND r.from_port = 53`); n != 1 {
		t.Error("the out-of-band group's rule (source: web) was not imported")
	}
	// Others change its tags, then delete it.
	if _, err := e.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{*out.GroupId}, Tags: []types.Tag{{Key: aws.String("k"), Value: aws.String("v")}}}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if v := e.String(`SELECT tags->>'k' FROM security_group WHERE group_name = 'oob'`); v != "v" {
		t.Errorf("out-of-band tag not pulled: %q", v)
	}
	if _, err := e.ec2.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: out.GroupId}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // a commit leaves what it does not act on as last read
	if n := e.Count(`SELECT count(*) FROM security_group WHERE group_name = 'oob'`); n != 0 {
		t.Error("a group deleted in the cloud kept its row")
	}

	// The user deletes web: its rules go with it.
	e.Exec(`DELETE FROM security_group WHERE group_name = 'web'`)
	e.Commit()
	if _, ok := e.cloudGroup("web"); ok {
		t.Error("deleted group still in the cloud")
	}
}

// TestReplacementDance: changing the description of a group other groups
// reference replaces it under the same name; the referencing rule follows;
// nothing is left behind; the next cycle has nothing to do.
func TestReplacementDance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('app', 'v1'), ('db', 'database')`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4)
		   SELECT id, 'tcp', 80, 80, '10.0.0.0/8' FROM security_group WHERE group_name = 'app'`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, source_security_group_id)
		   SELECT d.id, 'tcp', 5432, 5432, a.id FROM security_group d, security_group a WHERE d.group_name = 'db' AND a.group_name = 'app'`)
	e.Commit()
	rowID := e.String(`SELECT id::text FROM security_group WHERE group_name = 'app'`)
	old, _ := e.cloudGroup("app")
	rulesBefore := e.Count(`SELECT count(*) FROM security_group_rule`)

	e.Exec(`UPDATE security_group SET description = 'v2' WHERE group_name = 'app'`)
	e.Commit()

	now, ok := e.cloudGroup("app")
	if !ok || aws.ToString(now.Description) != "v2" || aws.ToString(now.GroupId) == aws.ToString(old.GroupId) {
		t.Fatalf("after the replacement: group app %v %s %s (old %s)", ok, aws.ToString(now.Description), aws.ToString(now.GroupId), aws.ToString(old.GroupId))
	}
	if _, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{*old.GroupId}}); err == nil {
		t.Error("the old group still exists")
	}
	all, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range all.SecurityGroups {
		if strings.Contains(aws.ToString(g.GroupName), "-iasql-") {
			t.Errorf("temporary group %s left behind", aws.ToString(g.GroupName))
		}
	}
	if id := e.String(`SELECT id::text FROM security_group WHERE group_name = 'app'`); id != rowID {
		t.Errorf("the row's id changed: %s -> %s", rowID, id)
	}
	if gid := e.String(`SELECT group_id FROM security_group WHERE group_name = 'app'`); gid != *now.GroupId {
		t.Errorf("row group_id %s, cloud %s", gid, *now.GroupId)
	}
	db, _ := e.cloudGroup("db")
	if got := e.cloudRules(*db.GroupId); !slices.Contains(got, "in tcp 5432 "+*now.GroupId) {
		t.Errorf("db's rule does not reference the new app group: %v", got)
	}
	if got := e.cloudRules(*now.GroupId); !slices.Contains(got, "in tcp 80 10.0.0.0/8") {
		t.Errorf("app's rule was not recreated on the new group: %v", got)
	}
	if n := e.Count(`SELECT count(*) FROM security_group_rule`); n != rulesBefore {
		t.Errorf("%d rule rows after the replacement, %d before", n, rulesBefore)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_replacements`); n != 0 {
		t.Errorf("%d replacements left unfinished", n)
	}
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the cycle after the replacement still changes the cloud: %v", m)
	}
}

// TestDeleteReferencedTogether: a group, the group whose rule references
// it, and their rules, deleted in one commit, converge.
func TestDeleteReferencedTogether(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('a', 'a'), ('b', 'b')`,
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, source_security_group_id)
		   SELECT b.id, 'tcp', 1, 2, a.id FROM security_group a, security_group b WHERE a.group_name = 'a' AND b.group_name = 'b'`,
		`INSERT INTO security_group_rule (security_group_id, is_egress, ip_protocol, source_security_group_id)
		   SELECT a.id, true, '-1', b.id FROM security_group a, security_group b WHERE a.group_name = 'a' AND b.group_name = 'b'`)
	e.Commit()
	e.Exec(`DELETE FROM security_group WHERE group_name IN ('a', 'b')`)
	e.Commit()
	for _, n := range []string{"a", "b"} {
		if _, ok := e.cloudGroup(n); ok {
			t.Errorf("group %s still in the cloud", n)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'outcome' <> 'done'`); n != 0 {
		t.Errorf("%d cycles did not end done", n)
	}
}
