package ccmapper_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/ccmapper"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/internal/trail/trailtest"
	"github.com/iasql/iasql/modules/module"
)

// typeOf parses the schema the emulator serves for a type (a copy of
// AWS's published schema) and makes its mapper (without clients: Noticed
// makes no call).
func typeOf(t *testing.T, file string) (*ccmapper.Mapper, module.Table) {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "internal", "emulator", "cfnschemas", file))
	if err != nil {
		t.Fatal(err)
	}
	ty, err := schema.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	return ccmapper.New(nil, ty, nil, ccmapper.Options{}), ty.ModuleTable()
}

// CloudTrail records shaped as AWS logs them: Cloud Control's
// (https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/logging-using-cloudtrail.html),
// SQS's (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-logging-using-cloudtrail.html),
// CloudWatch Logs' (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/logging_cw_api_calls.html),
// SNS's (https://docs.aws.amazon.com/sns/latest/dg/sns-logging-using-cloudtrail.html),
// IAM's (https://docs.aws.amazon.com/IAM/latest/UserGuide/cloudtrail-integration.html).
const (
	queueURL    = "https://sqs.us-east-2.amazonaws.com/123456789012/MyQueue"
	createQueue = `{"eventSource":"sqs.amazonaws.com","eventName":"CreateQueue","awsRegion":"us-east-2",
		"requestParameters":{"queueName":"MyQueue","attributes":{"VisibilityTimeout":"30"}},
		"responseElements":{"queueUrl":"` + queueURL + `"}}`
	setQueueAttributes = `{"eventSource":"sqs.amazonaws.com","eventName":"SetQueueAttributes","awsRegion":"us-east-2",
		"requestParameters":{"queueUrl":"` + queueURL + `","attributes":{"DelaySeconds":"5"}},"responseElements":null,
		"resources":[{"accountId":"123456789012","type":"AWS::SQS::Queue","ARN":"arn:aws:sqs:us-east-2:123456789012:MyQueue"}]}`
	deleteQueueSDK = `{"eventSource":"sqs.amazonaws.com","eventName":"DeleteQueue","awsRegion":"us-east-2",
		"requestParameters":{"QueueUrl":"` + queueURL + `"},"responseElements":null}`
	getQueueAttributes = `{"eventSource":"sqs.amazonaws.com","eventName":"GetQueueAttributes","awsRegion":"us-east-2",
		"requestParameters":{"queueUrl":"` + queueURL + `","attributeNames":["All"]}}`
	ccCreateQueue = `{"eventSource":"cloudcontrolapi.amazonaws.com","eventName":"CreateResource","awsRegion":"us-east-2",
		"requestParameters":{"typeName":"AWS::SQS::Queue","clientToken":"0f7e2d4c","desiredState":"HIDDEN_DUE_TO_SECURITY_REASONS"},
		"responseElements":{"progressEvent":{"typeName":"AWS::SQS::Queue","requestToken":"1a2b3c4d","operation":"CREATE","operationStatus":"IN_PROGRESS","eventTime":1.7e9}}}`
	ccDeleteQueue = `{"eventSource":"cloudcontrolapi.amazonaws.com","eventName":"DeleteResource","awsRegion":"us-east-2",
		"requestParameters":{"typeName":"AWS::SQS::Queue","identifier":"` + queueURL + `"},
		"responseElements":{"progressEvent":{"typeName":"AWS::SQS::Queue","identifier":"` + queueURL + `","operation":"DELETE","operationStatus":"IN_PROGRESS"}}}`
	ccCreateLogGroup = `{"eventSource":"cloudcontrolapi.amazonaws.com","eventName":"CreateResource","awsRegion":"eu-west-1",
		"requestParameters":{"TypeName":"AWS::Logs::LogGroup","DesiredState":"{\"LogGroupName\":\"CloudApiLogGroup\",\"RetentionInDays\":90}"},
		"responseElements":{"ProgressEvent":{"TypeName":"AWS::Logs::LogGroup","Operation":"CREATE","OperationStatus":"IN_PROGRESS"}}}`
	ccUpdateLogGroup = `{"eventSource":"cloudcontrolapi.amazonaws.com","eventName":"UpdateResource","awsRegion":"eu-west-1",
		"requestParameters":{"typeName":"AWS::Logs::LogGroup","identifier":"CloudApiLogGroup","patchDocument":"HIDDEN_DUE_TO_SECURITY_REASONS"}}`
	putRetention = `{"eventSource":"logs.amazonaws.com","eventName":"PutRetentionPolicy","awsRegion":"eu-west-1",
		"requestParameters":{"logGroupName":"CloudApiLogGroup","retentionInDays":30},"responseElements":null}`
	deleteLogGroupByARN = `{"eventSource":"logs.amazonaws.com","eventName":"DeleteLogGroup","awsRegion":"eu-west-1",
		"requestParameters":{"logGroupIdentifier":"arn:aws:logs:eu-west-1:123456789012:log-group:CloudApiLogGroup"},
		"resources":[{"ARN":"arn:aws:logs:eu-west-1:123456789012:log-group:CloudApiLogGroup:*"}]}`
	putLogEvents = `{"eventSource":"logs.amazonaws.com","eventName":"CreateLogStream","awsRegion":"eu-west-1",
		"requestParameters":{"logGroupName":"CloudApiLogGroup","logStreamName":"s1"}}`
	createTopic = `{"eventSource":"sns.amazonaws.com","eventName":"CreateTopic","awsRegion":"us-east-2",
		"requestParameters":{"name":"ExampleSNSTopic"},"responseElements":{"topicArn":"arn:aws:sns:us-east-2:123456789012:ExampleSNSTopic"}}`
	tagTopic = `{"eventSource":"sns.amazonaws.com","eventName":"TagResource","awsRegion":"us-east-2",
		"requestParameters":{"resourceArn":"arn:aws:sns:us-east-2:123456789012:ExampleSNSTopic","tags":[{"key":"team","value":"web"}]},
		"resources":[{"ARN":"arn:aws:sns:us-east-2:123456789012:ExampleSNSTopic"}]}`
	manyTopics = `{"eventSource":"sns.amazonaws.com","eventName":"Publish","awsRegion":"us-east-2",
		"requestParameters":{"items":[{"topicArn":"arn:aws:sns:us-east-2:123456789012:a"},{"topicArn":"arn:aws:sns:us-east-2:123456789012:b"},{"topicArn":"arn:aws:sns:us-east-2:123456789012:c"}]}}`
	putRolePolicy = `{"eventSource":"iam.amazonaws.com","eventName":"PutRolePolicy","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app","policyName":"read-logs","policyDocument":"{}"},"responseElements":null}`
	attachRolePolicy = `{"eventSource":"iam.amazonaws.com","eventName":"AttachRolePolicy","awsRegion":"us-east-1",
		"requestParameters":{"roleName":"app","policyArn":"arn:aws:iam::123456789012:policy/read-logs"},"responseElements":null}`
)

