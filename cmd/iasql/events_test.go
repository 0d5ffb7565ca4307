package main_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// alice is the identity of the access key another tool uses in the
// events tests (the emulator's identity map).
const (
	aliceKey = "AKIAALICE"
	alice    = "arn:aws:iam::123456789012:user/alice"
)

// eventsStack is a database whose events pipeline was set up by the
// README's SQL, with a sidecar reading the queue.
type eventsStack struct {
	t     *testing.T
	ctx   context.Context
	cloud *testkit.Cloud
	dsn   string
	conn  *pgx.Conn
	sc    *testkit.Process
	queue string
	// alice's clients: another tool, with another access key.
	ec2 *ec2.Client
	s3  *s3.Client
	sqs *sqs.Client
}

// startEventsStack installs aws_s3 and aws_ec2 with a bucket, a group and
// an instance (setup), runs the README's Events blocks in order, and
// restarts the sidecar with the queue they made (args added).
func startEventsStack(t *testing.T, setup []string, args ...string) *eventsStack {
	t.Helper()
	s := &eventsStack{t: t, ctx: t.Context(), dsn: srv.NewDB(t)}
	s.cloud = testkit.StartCloud(t, emulator.Options{Identities: map[string]string{aliceKey: alice}})
	s.sc = startSidecar(t, s.cloud.URL, "--dsn", s.dsn)
	s.sc.WaitLog(time.Minute, regexp.MustCompile(`msg="engine running"`))
	s.conn = pgtest.Connect(t, s.dsn)
	s.exec(append([]string{`SELECT * FROM iasql_install('aws_s3')`, `SELECT * FROM iasql_install('aws_ec2')`}, setup...)...)
	blocks := readmeSQL(t, "## Events")
	if len(blocks) != 2 {
		t.Fatalf("README's Events has %d sql blocks; the test knows 2 (the queue and the rule, then the target and the policy)", len(blocks))
	}
	for _, b := range blocks {
		s.exec(statements(b)...)
	}
	s.queue = s.one(`SELECT queue_url FROM aws_sqs_queue WHERE queue_name = 'iasql-events'`)
	if err := s.sc.Stop(30 * time.Second); err != nil {
		t.Fatalf("stop the sidecar: %v", err)
	}
	cfg := s.cloud.AWS
	cfg.Credentials = credentials.NewStaticCredentialsProvider(aliceKey, "secret", "")
	s.ec2, s.s3, s.sqs = ec2.NewFromConfig(cfg), s3.NewFromConfig(cfg, testkit.PathStyle), sqs.NewFromConfig(cfg)
	s.start(args...)
	return s
}

// start starts the sidecar with the events queue and waits until it reads
// it, and its first full read (at start) has ended.
func (s *eventsStack) start(args ...string) {
	s.t.Helper()
	s.sc = startSidecar(s.t, s.cloud.URL, append([]string{"--dsn", s.dsn, "--events-queue", s.queue}, args...)...)
	s.sc.WaitLog(time.Minute, regexp.MustCompile(`msg="reading the events queue"`))
	s.sc.WaitLog(time.Minute, regexp.MustCompile(`msg="cycle ended" .*reason=schedule`))
}

func (s *eventsStack) exec(qs ...string) {
	s.t.Helper()
	for _, q := range qs {
		if _, err := s.conn.Exec(s.ctx, q); err != nil {
			s.t.Fatalf("%s: %v", q, err)
		}
	}
}

func (s *eventsStack) one(q string, args ...any) string {
	s.t.Helper()
	var v *string
	if err := s.conn.QueryRow(s.ctx, q, args...).Scan(&v); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
	if v == nil {
		return "<null>"
	}
	return *v
}

