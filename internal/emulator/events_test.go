package emulator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/cloudtrail"
	cttypes "github.com/aws/aws-sdk-go-v2/service/cloudtrail/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// bobARN is the identity the tests map access key "BOBKEY" to.
const bobARN = "arn:aws:iam::123456789012:user/bob"

// cloud is an emulator with two callers: the default key ("test", not in
// the identity map) and BOBKEY (mapped to bobARN).
type cloud struct {
	*testkit.Cloud
	bob aws.Config
}

func startEventCloud(t *testing.T, opts emulator.Options) *cloud {
	t.Helper()
	opts.Identities = map[string]string{"BOBKEY": bobARN}
	cl := testkit.StartCloud(t, opts)
	bob := cl.AWS.Copy()
	bob.Credentials = credentials.NewStaticCredentialsProvider("BOBKEY", "secret", "")
	return &cloud{Cloud: cl, bob: bob}
}

// client makes a service's client for cfg, without retries.
func client[C, O any](cfg aws.Config, newClient func(aws.Config, ...func(*O)) C, opts ...func(*O)) C {
	return testkit.Clients(cfg, newClient, opts...)("us-east-1")
}

// lookup is every event LookupEvents answers for one attribute, newest
// first.
func lookup(t *testing.T, c *cloudtrail.Client, key cttypes.LookupAttributeKey, value string) []cttypes.Event {
	t.Helper()
	in := &cloudtrail.LookupEventsInput{}
	if key != "" {
		in.LookupAttributes = []cttypes.LookupAttribute{{AttributeKey: key, AttributeValue: aws.String(value)}}
	}
	var out []cttypes.Event
	pg := cloudtrail.NewLookupEventsPaginator(c, in)
	for _, p := range pages(t, pg.HasMorePages, pg.NextPage) {
		out = append(out, p.Events...)
	}
	return out
}

// record decodes an event's CloudTrail record.
func record(t *testing.T, ev cttypes.Event) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(ev.CloudTrailEvent)), &m); err != nil {
		t.Fatalf("CloudTrailEvent: %v", err)
	}
	return m
}

