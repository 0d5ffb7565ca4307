package aws_security_group

import (
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

// TestRuleRecords: a rule AWS lists is the record the engine compares
// with rows, as security_group_rule's record mapper rendered it before the
// table was typed: ports only for a protocol that has them, a target
// column only when AWS names it, groups by identity, and the group's
// region under the region key, which is no column.
func TestRuleRecords(t *testing.T) {
	g := &groups{t: GroupTable(), byID: map[string]groupRef{}, byCID: map[string]string{}}
	g.remember(Group{ID: "sg-1", Name: "web", VPC: "vpc-1", Region: "eu-west-1"})
	g.remember(Group{ID: "sg-2", Name: "db", VPC: "vpc-1", Region: "eu-west-1"})
	web, db := ec2x.GroupCloudID(GroupTable(), "vpc-1", "web"), ec2x.GroupCloudID(GroupTable(), "vpc-1", "db")
	m := &ruleMapper{g: g}
	base := types.SecurityGroupRule{SecurityGroupRuleId: aws.String("sgr-1"), GroupId: aws.String("sg-1"), IsEgress: aws.Bool(false)}
	with := func(f func(*types.SecurityGroupRule)) types.SecurityGroupRule { r := base; f(&r); return r }
	for _, tc := range []struct {
		name string
		rule types.SecurityGroupRule
		want module.Record // nil: left out
	}{
		{"tcp from a range", with(func(r *types.SecurityGroupRule) {
			r.IpProtocol, r.FromPort, r.ToPort, r.CidrIpv4, r.Description = aws.String("tcp"), aws.Int32(443), aws.Int32(443), aws.String("10.0.0.0/8"), aws.String("https")
		}), module.Record{"rule_id": "sgr-1", "security_group_id": web, "is_egress": false, "ip_protocol": "tcp",
			"from_port": module.Number(int64(443)), "to_port": module.Number(int64(443)), "cidr_ipv4": "10.0.0.0/8", "description": "https", "region": "eu-west-1"}},
		{"all traffic to a group: no ports", with(func(r *types.SecurityGroupRule) {
			r.IsEgress, r.IpProtocol, r.FromPort, r.ToPort = aws.Bool(true), aws.String("-1"), aws.Int32(-1), aws.Int32(-1)
			r.ReferencedGroupInfo = &types.ReferencedSecurityGroup{GroupId: aws.String("sg-2")}
		}), module.Record{"rule_id": "sgr-1", "security_group_id": web, "is_egress": true, "ip_protocol": "-1",
			"source_security_group_id": db, "description": "", "region": "eu-west-1"}},
		{"prefix list and IPv6", with(func(r *types.SecurityGroupRule) {
			r.IpProtocol, r.FromPort, r.ToPort, r.PrefixListId, r.CidrIpv6 = aws.String("udp"), aws.Int32(53), aws.Int32(53), aws.String("pl-1"), aws.String("::/0")
		}), module.Record{"rule_id": "sgr-1", "security_group_id": web, "is_egress": false, "ip_protocol": "udp",
			"from_port": module.Number(int64(53)), "to_port": module.Number(int64(53)), "prefix_list_id": "pl-1", "cidr_ipv6": "::/0", "description": "", "region": "eu-west-1"}},
		{"group not known", with(func(r *types.SecurityGroupRule) { r.GroupId, r.IpProtocol = aws.String("sg-9"), aws.String("-1") }), nil},
		{"source group not known", with(func(r *types.SecurityGroupRule) {
			r.IpProtocol, r.ReferencedGroupInfo = aws.String("-1"), &types.ReferencedSecurityGroup{GroupId: aws.String("sg-9")}
		}), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := m.rule("eu-west-1", tc.rule)
			if tc.want == nil {
				if got != nil {
					t.Fatalf("a rule of a group not known: got %+v, want it left out", *got)
				}
				return
			}
			if got == nil {
				t.Fatal("rule left out")
			}
			rec, err := ruleTable.Record(*got)
			if err != nil {
				t.Fatal(err)
			}
			want, err := RuleTable().Canonical(tc.want)
			if err != nil {
				t.Fatal(err)
			}
			// NULL is NULL, written or left out.
			isNull := func(_ string, v any) bool { return v == nil }
			maps.DeleteFunc(rec, isNull)
			if !maps.Equal(rec, want) {
				t.Fatalf("record\n got %v\nwant %v", rec, tc.want)
			}
			back, err := ruleTable.Value(rec)
			if err != nil {
				t.Fatal(err)
			}
			if back.Region != "eu-west-1" {
				t.Fatalf("region read back %q, want eu-west-1", back.Region)
			}
		})
	}
}
