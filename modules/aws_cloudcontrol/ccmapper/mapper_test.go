package ccmapper_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ccmapper"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ratelimit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// env is an emulator whose Cloud Control requests take delay, with the
// SDK clients a sidecar would make for it.
type env struct {
	em  *emulator.Emulator
	cc  *cloudcontrol.Client
	cfg aws.Config
	cfn *cloudformation.Client
	lim *ratelimit.Limiter
}

func newEnv(t *testing.T, delay time.Duration) *env {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{CloudControlDelay: delay})
	cfg := cl.AWS
	return &env{em: cl.Emu, cc: cloudcontrol.NewFromConfig(cfg), cfg: cfg, cfn: cloudformation.NewFromConfig(cfg), lim: ratelimit.New(1000, 100)}
}

// mapper installs a type as the engine would: DescribeType, then a
// mapper over the shared limiter.
func (e *env) mapper(t *testing.T, typeName string, opts ccmapper.Options) *ccmapper.Mapper {
	t.Helper()
	ty, err := schema.Describe(t.Context(), e.cfn, typeName)
	if err != nil {
		t.Fatal(err)
	}
	return ccmapper.New(ccmapper.NewClients(e.cfg), ty, e.lim, opts)
}

func (e *env) calls(op string) int { return e.em.Calls()["cloudcontrolapi:"+op] }

// settle follows a Create/Update/Delete answer until its request is done,
// polling as the engine does (honouring RetryAfter), for up to 10 s; it
// returns the final record and error. It also checks that a Pending
// carries a handle.
func settle(t *testing.T, m *ccmapper.Mapper) func(module.Record, error) (module.Record, error) {
	return func(rec module.Record, err error) (module.Record, error) {
		t.Helper()
		return follow(t, m, rec, err)
	}
}

// settleDel is settle for Delete's answer.
func settleDel(t *testing.T, m *ccmapper.Mapper) func(error) (module.Record, error) {
	return func(err error) (module.Record, error) {
		t.Helper()
		return follow(t, m, nil, err)
	}
}

func follow(t *testing.T, m *ccmapper.Mapper, rec module.Record, err error) (module.Record, error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var p *module.Pending
		if !errors.As(err, &p) {
			return rec, err
		}
		if p.Handle == "" {
			t.Fatalf("Pending without a handle: %+v", p)
		}
		if time.Now().After(deadline) {
			t.Fatalf("request %s still pending after 10 s", p.Handle)
		}
		wait := min(max(p.RetryAfter, time.Millisecond), 100*time.Millisecond)
		time.Sleep(wait) // the cloud's advice on when to ask
		rec, err = m.Poll(t.Context(), module.Call{}, p.Handle)
	}
}

func mustPending(t *testing.T, err error) *module.Pending {
	t.Helper()
	var p *module.Pending
	if !errors.As(err, &p) {
		t.Fatalf("want *module.Pending, got %v", err)
	}
	return p
}