// at is the value at a path of a decoded JSON document: keys of objects,
// "0", "1"... of arrays.
func at(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscan(k, &i); err != nil || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// Every mutating call is recorded as a CloudTrail event, with the
// caller's identity (the identity map, else the user named after the key),
// the parameters and response elements that identify the resource as AWS
// logs them; reads and data events are not.
func TestCloudTrailRecordsMutatingCalls(t *testing.T) {
	c := startEventCloud(t, emulator.Options{LookupEventsRate: -1})
	ctx := t.Context()
	bobS3 := client(c.bob, s3.NewFromConfig, testkit.PathStyle)
	bobEC2 := client(c.bob, ec2.NewFromConfig)
	myEC2 := client(c.AWS, ec2.NewFromConfig)
	mySQS := client(c.AWS, sqs.NewFromConfig)

	if _, err := bobS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("logs-bucket")}); err != nil {
		t.Fatal(err)
	}
	if _, err := bobS3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("logs-bucket")}); err != nil {
		t.Fatal(err)
	}
	sg, err := myEC2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String("web"), Description: aws.String("web")})
	if err != nil {
		t.Fatal(err)
	}
	group := aws.ToString(sg.GroupId)
	if _, err := bobEC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{group}, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("a")}}}); err != nil {
		t.Fatal(err)
	}
	run, err := myEC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), InstanceType: ec2types.InstanceTypeT3Micro})
	if err != nil {
		t.Fatal(err)
	}
	instance := aws.ToString(run.Instances[0].InstanceId)
	if _, err := bobEC2.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{instance}}); err != nil {
		t.Fatal(err)
	}
	if _, err := client(c.bob, iam.NewFromConfig).CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("app"), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := client(c.bob, ecr.NewFromConfig).CreateRepository(ctx, &ecr.CreateRepositoryInput{RepositoryName: aws.String("api")}); err != nil {
		t.Fatal(err)
	}
	q, err := mySQS.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jobs")})
	if err != nil {
		t.Fatal(err)
	}
	queue := aws.ToString(q.QueueUrl)
	// Through Cloud Control: its call, and the call its handler makes for
	// bob.
	ccCreate(t, client(c.bob, cloudcontrol.NewFromConfig), "AWS::Logs::LogGroup", `{"LogGroupName":"app-logs"}`)
	// Reads and data events: not recorded.
	if _, err := myEC2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := mySQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("x")}); err != nil {
		t.Fatal(err)
	}

	ct := client(c.AWS, cloudtrail.NewFromConfig)
	for _, tc := range []struct {
		name, source, arn, key string
		fields                 map[string]any // path in the record -> value
		resource               string         // a ResourceName LookupEvents finds it by
	}{
		{"CreateBucket", "s3.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.bucketName": "logs-bucket", "userIdentity.type": "IAMUser", "userIdentity.userName": "bob"}, "logs-bucket"},
		{"DeleteBucket", "s3.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.bucketName": "logs-bucket", "resources.0.ARN": "arn:aws:s3:::logs-bucket"}, "logs-bucket"},
		{"CreateSecurityGroup", "ec2.amazonaws.com", "arn:aws:iam::123456789012:user/test", "test", map[string]any{"requestParameters.groupName": "web", "responseElements.groupId": group, "responseElements._return": true}, group},
		{"CreateTags", "ec2.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.resourcesSet.items.0.resourceId": group, "requestParameters.tagSet.items.0.key": "team", "requestParameters.tagSet.items.0.value": "a"}, group},
		{"RunInstances", "ec2.amazonaws.com", "arn:aws:iam::123456789012:user/test", "test", map[string]any{"responseElements.instancesSet.items.0.instanceId": instance}, instance},
		{"StopInstances", "ec2.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.instancesSet.items.0.instanceId": instance}, instance},
		{"CreateRole", "iam.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.roleName": "app", "responseElements.role.roleName": "app", "awsRegion": "us-east-1"}, "app"},
		{"CreateRepository", "ecr.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.repositoryName": "api"}, "api"},
		{"CreateQueue", "sqs.amazonaws.com", "arn:aws:iam::123456789012:user/test", "test", map[string]any{"requestParameters.queueName": "jobs", "responseElements.queueUrl": queue}, queue},
		{"CreateResource", "cloudcontrolapi.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.typeName": "AWS::Logs::LogGroup", "responseElements.progressEvent.identifier": "app-logs"}, "app-logs"},
		{"CreateLogGroup", "logs.amazonaws.com", bobARN, "BOBKEY", map[string]any{"requestParameters.logGroupName": "app-logs",
			"userIdentity.invokedBy": "cloudcontrolapi.amazonaws.com", "sourceIPAddress": "cloudcontrolapi.amazonaws.com", "userAgent": "cloudcontrolapi.amazonaws.com"}, "app-logs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := lookup(t, ct, cttypes.LookupAttributeKeyEventName, tc.name)
			if len(evs) != 1 {
				t.Fatalf("%d %s events, want 1", len(evs), tc.name)
			}
			ev := evs[0]
			if aws.ToString(ev.EventSource) != tc.source || aws.ToString(ev.AccessKeyId) != tc.key || aws.ToString(ev.ReadOnly) != "false" {
				t.Errorf("event source %s, key %s, read-only %s", aws.ToString(ev.EventSource), aws.ToString(ev.AccessKeyId), aws.ToString(ev.ReadOnly))
			}
			rec := record(t, ev)
			want := map[string]any{
				"eventSource": tc.source, "eventName": tc.name, "userIdentity.arn": tc.arn, "userIdentity.accessKeyId": tc.key,
				"userIdentity.accountId": "123456789012", "eventType": "AwsApiCall", "managementEvent": true, "readOnly": false,
				"recipientAccountId": "123456789012", "sourceIPAddress": "127.0.0.1", "eventVersion": "1.11",
			}
			for k, v := range tc.fields {
				want[k] = v
			}
			for path, v := range want {
				if got := at(rec, path); got != v {
					t.Errorf("%s = %v, want %v", path, got, v)
				}
			}
			for _, f := range []string{"eventTime", "eventID", "requestID", "userAgent"} {
				if s, _ := rec[f].(string); s == "" {
					t.Errorf("no %s in %v", f, rec)
				}
			}
			found := false
			for _, byName := range lookup(t, ct, cttypes.LookupAttributeKeyResourceName, tc.resource) {
				found = found || aws.ToString(byName.EventId) == aws.ToString(ev.EventId)
			}
			if !found {
				t.Errorf("LookupEvents by ResourceName %s does not find the event", tc.resource)
			}
		})
	}
	for _, name := range []string{"DescribeSecurityGroups", "SendMessage"} {
		if evs := lookup(t, ct, cttypes.LookupAttributeKeyEventName, name); len(evs) != 0 {
			t.Errorf("%s was recorded: %d events", name, len(evs))
		}
	}
}