// TestNoticed: the resources of a Cloud Control type an event names, by
// identity: Cloud Control's calls of the type, and its service's calls
// by the identifier's property (regardless of case) or the resources'
// ARNs; reads, other types' calls and other services' calls name none.
func TestNoticed(t *testing.T) {
	queues, queueTable := typeOf(t, "aws-sqs-queue.json")
	queue := module.CloudIDOf(queueTable, module.Record{"queue_url": queueURL, "region": "us-east-2"})
	trailtest.Run(t, queues, []trailtest.Case{
		{"CreateQueue", createQueue, []string{queue}},
		{"SetQueueAttributes", setQueueAttributes, []string{queue}},
		{"DeleteQueue, as the SDK names it", deleteQueueSDK, []string{queue}},
		{"GetQueueAttributes (a read)", getQueueAttributes, nil},
		{"Cloud Control's DeleteResource", ccDeleteQueue, []string{queue}},
		{"Cloud Control's CreateResource of a generated identifier", ccCreateQueue, nil},
		{"Cloud Control's CreateResource of another type", ccCreateLogGroup, nil},
		{"a log group's call", putRetention, nil},
	})

	groups, groupTable := typeOf(t, "aws-logs-loggroup.json")
	group := module.CloudIDOf(groupTable, module.Record{"log_group_name": "CloudApiLogGroup", "region": "eu-west-1"})
	trailtest.Run(t, groups, []trailtest.Case{
		{"Cloud Control's CreateResource: the desired state's identifier", ccCreateLogGroup, []string{group}},
		{"Cloud Control's UpdateResource", ccUpdateLogGroup, []string{group}},
		{"PutRetentionPolicy", putRetention, []string{group}},
		{"DeleteLogGroup by ARN: the resource's", deleteLogGroupByARN, []string{group}},
		{"CreateLogStream in it", putLogEvents, []string{group}},
		{"Cloud Control's DeleteResource of a queue", ccDeleteQueue, nil},
		{"CreateQueue", createQueue, nil},
	})

	topics, topicTable := typeOf(t, "aws-sns-topic.json")
	topic := module.CloudIDOf(topicTable, module.Record{"topic_arn": "arn:aws:sns:us-east-2:123456789012:ExampleSNSTopic"})
	trailtest.Run(t, topics, []trailtest.Case{
		{"CreateTopic: the response's topicArn", createTopic, []string{topic}},
		{"TagResource: the resource's ARN", tagTopic, []string{topic}},
		{"a call that seems to name many", manyTopics, nil},
		{"SetQueueAttributes", setQueueAttributes, nil},
	})

	policies, policyTable := typeOf(t, "aws-iam-rolepolicy.json")
	policy := module.CloudIDOf(policyTable, module.Record{"policy_name": "read-logs", "role_name": "app", "region": "us-east-1"})
	trailtest.Run(t, policies, []trailtest.Case{
		{"PutRolePolicy: a composite identifier", putRolePolicy, []string{policy}},
		{"AttachRolePolicy (no policy name)", attachRolePolicy, nil},
	})
}