func TestLogGroupLifecycle(t *testing.T) {
	e := newEnv(t, 30*time.Millisecond)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	ctx, call := t.Context(), module.Call{Token: "tok-lg-1"}
	want := module.Record{"log_group_name": "app", "retention_in_days": json.Number("7"), "tags": map[string]any{"team": "a"}}

	rec, err := m.Create(ctx, call, want)
	p := mustPending(t, err)
	if p.Record["log_group_name"] != "app" {
		t.Errorf("Pending.Record %v: want the identity", p.Record)
	}
	got, err := settle(t, m)(rec, err)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.String("arn"), "arn:aws:logs:") || got["log_group_class"] != "STANDARD" {
		t.Errorf("created record %v: want the ARN and the default class", got)
	}
	if tags, _ := got["tags"].(map[string]any); tags["team"] != "a" {
		t.Errorf("tags %v: want a map", got["tags"])
	}
	if !m.Equal(want, got) {
		t.Errorf("the row and the created resource differ: %v / %v", want, got)
	}

	read, err := m.Read(t.Context(), module.Call{})
	if err != nil || len(read) != 1 {
		t.Fatalf("Read: %v %v", read, err)
	}
	if e.calls("GetResource") != 1 { // the read-back after SUCCESS; the list was complete
		t.Errorf("GetResource calls %d: the list carries every property, no per-item read", e.calls("GetResource"))
	}

	// A no-op: the read record as want makes no mutating call.
	e.em.Reset()
	if same, err := m.Update(t.Context(), module.Call{}, read[0], read[0]); err != nil || same == nil {
		t.Fatalf("no-op Update: %v %v", same, err)
	}
	for _, op := range []string{"UpdateResource", "CreateResource", "DeleteResource"} {
		if n := e.calls(op); n != 0 {
			t.Errorf("no-op Update made %d %s calls", n, op)
		}
	}

	// Update in place.
	w2 := module.Record{"log_group_name": "app", "retention_in_days": json.Number("14"), "tags": map[string]any{"team": "b"}}
	got, err = settle(t, m)(m.Update(t.Context(), module.Call{}, w2, read[0]))
	if err != nil {
		t.Fatal(err)
	}
	if !m.Equal(w2, got) || got.String("retention_in_days") != "14" {
		t.Errorf("after update %v, want %v", got, w2)
	}

	// A create-only change is a replacement, and nothing is called.
	e.em.Reset()
	_, err = m.Update(t.Context(), module.Call{}, module.Record{"log_group_name": "app", "log_group_class": "INFREQUENT_ACCESS"}, got)
	if !errors.Is(err, module.ErrReplace) || !strings.Contains(err.Error(), "/properties/LogGroupClass") {
		t.Errorf("create-only change: %v, want ErrReplace naming the path", err)
	}
	if e.calls("UpdateResource") != 0 {
		t.Error("a replacement was sent as an update")
	}

	// Get reads fresh; Delete; then it is absent.
	if g, err := m.Get(t.Context(), module.Call{}, []string{`["app","us-east-1"]`, `["missing","us-east-1"]`, `["app","eu-west-1"]`}); err != nil || len(g) != 1 {
		t.Errorf("Get: %v %v", g, err)
	}
	if _, err := settleDel(t, m)(m.Delete(t.Context(), module.Call{}, got)); err != nil {
		t.Fatal(err)
	}
	if g, err := m.Get(t.Context(), module.Call{}, []string{`["app","us-east-1"]`}); err != nil || len(g) != 0 {
		t.Errorf("Get after delete: %v %v", g, err)
	}
	// Deleting what is gone is done (FAILED NotFound, or not found at once).
	if _, err := settleDel(t, m)(m.Delete(t.Context(), module.Call{}, got)); err != nil {
		t.Errorf("delete of a missing resource: %v", err)
	}
}

func TestSQSQueueLifecycle(t *testing.T) {
	e := newEnv(t, 20*time.Millisecond)
	m := e.mapper(t, "AWS::SQS::Queue", ccmapper.Options{})
	if ct := m.Type().ModuleTable().CloudID; len(ct) != 1 || ct[0] != "queue_url" {
		t.Fatalf("CloudID %v", ct)
	}
	want := module.Record{"queue_name": "jobs", "visibility_timeout": json.Number("45"), "redrive_allow_policy": map[string]any{"redrivePermission": "denyAll"}}
	got, err := settle(t, m)(m.Create(t.Context(), module.Call{Token: "tok-q-1"}, want))
	if err != nil {
		t.Fatal(err)
	}
	if got.String("queue_url") == "" || got.String("arn") == "" {
		t.Fatalf("created queue %v: want its URL and ARN", got)
	}
	if !m.Equal(want, got) {
		t.Errorf("row and queue differ (defaults must equal absence): %v / %v", want, got)
	}
	w2 := module.Record{"queue_name": "jobs", "visibility_timeout": json.Number("60"), "redrive_allow_policy": map[string]any{"redrivePermission": "denyAll"}}
	got2, err := settle(t, m)(m.Update(t.Context(), module.Call{}, w2, got))
	if err != nil {
		t.Fatal(err)
	}
	if got2.String("visibility_timeout") != "60" || got2["queue_url"] != got["queue_url"] {
		t.Errorf("after update %v", got2)
	}
	e.em.Reset()
	if _, err := m.Update(t.Context(), module.Call{}, got2, got2); err != nil || e.calls("UpdateResource") != 0 {
		t.Errorf("no-op update: %v, %d calls", err, e.calls("UpdateResource"))
	}
	if _, err := m.Update(t.Context(), module.Call{}, module.Record{"queue_name": "jobs", "fifo_queue": true}, got2); !errors.Is(err, module.ErrReplace) {
		t.Errorf("FifoQueue change: %v, want ErrReplace", err)
	}
	if _, err := settleDel(t, m)(m.Delete(t.Context(), module.Call{}, got2)); err != nil {
		t.Fatal(err)
	}
	if read, err := m.Read(t.Context(), module.Call{}); err != nil || len(read) != 0 {
		t.Errorf("after delete: %v %v", read, err)
	}
}