// STS GetCallerIdentity answers the ARN the identity map gives a key (the
// ARN its events carry), the user named after the key otherwise.
func TestSTSIdentityMap(t *testing.T) {
	c := startEventCloud(t, emulator.Options{})
	for _, tc := range []struct {
		cfg  aws.Config
		want string
	}{{c.bob, bobARN}, {c.AWS, "arn:aws:iam::123456789012:user/test"}} {
		out, err := client(tc.cfg, sts.NewFromConfig).GetCallerIdentity(t.Context(), &sts.GetCallerIdentityInput{})
		if err != nil {
			t.Fatal(err)
		}
		if aws.ToString(out.Arn) != tc.want || aws.ToString(out.Account) != "123456789012" {
			t.Errorf("GetCallerIdentity: %s in %s, want %s", aws.ToString(out.Arn), aws.ToString(out.Account), tc.want)
		}
	}
}

// LookupEvents pages newest first, filters by one attribute, refuses bad
// requests as AWS does and throttles beyond its rate.
func TestLookupEvents(t *testing.T) {
	c := startEventCloud(t, emulator.Options{LookupEventsRate: -1})
	ctx := t.Context()
	mySQS, bobSQS := client(c.AWS, sqs.NewFromConfig), client(c.bob, sqs.NewFromConfig)
	var urls []string
	for i := range 7 {
		cl := mySQS
		if i%2 == 1 {
			cl = bobSQS
		}
		out, err := cl.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(fmt.Sprintf("q%d", i))})
		if err != nil {
			t.Fatal(err)
		}
		urls = append(urls, aws.ToString(out.QueueUrl))
	}
	ct := client(c.AWS, cloudtrail.NewFromConfig)
	in := &cloudtrail.LookupEventsInput{MaxResults: aws.Int32(3)}
	p := cloudtrail.NewLookupEventsPaginator(ct, in)
	var names []string
	pageCount := 0
	for _, page := range pages(t, p.HasMorePages, p.NextPage) {
		pageCount++
		for _, ev := range page.Events {
			names = append(names, at(record(t, ev), "requestParameters.queueName").(string))
		}
	}
	if got := strings.Join(names, ","); got != "q6,q5,q4,q3,q2,q1,q0" || pageCount != 3 {
		t.Errorf("pages of 3: %s in %d pages, want q6..q0 newest first in 3", got, pageCount)
	}
	for _, tc := range []struct {
		key   cttypes.LookupAttributeKey
		value string
		want  int
	}{
		{cttypes.LookupAttributeKeyAccessKeyId, "BOBKEY", 3},
		{cttypes.LookupAttributeKeyUsername, "bob", 3},
		{cttypes.LookupAttributeKeyResourceName, urls[4], 1},
		{cttypes.LookupAttributeKeyResourceType, "AWS::SQS::Queue", 7},
		{cttypes.LookupAttributeKeyEventSource, "sqs.amazonaws.com", 7},
		{cttypes.LookupAttributeKeyReadOnly, "true", 0},
	} {
		if n := len(lookup(t, ct, tc.key, tc.value)); n != tc.want {
			t.Errorf("%s=%s: %d events, want %d", tc.key, tc.value, n, tc.want)
		}
	}
	future := time.Now().Add(time.Hour)
	if out, err := ct.LookupEvents(ctx, &cloudtrail.LookupEventsInput{StartTime: &future}); err != nil || len(out.Events) != 0 {
		t.Errorf("events after an hour from now: %v, %v", out, err)
	}
	for _, tc := range []struct {
		in   cloudtrail.LookupEventsInput
		code string
	}{
		{cloudtrail.LookupEventsInput{MaxResults: aws.Int32(51)}, "InvalidMaxResultsException"},
		{cloudtrail.LookupEventsInput{LookupAttributes: []cttypes.LookupAttribute{
			{AttributeKey: cttypes.LookupAttributeKeyEventName, AttributeValue: aws.String("a")},
			{AttributeKey: cttypes.LookupAttributeKeyUsername, AttributeValue: aws.String("b")}}}, "InvalidLookupAttributesException"},
		{cloudtrail.LookupEventsInput{NextToken: aws.String("nope")}, "InvalidNextTokenException"},
		{cloudtrail.LookupEventsInput{StartTime: &future, EndTime: aws.Time(time.Now())}, "InvalidTimeRangeException"},
	} {
		if _, err := ct.LookupEvents(ctx, &tc.in); errCode(err) != tc.code {
			t.Errorf("LookupEvents(%+v): %v, want %s", tc.in, err, tc.code)
		}
	}

	// The rate: one request every 1000 s here, so the second is throttled.
	slow := startEventCloud(t, emulator.Options{LookupEventsRate: 0.001})
	sct := client(slow.AWS, cloudtrail.NewFromConfig)
	if _, err := sct.LookupEvents(ctx, &cloudtrail.LookupEventsInput{}); err != nil {
		t.Fatal(err)
	}
	if _, err := sct.LookupEvents(ctx, &cloudtrail.LookupEventsInput{}); errCode(err) != "ThrottlingException" {
		t.Errorf("second lookup: %v, want ThrottlingException", err)
	}
}

