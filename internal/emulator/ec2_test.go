package emulator_test

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
)

func ec2Filter(name string, values ...string) types.Filter {
	return types.Filter{Name: aws.String(name), Values: values}
}

func ec2Tags(kv ...string) []types.Tag {
	var tags []types.Tag
	for i := 0; i+1 < len(kv); i += 2 {
		tags = append(tags, types.Tag{Key: aws.String(kv[i]), Value: aws.String(kv[i+1])})
	}
	return tags
}

func ec2TagMap(tags []types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func mkVpc(t testing.TB, c *ec2.Client, cidr string) string {
	t.Helper()
	out, err := c.CreateVpc(context.Background(), &ec2.CreateVpcInput{CidrBlock: aws.String(cidr)})
	if err != nil {
		t.Fatalf("create VPC %s: %v", cidr, err)
	}
	return aws.ToString(out.Vpc.VpcId)
}

func mkGroup(t testing.TB, c *ec2.Client, name, vpcID string) string {
	t.Helper()
	in := &ec2.CreateSecurityGroupInput{GroupName: aws.String(name), Description: aws.String("group " + name)}
	if vpcID != "" {
		in.VpcId = aws.String(vpcID)
	}
	out, err := c.CreateSecurityGroup(context.Background(), in)
	if err != nil {
		t.Fatalf("create security group %s: %v", name, err)
	}
	return aws.ToString(out.GroupId)
}

func ec2RulesOf(t *testing.T, c *ec2.Client, groupID string) []types.SecurityGroupRule {
	t.Helper()
	out, err := c.DescribeSecurityGroupRules(t.Context(), &ec2.DescribeSecurityGroupRulesInput{
		Filters: []types.Filter{ec2Filter("group-id", groupID)},
	})
	if err != nil {
		t.Fatalf("describe rules of %s: %v", groupID, err)
	}
	return out.SecurityGroupRules
}

func ec2TCP(port int32, cidrs ...string) types.IpPermission {
	p := types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port)}
	for _, c := range cidrs {
		p.IpRanges = append(p.IpRanges, types.IpRange{CidrIp: aws.String(c)})
	}
	return p
}

var (
	ec2VpcIDRe    = regexp.MustCompile(`^vpc-[0-9a-f]{17}$`)
	ec2SubnetIDRe = regexp.MustCompile(`^subnet-[0-9a-f]{17}$`)
	ec2GroupIDRe  = regexp.MustCompile(`^sg-[0-9a-f]{17}$`)
	ec2RuleIDRe   = regexp.MustCompile(`^sgr-[0-9a-f]{17}$`)
)

func TestEC2DefaultResources(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	seen := map[string]string{} // id -> region
	for _, region := range []string{"us-east-1", "eu-west-1"} {
		c := client(region)
		ctx := t.Context()
		vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{ec2Filter("is-default", "true")}})
		if err != nil {
			t.Fatalf("%s: describe default VPC: %v", region, err)
		}
		if len(vpcs.Vpcs) != 1 {
			t.Fatalf("%s: %d default VPCs, want 1", region, len(vpcs.Vpcs))
		}
		vpc := vpcs.Vpcs[0]
		if !ec2VpcIDRe.MatchString(aws.ToString(vpc.VpcId)) || aws.ToString(vpc.CidrBlock) != "172.31.0.0/16" ||
			!aws.ToBool(vpc.IsDefault) || vpc.State != types.VpcStateAvailable || aws.ToString(vpc.OwnerId) != emulator.DefaultAccountID {
			t.Errorf("%s: default VPC %+v", region, vpc)
		}
		vpcID := aws.ToString(vpc.VpcId)
		seen[vpcID] = region

		zones, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{})
		if err != nil {
			t.Fatalf("%s: describe zones: %v", region, err)
		}
		subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
			ec2Filter("vpc-id", vpcID), ec2Filter("default-for-az", "true")}})
		if err != nil {
			t.Fatalf("%s: describe default subnets: %v", region, err)
		}
		if len(subnets.Subnets) != len(zones.AvailabilityZones) || len(zones.AvailabilityZones) != 3 {
			t.Fatalf("%s: %d default subnets for %d zones", region, len(subnets.Subnets), len(zones.AvailabilityZones))
		}
		byZone := map[string]string{}
		for _, sn := range subnets.Subnets {
			if !ec2SubnetIDRe.MatchString(aws.ToString(sn.SubnetId)) || !aws.ToBool(sn.DefaultForAz) || !aws.ToBool(sn.MapPublicIpOnLaunch) ||
				aws.ToInt32(sn.AvailableIpAddressCount) != 4091 || !strings.HasPrefix(aws.ToString(sn.SubnetArn), "arn:aws:ec2:"+region+":") {
				t.Errorf("%s: default subnet %+v", region, sn)
			}
			byZone[aws.ToString(sn.AvailabilityZone)] = aws.ToString(sn.CidrBlock)
			seen[aws.ToString(sn.SubnetId)] = region
		}
		for i, z := range zones.AvailabilityZones {
			if want := fmt.Sprintf("172.31.%d.0/20", 16*i); byZone[aws.ToString(z.ZoneName)] != want {
				t.Errorf("%s: subnet of %s is %q, want %s", region, aws.ToString(z.ZoneName), byZone[aws.ToString(z.ZoneName)], want)
			}
			if aws.ToString(z.RegionName) != region || z.State != types.AvailabilityZoneStateAvailable {
				t.Errorf("%s: zone %+v", region, z)
			}
		}

		groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{
			ec2Filter("vpc-id", vpcID), ec2Filter("group-name", "default")}})
		if err != nil {
			t.Fatalf("%s: describe default group: %v", region, err)
		}
		if len(groups.SecurityGroups) != 1 {
			t.Fatalf("%s: %d default groups", region, len(groups.SecurityGroups))
		}
		g := groups.SecurityGroups[0]
		gid := aws.ToString(g.GroupId)
		seen[gid] = region
		if !ec2GroupIDRe.MatchString(gid) || aws.ToString(g.Description) != "default VPC security group" {
			t.Errorf("%s: default group %+v", region, g)
		}
		if len(g.IpPermissions) != 1 || aws.ToString(g.IpPermissions[0].IpProtocol) != "-1" ||
			len(g.IpPermissions[0].UserIdGroupPairs) != 1 || aws.ToString(g.IpPermissions[0].UserIdGroupPairs[0].GroupId) != gid {
			t.Errorf("%s: default group ingress %+v, want all traffic from itself", region, g.IpPermissions)
		}
		if len(g.IpPermissionsEgress) != 1 || aws.ToString(g.IpPermissionsEgress[0].IpProtocol) != "-1" ||
			len(g.IpPermissionsEgress[0].IpRanges) != 1 || aws.ToString(g.IpPermissionsEgress[0].IpRanges[0].CidrIp) != "0.0.0.0/0" {
			t.Errorf("%s: default group egress %+v, want all traffic to 0.0.0.0/0", region, g.IpPermissionsEgress)
		}
		for _, r := range ec2RulesOf(t, c, gid) {
			if !ec2RuleIDRe.MatchString(aws.ToString(r.SecurityGroupRuleId)) || aws.ToInt32(r.FromPort) != -1 || aws.ToInt32(r.ToPort) != -1 {
				t.Errorf("%s: default rule %+v", region, r)
			}
			seen[aws.ToString(r.SecurityGroupRuleId)] = region
		}
	}
	// 2 regions x (VPC + 3 subnets + group + 2 rules), all ids distinct.
	if len(seen) != 14 {
		t.Errorf("%d distinct ids across two regions, want 14: %v", len(seen), seen)
	}
}