func TestClientTokenReuse(t *testing.T) {
	e := newEnv(t, 50*time.Millisecond)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	ctx, call := t.Context(), module.Call{Token: "tok-same"}
	want := module.Record{"log_group_name": "once"}
	_, err1 := m.Create(ctx, call, want)
	_, err2 := m.Create(ctx, call, want) // the engine after a crash: same token
	p1, p2 := mustPending(t, err1), mustPending(t, err2)
	if p1.Handle != p2.Handle {
		t.Errorf("the same client token made two requests: %s, %s", p1.Handle, p2.Handle)
	}
	if _, err := settle(t, m)(nil, err2); err != nil {
		t.Fatal(err)
	}
	// After SUCCESS, the same create again answers the done request.
	got, err := settle(t, m)(m.Create(ctx, call, want))
	if err != nil || got.String("log_group_name") != "once" {
		t.Errorf("create repeated after success: %v %v", got, err)
	}
	if read, _ := m.Read(t.Context(), module.Call{}); len(read) != 1 {
		t.Errorf("%d log groups, want 1", len(read))
	}
}

func TestRetryableHandlerFailure(t *testing.T) {
	e := newEnv(t, 10*time.Millisecond)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.HandlerFailure, ErrorCode: "Throttling", Times: 1})
	ctx, call := t.Context(), module.Call{Token: "tok-retry"}
	want := module.Record{"log_group_name": "flaky"}
	_, err := settle(t, m)(m.Create(ctx, call, want))
	var re *ccmapper.RequestError
	var te *module.TerminalError
	if !errors.As(err, &re) || re.Code != "Throttling" || errors.As(err, &te) {
		t.Fatalf("a Throttling failure: %v, want a retryable RequestError", err)
	}
	// The engine retries with the same persisted token: the mapper passes
	// over the failed request and makes a new one.
	got, err := settle(t, m)(m.Create(ctx, call, want))
	if err != nil || got.String("log_group_name") != "flaky" {
		t.Fatalf("retry: %v %v", got, err)
	}
	// Throttling of the API itself is retried by the SDK.
	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:ListResources", Kind: emulator.Throttle, Times: 1})
	if read, err := m.Read(t.Context(), module.Call{}); err != nil || len(read) != 1 {
		t.Errorf("Read under throttling: %v %v", read, err)
	}
}

func TestTerminalFailures(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.HandlerFailure, ErrorCode: "InvalidRequest", Times: 1})
	_, err := settle(t, m)(m.Create(t.Context(), module.Call{}, module.Record{"log_group_name": "bad"}))
	var te *module.TerminalError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "InvalidRequest") || !strings.Contains(err.Error(), "injected") {
		t.Errorf("InvalidRequest: %v, want a terminal error with the code and AWS's message", err)
	}
	// A create of an identity that exists.
	if _, err := settle(t, m)(m.Create(t.Context(), module.Call{}, module.Record{"log_group_name": "taken"})); err != nil {
		t.Fatal(err)
	}
	_, err = settle(t, m)(m.Create(t.Context(), module.Call{}, module.Record{"log_group_name": "taken"}))
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "AlreadyExists") || !strings.Contains(err.Error(), "exists already") {
		t.Errorf("AlreadyExists: %v", err)
	}
	// Invalid input refused at the call is terminal too.
	_, err = m.Create(t.Context(), module.Call{}, module.Record{"log_group_name": "x", "retention_in_days": "many"})
	if !errors.As(err, &te) {
		t.Errorf("a model the schema refuses: %v, want terminal", err)
	}
}