// SQS: a long poll answers as soon as a message arrives; a received
// message is hidden for its visibility timeout, then received again until
// it is deleted; errors carry SQS's codes.
func TestSQSMessages(t *testing.T) {
	c := startEventCloud(t, emulator.Options{})
	ctx := t.Context()
	q := client(c.AWS, sqs.NewFromConfig)
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: map[string]string{"VisibilityTimeout": "60"}})
	if err != nil {
		t.Fatal(err)
	}
	url := out.QueueUrl
	if again, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work")}); err != nil || aws.ToString(again.QueueUrl) != aws.ToString(url) {
		t.Errorf("CreateQueue of an existing queue: %v, %v", again, err)
	}
	if _, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: map[string]string{"VisibilityTimeout": "5"}}); errCode(err) != "QueueNameExists" {
		t.Errorf("CreateQueue with another VisibilityTimeout: %v, want QueueNameExists", err)
	}

	// The long poll returns with the message sent while it waits (its
	// context ends long before WaitTimeSeconds would).
	type result struct {
		out *sqs.ReceiveMessageOutput
		err error
	}
	got := make(chan result, 1)
	go func() {
		o, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 20,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		got <- result{o, err}
	}()
	testkit.Until(t, 10*time.Second, "the receive waits", func() bool { return c.Emu.Calls()["sqs:ReceiveMessage"] == 1 })
	if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the long poll did not answer when the message arrived")
	}
	if r.err != nil || len(r.out.Messages) != 1 || aws.ToString(r.out.Messages[0].Body) != "hello" {
		t.Fatalf("long poll: %v, %v", r.out, r.err)
	}
	if n := r.out.Messages[0].Attributes["ApproximateReceiveCount"]; n != "1" {
		t.Errorf("ApproximateReceiveCount %s, want 1", n)
	}
	// Hidden for the queue's 60 s, then, its visibility timeout changed
	// to 1 s, received again.
	if o, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url}); err != nil || len(o.Messages) != 0 {
		t.Errorf("a hidden message was received: %v, %v", o, err)
	}
	attrs, err := q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	if err != nil {
		t.Fatal(err)
	}
	if a := attrs.Attributes; a["ApproximateNumberOfMessagesNotVisible"] != "1" || a["QueueArn"] != "arn:aws:sqs:us-east-1:123456789012:work" || a["VisibilityTimeout"] != "60" {
		t.Errorf("attributes %v", a)
	}
	if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: r.out.Messages[0].ReceiptHandle, VisibilityTimeout: 1}); err != nil {
		t.Fatal(err)
	}
	again, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 10,
		MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount}})
	if err != nil || len(again.Messages) != 1 || again.Messages[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("after the visibility timeout: %v, %v", again, err)
	}
	// The first receipt handle is stale: it deletes nothing.
	if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: r.out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: url, ReceiptHandle: again.Messages[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatal(err)
	}
	third, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, WaitTimeSeconds: 10})
	if err != nil || len(third.Messages) != 1 {
		t.Fatalf("after ChangeMessageVisibility 0: %v, %v", third, err)
	}
	if _, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: third.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	attrs, err = q.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: url, AttributeNames: []sqstypes.QueueAttributeName{
		sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil || attrs.Attributes["ApproximateNumberOfMessages"] != "0" || attrs.Attributes["ApproximateNumberOfMessagesNotVisible"] != "0" {
		t.Errorf("after delete: %v, %v", attrs, err)
	}

	_, err = q.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("missing")})
	var missing *sqstypes.QueueDoesNotExist
	if !errors.As(err, &missing) || errCode(err) != "AWS.SimpleQueueService.NonExistentQueue" {
		t.Errorf("GetQueueUrl of a missing queue: %v (%T), want QueueDoesNotExist", err, err)
	}
	for _, tc := range []struct {
		name string
		call func() error
		code string
	}{
		{"receive 11", func() error {
			_, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url, MaxNumberOfMessages: 11})
			return err
		}, "InvalidParameterValue"},
		{"bad attribute", func() error {
			_, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: url, Attributes: map[string]string{"Colour": "red"}})
			return err
		}, "InvalidAttributeName"},
		{"bad handle", func() error {
			_, err := q.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: url, ReceiptHandle: aws.String("garbage")})
			return err
		}, "ReceiptHandleIsInvalid"},
		{"purge twice", func() error {
			if _, err := q.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: url}); err != nil {
				return err
			}
			_, err := q.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: url})
			return err
		}, "AWS.SimpleQueueService.PurgeQueueInProgress"},
		{"deleted queue", func() error {
			if _, err := q.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: url}); err != nil {
				return err
			}
			_, err := q.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: url})
			return err
		}, "AWS.SimpleQueueService.NonExistentQueue"},
	} {
		if err := tc.call(); errCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
}

