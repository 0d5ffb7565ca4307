package bridge

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// TestFailedCallIsNoChange: CloudTrail records calls that failed
// (errorCode, errorMessage: "AccessDenied" and the like), and EventBridge
// delivers them as "AWS API Call via CloudTrail" too. Such a call changed
// nothing: it is no change (no event cycle; LookupEvents' attribution
// passes over it), and its caller is never recorded as who changed the
// resource.
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func TestFailedCallIsNoChange(t *testing.T) {
	t.Parallel()
	r, err := parseEnvelope([]byte(`{"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "aws.s3", "account": "123456789012", "detail": {
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

// TestQueueFlowsOnlyWithEvents: a queue that can be read but receives no
// event (no trail logs management events, which EventBridge needs for "AWS
// API Call via CloudTrail"; the rule disabled; its target or the queue
// policy wrong) does not stretch the full reads: only a message that
// arrived within the last --events-interval does, and status says when
// the last one came.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
func TestQueueFlowsOnlyWithEvents(t *testing.T) {
	t.Parallel()
	lastFull := time.Now().Add(-5 * time.Minute)
	for _, tc := range []struct {
		name    string
		arrived time.Duration // ago; 0: never
		due     bool          // the full read 5 min after the last is due
		status  string
	}{
		{name: "readable, no event ever", due: true, status: "no events since "},
		{name: "the last event older than --events-interval", arrived: 11 * time.Minute, due: true, status: "no events since "},
		{name: "an event a minute ago", arrived: time.Minute, due: false, status: "last event at "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := &queue{url: "https://sqs.us-east-1.amazonaws.com/123456789012/iasql-events", every: 10 * time.Minute, started: time.Now().Add(-time.Hour)}
			q.setState(nil) // receives work
			if tc.arrived > 0 {
				q.arrived(time.Now().Add(-tc.arrived))
			}
			if got := q.fullReadDue(lastFull); got != tc.due {
				t.Errorf("full read due 5 min after the last: %v, want %v (every %s)", got, tc.due, q.every)
			}
			if s := q.status(); !strings.Contains(s, tc.status) {
				t.Errorf("status %q does not say %q", s, tc.status)
			}
		})
	}
}

// TestForgedEventsRefused: any principal with events:PutEvents on the
// default bus can put an event whose detail-type is "AWS API Call via
// CloudTrail" (detail-type is free-form; only sources starting with "aws."
// are reserved to AWS's services), and a queue's policy may let others
// send to it: an event whose source is not aws.*, or whose account (the
// envelope's, or the record's recipientAccountId) is not the database's,
// is refused, and its actor never recorded.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
// https://docs.aws.amazon.com/eventbridge/latest/ref/events-structure.html
func TestForgedEventsRefused(t *testing.T) {
	t.Parallel()
	const bound = "123456789012"
	body := func(source, account, recipient string) string {
		return `{"version": "0", "detail-type": "AWS API Call via CloudTrail", "source": "` + source + `", "account": "` + account + `", "detail": {
		"userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/ceo"}, "recipientAccountId": "` + recipient + `",
		"eventTime": "2026-11-27T07:00:00Z", "eventSource": "ec2.amazonaws.com", "eventName": "CreateTags", "awsRegion": "us-east-1",
		"requestParameters": {"resourcesSet": {"items": [{"resourceId": "sg-0123456789abcdef0"}]}}, "eventID": "forged", "readOnly": false}}`
	}
	for _, tc := range []struct {
		name, body string
		invalid    bool // refused when parsed
		foreign    bool // refused for its account
	}{
		{name: "a custom source", body: body("my.app", "999999999999", bound), invalid: true},
		{name: "a custom source in the database's account", body: body("my.app", bound, bound), invalid: true},
		{name: "no source", body: strings.Replace(body("", bound, bound), `"source": "",`, "", 1), invalid: true},
		{name: "another account's event", body: body("aws.ec2", "999999999999", "999999999999"), foreign: true},
		{name: "another account's record in the database's account's envelope", body: body("aws.ec2", bound, "999999999999"), foreign: true},
		{name: "CloudTrail's, of the database's account", body: body("aws.ec2", bound, bound)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseEnvelope([]byte(tc.body))
			if (err != nil) != tc.invalid {
				t.Fatalf("parseEnvelope: %v, want refused: %v", err, tc.invalid)
			}
			if err != nil {
				return
			}
			if why := r.foreignTo(bound); (why != "") != tc.foreign {
				t.Errorf("foreignTo(%s) = %q, want refused: %v", bound, why, tc.foreign)
			}
		})
	}
}

// TestRecordFieldsBounded: what a record gives the audit trail is bounded
// (an ARN at 2048 bytes, IAM's limit; an event name at 128, a source at
// 256, an event id at 64): a longer field is cut, ending with a mark, so a
// forged or broken record cannot grow the trail without bound.
func TestRecordFieldsBounded(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("é", n) } // two bytes each: cuts fall inside a rune
	r, err := parseEnvelope([]byte(`{"detail-type": "AWS API Call via CloudTrail", "source": "aws.s3", "account": "123456789012", "detail": {
		"userIdentity": {"type": "IAMUser", "arn": "arn:aws:iam::123456789012:user/` + long(5000) + `"},
		"eventTime": "2026-11-27T07:00:00Z", "eventSource": "s3.amazonaws.com", "eventName": "Put` + long(1000) + `",
		"sourceIPAddress": "` + long(1000) + `", "eventID": "` + long(1000) + `", "readOnly": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	who := r.attribution()
	for _, f := range []struct {
		name, v string
		max     int
	}{{"actor", who.Actor, snapshot.MaxARN}, {"event", who.Event, snapshot.MaxEventName}, {"source", who.Source, snapshot.MaxSource}, {"event id", who.EventID, snapshot.MaxEventID}} {
		if len(f.v) > f.max || !strings.HasSuffix(f.v, snapshot.CutMark) || !strings.Contains(f.v, "é") {
			t.Errorf("%s is %d bytes (bound %d), ends %q", f.name, len(f.v), f.max, f.v[max(0, len(f.v)-8):])
		}
		if !utf8.ValidString(f.v) {
			t.Errorf("%s cut inside a character", f.name)
		}
	}
	if who.At != "2026-11-27T07:00:00Z" {
		t.Errorf("a field within its bound is changed: at %q", who.At)
	}
}

// meter counts the events consumer's outcomes (EventsMeter).
type meter struct {
	mu     sync.Mutex
	counts map[string]int
}

func (m *meter) Events(outcome string, n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]int{}
	}
	m.counts[outcome] += n
}

func (m *meter) QueueReadable(bool) {}

// TestNoticeOutcomes: what the events consumer does with each message
// before any cloud call: drops (and counts) what AWS did not put
// (invalid), what is of another account than the database's (foreign),
// the sidecar's own calls (own), and calls that changed nothing (a read,
// a call that failed: dropped); all are deleted at once, none acted on.
func TestNoticeOutcomes(t *testing.T) {
	t.Parallel()
	const sidecar = "arn:aws:iam::123456789012:user/iasql"
	msg := func(handle, source, account, arn, extra string) message {
		rec, err := parseEnvelope([]byte(`{"detail-type": "AWS API Call via CloudTrail", "source": "` + source + `", "account": "` + account + `", "detail": {
			"userIdentity": {"arn": "` + arn + `"}, "eventSource": "s3.amazonaws.com", "eventName": "DeleteBucket",
			"requestParameters": {"bucketName": "b"}` + extra + `}}`))
		return message{handle: handle, receives: 1, record: rec, err: err}
	}
	const alice = "arn:aws:iam::123456789012:user/alice"
	m := &meter{}
	e := &Engine{log: slog.New(slog.DiscardHandler), queue: &queue{meter: m}}
	e.acct.checked, e.acct.me = true, identity{Account: "123456789012", Arn: sidecar}
	_, _, done, acting := e.notice(t.Context(), []message{
		msg("forged", "my.app", "123456789012", alice, ""),
		msg("foreign", "aws.s3", "999999999999", alice, ""),
		msg("own", "aws.s3", "123456789012", sidecar, ""),
		msg("failed", "aws.s3", "123456789012", alice, `, "errorCode": "AccessDenied"`),
		msg("read", "aws.s3", "123456789012", alice, `, "readOnly": true`),
	}, nil)
	want := map[string]int{EventInvalid: 1, EventForeign: 1, EventOwn: 1, EventDropped: 2}
	if !maps.Equal(m.counts, want) || len(done) != 5 || len(acting) != 0 {
		t.Errorf("outcomes %v, want %v; %d deleted, %d acted on, want 5, 0", m.counts, want, len(done), len(acting))
	}
}

// TestReaderWaitsForTheLoop: the queue's reader receives a batch only when
// the engine's loop waits for one, so that no message it received waits,
// hidden, behind other batches until its visibility timeout has passed
// and it is delivered again (each delivery counts toward the fifth, at
// which it is given up).
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-visibility-timeout.html
func TestReaderWaitsForTheLoop(t *testing.T) {
	t.Parallel()
	cl := testkit.StartCloud(t, emulator.Options{})
	ctx := t.Context()
	client := sqs.NewFromConfig(cl.AWS)
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("iasql-events")})
	if err != nil {
		t.Fatal(err)
	}
	const sent = 25
	for i := range sent {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String(fmt.Sprint(i))}); err != nil {
			t.Fatal(err)
		}
	}
	q := newQueue(aws.ToString(out.QueueUrl), cl.AWS, time.Minute, nil)
	readerCtx, stop := context.WithCancel(ctx)
	var reader sync.WaitGroup
	reader.Go(func() { q.consume(readerCtx, func(string, ...any) {}) })
	t.Cleanup(func() { stop(); reader.Wait() })
	hidden := func() int {
		t.Helper()
		a, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: out.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			t.Fatal(err)
		}
		n, _ := strconv.Atoi(a.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)])
		return n
	}
	got := 0
	for range 2 { // the loop waits for work twice
		q.readyFor() <- struct{}{}
		batch := <-q.received()
		got += len(batch)
		// Busy with the batch: the reader holds no other.
		if n := hidden(); n != got {
			t.Errorf("the loop took %d messages; %d are received (hidden), want %d", got, n, got)
		}
	}
}