func TestEC2RegionsAndZones(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-east-2")
	ctx := t.Context()
	all, err := c.DescribeRegions(ctx, &ec2.DescribeRegionsInput{AllRegions: aws.Bool(true)})
	if err != nil {
		t.Fatalf("describe regions: %v", err)
	}
	if len(all.Regions) != len(emulator.Regions()) {
		t.Errorf("%d regions, want %d", len(all.Regions), len(emulator.Regions()))
	}
	for _, r := range all.Regions {
		name := aws.ToString(r.RegionName)
		if aws.ToString(r.Endpoint) != "ec2."+name+".amazonaws.com" || aws.ToString(r.OptInStatus) != "opt-in-not-required" {
			t.Errorf("region %+v", r)
		}
	}
	some, err := c.DescribeRegions(ctx, &ec2.DescribeRegionsInput{RegionNames: []string{"eu-west-1", "us-west-2"}})
	if err != nil || len(some.Regions) != 2 {
		t.Fatalf("describe two regions: %v, %+v", err, some)
	}
	_, err = c.DescribeRegions(ctx, &ec2.DescribeRegionsInput{RegionNames: []string{"mars-north-1"}})
	if errCode(err) != "InvalidParameterValue" {
		t.Errorf("unknown region name: %v, want InvalidParameterValue", err)
	}
	zones, err := c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-2b"}})
	if err != nil || len(zones.AvailabilityZones) != 1 || aws.ToString(zones.AvailabilityZones[0].ZoneId) != "use2-az2" {
		t.Errorf("zone us-east-2b: %v, %+v", err, zones)
	}
	_, err = c.DescribeAvailabilityZones(ctx, &ec2.DescribeAvailabilityZonesInput{ZoneNames: []string{"us-east-1a"}})
	if errCode(err) != "InvalidParameterValue" {
		t.Errorf("zone of another region: %v, want InvalidParameterValue", err)
	}
}

func TestEC2VpcsAndSubnets(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	created, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{
		CidrBlock: aws.String("10.0.0.0/16"),
		TagSpecifications: []types.TagSpecification{{
			ResourceType: types.ResourceTypeVpc, Tags: ec2Tags("Name", "main", "env", "test")}},
	})
	if err != nil {
		t.Fatalf("create VPC: %v", err)
	}
	vpcID := aws.ToString(created.Vpc.VpcId)
	if !ec2VpcIDRe.MatchString(vpcID) || aws.ToBool(created.Vpc.IsDefault) || ec2TagMap(created.Vpc.Tags)["Name"] != "main" {
		t.Errorf("created VPC %+v", created.Vpc)
	}
	for _, f := range [][]types.Filter{
		{ec2Filter("tag:Name", "main")},
		{ec2Filter("tag:Name", "ma*")},
		{ec2Filter("tag-key", "env"), ec2Filter("cidr", "10.0.0.0/16")},
		{ec2Filter("vpc-id", vpcID), ec2Filter("is-default", "false")},
	} {
		out, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: f})
		if err != nil || len(out.Vpcs) != 1 || aws.ToString(out.Vpcs[0].VpcId) != vpcID {
			t.Errorf("describe VPCs by %+v: %v, %+v", f, err, out)
		}
	}
	byID, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}})
	if err != nil || len(byID.Vpcs) != 1 || byID.Vpcs[0].State != types.VpcStateAvailable ||
		aws.ToString(byID.Vpcs[0].CidrBlockAssociationSet[0].CidrBlock) != "10.0.0.0/16" {
		t.Errorf("describe VPC by id: %v, %+v", err, byID)
	}
	// Its default security group exists.
	groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("vpc-id", vpcID)}})
	if err != nil || len(groups.SecurityGroups) != 1 || aws.ToString(groups.SecurityGroups[0].GroupName) != "default" {
		t.Fatalf("groups of the new VPC: %v, %+v", err, groups)
	}
	defaultGroup := aws.ToString(groups.SecurityGroups[0].GroupId)

	sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.1.0/24"),
		AvailabilityZone:  aws.String("us-east-1b"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSubnet, Tags: ec2Tags("Name", "a")}}})
	if err != nil {
		t.Fatalf("create subnet: %v", err)
	}
	subnetID := aws.ToString(sn.Subnet.SubnetId)
	if aws.ToString(sn.Subnet.AvailabilityZone) != "us-east-1b" || aws.ToString(sn.Subnet.VpcId) != vpcID ||
		aws.ToBool(sn.Subnet.DefaultForAz) || aws.ToInt32(sn.Subnet.AvailableIpAddressCount) != 251 {
		t.Errorf("created subnet %+v", sn.Subnet)
	}
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{
		ec2Filter("vpc-id", vpcID), ec2Filter("availability-zone", "us-east-1b"), ec2Filter("tag:Name", "a")}})
	if err != nil || len(subnets.Subnets) != 1 || aws.ToString(subnets.Subnets[0].SubnetId) != subnetID {
		t.Errorf("describe subnet by filters: %v, %+v", err, subnets)
	}
	group := mkGroup(t, c, "app", vpcID)

	wantCodes(t, []errCase{
		{"subnet outside the VPC", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.1.0.0/24")})
			return err
		}, "InvalidSubnet.Range"},
		{"subnet too large", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.0.0/15")})
			return err
		}, "InvalidSubnet.Range"},
		{"overlapping subnet", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.0.0/20")})
			return err
		}, "InvalidSubnet.Conflict"},
		{"zone of another region", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.9.0/24"),
				AvailabilityZone: aws.String("eu-west-1a")})
			return err
		}, "InvalidParameterValue"},
		{"subnet in an unknown VPC", func() error {
			_, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String("vpc-0123456789abcdef0"), CidrBlock: aws.String("10.0.9.0/24")})
			return err
		}, "InvalidVpcID.NotFound"},
		{"VPC too large", func() error {
			_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.0/8")})
			return err
		}, "InvalidVpc.Range"},
		{"malformed VPC CIDR", func() error {
			_, err := c.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.0.0.300/16")})
			return err
		}, "InvalidParameterValue"},
		{"describe an unknown VPC", func() error {
			_, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpcID, "vpc-0123456789abcdef0"}})
			return err
		}, "InvalidVpcID.NotFound"},
		{"describe an unknown subnet", func() error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{"subnet-0123456789abcdef0"}})
			return err
		}, "InvalidSubnetID.NotFound"},
		{"unknown filter", func() error {
			_, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{ec2Filter("colour", "blue")}})
			return err
		}, "InvalidParameterValue"},
		{"delete an unknown VPC", func() error {
			_, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String("vpc-0123456789abcdef0")})
			return err
		}, "InvalidVpcID.NotFound"},
		{"delete an unknown subnet", func() error {
			_, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String("subnet-0123456789abcdef0")})
			return err
		}, "InvalidSubnetID.NotFound"},
		{"delete a VPC with a subnet and a group", func() error {
			_, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpcID)})
			return err
		}, "DependencyViolation"},
		{"dry run", func() error {
			_, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpcID), DryRun: aws.Bool(true)})
			return err
		}, "DryRunOperation"},
	})

	if _, err := c.DeleteSubnet(ctx, &ec2.DeleteSubnetInput{SubnetId: aws.String(subnetID)}); err != nil {
		t.Fatalf("delete subnet: %v", err)
	}
	if _, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpcID)}); errCode(err) != "DependencyViolation" {
		t.Errorf("delete a VPC with a group: %v, want DependencyViolation", err)
	}
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(group)}); err != nil {
		t.Fatalf("delete group: %v", err)
	}
	if _, err := c.DeleteVpc(ctx, &ec2.DeleteVpcInput{VpcId: aws.String(vpcID)}); err != nil {
		t.Fatalf("delete VPC: %v", err)
	}
	if _, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{defaultGroup}}); errCode(err) != "InvalidGroup.NotFound" {
		t.Errorf("the deleted VPC's default group: %v, want InvalidGroup.NotFound", err)
	}
	if _, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}}); errCode(err) != "InvalidVpcID.NotFound" {
		t.Errorf("the deleted VPC: %v, want InvalidVpcID.NotFound", err)
	}
}