// eventsPolicy lets EventBridge send to a queue.
func eventsPolicy(queueARN string) string {
	return `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"events.amazonaws.com"},"Action":"sqs:SendMessage","Resource":"` + queueARN + `"}]}`
}

// pipeline makes a queue that EventBridge may send to (policy true) and a
// rule of pattern targeting it; it returns the queue's URL.
func pipeline(t *testing.T, cfg aws.Config, name, pattern string, policy bool) string {
	t.Helper()
	ctx := t.Context()
	q := client(cfg, sqs.NewFromConfig)
	out, err := q.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	arn := "arn:aws:sqs:us-east-1:123456789012:" + name
	if policy {
		if _, err := q.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: out.QueueUrl, Attributes: map[string]string{"Policy": eventsPolicy(arn)}}); err != nil {
			t.Fatal(err)
		}
	}
	eb := client(cfg, eventbridge.NewFromConfig)
	if _, err := eb.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventPattern: aws.String(pattern)}); err != nil {
		t.Fatalf("PutRule %s: %v", pattern, err)
	}
	if _, err := eb.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(arn)}}}); err != nil {
		t.Fatal(err)
	}
	return aws.ToString(out.QueueUrl)
}

// receiveEvent waits for an event on a queue (long polls, 20 s at most)
// and deletes it.
func receiveEvent(t *testing.T, q *sqs.Client, url string) map[string]any {
	t.Helper()
	out, err := q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), WaitTimeSeconds: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Messages) != 1 {
		t.Fatalf("no event on %s within 20 s", url)
	}
	if _, err := q.DeleteMessage(t.Context(), &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(out.Messages[0].Body)), &ev); err != nil {
		t.Fatal(err)
	}
	return ev
}

// drain receives (without waiting) every message a queue holds and
// answers the eventName of each, in order.
func drain(t *testing.T, q *sqs.Client, url string) []string {
	t.Helper()
	var names []string
	for {
		out, err := q.ReceiveMessage(t.Context(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Messages) == 0 {
			return names
		}
		for _, m := range out.Messages {
			var ev map[string]any
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
				t.Fatal(err)
			}
			names = append(names, fmt.Sprint(at(ev, "detail.eventName")))
		}
	}
}