func TestPagination(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	const n = 60
	for i := 0; i < n; i++ {
		// Out of band, through the API, as another tool would.
		_, err := e.cc.CreateResource(t.Context(), &cloudcontrol.CreateResourceInput{
			TypeName: aws.String("AWS::Logs::LogGroup"), DesiredState: aws.String(fmt.Sprintf(`{"LogGroupName": "g%03d"}`, i)),
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	e.em.Reset()
	read, err := m.Read(t.Context(), module.Call{})
	if err != nil || len(read) != n {
		t.Fatalf("Read: %d records, %v; want %d", len(read), err, n)
	}
	if got := e.calls("ListResources"); got != 3 {
		t.Errorf("%d ListResources calls for %d resources, want 3 pages of 25", got, n)
	}
}

func TestListPerParent(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::Logs::SubscriptionFilter", ccmapper.Options{})
	if _, err := m.Read(t.Context(), module.Call{}); err == nil || !strings.Contains(err.Error(), "LogGroupName") {
		t.Errorf("Read without parents: %v", err)
	}
	m = e.mapper(t, "AWS::Logs::SubscriptionFilter", ccmapper.Options{Parents: func(module.Call) ([]map[string]any, error) {
		return []map[string]any{{"LogGroupName": "a"}, {"LogGroupName": "b"}}, nil
	}})
	e.em.Reset()
	if read, err := m.Read(t.Context(), module.Call{}); err != nil || len(read) != 0 {
		t.Errorf("Read per parent: %v %v", read, err)
	}
	if got := e.calls("ListResources"); got != 2 {
		t.Errorf("%d ListResources calls, want one per parent", got)
	}
}

func TestRateLimitShared(t *testing.T) {
	e := newEnv(t, 0)
	e.lim = ratelimit.New(20, 1)
	a := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	b := e.mapper(t, "AWS::SQS::Queue", ccmapper.Options{})
	start := time.Now()
	for i := 0; i < 3; i++ {
		if _, err := a.Read(t.Context(), module.Call{}); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Read(t.Context(), module.Call{}); err != nil {
			t.Fatal(err)
		}
	}
	// 6 calls through one bucket of 1 at 20/s: at least 5 intervals of 50 ms.
	if d := time.Since(start); d < 240*time.Millisecond {
		t.Errorf("6 calls took %v: the limiter is not shared", d)
	}
}

func TestPartialListItems(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{})
	cases := []struct {
		name    string
		model   map[string]any
		partial bool
	}{
		{"the identifier only", map[string]any{"LogGroupName": "a"}, true},
		{"no read-only Arn", map[string]any{"LogGroupName": "a", "RetentionInDays": json.Number("7")}, true},
		{"the whole model", map[string]any{"LogGroupName": "a", "Arn": "arn:aws:logs:x", "LogGroupClass": "STANDARD"}, false},
	}
	for _, c := range cases {
		if got := m.Partial(c.model); got != c.partial {
			t.Errorf("%s: partial %v, want %v", c.name, got, c.partial)
		}
	}
}

// TestReadBackNotFound: a request that ended SUCCESS whose resource is
// not readable yet is reported Pending again a few times (AWS is
// eventually consistent after a write), then as a retryable failure.
func TestReadBackNotFound(t *testing.T) {
	e := newEnv(t, 0)
	m := e.mapper(t, "AWS::Logs::LogGroup", ccmapper.Options{ReadBackPolls: 2})
	_, err := m.Create(t.Context(), module.Call{}, module.Record{"log_group_name": "gone"})
	p := mustPending(t, err)
	// Out of band, the group is deleted before the create is polled.
	del, err := e.cc.DeleteResource(t.Context(), &cloudcontrol.DeleteResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String("gone")})
	if err != nil {
		t.Fatal(err)
	}
	for {
		st, err := e.cc.GetResourceRequestStatus(t.Context(), &cloudcontrol.GetResourceRequestStatusInput{RequestToken: del.ProgressEvent.RequestToken})
		if err != nil {
			t.Fatal(err)
		}
		if st.ProgressEvent.OperationStatus == "SUCCESS" {
			break
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := m.Poll(t.Context(), module.Call{}, p.Handle); mustPending(t, err).Handle != p.Handle {
			t.Errorf("poll %d: another handle", i)
		}
	}
	_, err = m.Poll(t.Context(), module.Call{}, p.Handle)
	var te *module.TerminalError
	if err == nil || errors.As(err, &te) || !strings.Contains(err.Error(), "cannot be read") {
		t.Errorf("after the read-back polls: %v, want a retryable failure", err)
	}
}

// TestNoOpPerType: for each type the emulator serves that needs no
// parent, the created resource equals its row (defaults, generated
// values, tags) as the mapper returns it and as the engine makes it
// canonical, and an Update from what was read to itself makes no
// mutating call.
func TestNoOpPerType(t *testing.T) {
	cases := []struct {
		typeName string
		want     module.Record
	}{
		{"AWS::Logs::LogGroup", module.Record{"log_group_name": "noop", "tags": map[string]any{"k": "v"}}},
		{"AWS::SQS::Queue", module.Record{"queue_name": "noop", "delay_seconds": json.Number("0")}},
		{"AWS::SNS::Topic", module.Record{"topic_name": "noop", "tags": map[string]any{"k": "v"}}},
		{"AWS::KMS::Key", module.Record{"description": "noop", "key_policy": map[string]any{"Version": "2012-10-17", "Statement": []any{}}, "pending_window_in_days": json.Number("7")}},
		{"AWS::ECS::Cluster", module.Record{"cluster_name": "noop", "capacity_providers": []any{"FARGATE", "FARGATE_SPOT"}}},
		{"AWS::DynamoDB::Table", module.Record{"table_name": "noop",
			"key_schema":            []any{map[string]any{"AttributeName": "pk", "KeyType": "HASH"}},
			"attribute_definitions": []any{map[string]any{"AttributeName": "pk", "AttributeType": "S"}},
			"billing_mode":          "PAY_PER_REQUEST"}},
	}
	for _, c := range cases {
		t.Run(c.typeName, func(t *testing.T) {
			e := newEnv(t, 0)
			m := e.mapper(t, c.typeName, ccmapper.Options{})
			got, err := settle(t, m)(m.Create(t.Context(), module.Call{}, c.want))
			if err != nil {
				t.Fatal(err)
			}
			if !m.Equal(c.want, got) {
				t.Errorf("the row and the created resource differ: %v / %v", c.want, got)
			}
			read, err := m.Read(t.Context(), module.Call{})
			if err != nil || len(read) != 1 {
				t.Fatalf("Read: %v %v", read, err)
			}
			// What the engine takes from the mapper: records of declared
			// columns only, which it makes canonical by their types.
			tbl := m.Type().ModuleTable()
			for _, r := range []module.Record{got, read[0]} {
				cr, err := tbl.Canonical(r)
				if err != nil {
					t.Fatalf("the engine refuses %v: %v", r, err)
				}
				if !m.Equal(c.want, cr) {
					t.Errorf("the row and the canonical resource differ: %v / %v", c.want, cr)
				}
			}
			e.em.Reset()
			if _, err := m.Update(t.Context(), module.Call{}, c.want, read[0]); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Update(t.Context(), module.Call{}, read[0], read[0]); err != nil {
				t.Fatal(err)
			}
			for _, op := range []string{"UpdateResource", "CreateResource", "DeleteResource"} {
				if n := e.calls(op); n != 0 {
					t.Errorf("no-op updates made %d %s calls", n, op)
				}
			}
		})
	}
}

// TestListUnderGoneParent: a list under a parent that no longer exists
// (the parent of a deleted row, still named while the engine settles it)
// answers ResourceNotFoundException for handlers that describe the
// parent first: that parent holds nothing, and the other parents' lists
// still count. Any other failure of a list fails the read.
func TestListUnderGoneParent(t *testing.T) {
	e := newEnv(t, 0)
	for _, r := range []struct{ typeName, desired string }{
		{"AWS::Logs::LogGroup", `{"LogGroupName": "kept"}`},
		{"AWS::Logs::SubscriptionFilter", `{"LogGroupName": "kept", "FilterName": "f", "FilterPattern": "", "DestinationArn": "arn:aws:lambda:us-east-1:123456789012:function:f"}`},
	} {
		out, err := e.cc.CreateResource(t.Context(), &cloudcontrol.CreateResourceInput{TypeName: aws.String(r.typeName), DesiredState: aws.String(r.desired)})
		if err != nil {
			t.Fatal(err)
		}
		if ev := testkit.WaitCloudControl(t, 10*time.Second, e.cc, out.ProgressEvent); ev.OperationStatus != "SUCCESS" {
			t.Fatalf("create %s: %s %s", r.typeName, ev.ErrorCode, aws.ToString(ev.StatusMessage))
		}
	}
	// The gone parent is listed first: the fault answers the first list.
	m := e.mapper(t, "AWS::Logs::SubscriptionFilter", ccmapper.Options{Parents: func(module.Call) ([]map[string]any, error) {
		return []map[string]any{{"LogGroupName": "gone"}, {"LogGroupName": "kept"}}, nil
	}})
	if read, err := m.Read(t.Context(), module.Call{}); err != nil || len(read) != 1 {
		t.Fatalf("Read: %v %v; want the filter", read, err)
	}
	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:ListResources", Kind: emulator.Refuse, ErrorCode: "ResourceNotFoundException", Times: 1})
	read, err := m.Read(t.Context(), module.Call{})
	if err != nil || len(read) != 1 || read[0].String("log_group_name") != "kept" {
		t.Errorf("Read with a gone parent: %v %v; want the kept parent's filter", read, err)
	}
	e.em.Inject(emulator.Fault{Op: "cloudcontrolapi:ListResources", Kind: emulator.Refuse, ErrorCode: "AccessDeniedException", Times: 1})
	if read, err := m.Read(t.Context(), module.Call{}); err == nil {
		t.Errorf("Read with a list denied: %v, want the failure", read)
	}
}
