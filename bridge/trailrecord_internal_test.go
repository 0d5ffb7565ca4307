package bridge

import (
	"errors"
	"reflect"
	"testing"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// TestParseEnvelope: an EventBridge event of a CloudTrail record gives the
// event the tables' Noticers read and who made the call; anything else is
// not a CloudTrail record. The records are shaped as AWS documents them:
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func TestParseEnvelope(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		body     string
		err      bool
		event    module.Event
		who      *snapshot.Attribution
		mutating bool
		own      bool // made with the sidecar's ARN or key
	}{{
		name: "a user's call",
		body: `{"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "aws.ec2", "detail": {
			"eventVersion": "1.09", "userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/alice", "accessKeyId": "AKIAALICE"},
			"eventTime": "2026-11-27T07:00:00Z", "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags", "awsRegion": "eu-west-1",
			"sourceIPAddress": "203.0.113.7", "requestParameters": {"resourcesSet": {"items": [{"resourceId": "sg-0123456789abcdef0"}]}},
			"responseElements": {"_return": true}, "eventID": "e-1", "readOnly": false,
			"resources": [{"ARN": "arn:aws:ec2:eu-west-1:123456789012:security-group/sg-0123456789abcdef0"}]}}`,
		event: module.Event{Source: "ec2.amazonaws.com", Name: "CreateTags", Region: "eu-west-1",
			Request:   map[string]any{"resourcesSet": map[string]any{"items": []any{map[string]any{"resourceId": "sg-0123456789abcdef0"}}}},
			Response:  map[string]any{"_return": true},
			Resources: []string{"arn:aws:ec2:eu-west-1:123456789012:security-group/sg-0123456789abcdef0"}},
		who:      &snapshot.Attribution{Actor: "arn:aws:iam::123456789012:user/alice", Event: "CreateTags", At: "2026-11-27T07:00:00Z", Source: "203.0.113.7", EventID: "e-1"},
		mutating: true,
	}, {
		name: "a call AWS made itself",
		body: `{"detail-type": "AWS API Call via CloudTrail", "source": "aws.ec2", "detail": {"userIdentity": {"type": "AWSService", "invokedBy": "autoscaling.amazonaws.com"},
			"eventTime": "2026-11-27T07:00:01Z", "eventSource": "ec2.amazonaws.com", "eventName": "TerminateInstances",
			"sourceIPAddress": "autoscaling.amazonaws.com", "eventID": "e-2"}}`,
		event:    module.Event{Source: "ec2.amazonaws.com", Name: "TerminateInstances"},
		who:      &snapshot.Attribution{Actor: "autoscaling.amazonaws.com", Event: "TerminateInstances", At: "2026-11-27T07:00:01Z", Source: "autoscaling.amazonaws.com", EventID: "e-2"},
		mutating: true,
	}, {
		name: "the sidecar's own call, by its access key",
		body: `{"detail-type": "AWS API Call via CloudTrail", "source": "aws.s3", "detail": {"userIdentity": {"type": "AssumedRole", "arn": "arn:aws:sts::123456789012:assumed-role/iasql/s1", "accessKeyId": "ASIASIDECAR"},
			"eventSource": "s3.amazonaws.com", "eventName": "PutBucketTagging", "readOnly": false}}`,
		event:    module.Event{Source: "s3.amazonaws.com", Name: "PutBucketTagging"},
		who:      &snapshot.Attribution{Actor: "arn:aws:sts::123456789012:assumed-role/iasql/s1", Event: "PutBucketTagging"},
		mutating: true,
		own:      true,
	}, {
		name: "a read",
		body: `{"detail-type": "AWS API Call via CloudTrail", "source": "aws.s3", "detail": {"userIdentity": {"arn": "arn:aws:iam::123456789012:user/bob"},
			"eventSource": "s3.amazonaws.com", "eventName": "GetBucketTagging", "readOnly": true}}`,
		event: module.Event{Source: "s3.amazonaws.com", Name: "GetBucketTagging"},
		who:   &snapshot.Attribution{Actor: "arn:aws:iam::123456789012:user/bob", Event: "GetBucketTagging"},
	}, {
		name: "another detail-type",
		body: `{"detail-type": "EC2 Instance State-change Notification", "detail": {"instance-id": "i-1", "state": "stopped"}}`,
		err:  true,
	}, {
		name: "not JSON",
		body: `hello`,
		err:  true,
	}, {
		name: "a detail that is no CloudTrail record",
		body: `{"detail-type": "AWS API Call via CloudTrail", "detail": {"hello": "world"}}`,
		err:  true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r, err := parseEnvelope([]byte(tc.body))
			if tc.err {
				if !errors.Is(err, errNotCloudTrail) {
					t.Fatalf("parseEnvelope: %v, want errNotCloudTrail", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Event(); !reflect.DeepEqual(got, tc.event) {
				t.Errorf("event:\n got %#v\nwant %#v", got, tc.event)
			}
			if got := r.attribution(); !reflect.DeepEqual(got, tc.who) {
				t.Errorf("attribution: got %+v, want %+v", got, tc.who)
			}
			if r.mutating() != tc.mutating {
				t.Errorf("mutating: %v, want %v", r.mutating(), tc.mutating)
			}
			if own := r.byIdentity("arn:aws:sts::123456789012:assumed-role/iasql/other", "ASIASIDECAR"); own != tc.own {
				t.Errorf("the sidecar's own: %v, want %v", own, tc.own)
			}
		})
	}
}

// TestQueueRegion: the region an SQS queue URL names, none for another
// host (an endpoint override).
func TestQueueRegion(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]string{
		"https://sqs.eu-west-1.amazonaws.com/123456789012/iasql-events": "eu-west-1",
		"http://127.0.0.1:4566/123456789012/iasql-events":               "",
		"not a url\x7f": "",
	} {
		if got := queueRegion(url); got != want {
			t.Errorf("queueRegion(%q) = %q, want %q", url, got, want)
		}
	}
}