// EventBridge rules match CloudTrail's events by source, detail-type and
// nested detail fields, and deliver them only to queues whose policy lets
// EventBridge send.
func TestEventBridgeRuleMatching(t *testing.T) {
	c := startEventCloud(t, emulator.Options{EventDelay: -1})
	q := client(c.AWS, sqs.NewFromConfig)
	// The sentinel matches every S3 event: once it has one, every rule has
	// had it.
	sentinel := pipeline(t, c.AWS, "sentinel", `{"source":["aws.s3"]}`, true)
	cases := []struct {
		name, pattern string
		policy        bool
		want          string // the events delivered
	}{
		{"by-source", `{"source":["aws.s3"]}`, true, "CreateBucket,DeleteBucket"},
		{"other-source", `{"source":["aws.ec2"]}`, true, ""},
		{"by-event", `{"source":["aws.s3"],"detail-type":["AWS API Call via CloudTrail"],"detail":{"eventSource":["s3.amazonaws.com"],"eventName":["DeleteBucket","PutBucketVersioning"]}}`, true, "DeleteBucket"},
		{"by-bucket", `{"detail":{"requestParameters":{"bucketName":["doomed"]}}}`, true, "CreateBucket,DeleteBucket"},
		{"other-bucket", `{"detail":{"requestParameters":{"bucketName":["kept"]}}}`, true, ""},
		{"by-user", `{"detail":{"userIdentity":{"arn":["` + bobARN + `"]}}}`, true, "DeleteBucket"},
		{"prefix", `{"detail":{"eventName":[{"prefix":"Delete"}]}}`, true, "DeleteBucket"},
		{"anything-but", `{"source":["aws.s3"],"detail":{"eventName":[{"anything-but":["DeleteBucket"]}]}}`, true, "CreateBucket"},
		{"exists", `{"source":["aws.s3"],"detail":{"errorCode":[{"exists":false}]}}`, true, "CreateBucket,DeleteBucket"},
		{"no-policy", `{"source":["aws.s3"]}`, false, ""},
	}
	urls := map[string]string{}
	for _, tc := range cases {
		urls[tc.name] = pipeline(t, c.AWS, tc.name, tc.pattern, tc.policy)
	}
	// The bucket is made by the default key, deleted by bob.
	if _, err := client(c.AWS, s3.NewFromConfig, testkit.PathStyle).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("doomed")}); err != nil {
		t.Fatal(err)
	}
	if _, err := client(c.bob, s3.NewFromConfig, testkit.PathStyle).DeleteBucket(t.Context(), &s3.DeleteBucketInput{Bucket: aws.String("doomed")}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"CreateBucket", "DeleteBucket"} {
		if ev := receiveEvent(t, q, sentinel); at(ev, "detail.eventName") != want {
			t.Fatalf("sentinel got %v, want %s", at(ev, "detail.eventName"), want)
		}
	}
	for _, tc := range cases {
		if got := strings.Join(drain(t, q, urls[tc.name]), ","); got != tc.want {
			t.Errorf("%s received %q, want %q", tc.name, got, tc.want)
		}
	}
	eb := client(c.AWS, eventbridge.NewFromConfig)
	if _, err := eb.DeleteRule(t.Context(), &eventbridge.DeleteRuleInput{Name: aws.String("by-source")}); errCode(err) != "ValidationException" {
		t.Errorf("DeleteRule with targets: %v, want ValidationException", err)
	}
	if _, err := eb.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: aws.String("bad"), EventPattern: aws.String(`{"source":"aws.s3"}`)}); errCode(err) != "InvalidEventPatternException" {
		t.Errorf("PutRule with a scalar pattern value: %v, want InvalidEventPatternException", err)
	}
	rules, err := eb.ListRules(t.Context(), &eventbridge.ListRulesInput{NamePrefix: aws.String("by-")})
	if err != nil || len(rules.Rules) != 4 {
		t.Errorf("ListRules by-: %v, %v", rules, err)
	}
}

