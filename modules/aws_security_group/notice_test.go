package aws_security_group

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// CloudTrail records of EC2 calls on groups and rules, shaped as AWS logs
// them (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html;
// numbers as AWS logs them, or strings, as the emulator does).
const (
	createGroup = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateSecurityGroup","awsRegion":"eu-west-1",
		"requestParameters":{"groupName":"api","groupDescription":"api servers","vpcId":"vpc-0a1b2c3d4e5f67890"},
		"responseElements":{"requestId":"f6a7b8c9-0abc-def1-2345-EXAMPLE66666","_return":true,"groupId":"sg-0fedcba9876543210"}}`
	createDefaultVPCGroup = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateSecurityGroup","awsRegion":"eu-west-1",
		"requestParameters":{"groupName":"api","groupDescription":"api servers"},
		"responseElements":{"_return":true,"groupId":"sg-0fedcba9876543210"}}`
	deleteGroup = `{"eventSource":"ec2.amazonaws.com","eventName":"DeleteSecurityGroup","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0"},"responseElements":{"_return":true}}`
	tagGroups = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateTags","awsRegion":"eu-west-1",
		"requestParameters":{"resourcesSet":{"items":[{"resourceId":"sg-0123456789abcdef0"},{"resourceId":"sg-0000000000000000f"},{"resourceId":"i-0a1b2c3d4e5f67890"}]},
			"tagSet":{"items":[{"key":"team","value":"web"}]}},"responseElements":{"_return":true}}`
	authorizeHTTPS = `{"eventSource":"ec2.amazonaws.com","eventName":"AuthorizeSecurityGroupIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","ipPermissions":{"items":[{"ipProtocol":"tcp","fromPort":443,"toPort":443,
			"groups":{},"ipRanges":{"items":[{"cidrIp":"10.0.0.0/8"}]},"ipv6Ranges":{},"prefixListIds":{}}]}},
		"responseElements":{"requestId":"0abc1234-def5-6789-0abc-EXAMPLE77777","_return":true,"securityGroupRuleSet":{"items":[
			{"groupOwnerId":"111122223333","groupId":"sg-0123456789abcdef0","securityGroupRuleId":"sgr-0a1b2c3d4e5f67890","isEgress":false,
			 "ipProtocol":"tcp","fromPort":443,"toPort":443,"cidrIpv4":"10.0.0.0/8"}]}}}`
	authorizeFromGroup = `{"eventSource":"ec2.amazonaws.com","eventName":"AuthorizeSecurityGroupIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","ipPermissions":{"items":[{"ipProtocol":"-1","groups":{"items":[{"groupId":"sg-0fedcba9876543210"}]}}]}},
		"responseElements":{"_return":"true","securityGroupRuleSet":{"items":[{"groupId":"sg-0123456789abcdef0","securityGroupRuleId":"sgr-0b1b2c3d4e5f67890",
			"isEgress":"false","ipProtocol":"-1","fromPort":"-1","toPort":"-1","referencedGroupInfo":{"groupId":"sg-0fedcba9876543210","userId":"111122223333"}}]}}}`
	revoke = `{"eventSource":"ec2.amazonaws.com","eventName":"RevokeSecurityGroupEgress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","ipPermissions":{"items":[{"ipProtocol":"-1","ipRanges":{"items":[{"cidrIp":"0.0.0.0/0"}]}}]}},
		"responseElements":{"_return":true,"revokedSecurityGroupRuleSet":{"items":[{"groupId":"sg-0123456789abcdef0","securityGroupRuleId":"sgr-0c1b2c3d4e5f67890",
			"isEgress":true,"ipProtocol":"-1","fromPort":-1,"toPort":-1,"cidrIpv4":"0.0.0.0/0"}]}}}`
	revokeOlder = `{"eventSource":"ec2.amazonaws.com","eventName":"RevokeSecurityGroupIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","ipPermissions":{"items":[{"ipProtocol":"6","fromPort":22,"toPort":22,
			"ipRanges":{"items":[{"cidrIp":"10.0.0.0/8"}]},"ipv6Ranges":{"items":[{"cidrIpv6":"2001:db8::/32"}]}}]}},
		"responseElements":{"_return":true}}`
	revokeByID = `{"eventSource":"ec2.amazonaws.com","eventName":"RevokeSecurityGroupIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","securityGroupRuleIdSet":{"items":[{"securityGroupRuleId":"sgr-0a1b2c3d4e5f67890"}]}},
		"responseElements":{"_return":true}}`
	modifyRule = `{"eventSource":"ec2.amazonaws.com","eventName":"ModifySecurityGroupRules","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","securityGroupRuleSet":{"items":[{"securityGroupRuleId":"sgr-0a1b2c3d4e5f67890",
			"securityGroupRule":{"ipProtocol":"tcp","fromPort":8443,"toPort":8443,"cidrIpv4":"10.0.0.0/8","description":"https"}}]}},
		"responseElements":{"_return":true}}`
	describeByID = `{"eventSource":"ec2.amazonaws.com","eventName":"UpdateSecurityGroupRuleDescriptionsIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0123456789abcdef0","securityGroupRuleDescriptionSet":{"items":[{"securityGroupRuleId":"sgr-0a1b2c3d4e5f67890","description":"https"}]}},
		"responseElements":{"_return":true}}`
	unknownGroupRule = `{"eventSource":"ec2.amazonaws.com","eventName":"AuthorizeSecurityGroupIngress","awsRegion":"eu-west-1",
		"requestParameters":{"groupId":"sg-0000000000000000f"},
		"responseElements":{"_return":true,"securityGroupRuleSet":{"items":[{"groupId":"sg-0000000000000000f","isEgress":false,"ipProtocol":"tcp","fromPort":80,"toPort":80,"cidrIpv4":"0.0.0.0/0"}]}}}`
)

// seen are groups as the last read found them, sg-0123… (web) and
// sg-0fed… (api) in one VPC, and one rule of web's, sgr-0a1b… (https
// from 10.0.0.0/8).
func seen() *groups {
	g := &groups{t: GroupTable(), byID: map[string]groupRef{}, byCID: map[string]string{}}
	g.reset([]Group{
		{Name: "web", VPC: "vpc-0a1b2c3d4e5f67890", Region: "eu-west-1", ID: "sg-0123456789abcdef0"},
		{Name: "api", VPC: "vpc-0a1b2c3d4e5f67890", Region: "eu-west-1", ID: "sg-0fedcba9876543210"},
	}, nil)
	g.resetRules([]Rule{{ID: "sgr-0a1b2c3d4e5f67890", Group: ec2x.GroupCloudID(g.t, "vpc-0a1b2c3d4e5f67890", "web"), Protocol: "tcp",
		FromPort: aws.Int32(443), ToPort: aws.Int32(443), CidrIPv4: aws.String("10.0.0.0/8"), Region: "eu-west-1"}}, nil)
	return g
}

// TestGroupNoticed: the groups a record names, by name in their VPC;
// groups the last read did not find, and other resources, are not named.
func TestGroupNoticed(t *testing.T) {
	g := seen()
	web, api := ec2x.GroupCloudID(g.t, "vpc-0a1b2c3d4e5f67890", "web"), ec2x.GroupCloudID(g.t, "vpc-0a1b2c3d4e5f67890", "api")
	trailtest.Run(t, &groupMapper{g: g}, []trailtest.Case{
		{"CreateSecurityGroup", createGroup, []string{api}},
		{"CreateSecurityGroup in the default VPC", createDefaultVPCGroup, nil},
		{"DeleteSecurityGroup", deleteGroup, []string{web}},
		{"CreateTags", tagGroups, []string{web}},
		{"AuthorizeSecurityGroupIngress", authorizeHTTPS, nil},
		{"RevokeSecurityGroupEgress", revoke, nil},
	})
}

// TestRuleNoticed: the rules a record names, by what they allow (named
// by id, as the last read found them); rules of groups the last read did
// not find, and other resources, are not named.
func TestRuleNoticed(t *testing.T) {
	g := seen()
	web, api := ec2x.GroupCloudID(g.t, "vpc-0a1b2c3d4e5f67890", "web"), ec2x.GroupCloudID(g.t, "vpc-0a1b2c3d4e5f67890", "api")
	id := func(r Rule) string {
		s, err := cloudID(r)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	https := id(Rule{Group: web, Protocol: "tcp", FromPort: aws.Int32(443), ToPort: aws.Int32(443), CidrIPv4: aws.String("10.0.0.0/8")})
	fromAPI := id(Rule{Group: web, Protocol: "-1", Source: aws.String(api)})
	allOut := id(Rule{Group: web, Egress: true, Protocol: "-1", CidrIPv4: aws.String("0.0.0.0/0")})
	ssh4 := id(Rule{Group: web, Protocol: "tcp", FromPort: aws.Int32(22), ToPort: aws.Int32(22), CidrIPv4: aws.String("10.0.0.0/8")})
	ssh6 := id(Rule{Group: web, Protocol: "tcp", FromPort: aws.Int32(22), ToPort: aws.Int32(22), CidrIPv6: aws.String("2001:db8::/32")})
	https8443 := id(Rule{Group: web, Protocol: "tcp", FromPort: aws.Int32(8443), ToPort: aws.Int32(8443), CidrIPv4: aws.String("10.0.0.0/8")})
	apiOut := id(Rule{Group: api, Egress: true, Protocol: "-1", CidrIPv4: aws.String("0.0.0.0/0")})
	trailtest.Run(t, &ruleMapper{g: g}, []trailtest.Case{
		{"AuthorizeSecurityGroupIngress", authorizeHTTPS, []string{https}},
		{"AuthorizeSecurityGroupIngress from a group, values as strings", authorizeFromGroup, []string{fromAPI}},
		{"RevokeSecurityGroupEgress", revoke, []string{allOut}},
		{"RevokeSecurityGroupIngress without the revoked rules", revokeOlder, []string{ssh4, ssh6}},
		{"RevokeSecurityGroupIngress by rule id", revokeByID, []string{https}},
		{"UpdateSecurityGroupRuleDescriptionsIngress by rule id", describeByID, []string{https}},
		{"a rule id the last read did not find", `{"eventSource":"ec2.amazonaws.com","eventName":"RevokeSecurityGroupIngress","awsRegion":"eu-west-1",
			"requestParameters":{"groupId":"sg-0123456789abcdef0","securityGroupRuleIdSet":{"items":[{"securityGroupRuleId":"sgr-0000000000000000f"}]}}}`, nil},
		{"ModifySecurityGroupRules: the rule as it was and as it is", modifyRule, []string{https, https8443}},
		{"a group the last read did not find", unknownGroupRule, nil},
		{"CreateSecurityGroup: its default egress rule", createGroup, []string{apiOut}},
		{"CreateSecurityGroup in the default VPC", createDefaultVPCGroup, nil},
		{"DeleteSecurityGroup", deleteGroup, nil},
		{"CreateTags", tagGroups, nil},
	})
}
