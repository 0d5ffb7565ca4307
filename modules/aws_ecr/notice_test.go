package aws_ecr

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// TestNoticed: the repository a record names, by name in the record's
// region, from records shaped as AWS logs them
// (https://docs.aws.amazon.com/AmazonECR/latest/userguide/logging-using-cloudtrail.html);
// image pushes, policies and other services' calls name none.
func TestNoticed(t *testing.T) {
	trailtest.Run(t, &repositoryMapper{}, []trailtest.Case{
		{"CreateRepository", `{"eventSource":"ecr.amazonaws.com","eventName":"CreateRepository","awsRegion":"us-east-2",
			"requestParameters":{"repositoryName":"testrepo"},
			"responseElements":{"repository":{"repositoryArn":"arn:aws:ecr:us-east-2:123456789012:repository/testrepo","repositoryName":"testrepo",
				"repositoryUri":"123456789012.dkr.ecr.us-east-2.amazonaws.com/testrepo","createdAt":"Jul 11, 2018 10:14:21 PM","registryId":"123456789012"}},
			"resources":[{"ARN":"arn:aws:ecr:us-east-2:123456789012:repository/testrepo","accountId":"123456789012"}]}`,
			[]string{`["testrepo","us-east-2"]`}},
		{"DeleteRepository", `{"eventSource":"ecr.amazonaws.com","eventName":"DeleteRepository","awsRegion":"eu-west-1",
			"requestParameters":{"repositoryName":"team/app","force":true},
			"responseElements":{"repository":{"repositoryName":"team/app","registryId":"123456789012"}}}`,
			[]string{`["team/app","eu-west-1"]`}},
		{"PutImageTagMutability", `{"eventSource":"ecr.amazonaws.com","eventName":"PutImageTagMutability","awsRegion":"eu-west-1",
			"requestParameters":{"repositoryName":"team/app","imageTagMutability":"IMMUTABLE"},
			"responseElements":{"registryId":"123456789012","repositoryName":"team/app","imageTagMutability":"IMMUTABLE"}}`,
			[]string{`["team/app","eu-west-1"]`}},
		{"PutImage", `{"eventSource":"ecr.amazonaws.com","eventName":"PutImage","awsRegion":"us-east-2",
			"requestParameters":{"repositoryName":"testrepo","imageTag":"latest","registryId":"123456789012"}}`, nil},
		{"SetRepositoryPolicy", `{"eventSource":"ecr.amazonaws.com","eventName":"SetRepositoryPolicy","awsRegion":"us-east-2",
			"requestParameters":{"repositoryName":"testrepo","policyText":"{}"}}`, nil},
		{"a CodeCommit repository", `{"eventSource":"codecommit.amazonaws.com","eventName":"DeleteRepository","awsRegion":"us-east-2",
			"requestParameters":{"repositoryName":"testrepo"}}`, nil},
	})
}