// End to end: changes another key makes (a bucket deleted, a group's tag,
// an instance stopped) reach the queue a rule targets, within the event
// delay, with the other key's ARN; the pipeline may be made with Cloud
// Control (the queue, its policy and the rule), and its queue is the one
// SQS serves.
func TestEventsReachQueue(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, c *cloud) string // the queue's URL
	}{
		{"sdk", func(t *testing.T, c *cloud) string {
			return pipeline(t, c.AWS, "changes", `{"detail-type":["AWS API Call via CloudTrail"],"detail":{"userIdentity":{"arn":["`+bobARN+`"]}}}`, true)
		}},
		{"cloudcontrol", func(t *testing.T, c *cloud) string {
			cc := client(c.AWS, cloudcontrol.NewFromConfig)
			q := ccCreate(t, cc, "AWS::SQS::Queue", `{"QueueName":"changes"}`)
			url := aws.ToString(q.Identifier)
			arn := "arn:aws:sqs:us-east-1:123456789012:changes"
			ccCreate(t, cc, "AWS::SQS::QueuePolicy", `{"Queues":["`+url+`"],"PolicyDocument":`+eventsPolicy(arn)+`}`)
			rule := ccCreate(t, cc, "AWS::Events::Rule", `{"Name":"changes","EventPattern":{"detail":{"userIdentity":{"arn":["`+bobARN+`"]}}},"Targets":[{"Id":"q","Arn":"`+arn+`"}]}`)
			if id := aws.ToString(rule.Identifier); id != "arn:aws:events:us-east-1:123456789012:rule/changes" {
				t.Errorf("rule identifier %s", id)
			}
			// The rule is EventBridge's, the queue and its policy SQS's.
			targets, err := client(c.AWS, eventbridge.NewFromConfig).ListTargetsByRule(t.Context(), &eventbridge.ListTargetsByRuleInput{Rule: aws.String("changes")})
			if err != nil || len(targets.Targets) != 1 || aws.ToString(targets.Targets[0].Arn) != arn {
				t.Errorf("ListTargetsByRule: %v, %v", targets, err)
			}
			attrs, err := client(c.AWS, sqs.NewFromConfig).GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
				AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNamePolicy}})
			if err != nil || !strings.Contains(attrs.Attributes["Policy"], "events.amazonaws.com") {
				t.Errorf("the queue's policy: %v, %v", attrs, err)
			}
			// The handlers' calls are recorded for the caller, invoked by
			// Cloud Control.
			evs := lookup(t, client(c.AWS, cloudtrail.NewFromConfig), cttypes.LookupAttributeKeyEventName, "PutRule")
			if len(evs) != 1 {
				t.Fatalf("%d PutRule events, want 1", len(evs))
			}
			rec := record(t, evs[0])
			for path, want := range map[string]any{"userIdentity.invokedBy": "cloudcontrolapi.amazonaws.com", "sourceIPAddress": "cloudcontrolapi.amazonaws.com",
				"userIdentity.arn": "arn:aws:iam::123456789012:user/test", "requestParameters.name": "changes", "eventSource": "events.amazonaws.com"} {
				if got := at(rec, path); got != want {
					t.Errorf("PutRule %s = %v, want %v", path, got, want)
				}
			}
			return url
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := startEventCloud(t, emulator.Options{})
			url := tc.setup(t, c)
			ctx := t.Context()
			my3, myEC2 := client(c.AWS, s3.NewFromConfig, testkit.PathStyle), client(c.AWS, ec2.NewFromConfig)
			if _, err := my3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("shared")}); err != nil {
				t.Fatal(err)
			}
			sg := mkGroup(t, myEC2, "api", "")
			run, err := myEC2.RunInstances(ctx, &ec2.RunInstancesInput{ImageId: aws.String(testAMI), MinCount: aws.Int32(1), MaxCount: aws.Int32(1), InstanceType: ec2types.InstanceTypeT3Micro})
			if err != nil {
				t.Fatal(err)
			}
			instance := aws.ToString(run.Instances[0].InstanceId)
			testkit.Until(t, 10*time.Second, "the instance runs", func() bool {
				return instanceState(t, myEC2, instance) == ec2types.InstanceStateNameRunning
			})
			bobS3, bobEC2 := client(c.bob, s3.NewFromConfig, testkit.PathStyle), client(c.bob, ec2.NewFromConfig)
			q := client(c.AWS, sqs.NewFromConfig)
			for _, change := range []struct {
				name, source string
				do           func() error
				path, want   string
			}{
				{"DeleteBucket", "aws.s3", func() error {
					_, err := bobS3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("shared")})
					return err
				}, "detail.requestParameters.bucketName", "shared"},
				{"CreateTags", "aws.ec2", func() error {
					_, err := bobEC2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{sg}, Tags: []ec2types.Tag{{Key: aws.String("owner"), Value: aws.String("bob")}}})
					return err
				}, "detail.requestParameters.resourcesSet.items.0.resourceId", sg},
				{"StopInstances", "aws.ec2", func() error {
					_, err := bobEC2.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{instance}})
					return err
				}, "detail.requestParameters.instancesSet.items.0.instanceId", instance},
			} {
				if err := change.do(); err != nil {
					t.Fatalf("%s: %v", change.name, err)
				}
				ev := receiveEvent(t, q, url)
				for path, want := range map[string]any{
					"detail-type": "AWS API Call via CloudTrail", "source": change.source, "account": "123456789012", "region": "us-east-1",
					"detail.eventName": change.name, "detail.userIdentity.arn": bobARN, change.path: change.want,
				} {
					if got := at(ev, path); got != want {
						t.Errorf("%s: %s = %v, want %v", change.name, path, got, want)
					}
				}
			}
		})
	}
}