func TestEC2SecurityGroups(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	out, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String("web"), Description: aws.String("web servers"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroup, Tags: ec2Tags("team", "a")}},
	})
	if err != nil {
		t.Fatalf("create group: %v", err)
	}
	web := aws.ToString(out.GroupId)
	if !ec2GroupIDRe.MatchString(web) || aws.ToString(out.SecurityGroupArn) != "arn:aws:ec2:us-east-1:"+emulator.DefaultAccountID+":security-group/"+web ||
		ec2TagMap(out.Tags)["team"] != "a" {
		t.Errorf("created group %+v", out)
	}
	got, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{web}})
	if err != nil || len(got.SecurityGroups) != 1 {
		t.Fatalf("describe group: %v, %+v", err, got)
	}
	g := got.SecurityGroups[0]
	if aws.ToString(g.GroupName) != "web" || aws.ToString(g.Description) != "web servers" || len(g.IpPermissions) != 0 ||
		len(g.IpPermissionsEgress) != 1 || aws.ToString(g.IpPermissionsEgress[0].IpRanges[0].CidrIp) != "0.0.0.0/0" ||
		aws.ToString(g.OwnerId) != emulator.DefaultAccountID || ec2TagMap(g.Tags)["team"] != "a" {
		t.Errorf("described group %+v", g)
	}
	defaults, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []types.Filter{ec2Filter("is-default", "true")}})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(g.VpcId) != aws.ToString(defaults.Vpcs[0].VpcId) {
		t.Errorf("group in VPC %s, want the default VPC", aws.ToString(g.VpcId))
	}
	for _, f := range [][]types.Filter{
		{ec2Filter("group-name", "web")},
		{ec2Filter("description", "web *")},
		{ec2Filter("group-name", "w?b", "nothing")},
		{ec2Filter("tag:team", "a", "b")},
		{ec2Filter("group-id", web)},
	} {
		out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: f})
		if err != nil || len(out.SecurityGroups) != 1 || aws.ToString(out.SecurityGroups[0].GroupId) != web {
			t.Errorf("describe groups by %+v: %v, %+v", f, err, out)
		}
	}
	byName, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"web", "default"}})
	if err != nil || len(byName.SecurityGroups) != 2 {
		t.Errorf("describe groups by name: %v, %+v", err, byName)
	}

	db := mkGroup(t, c, "db", "")
	if _, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(db),
		IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(5432), ToPort: aws.Int32(5432),
			UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String(web)}}}},
	}); err != nil {
		t.Fatalf("allow web to db: %v", err)
	}
	var defaultGroup string
	for _, sg := range byName.SecurityGroups {
		if aws.ToString(sg.GroupName) == "default" {
			defaultGroup = aws.ToString(sg.GroupId)
		}
	}
	long := strings.Repeat("x", 256)
	wantCodes(t, []errCase{
		{"same name in the same VPC", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("web"), Description: aws.String("again")})
			return err
		}, "InvalidGroup.Duplicate"},
		{"unknown VPC", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("x"), Description: aws.String("x"),
				VpcId: aws.String("vpc-0123456789abcdef0")})
			return err
		}, "InvalidVpcID.NotFound"},
		{"reserved name", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("default"), Description: aws.String("x")})
			return err
		}, "InvalidParameterValue"},
		{"empty name", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(""), Description: aws.String("x")})
			return err
		}, "InvalidParameterValue"},
		{"long description", func() error {
			_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("y"), Description: aws.String(long)})
			return err
		}, "InvalidParameterValue"},
		{"describe an unknown group", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{web, "sg-0123456789abcdef0"}})
			return err
		}, "InvalidGroup.NotFound"},
		{"describe an unknown group name", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupNames: []string{"nope"}})
			return err
		}, "InvalidGroup.NotFound"},
		{"delete an unknown group", func() error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String("sg-0123456789abcdef0")})
			return err
		}, "InvalidGroup.NotFound"},
		{"delete the default group", func() error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(defaultGroup)})
			return err
		}, "CannotDelete"},
		{"delete a referenced group", func() error {
			_, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(web)})
			return err
		}, "DependencyViolation"},
	})
	// Once the referencing group is gone, the referenced one can go.
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupName: aws.String("db")}); err != nil {
		t.Fatalf("delete db by name: %v", err)
	}
	del, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(web)})
	if err != nil || aws.ToString(del.GroupId) != web {
		t.Fatalf("delete web: %v, %+v", err, del)
	}
	if _, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{web}}); errCode(err) != "InvalidGroup.NotFound" {
		t.Errorf("deleted group: %v, want InvalidGroup.NotFound", err)
	}
}