// within waits up to 5 s for cond, after a change alice made; it returns
// the cloud calls the sidecar made meanwhile beyond the queue's (receive,
// delete), by operation.
func (s *eventsStack) within(what string, cond func() bool) map[string]int {
	s.t.Helper()
	before := s.cloud.Emu.Calls()
	testkit.Until(s.t, 5*time.Second, what, cond)
	out := map[string]int{}
	for op, n := range s.cloud.Emu.Calls() {
		if d := n - before[op]; d > 0 && !strings.HasPrefix(op, "sqs:") {
			out[op] = d
		}
	}
	return out
}

// pulled waits for the audit row of a record pulled from the cloud after
// the audit row mark (capture writes it once the cycle's write commits),
// and returns its actor and what AWS said.
func (s *eventsStack) pulled(table, recordID string, mark int) (actor, event string) {
	s.t.Helper()
	var a, e *string
	testkit.Until(s.t, 10*time.Second, "the audit row of "+table+" "+recordID+" pulled from the cloud", func() bool {
		err := s.conn.QueryRow(s.ctx, `SELECT actor, attribution->>'event' FROM iasql_audit_log
			 WHERE table_name = $1 AND record_id = $2 AND origin = 'cloud' AND id > $3 ORDER BY id DESC LIMIT 1`, table, recordID, mark).Scan(&a, &e)
		return err == nil
	})
	if a == nil || e == nil {
		return fmt.Sprint(a), fmt.Sprint(e)
	}
	return *a, *e
}

// mark is the newest audit row's id.
func (s *eventsStack) mark() int {
	return s.count(`SELECT coalesce(max(id), 0)::int FROM iasql_audit_log`)
}

// queued is how many messages the queue holds that can be received, and
// how many are received and not deleted yet (SQS's approximate counts).
func (s *eventsStack) queued() (visible, taken string) {
	s.t.Helper()
	out, err := s.sqs.GetQueueAttributes(s.ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(s.queue),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages, sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		s.t.Fatalf("read the queue's counts: %v", err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)], out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]
}

