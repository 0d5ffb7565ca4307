package bridge

import (
	"testing"
	"time"
)

// TestReviewFailedCallNotAChange: CloudTrail records calls that failed
// (errorCode, errorMessage: "AccessDenied" and the like), and
// EventBridge delivers them as "AWS API Call via CloudTrail" too. Such a
// call changed nothing, yet the sidecar takes it as a change (an event
// cycle, and its caller recorded as who made the change; LookupEvents
// takes it as the newest change to a resource).
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func TestReviewFailedCallNotAChange(t *testing.T) {
	t.Parallel()
	r, err := parseEnvelope([]byte(`{"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "aws.s3", "detail": {
		"eventVersion": "1.09", "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/mallory", "accessKeyId": "AKIAMALLORY"},
		"eventTime": "2026-11-27T07:00:00Z", "eventSource": "s3.amazonaws.com", "eventName": "DeleteBucket", "awsRegion": "us-east-1",
		"sourceIPAddress": "203.0.113.9", "requestParameters": {"bucketName": "prod-logs"}, "responseElements": null,
		"errorCode": "AccessDenied", "errorMessage": "Access Denied", "eventID": "e-9", "readOnly": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.mutating() {
		t.Errorf("a DeleteBucket that failed with AccessDenied is taken as a change (mutating); its caller %s would be recorded as who changed the bucket", r.attribution().Actor)
	}
}

// TestReviewReadableQueueWithoutEvents: a queue that can be read but
// receives no event (no trail logs management events, which EventBridge
// needs for "AWS API Call via CloudTrail"; the rule disabled; its target
// or the queue policy wrong) stretches the full reads to
// --events-interval all the same: changes made in AWS then reach the rows
// later than with no queue at all.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
func TestReviewReadableQueueWithoutEvents(t *testing.T) {
	t.Parallel()
	q := &queue{url: "https://sqs.us-east-1.amazonaws.com/123456789012/iasql-events", every: 10 * time.Minute}
	q.setState(nil) // receives work; none ever brought a message
	lastFull := time.Now().Add(-5 * time.Minute)
	if !q.fullReadDue(lastFull) {
		t.Errorf("no event received since the sidecar started, yet the scheduled full read 5 min after the last is held to --events-interval (%s)", q.every)
	}
}

// TestReviewCustomSourceForgesActor: any principal with events:PutEvents on
// the default bus can put an event whose detail-type is "AWS API Call via
// CloudTrail" (detail-type is free-form; only sources starting with "aws."
// are reserved to AWS). The README's rule matches detail-type alone, and
// the queue policy's aws:SourceArn is the rule's, so the forged event is
// delivered; the sidecar takes it as CloudTrail's and records its actor.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
func TestReviewCustomSourceForgesActor(t *testing.T) {
	t.Parallel()
	_, err := parseEnvelope([]byte(`{"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "my.app", "account": "999999999999", "detail": {
		"userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/ceo"},
		"eventTime": "2026-11-27T07:00:00Z", "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags", "awsRegion": "us-east-1",
		"requestParameters": {"resourcesSet": {"items": [{"resourceId": "sg-0123456789abcdef0"}]}}, "eventID": "forged", "readOnly": false}}`))
	if err == nil {
		t.Errorf("an event put with source my.app (not aws.*) from account 999999999999 is taken as CloudTrail's record; its actor would be recorded as arn:aws:iam::123456789012:user/ceo")
	}
}
