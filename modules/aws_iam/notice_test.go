package aws_iam

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// CloudTrail records of IAM calls, shaped as AWS logs them
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/cloudtrail-integration.html).
const (
	createRole = `{"eventSource":"iam.amazonaws.com","eventName":"CreateRole","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app","assumeRolePolicyDocument":"{\"Version\":\"2012-10-17\",\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":{\"Service\":\"ec2.amazonaws.com\"},\"Action\":\"sts:AssumeRole\"}]}"},
		"responseElements":{"role":{"path":"/","roleName":"app","roleId":"AROAEXAMPLEID","arn":"arn:aws:iam::111122223333:role/app","createDate":"Nov 27, 2026 7:00:00 AM"}}}`
	attachRolePolicy = `{"eventSource":"iam.amazonaws.com","eventName":"AttachRolePolicy","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app","policyArn":"arn:aws:iam::111122223333:policy/team/read-logs"},"responseElements":null}`
	deleteRole = `{"eventSource":"iam.amazonaws.com","eventName":"DeleteRole","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app"},"responseElements":null}`
	tagRole = `{"eventSource":"iam.amazonaws.com","eventName":"TagRole","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app","tags":[{"key":"team","value":"web"}]},"responseElements":null}`
	createPolicy = `{"eventSource":"iam.amazonaws.com","eventName":"CreatePolicy","awsRegion":"us-east-1",
		"requestParameters":{"policyName":"read-logs","path":"/team/","policyDocument":"{\"Version\":\"2012-10-17\",\"Statement\":[]}"},
		"responseElements":{"policy":{"policyName":"read-logs","policyId":"ANPAEXAMPLEID","arn":"arn:aws:iam::111122223333:policy/team/read-logs",
			"path":"/team/","defaultVersionId":"v1","attachmentCount":0,"isAttachable":true}}}`
	setDefaultVersion = `{"eventSource":"iam.amazonaws.com","eventName":"SetDefaultPolicyVersion","awsRegion":"us-east-1",
		"requestParameters":{"policyArn":"arn:aws:iam::111122223333:policy/team/read-logs","versionId":"v2"},"responseElements":null}`
	deletePolicy = `{"eventSource":"iam.amazonaws.com","eventName":"DeletePolicy","awsRegion":"us-east-1",
		"requestParameters":{"policyArn":"arn:aws:iam::111122223333:policy/read-logs"},"responseElements":null}`
	tagManaged = `{"eventSource":"iam.amazonaws.com","eventName":"TagPolicy","awsRegion":"us-east-1",
		"requestParameters":{"policyArn":"arn:aws:iam::aws:policy/ReadOnlyAccess","tags":[]}}`
	createUser = `{"eventSource":"iam.amazonaws.com","eventName":"CreateUser","awsRegion":"us-east-1",
		"requestParameters":{"userName":"app"},"responseElements":{"user":{"userName":"app","arn":"arn:aws:iam::111122223333:user/app"}}}`
)

// TestRoleNoticed: the role a record names; calls that change nothing
// iam_role holds, and calls about policies alone or users, name none.
func TestRoleNoticed(t *testing.T) {
	trailtest.Run(t, &roleMapper{}, []trailtest.Case{
		{"CreateRole", createRole, []string{"app"}},
		{"AttachRolePolicy", attachRolePolicy, []string{"app"}},
		{"DeleteRole", deleteRole, []string{"app"}},
		{"TagRole", tagRole, nil},
		{"CreatePolicy", createPolicy, nil},
		{"CreateUser", createUser, nil},
	})
}

// TestPolicyNoticed: the customer managed policy a record names, by name
// (its ARN's last part); AWS managed policies, and calls about roles and
// users, name none.
func TestPolicyNoticed(t *testing.T) {
	trailtest.Run(t, &policyMapper{}, []trailtest.Case{
		{"CreatePolicy", createPolicy, []string{"read-logs"}},
		{"SetDefaultPolicyVersion, a policy with a path", setDefaultVersion, []string{"read-logs"}},
		{"DeletePolicy", deletePolicy, []string{"read-logs"}},
		{"an AWS managed policy", tagManaged, nil},
		{"AttachRolePolicy", attachRolePolicy, nil},
		{"CreateRole", createRole, nil},
		{"CreateUser", createUser, nil},
	})
}