func TestEC2SecurityGroupRules(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("eu-central-1")
	ctx := t.Context()
	app, lb := mkGroup(t, c, "app", ""), mkGroup(t, c, "lb", "")
	auth, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{
		GroupId: aws.String(app),
		IpPermissions: []types.IpPermission{
			{IpProtocol: aws.String("6"), FromPort: aws.Int32(443), ToPort: aws.Int32(443),
				IpRanges: []types.IpRange{
					{CidrIp: aws.String("10.0.0.0/8"), Description: aws.String("internal")},
					{CidrIp: aws.String("192.168.0.0/16")}},
				Ipv6Ranges:       []types.Ipv6Range{{CidrIpv6: aws.String("::/0"), Description: aws.String("v6")}},
				PrefixListIds:    []types.PrefixListId{{PrefixListId: aws.String("pl-63a5400a")}},
				UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String(lb), Description: aws.String("from the lb")}}},
			{IpProtocol: aws.String("all"), IpRanges: []types.IpRange{{CidrIp: aws.String("172.16.0.0/12")}}},
		},
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSecurityGroupRule, Tags: ec2Tags("k", "v")}},
	})
	if err != nil {
		t.Fatalf("authorize ingress: %v", err)
	}
	if !aws.ToBool(auth.Return) || len(auth.SecurityGroupRules) != 6 {
		t.Fatalf("authorize returned %v with %d rules, want 6", aws.ToBool(auth.Return), len(auth.SecurityGroupRules))
	}
	var toLB, all string
	for _, r := range auth.SecurityGroupRules {
		if !ec2RuleIDRe.MatchString(aws.ToString(r.SecurityGroupRuleId)) || aws.ToString(r.GroupId) != app || aws.ToBool(r.IsEgress) ||
			ec2TagMap(r.Tags)["k"] != "v" || aws.ToString(r.GroupOwnerId) != emulator.DefaultAccountID {
			t.Errorf("authorized rule %+v", r)
		}
		if r.ReferencedGroupInfo != nil {
			toLB = aws.ToString(r.SecurityGroupRuleId)
			if aws.ToString(r.ReferencedGroupInfo.GroupId) != lb || aws.ToString(r.Description) != "from the lb" ||
				aws.ToString(r.IpProtocol) != "tcp" || aws.ToInt32(r.FromPort) != 443 {
				t.Errorf("group rule %+v", r)
			}
		}
		if aws.ToString(r.IpProtocol) == "-1" {
			all = aws.ToString(r.SecurityGroupRuleId)
			if aws.ToInt32(r.FromPort) != -1 || aws.ToInt32(r.ToPort) != -1 || aws.ToString(r.CidrIpv4) != "172.16.0.0/12" {
				t.Errorf("all-traffic rule %+v", r)
			}
		}
	}
	if len(ec2RulesOf(t, c, app)) != 7 { // 6 and the default egress rule
		t.Errorf("app has %d rules, want 7", len(ec2RulesOf(t, c, app)))
	}
	described, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{app}})
	if err != nil {
		t.Fatal(err)
	}
	perms := described.SecurityGroups[0].IpPermissions
	if len(perms) != 2 {
		t.Fatalf("legacy ingress permissions %+v, want 2 (tcp 443, all)", perms)
	}
	https := perms[0]
	if aws.ToString(https.IpProtocol) != "tcp" || aws.ToInt32(https.FromPort) != 443 || len(https.IpRanges) != 2 || len(https.Ipv6Ranges) != 1 ||
		len(https.PrefixListIds) != 1 || len(https.UserIdGroupPairs) != 1 || aws.ToString(https.IpRanges[0].Description) != "internal" ||
		aws.ToString(https.UserIdGroupPairs[0].UserId) != emulator.DefaultAccountID {
		t.Errorf("legacy tcp 443 permission %+v", https)
	}
	if aws.ToString(perms[1].IpProtocol) != "-1" || perms[1].FromPort != nil {
		t.Errorf("legacy all-traffic permission %+v, want no ports", perms[1])
	}

	before := len(ec2RulesOf(t, c, app))
	wantCodes(t, []errCase{
		{"duplicate rule", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3.4/32"), ec2TCP(443, "10.0.0.0/8")}})
			return err
		}, "InvalidPermission.Duplicate"},
		{"duplicate within the request", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3.4/32", "1.2.3.4/32")}})
			return err
		}, "InvalidPermission.Duplicate"},
		{"tcp without ports", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"), IpRanges: []types.IpRange{{CidrIp: aws.String("1.2.3.4/32")}}}}})
			return err
		}, "InvalidParameterValue"},
		{"unknown protocol", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{{IpProtocol: aws.String("carrier-pigeon"), IpRanges: []types.IpRange{{CidrIp: aws.String("1.2.3.4/32")}}}}})
			return err
		}, "InvalidParameterValue"},
		{"malformed CIDR", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3/32")}})
			return err
		}, "InvalidParameterValue"},
		{"unknown group", func() error {
			_, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String("sg-0123456789abcdef0"),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3.4/32")}})
			return err
		}, "InvalidGroup.NotFound"},
		{"unknown referenced group", func() error {
			_, err := c.AuthorizeSecurityGroupEgress(ctx, &ec2.AuthorizeSecurityGroupEgressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{{IpProtocol: aws.String("-1"),
					UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String("sg-0123456789abcdef0")}}}}})
			return err
		}, "InvalidGroup.NotFound"},
		{"revoke an unknown rule id", func() error {
			_, err := c.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(app),
				SecurityGroupRuleIds: []string{toLB, "sgr-0123456789abcdef0"}})
			return err
		}, "InvalidSecurityGroupRuleId.NotFound"},
		{"revoke an ingress rule as egress", func() error {
			_, err := c.RevokeSecurityGroupEgress(ctx, &ec2.RevokeSecurityGroupEgressInput{GroupId: aws.String(app),
				SecurityGroupRuleIds: []string{toLB}})
			return err
		}, "InvalidSecurityGroupRuleId.NotFound"},
		{"revoke a rule that does not exist", func() error {
			_, err := c.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3.4/32")}})
			return err
		}, "InvalidPermission.NotFound"},
		{"describe an unknown rule", func() error {
			_, err := c.DescribeSecurityGroupRules(ctx, &ec2.DescribeSecurityGroupRulesInput{SecurityGroupRuleIds: []string{"sgr-0123456789abcdef0"}})
			return err
		}, "InvalidSecurityGroupRuleId.NotFound"},
		{"modify another group's rule", func() error {
			_, err := c.ModifySecurityGroupRules(ctx, &ec2.ModifySecurityGroupRulesInput{GroupId: aws.String(lb),
				SecurityGroupRules: []types.SecurityGroupRuleUpdate{{SecurityGroupRuleId: aws.String(toLB),
					SecurityGroupRule: &types.SecurityGroupRuleRequest{IpProtocol: aws.String("-1"), CidrIpv4: aws.String("1.1.1.1/32")}}}})
			return err
		}, "InvalidSecurityGroupRuleId.NotFound"},
		{"modify into a duplicate", func() error {
			_, err := c.ModifySecurityGroupRules(ctx, &ec2.ModifySecurityGroupRulesInput{GroupId: aws.String(app),
				SecurityGroupRules: []types.SecurityGroupRuleUpdate{{SecurityGroupRuleId: aws.String(toLB),
					SecurityGroupRule: &types.SecurityGroupRuleRequest{IpProtocol: aws.String("-1"), CidrIpv4: aws.String("172.16.0.0/12")}}}})
			return err
		}, "InvalidPermission.Duplicate"},
		{"describe descriptions of an unknown rule", func() error {
			_, err := c.UpdateSecurityGroupRuleDescriptionsEgress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsEgressInput{GroupId: aws.String(app),
				IpPermissions: []types.IpPermission{ec2TCP(22, "1.2.3.4/32")}})
			return err
		}, "InvalidPermission.NotFound"},
	})
	if after := len(ec2RulesOf(t, c, app)); after != before {
		t.Errorf("failed calls changed the rules: %d, then %d", before, after)
	}

	// Protocols are normalised like AWS's.
	for _, tc := range []struct {
		proto    string
		from, to *int32
		want     string
		wantFrom int32
	}{
		{"TCP", aws.Int32(80), aws.Int32(81), "tcp", 80},
		{"17", aws.Int32(53), aws.Int32(53), "udp", 53},
		{"1", aws.Int32(8), aws.Int32(0), "icmp", 8},
		{"icmp", nil, nil, "icmp", -1},
		{"50", aws.Int32(1), aws.Int32(2), "50", -1},
	} {
		out, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(lb),
			IpPermissions: []types.IpPermission{{IpProtocol: aws.String(tc.proto), FromPort: tc.from, ToPort: tc.to,
				IpRanges: []types.IpRange{{CidrIp: aws.String("10.9.9.9/32")}}}}})
		if err != nil {
			t.Errorf("protocol %s: %v", tc.proto, err)
			continue
		}
		r := out.SecurityGroupRules[0]
		if aws.ToString(r.IpProtocol) != tc.want || aws.ToInt32(r.FromPort) != tc.wantFrom {
			t.Errorf("protocol %s: rule %s %d, want %s %d", tc.proto, aws.ToString(r.IpProtocol), aws.ToInt32(r.FromPort), tc.want, tc.wantFrom)
		}
	}

	// Egress: authorize, update its description, revoke by permission.
	egress, err := c.AuthorizeSecurityGroupEgress(ctx, &ec2.AuthorizeSecurityGroupEgressInput{GroupId: aws.String(app),
		IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(5432), ToPort: aws.Int32(5432),
			UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String(lb)}}}}})
	if err != nil || len(egress.SecurityGroupRules) != 1 || !aws.ToBool(egress.SecurityGroupRules[0].IsEgress) {
		t.Fatalf("authorize egress: %v, %+v", err, egress)
	}
	if _, err := c.UpdateSecurityGroupRuleDescriptionsEgress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsEgressInput{GroupId: aws.String(app),
		IpPermissions: []types.IpPermission{{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(5432), ToPort: aws.Int32(5432),
			UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String(lb), Description: aws.String("to the db")}}}}}); err != nil {
		t.Errorf("update egress description: %v", err)
	}
	if _, err := c.UpdateSecurityGroupRuleDescriptionsIngress(ctx, &ec2.UpdateSecurityGroupRuleDescriptionsIngressInput{GroupId: aws.String(app),
		SecurityGroupRuleDescriptions: []types.SecurityGroupRuleDescription{{SecurityGroupRuleId: aws.String(all), Description: aws.String("everything")}}}); err != nil {
		t.Errorf("update ingress description: %v", err)
	}
	if _, err := c.ModifySecurityGroupRules(ctx, &ec2.ModifySecurityGroupRulesInput{GroupId: aws.String(app),
		SecurityGroupRules: []types.SecurityGroupRuleUpdate{{SecurityGroupRuleId: aws.String(toLB),
			SecurityGroupRule: &types.SecurityGroupRuleRequest{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(8443), ToPort: aws.Int32(8443),
				CidrIpv4: aws.String("10.10.0.0/16"), Description: aws.String("moved")}}}}); err != nil {
		t.Errorf("modify rule: %v", err)
	}
	rules, err := c.DescribeSecurityGroupRules(ctx, &ec2.DescribeSecurityGroupRulesInput{SecurityGroupRuleIds: []string{toLB, all, aws.ToString(egress.SecurityGroupRules[0].SecurityGroupRuleId)}})
	if err != nil || len(rules.SecurityGroupRules) != 3 {
		t.Fatalf("describe rules by id: %v, %+v", err, rules)
	}
	for _, r := range rules.SecurityGroupRules {
		id, desc := aws.ToString(r.SecurityGroupRuleId), aws.ToString(r.Description)
		switch {
		case id == toLB && (desc != "moved" || aws.ToInt32(r.FromPort) != 8443 || aws.ToString(r.CidrIpv4) != "10.10.0.0/16" || r.ReferencedGroupInfo != nil):
			t.Errorf("modified rule %+v", r)
		case id == all && desc != "everything":
			t.Errorf("rule with new description %+v", r)
		case aws.ToBool(r.IsEgress) && desc != "to the db":
			t.Errorf("egress rule with new description %+v", r)
		}
	}
	// lb is no longer referenced by app's ingress, but still by its egress.
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lb)}); errCode(err) != "DependencyViolation" {
		t.Errorf("delete lb referenced by an egress rule: %v, want DependencyViolation", err)
	}
	rev, err := c.RevokeSecurityGroupEgress(ctx, &ec2.RevokeSecurityGroupEgressInput{GroupId: aws.String(app),
		IpPermissions: []types.IpPermission{
			{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(5432), ToPort: aws.Int32(5432), UserIdGroupPairs: []types.UserIdGroupPair{{GroupId: aws.String(lb)}}},
			ec2TCP(1, "9.9.9.9/32")}})
	if err != nil || !aws.ToBool(rev.Return) || len(rev.RevokedSecurityGroupRules) != 1 || len(rev.UnknownIpPermissions) != 1 {
		t.Fatalf("revoke egress by permission: %v, %+v", err, rev)
	}
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(lb)}); err != nil {
		t.Errorf("delete lb once unreferenced: %v", err)
	}
	revoked, err := c.RevokeSecurityGroupIngress(ctx, &ec2.RevokeSecurityGroupIngressInput{GroupId: aws.String(app), SecurityGroupRuleIds: []string{toLB, all}})
	if err != nil || len(revoked.RevokedSecurityGroupRules) != 2 {
		t.Fatalf("revoke by ids: %v, %+v", err, revoked)
	}
	if n := len(ec2RulesOf(t, c, app)); n != 5 { // the 4 other tcp 443 targets and the default egress
		t.Errorf("app has %d rules after revoking, want 5", n)
	}
}

