package aws_ec2

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// TestNoticed: the instances a CloudTrail record names, from records
// shaped as AWS logs them (the EC2 User Guide's CloudTrail examples:
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html);
// records about other resources name none.
func TestNoticed(t *testing.T) {
	trailtest.Run(t, &instanceMapper{}, []trailtest.Case{
		{"RunInstances", `{"eventSource":"ec2.amazonaws.com","eventName":"RunInstances","awsRegion":"us-east-2",
			"requestParameters":{"instancesSet":{"items":[{"imageId":"ami-0b8eac7a0e8f1a6b3","minCount":1,"maxCount":1}]},"instanceType":"t3.micro"},
			"responseElements":{"requestId":"6f9f8a2c-1b8e-4a6d-9d8f-1c2b3a4d5e6f","reservationId":"r-0a1b2c3d4e5f67890","ownerId":"111122223333",
				"instancesSet":{"items":[{"instanceId":"i-0a1b2c3d4e5f67890","imageId":"ami-0b8eac7a0e8f1a6b3","instanceState":{"code":0,"name":"pending"}},
					{"instanceId":"i-0fedcba9876543210","imageId":"ami-0b8eac7a0e8f1a6b3","instanceState":{"code":0,"name":"pending"}}]}}}`,
			[]string{"i-0a1b2c3d4e5f67890", "i-0fedcba9876543210"}},
		{"StopInstances", `{"eventSource":"ec2.amazonaws.com","eventName":"StopInstances","awsRegion":"us-east-2",
			"requestParameters":{"instancesSet":{"items":[{"instanceId":"i-0a1b2c3d4e5f67890"}]},"force":false},
			"responseElements":{"requestId":"0bd6c8f1-2a3b-4c5d-8e9f-0a1b2c3d4e5f","instancesSet":{"items":[{"instanceId":"i-0a1b2c3d4e5f67890",
				"currentState":{"code":64,"name":"stopping"},"previousState":{"code":16,"name":"running"}}]}}}`,
			[]string{"i-0a1b2c3d4e5f67890"}},
		{"TerminateInstances", `{"eventSource":"ec2.amazonaws.com","eventName":"TerminateInstances","awsRegion":"eu-west-1",
			"requestParameters":{"instancesSet":{"items":[{"instanceId":"i-0123456789abcdef0"},{"instanceId":"i-0123456789abcdef1"}]}},
			"responseElements":{"instancesSet":{"items":[{"instanceId":"i-0123456789abcdef0"},{"instanceId":"i-0123456789abcdef1"}]}}}`,
			[]string{"i-0123456789abcdef0", "i-0123456789abcdef1"}},
		{"StartInstances", `{"eventSource":"ec2.amazonaws.com","eventName":"StartInstances","awsRegion":"eu-west-1",
			"requestParameters":{"instancesSet":{"items":[{"instanceId":"i-0123456789abcdef0"}]}},
			"responseElements":{"instancesSet":{"items":[{"instanceId":"i-0123456789abcdef0","currentState":{"code":0,"name":"pending"}}]}}}`,
			[]string{"i-0123456789abcdef0"}},
		{"ModifyInstanceAttribute", `{"eventSource":"ec2.amazonaws.com","eventName":"ModifyInstanceAttribute","awsRegion":"eu-west-1",
			"requestParameters":{"instanceId":"i-0123456789abcdef0","instanceType":{"value":"t3.small"}},
			"responseElements":{"requestId":"a1b2c3d4-5678-90ab-cdef-EXAMPLE11111","_return":true}}`,
			[]string{"i-0123456789abcdef0"}},
		{"CreateTags on an instance and a group", `{"eventSource":"ec2.amazonaws.com","eventName":"CreateTags","awsRegion":"us-east-2",
			"requestParameters":{"resourcesSet":{"items":[{"resourceId":"i-0a1b2c3d4e5f67890"},{"resourceId":"sg-0123456789abcdef0"}]},
				"tagSet":{"items":[{"key":"Name","value":"web"}]}},
			"responseElements":{"requestId":"b2c3d4e5-6789-0abc-def1-EXAMPLE22222","_return":true}}`,
			[]string{"i-0a1b2c3d4e5f67890"}},
		{"DeleteTags", `{"eventSource":"ec2.amazonaws.com","eventName":"DeleteTags","awsRegion":"us-east-2",
			"requestParameters":{"resourcesSet":{"items":[{"resourceId":"i-0a1b2c3d4e5f67890"}]},"tagSet":{"items":[{"key":"Name"}]}},
			"responseElements":{"_return":true}}`,
			[]string{"i-0a1b2c3d4e5f67890"}},
		{"CreateTags on a VPC", `{"eventSource":"ec2.amazonaws.com","eventName":"CreateTags","awsRegion":"us-east-2",
			"requestParameters":{"resourcesSet":{"items":[{"resourceId":"vpc-0123456789abcdef0"}]},"tagSet":{"items":[{"key":"Name","value":"main"}]}}}`,
			nil},
		{"a security group's rule", `{"eventSource":"ec2.amazonaws.com","eventName":"AuthorizeSecurityGroupIngress","awsRegion":"us-east-2",
			"requestParameters":{"groupId":"sg-0123456789abcdef0","ipPermissions":{"items":[{"ipProtocol":"tcp","fromPort":22,"toPort":22,"ipRanges":{"items":[{"cidrIp":"10.0.0.0/8"}]}}]}}}`,
			nil},
		{"another service's call of the same name", `{"eventSource":"ecs.amazonaws.com","eventName":"StopInstances","awsRegion":"us-east-2",
			"requestParameters":{"instancesSet":{"items":[{"instanceId":"i-0a1b2c3d4e5f67890"}]}}}`,
			nil},
	})
}