// count is how many of the changes or cycles query counts.
func (s *eventsStack) count(q string, args ...any) int {
	s.t.Helper()
	var n int
	if err := s.conn.QueryRow(s.ctx, q, args...).Scan(&n); err != nil {
		s.t.Fatalf("%s: %v", q, err)
	}
	return n
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// TestEventsReachRows: with the pipeline set up by the README's SQL and
// the sidecar reading its queue, a change another access key makes (a
// group's tag, a bucket deleted, an instance stopped) reaches its row
// within 5 s, with no commit or refresh, at most 2 calls beyond the
// queue's, and an audit row naming that key's ARN; the sidecar's own
// changes come back as events and write nothing.
func TestEventsReachRows(t *testing.T) {
	t.Parallel()
	s := startEventsStack(t, []string{
		`INSERT INTO bucket (name) VALUES ('ev-logs'), ('ev-gone')`,
		`INSERT INTO security_group (group_name, description) VALUES ('ev-api', 'api servers')`,
		`INSERT INTO instance (ami, instance_type, tags) VALUES ('ami-0123456789abcdef0', 't3.micro', '{"Name": "ev-1"}')`,
		`CALL iasql_commit()`,
	}, "--interval", "10m")
	groupID := s.one(`SELECT group_id FROM security_group WHERE group_name = 'ev-api'`)
	groupRow := s.one(`SELECT id::text FROM security_group WHERE group_name = 'ev-api'`)
	first := s.mark()

	calls := map[string]map[string]int{}
	// A group's tag.
	mark := s.mark()
	if _, err := s.ec2.CreateTags(s.ctx, &ec2.CreateTagsInput{Resources: []string{groupID}, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("red")}}}); err != nil {
		t.Fatal(err)
	}
	calls["a group's tag"] = s.within("the group's row to have alice's tag", func() bool {
		return s.one(`SELECT tags->>'team' FROM security_group WHERE group_name = 'ev-api'`) == "red"
	})
	if actor, event := s.pulled("security_group", groupRow, mark); actor != alice || event != "CreateTags" {
		t.Errorf("the group's audit row names %s, %s; want %s, CreateTags", actor, event, alice)
	}

	// A bucket deleted.
	bucketRow := s.one(`SELECT id::text FROM bucket WHERE name = 'ev-gone'`)
	mark = s.mark()
	if _, err := s.s3.DeleteBucket(s.ctx, &s3.DeleteBucketInput{Bucket: aws.String("ev-gone")}); err != nil {
		t.Fatal(err)
	}
	calls["a bucket deleted"] = s.within("the deleted bucket's row to go", func() bool {
		return s.one(`SELECT count(*)::text FROM bucket WHERE name = 'ev-gone'`) == "0"
	})
	if actor, event := s.pulled("bucket", bucketRow, mark); actor != alice || event != "DeleteBucket" {
		t.Errorf("the bucket's audit row names %s, %s; want %s, DeleteBucket", actor, event, alice)
	}

	// An instance stopped.
	instanceID := s.one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'ev-1'`)
	instanceRow := s.one(`SELECT id::text FROM instance WHERE tags->>'Name' = 'ev-1'`)
	mark = s.mark()
	if _, err := s.ec2.StopInstances(s.ctx, &ec2.StopInstancesInput{InstanceIds: []string{instanceID}}); err != nil {
		t.Fatal(err)
	}
	calls["an instance stopped"] = s.within("the stopped instance's row to say so", func() bool {
		return s.one(`SELECT state FROM instance WHERE id = $1::int`, instanceRow) == "stopped"
	})
	if actor, event := s.pulled("instance", instanceRow, mark); actor != alice || event != "StopInstances" {
		t.Errorf("the instance's audit row names %s, %s; want %s, StopInstances", actor, event, alice)
	}
	for what, c := range calls {
		t.Logf("%s: the sidecar's calls beyond the queue's: %v", what, c)
		if sum(c) > 2 {
			t.Errorf("%s: the sidecar made %d calls beyond the queue's, want at most 2: %v", what, sum(c), c)
		}
	}
	if n := s.count(`SELECT count(*)::int FROM iasql_audit_log WHERE change_type = 'CYCLE_START' AND message::jsonb->>'reason' <> 'event' AND id > $1`, first); n > 0 {
		t.Errorf("%d cycles but event cycles ran; the changes came by events alone", n)
	}

	// The sidecar's own change: its CreateTags comes back as an event,
	// which writes nothing (no event cycle, no audit row after the
	// commit's).
	s.exec(`UPDATE security_group SET tags = tags || '{"own": "1"}' WHERE group_name = 'ev-api'`, `CALL iasql_commit()`)
	mark = s.mark()
	testkit.Until(t, 10*time.Second, "the sidecar to take and delete its own event", func() bool {
		visible, taken := s.queued()
		return visible == "0" && taken == "0" &&
			s.cloud.Emu.Calls()["sqs:DeleteMessage"] >= 4 // the three changes', and the own one's
	})
	if n := s.count(`SELECT count(*)::int FROM iasql_audit_log WHERE id > $1`, mark); n > 0 {
		t.Errorf("the sidecar's own change came back as an event and wrote %d audit rows", n)
	}
}

// TestEventsFailedCallChangesNothing: calls that failed (a bucket not
// empty, a bucket that does not exist) are recorded by CloudTrail with an
// errorCode; they changed nothing, so the README's rule does not send them
// and the sidecar takes them for no change: no event cycle reads for them
// (a bucket no row knows would have its table read whole), and nobody is
// recorded as having deleted the bucket. A change alice makes after them
// is pulled, named after her.
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func TestEventsFailedCallChangesNothing(t *testing.T) {
	t.Parallel()
	s := startEventsStack(t, []string{`INSERT INTO bucket (name) VALUES ('ev-full'), ('ev-ok')`, `CALL iasql_commit()`}, "--interval", "10m")
	if _, err := s.s3.PutObject(s.ctx, &s3.PutObjectInput{Bucket: aws.String("ev-full"), Key: aws.String("k"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	okRow := s.one(`SELECT id::text FROM bucket WHERE name = 'ev-ok'`)
	mark := s.mark()
	for _, b := range []string{"ev-full", "ev-not-a-row"} {
		if _, err := s.s3.DeleteBucket(s.ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)}); err == nil {
			t.Fatalf("alice deleted bucket %s; the test wants the call to fail", b)
		}
	}
	if _, err := s.s3.PutBucketVersioning(s.ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("ev-ok"),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	calls := s.within("the sidecar to pull alice's change after her failed calls", func() bool {
		return s.one(`SELECT versioning::text FROM bucket WHERE name = 'ev-ok'`) == "true"
	})
	if actor, event := s.pulled("bucket", okRow, mark); actor != alice || event != "PutBucketVersioning" {
		t.Errorf("the bucket's audit row names %s, %s; want %s, PutBucketVersioning", actor, event, alice)
	}
	if sum(calls) > 2 {
		// One bucket's read is a ListBuckets by prefix and its
		// GetBucketVersioning; the table read whole, for a bucket no row
		// knows, is more.
		t.Errorf("the sidecar made %d calls beyond the queue's, want at most 2 (ev-ok's read): %v", sum(calls), calls)
	}
	if n := s.count(`SELECT count(*)::int FROM bucket WHERE name = 'ev-full'`); n != 1 {
		t.Errorf("%d rows of the bucket alice failed to delete, want 1", n)
	}
	if n := s.count(`SELECT count(*)::int FROM iasql_audit_log WHERE id > $1 AND attribution->>'event' = 'DeleteBucket'`, mark); n > 0 {
		t.Errorf("%d audit rows name a DeleteBucket that failed", n)
	}
}

// TestEventsDueWorkNotHeld: while events flow, the scheduled full read is
// held to --events-interval, but not what is due: a part of the cloud an
// event cycle could not read (its event may be lost with it), and a
// failed record whose retry is due, are taken up at the next --interval.
func TestEventsDueWorkNotHeld(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// do makes work due; it returns what the test waits for.
		do func(t *testing.T, s *eventsStack) (string, func() bool)
	}{{
		name: "a part unverified",
		do: func(t *testing.T, s *eventsStack) (string, func() bool) {
			// A bucket no row knows: its event cycle reads the buckets
			// whole, which fails once.
			s.cloud.Emu.Inject(emulator.Fault{Op: "s3:ListBuckets", Kind: emulator.Denied, Times: 1})
			if _, err := s.s3.CreateBucket(s.ctx, &s3.CreateBucketInput{Bucket: aws.String("ev-new")}); err != nil {
				t.Fatal(err)
			}
			return "the bucket its event cycle could not read imported", func() bool {
				return s.count(`SELECT count(*)::int FROM bucket WHERE name = 'ev-new'`) == 1
			}
		},
	}, {
		name: "a retry due",
		do: func(t *testing.T, s *eventsStack) (string, func() bool) {
			s.cloud.Emu.Inject(emulator.Fault{Op: "s3:PutBucketVersioning", Kind: emulator.Denied, Times: 1})
			s.exec(`UPDATE bucket SET versioning = true WHERE name = 'ev-due'`)
			_, _ = s.conn.Exec(s.ctx, `CALL iasql_commit()`) // fails: denied once
			return "the bucket's versioning, whose push failed once, in the cloud", func() bool {
				out, err := s.s3.GetBucketVersioning(s.ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("ev-due")})
				return err == nil && out.Status == s3types.BucketVersioningStatusEnabled
			}
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startEventsStack(t, []string{`INSERT INTO bucket (name) VALUES ('ev-flow'), ('ev-due')`, `CALL iasql_commit()`}, "--interval", "2s")
			// Events flow: one arrived.
			versioning(t, s.s3, "ev-flow")
			s.within("the event's change in its row", func() bool {
				return s.one(`SELECT versioning::text FROM bucket WHERE name = 'ev-flow'`) == "true"
			})
			mark := s.mark()
			what, done := tc.do(t, s)
			testkit.Until(t, 30*time.Second, what, done)
			if n := s.count(`SELECT count(*)::int FROM iasql_audit_log WHERE change_type = 'CYCLE_START' AND message::jsonb->>'reason' = 'schedule' AND id > $1`, mark); n == 0 {
				t.Errorf("no scheduled cycle ran meanwhile")
			}
		})
	}
}

// versioning enables a bucket's versioning.
func versioning(t *testing.T, c *s3.Client, bucket string) {
	t.Helper()
	if _, err := c.PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
}

// TestEventsLostFoundByLookup: events lost (the queue purged while no
// sidecar reads it), the next full read brings the change, with its actor
// found by CloudTrail's LookupEvents: a change pulled from the cloud, and
// a TRACK column's value taken from the cloud in an ENFORCE table (the
// rest of the row is the database's).
func TestEventsLostFoundByLookup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rules []string
	}{
		{name: "pulled"},
		{name: "a TRACK column taken", rules: []string{
			`INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'ENFORCE')`,
			`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('bucket', 'versioning', 'TRACK')`,
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startEventsStack(t, append([]string{`INSERT INTO bucket (name) VALUES ('ev-lost')`, `CALL iasql_commit()`}, tc.rules...))
			row := s.one(`SELECT id::text FROM bucket WHERE name = 'ev-lost'`)
			if err := s.sc.Stop(30 * time.Second); err != nil {
				t.Fatalf("stop the sidecar: %v", err)
			}
			if _, err := s.s3.PutBucketVersioning(s.ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("ev-lost"),
				VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
				t.Fatal(err)
			}
			testkit.Until(t, 10*time.Second, "the change's event to be in the queue", func() bool {
				visible, _ := s.queued()
				return visible != "0"
			})
			if _, err := s.sqs.PurgeQueue(s.ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(s.queue)}); err != nil {
				t.Fatal(err)
			}
			s.start("--interval", "10m")
			s.exec(`CALL iasql_refresh()`)
			if v := s.one(`SELECT versioning::text FROM bucket WHERE name = 'ev-lost'`); v != "true" {
				t.Fatalf("after the refresh the bucket's versioning is %s, want true", v)
			}
			if actor, event := s.pulled("bucket", row, 0); actor != alice || event != "PutBucketVersioning" {
				t.Errorf("the bucket's audit row names %s, %s; want %s, PutBucketVersioning (LookupEvents)", actor, event, alice)
			}
			if s.cloud.Emu.Calls()["cloudtrail:LookupEvents"] == 0 {
				t.Errorf("no LookupEvents call: %v", s.cloud.Emu.Calls())
			}
		})
	}
}

// TestEventsEnforce: in an ENFORCE table, a change another key makes is
// reverted by the read its event starts, within 5 s.
func TestEventsEnforce(t *testing.T) {
	t.Parallel()
	s := startEventsStack(t, []string{
		`INSERT INTO security_group (group_name, description, tags) VALUES ('ev-enforced', 'enforced', '{"team": "blue"}')`,
		`CALL iasql_commit()`,
		`INSERT INTO iasql_mode (table_name, mode) VALUES ('security_group', 'ENFORCE')`,
	}, "--interval", "10m")
	groupID := s.one(`SELECT group_id FROM security_group WHERE group_name = 'ev-enforced'`)
	tagsOf := func() map[string]string {
		out, err := s.ec2.DescribeSecurityGroups(s.ctx, &ec2.DescribeSecurityGroupsInput{GroupIds: []string{groupID}})
		if err != nil || len(out.SecurityGroups) != 1 {
			t.Fatalf("describe the group: %v", err)
		}
		tags := map[string]string{}
		for _, tg := range out.SecurityGroups[0].Tags {
			tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
		}
		return tags
	}
	if _, err := s.ec2.CreateTags(s.ctx, &ec2.CreateTagsInput{Resources: []string{groupID}, Tags: []ec2types.Tag{{Key: aws.String("team"), Value: aws.String("red")}}}); err != nil {
		t.Fatal(err)
	}
	s.within("the group's tag to be reverted in the cloud", func() bool {
		return maps.Equal(tagsOf(), map[string]string{"team": "blue"})
	})
	if tags := s.one(`SELECT tags::text FROM security_group WHERE group_name = 'ev-enforced'`); tags != `{"team": "blue"}` {
		t.Errorf("the row's tags are %s; ENFORCE keeps the database's", tags)
	}
}

// TestEventsQueueDeleted: the queue deleted, status says so, and the
// scheduled full reads, held to --events-interval while events flowed,
// run at --interval again.
func TestEventsQueueDeleted(t *testing.T) {
	t.Parallel()
	s := startEventsStack(t, nil, "--interval", "2s", "--events-interval", "10m", "--metrics-listen", "127.0.0.1:0")
	addr := s.sc.WaitLog(time.Minute, regexp.MustCompile(`msg="serving metrics" addr=(\S+)`))
	flowing := s.count(`SELECT coalesce(max(id), 0)::int FROM iasql_audit_log`)
	// While events flow, no scheduled cycle (a few --interval's pass).
	begin := time.Now()
	testkit.Until(t, 10*time.Second, "three intervals to pass", func() bool { return time.Since(begin) > 6*time.Second })
	scheduled := `SELECT count(*)::int FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'schedule' AND id > $1`
	if n := s.count(scheduled, flowing); n > 0 {
		t.Errorf("%d scheduled cycles ran while events flowed; --events-interval is 10m", n)
	}
	if _, err := s.sqs.DeleteQueue(s.ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(s.queue)}); err != nil {
		t.Fatal(err)
	}
	s.sc.WaitLog(time.Minute, regexp.MustCompile(`msg="cannot read the events queue; full reads run at the normal interval`))
	deleted := s.count(`SELECT coalesce(max(id), 0)::int FROM iasql_audit_log`)
	testkit.Until(t, 20*time.Second, "two scheduled cycles after the queue was deleted", func() bool { return s.count(scheduled, deleted) >= 2 })
	r := testkit.Run(t, 30*time.Second, "status", "--dsn", s.dsn, "--json")
	var js struct {
		LastCycle struct {
			Events string `json:"events"`
		} `json:"last_cycle"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	if !strings.HasPrefix(js.LastCycle.Events, "cannot read events queue "+s.queue) || !slices.ContainsFunc(js.Warnings, func(w string) bool { return strings.HasPrefix(w, "cannot read events queue") }) {
		t.Errorf("status --json does not say the queue cannot be read: events %q, warnings %q", js.LastCycle.Events, js.Warnings)
	}
	if r := testkit.Run(t, 30*time.Second, "status", "--dsn", s.dsn); !regexp.MustCompile(`(?m)^events:\s+cannot read events queue `).MatchString(r.Stdout) {
		t.Errorf("status does not say the queue cannot be read:\n%s", r.Stdout)
	}
	_, body := httpGet(t, "http://"+addr+"/metrics")
	if v, ok := metricValue(body, "iasql_events_queue_readable", `queue="`+s.queue+`"`); !ok || v != 0 {
		t.Errorf("iasql_events_queue_readable = %v (found %v), want 0", v, ok)
	}
	// The pipeline's own calls (the README's INSERTs, made by the sidecar)
	// waited in the queue for this sidecar, which dropped them as its own.
	if v, ok := metricValue(body, "iasql_events_total", `outcome="own"`); !ok || v == 0 {
		t.Errorf("iasql_events_total{outcome=\"own\"} = %v (found %v), want the pipeline's own calls", v, ok)
	}
}