func TestEC2Tags(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-west-2")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.1.0.0/16")
	sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String("10.1.0.0/24")})
	if err != nil {
		t.Fatal(err)
	}
	subnet := aws.ToString(sn.Subnet.SubnetId)
	group := mkGroup(t, c, "tagged", vpc)
	rule := aws.ToString(ec2RulesOf(t, c, group)[0].SecurityGroupRuleId)
	ids := []string{vpc, subnet, group, rule}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: ids, Tags: ec2Tags("Name", "x", "env", "dev", "keep", "")}); err != nil {
		t.Fatalf("create tags: %v", err)
	}
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: ids, Tags: []types.Tag{
		{Key: aws.String("Name"), Value: aws.String("other")}, // value differs: kept
		{Key: aws.String("env")},                              // any value
	}}); err != nil {
		t.Fatalf("delete tags: %v", err)
	}
	want := map[string]string{"Name": "x", "keep": ""}
	check := func(what string, tags []types.Tag) {
		t.Helper()
		if got := ec2TagMap(tags); !maps.Equal(got, want) {
			t.Errorf("%s tags %v, want %v", what, got, want)
		}
	}
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpc}})
	if err != nil {
		t.Fatal(err)
	}
	check("VPC", vpcs.Vpcs[0].Tags)
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []types.Filter{ec2Filter("tag:Name", "x")}})
	if err != nil || len(subnets.Subnets) != 1 {
		t.Fatalf("subnets by tag: %v, %+v", err, subnets)
	}
	check("subnet", subnets.Subnets[0].Tags)
	groups, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{group}})
	if err != nil {
		t.Fatal(err)
	}
	check("group", groups.SecurityGroups[0].Tags)
	rules, err := c.DescribeSecurityGroupRules(ctx, &ec2.DescribeSecurityGroupRulesInput{Filters: []types.Filter{ec2Filter("tag-key", "keep")}})
	if err != nil || len(rules.SecurityGroupRules) != 1 {
		t.Fatalf("rules by tag key: %v, %+v", err, rules)
	}
	check("rule", rules.SecurityGroupRules[0].Tags)
	if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{vpc}}); err != nil {
		t.Fatalf("delete all tags: %v", err)
	}
	if vpcs, _ := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{VpcIds: []string{vpc}}); len(vpcs.Vpcs[0].Tags) != 0 {
		t.Errorf("VPC tags after deleting all: %v", vpcs.Vpcs[0].Tags)
	}

	for _, tc := range []struct{ id, code string }{
		{"vpc-0123456789abcdef0", "InvalidVpcID.NotFound"},
		{"subnet-0123456789abcdef0", "InvalidSubnetID.NotFound"},
		{"sg-0123456789abcdef0", "InvalidGroup.NotFound"},
		{"sgr-0123456789abcdef0", "InvalidSecurityGroupRuleId.NotFound"},
		{"banana", "InvalidID"},
	} {
		_, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{group, tc.id}, Tags: ec2Tags("a", "b")})
		if errCode(err) != tc.code {
			t.Errorf("tag %s: %v, want %s", tc.id, err, tc.code)
		}
		if _, err := c.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{tc.id}}); errCode(err) != tc.code {
			t.Errorf("untag %s: %v, want %s", tc.id, err, tc.code)
		}
	}
	if groups, _ := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{group}}); ec2TagMap(groups.SecurityGroups[0].Tags)["a"] != "" {
		t.Errorf("a failed CreateTags tagged %s", group)
	}
	if _, err := c.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{group}, Tags: ec2Tags("aws:x", "y")}); errCode(err) != "InvalidParameterValue" {
		t.Errorf("reserved tag key: %v, want InvalidParameterValue", err)
	}
}