func instanceState(t *testing.T, c *ec2.Client, id string) ec2types.InstanceStateName {
	t.Helper()
	out, err := c.DescribeInstances(t.Context(), &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Reservations[0].Instances[0].State.Name
}

// An event is not delivered before its delay has passed (CloudTrail's
// delivery delay, Options.EventDelay).
func TestEventDelay(t *testing.T) {
	c := startEventCloud(t, emulator.Options{EventDelay: time.Hour})
	url := pipeline(t, c.AWS, "later", `{"source":["aws.s3"]}`, true)
	if _, err := client(c.bob, s3.NewFromConfig, testkit.PathStyle).CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String("soon")}); err != nil {
		t.Fatal(err)
	}
	q := client(c.AWS, sqs.NewFromConfig)
	if got := drain(t, q, url); len(got) != 0 {
		t.Errorf("delivered before the delay: %v", got)
	}
}

// A call that was done though its client got an error (a connection lost
// after AWS acted: the ServerErrorAfter fault) is recorded; one refused
// before acting is not.
func TestCloudTrailFaults(t *testing.T) {
	c := startEventCloud(t, emulator.Options{LookupEventsRate: -1})
	q := client(c.AWS, sqs.NewFromConfig)
	ct := client(c.AWS, cloudtrail.NewFromConfig)
	for _, tc := range []struct {
		queue    string
		kind     emulator.FaultKind
		recorded int
	}{
		{"done", emulator.ServerErrorAfter, 1},
		{"refused", emulator.ServerError, 0},
	} {
		c.Emu.Inject(emulator.Fault{Op: "sqs:CreateQueue", Kind: tc.kind, Times: 1})
		if _, err := q.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(tc.queue)}); errCode(err) != "InternalError" {
			t.Errorf("%s: CreateQueue %v, want InternalError", tc.queue, err)
		}
		n := 0
		for _, ev := range lookup(t, ct, cttypes.LookupAttributeKeyEventName, "CreateQueue") {
			if at(record(t, ev), "requestParameters.queueName") == tc.queue {
				n++
			}
		}
		if n != tc.recorded {
			t.Errorf("%s: %d CreateQueue events, want %d", tc.queue, n, tc.recorded)
		}
	}
}

// A mutating call that fails is recorded as CloudTrail records it: with
// errorCode and errorMessage, and no responseElements (S3's XML errors,
// EC2's query errors, JSON protocols' __type).
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func TestCloudTrailRecordsFailedCalls(t *testing.T) {
	c := startEventCloud(t, emulator.Options{LookupEventsRate: -1})
	ctx := t.Context()
	bobS3 := client(c.bob, s3.NewFromConfig, testkit.PathStyle)
	if _, err := bobS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("full-bucket")}); err != nil {
		t.Fatal(err)
	}
	if _, err := bobS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("full-bucket"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	if _, err := bobS3.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("full-bucket")}); err == nil {
		t.Fatal("a bucket holding an object was deleted")
	}
	if _, err := client(c.bob, ec2.NewFromConfig).DeleteSecurityGroup(ctx, &ec2.DeleteSecurityGroupInput{GroupId: aws.String("sg-0123456789abcdef0")}); err == nil {
		t.Fatal("a group that does not exist was deleted")
	}
	if _, err := client(c.bob, ecr.NewFromConfig).DeleteRepository(ctx, &ecr.DeleteRepositoryInput{RepositoryName: aws.String("none")}); err == nil {
		t.Fatal("a repository that does not exist was deleted")
	}
	ct := client(c.AWS, cloudtrail.NewFromConfig)
	for _, tc := range []struct{ name, code, resource string }{
		{"DeleteBucket", "BucketNotEmpty", "full-bucket"},
		{"DeleteSecurityGroup", "InvalidGroup.NotFound", "sg-0123456789abcdef0"},
		{"DeleteRepository", "RepositoryNotFoundException", "none"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs := lookup(t, ct, cttypes.LookupAttributeKeyEventName, tc.name)
			if len(evs) != 1 {
				t.Fatalf("%d %s events, want 1", len(evs), tc.name)
			}
			rec := record(t, evs[0])
			if rec["errorCode"] != tc.code || rec["errorMessage"] == "" || rec["errorMessage"] == nil || rec["responseElements"] != nil ||
				at(rec, "userIdentity.arn") != bobARN || rec["readOnly"] != false {
				t.Errorf("errorCode %v, errorMessage %v, responseElements %v, caller %v, readOnly %v; want %s, a message, none, bob, false",
					rec["errorCode"], rec["errorMessage"], rec["responseElements"], at(rec, "userIdentity.arn"), rec["readOnly"], tc.code)
			}
		})
	}
}