// ec2Collect returns the ids of the items (read by items) of a listing's
// pages, failing on an id seen twice.
func ec2Collect[O, T any](t *testing.T, what string, pages []O, items func(O) []T, id func(T) string) []string {
	t.Helper()
	var ids []string
	seen := map[string]bool{}
	for _, page := range pages {
		for _, v := range items(page) {
			if seen[id(v)] {
				t.Fatalf("%s: %s listed twice", what, id(v))
			}
			seen[id(v)] = true
			ids = append(ids, id(v))
		}
	}
	return ids
}

func TestEC2Pagination(t *testing.T) {
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("ap-southeast-2")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.2.0.0/16")
	var groups, subnets []string
	for i := range 23 {
		g := mkGroup(t, c, fmt.Sprintf("g%02d", i), vpc)
		if _, err := c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: aws.String(g),
			IpPermissions: []types.IpPermission{ec2TCP(22, "10.0.0.0/8"), ec2TCP(80, "0.0.0.0/0")}}); err != nil {
			t.Fatal(err)
		}
		groups = append(groups, g)
		sn, err := c.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpc), CidrBlock: aws.String(fmt.Sprintf("10.2.%d.0/24", i))})
		if err != nil {
			t.Fatal(err)
		}
		subnets = append(subnets, aws.ToString(sn.Subnet.SubnetId))
	}
	for range 6 {
		mkVpc(t, c, "10.3.0.0/16")
	}

	gp := ec2.NewDescribeSecurityGroupsPaginator(c, &ec2.DescribeSecurityGroupsInput{Filters: []types.Filter{ec2Filter("vpc-id", vpc)}},
		func(o *ec2.DescribeSecurityGroupsPaginatorOptions) { o.Limit = 5 })
	got := ec2Collect(t, "groups", pages(t, gp.HasMorePages, gp.NextPage),
		func(out *ec2.DescribeSecurityGroupsOutput) []types.SecurityGroup { return out.SecurityGroups },
		func(g types.SecurityGroup) string { return aws.ToString(g.GroupId) })
	if len(got) != 24 { // 23 and the VPC's default group
		t.Errorf("%d groups of the VPC, want 24", len(got))
	}
	for _, g := range groups {
		if !slices.Contains(got, g) {
			t.Errorf("group %s not listed", g)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("groups not listed in id order: %v", got)
	}

	rp := ec2.NewDescribeSecurityGroupRulesPaginator(c, &ec2.DescribeSecurityGroupRulesInput{}, func(o *ec2.DescribeSecurityGroupRulesPaginatorOptions) { o.Limit = 7 })
	ruleItems := func(out *ec2.DescribeSecurityGroupRulesOutput) []types.SecurityGroupRule {
		return out.SecurityGroupRules
	}
	ruleID := func(r types.SecurityGroupRule) string { return aws.ToString(r.SecurityGroupRuleId) }
	rules := ec2Collect(t, "rules", pages(t, rp.HasMorePages, rp.NextPage), ruleItems, ruleID)
	// 23 groups x 3, the default VPC's group and 7 VPCs' default groups x 2.
	if want := 23*3 + 2 + 7*2; len(rules) != want {
		t.Errorf("%d rules, want %d", len(rules), want)
	}
	rp = ec2.NewDescribeSecurityGroupRulesPaginator(c, &ec2.DescribeSecurityGroupRulesInput{Filters: []types.Filter{ec2Filter("group-id", groups[:4]...)}},
		func(o *ec2.DescribeSecurityGroupRulesPaginatorOptions) { o.Limit = 5 })
	if n := len(ec2Collect(t, "rules of 4 groups", pages(t, rp.HasMorePages, rp.NextPage), ruleItems, ruleID)); n != 12 {
		t.Errorf("%d rules of 4 groups, want 12", n)
	}

	sp := ec2.NewDescribeSubnetsPaginator(c, &ec2.DescribeSubnetsInput{SubnetIds: subnets}, func(o *ec2.DescribeSubnetsPaginatorOptions) { o.Limit = 6 })
	if n := len(ec2Collect(t, "subnets", pages(t, sp.HasMorePages, sp.NextPage),
		func(out *ec2.DescribeSubnetsOutput) []types.Subnet { return out.Subnets },
		func(s types.Subnet) string { return aws.ToString(s.SubnetId) })); n != 23 {
		t.Errorf("%d subnets, want 23", n)
	}
	vp := ec2.NewDescribeVpcsPaginator(c, &ec2.DescribeVpcsInput{}, func(o *ec2.DescribeVpcsPaginatorOptions) { o.Limit = 5 })
	if n := len(ec2Collect(t, "VPCs", pages(t, vp.HasMorePages, vp.NextPage),
		func(out *ec2.DescribeVpcsOutput) []types.Vpc { return out.Vpcs },
		func(v types.Vpc) string { return aws.ToString(v.VpcId) })); n != 8 {
		t.Errorf("%d VPCs, want 8", n)
	}

	// Groups created and deleted between pages: the others are listed once.
	first, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(10), Filters: []types.Filter{ec2Filter("vpc-id", vpc)}})
	if err != nil || first.NextToken == nil {
		t.Fatalf("first page: %v, %+v", err, first)
	}
	for i := range 10 {
		mkGroup(t, c, fmt.Sprintf("late%d", i), vpc)
	}
	last := aws.ToString(first.SecurityGroups[9].GroupId)
	var gone string
	for _, g := range groups {
		if g > last && gone == "" {
			gone = g
		}
	}
	if _, err := c.DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String(gone)}); err != nil {
		t.Fatal(err)
	}
	listed := map[string]int{}
	for _, g := range first.SecurityGroups {
		listed[aws.ToString(g.GroupId)]++
	}
	for tok := first.NextToken; tok != nil; {
		out, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(10), NextToken: tok, Filters: []types.Filter{ec2Filter("vpc-id", vpc)}})
		if err != nil {
			t.Fatal(err)
		}
		for _, g := range out.SecurityGroups {
			listed[aws.ToString(g.GroupId)]++
		}
		tok = out.NextToken
	}
	for _, g := range groups {
		if g != gone && listed[g] != 1 {
			t.Errorf("group %s listed %d times across concurrent changes", g, listed[g])
		}
	}
	if listed[gone] != 0 {
		t.Errorf("deleted group %s listed", gone)
	}

	wantCodes(t, []errCase{
		{"MaxResults below 5", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(4)})
			return err
		}, "InvalidParameterValue"},
		{"MaxResults above 1000", func() error {
			_, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{MaxResults: aws.Int32(1001)})
			return err
		}, "InvalidParameterValue"},
		{"rules MaxResults below 5", func() error {
			_, err := c.DescribeSecurityGroupRules(ctx, &ec2.DescribeSecurityGroupRulesInput{MaxResults: aws.Int32(1)})
			return err
		}, "InvalidParameterValue"},
		{"subnets MaxResults above 1000", func() error {
			_, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{MaxResults: aws.Int32(5000)})
			return err
		}, "InvalidParameterValue"},
		{"bad token", func() error {
			_, err := c.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{NextToken: aws.String("not a token")})
			return err
		}, "InvalidPaginationToken"},
	})
}

func TestEC2FaultsAndProtocol(t *testing.T) {
	em, client, url := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	em.Inject(emulator.Fault{Op: "ec2:CreateSecurityGroup", Kind: emulator.Throttle, Times: 1})
	_, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("t"), Description: aws.String("t")})
	if errCode(err) != "RequestLimitExceeded" {
		t.Fatalf("throttled create: %v, want RequestLimitExceeded", err)
	}
	mkGroup(t, c, "t", "")
	if n := em.Calls()["ec2:CreateSecurityGroup"]; n != 2 {
		t.Errorf("%d CreateSecurityGroup calls counted, want 2", n)
	}

	em.Inject(emulator.Fault{Op: "ec2:*", Kind: emulator.ServerErrorAfter, Times: 1})
	if _, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("u"), Description: aws.String("u")}); errCode(err) != "InternalError" {
		t.Errorf("create failing after acting: %v, want InternalError", err)
	}
	if _, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("u"), Description: aws.String("u")}); errCode(err) != "InvalidGroup.Duplicate" {
		t.Errorf("retried create: %v, want InvalidGroup.Duplicate (the first one happened)", err)
	}

	for _, tc := range []struct {
		name, region, action string
		status               int
		code                 string
	}{
		{"unknown action", "us-east-1", "LaunchRockets", http.StatusBadRequest, "InvalidAction"},
		{"action not emulated", "us-east-1", "AllocateAddress", http.StatusNotImplemented, "NotImplemented"},
		{"unknown region", "mars-north-1", "DescribeVpcs", http.StatusUnauthorized, "AuthFailure"},
	} {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(ec2Form(tc.action)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/"+tc.region+"/ec2/aws4_request, SignedHeaders=host, Signature=0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || !strings.Contains(string(body), "<Response><Errors><Error><Code>"+tc.code+"</Code>") ||
			!strings.Contains(string(body), "<RequestID>") {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.code)
		}
	}
}

func ec2Form(action string) string {
	return url.Values{"Action": {action}, "Version": {"2016-11-15"}}.Encode()
}

// TestEC2ListingScale lists 20,000 rules of 5,000 groups by pages of
// 1000, as the benchmark does every cycle.
func TestEC2ListingScale(t *testing.T) {
	if testing.Short() {
		t.Skip("creates 5,000 security groups")
	}
	_, client, _ := sdkEnv(t, ec2.NewFromConfig)
	c := client("us-east-1")
	ctx := t.Context()
	vpc := mkVpc(t, c, "10.0.0.0/16")
	const groups, workers = 5000, 16
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < groups; i += workers {
				out, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(fmt.Sprintf("g%d", i)),
					Description: aws.String("scale"), VpcId: aws.String(vpc)})
				if err == nil {
					_, err = c.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: out.GroupId,
						IpPermissions: []types.IpPermission{ec2TCP(22, "10.0.0.0/8"), ec2TCP(443, "10.0.0.0/8", "192.168.0.0/16")}})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	start := time.Now()
	rp := ec2.NewDescribeSecurityGroupRulesPaginator(c, &ec2.DescribeSecurityGroupRulesInput{MaxResults: aws.Int32(1000)})
	rules := 0
	for _, out := range pages(t, rp.HasMorePages, rp.NextPage) {
		rules += len(out.SecurityGroupRules)
	}
	rulesTook := time.Since(start)
	start = time.Now()
	gp := ec2.NewDescribeSecurityGroupsPaginator(c, &ec2.DescribeSecurityGroupsInput{MaxResults: aws.Int32(1000)})
	n := 0
	for _, out := range pages(t, gp.HasMorePages, gp.NextPage) {
		n += len(out.SecurityGroups)
	}
	groupsTook := time.Since(start)
	// Plus the default VPC's and the new VPC's default groups.
	if rules != groups*4+4 || n != groups+2 {
		t.Errorf("listed %d rules and %d groups, want %d and %d", rules, n, groups*4+4, groups+2)
	}
	// Speed is make bench's to measure (cycle_nodiff_ms_sg_5k), not a test's.
	t.Logf("listed %d rules in %v, %d groups in %v", rules, rulesTook, n, groupsTook)
}

// ec2Call sends one EC2 request straight to the emulator's handler and
// returns the response body.
func ec2Call(tb testing.TB, em *emulator.Emulator, params url.Values) string {
	tb.Helper()
	params.Set("Version", "2016-11-15")
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(params.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/ec2/aws4_request, SignedHeaders=host, Signature=0")
	rec := httptest.NewRecorder()
	em.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		tb.Fatalf("%s: %d %s", params.Get("Action"), rec.Code, rec.Body)
	}
	return rec.Body.String()
}

var ec2NextTokenRe = regexp.MustCompile(`<nextToken>([^<]*)</nextToken>`)

// BenchmarkEC2ListRules measures the emulator's side of listing 20,000
// rules of 5,000 groups and the groups themselves by pages of 1000.
func BenchmarkEC2ListRules(b *testing.B) {
	em := emulator.New(emulator.Options{})
	groupID := regexp.MustCompile(`<groupId>([^<]*)</groupId>`)
	for i := range 5000 {
		body := ec2Call(b, em, url.Values{"Action": {"CreateSecurityGroup"}, "GroupName": {fmt.Sprintf("g%d", i)}, "GroupDescription": {"bench"}})
		ec2Call(b, em, url.Values{"Action": {"AuthorizeSecurityGroupIngress"}, "GroupId": {groupID.FindStringSubmatch(body)[1]},
			"IpPermissions.1.IpProtocol": {"tcp"}, "IpPermissions.1.FromPort": {"22"}, "IpPermissions.1.ToPort": {"22"},
			"IpPermissions.1.IpRanges.1.CidrIp": {"10.0.0.0/8"}, "IpPermissions.1.IpRanges.2.CidrIp": {"192.168.0.0/16"},
			"IpPermissions.1.IpRanges.3.CidrIp": {"172.16.0.0/12"}})
	}
	for b.Loop() {
		for _, action := range []string{"DescribeSecurityGroupRules", "DescribeSecurityGroups"} {
			token := ""
			for {
				params := url.Values{"Action": {action}, "MaxResults": {"1000"}}
				if token != "" {
					params.Set("NextToken", token)
				}
				m := ec2NextTokenRe.FindStringSubmatch(ec2Call(b, em, params))
				if m == nil {
					break
				}
				token = m[1]
			}
		}
	}
}
