package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	dto "github.com/prometheus/client_model/go"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/metrics"
	iasqlsql "github.com/iasql/iasql/sql"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func responseError(status int) error {
	return &awshttp.ResponseError{ResponseError: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      errors.New("boom"),
	}}
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"success", nil, "ok"},
		{"cancelled", fmt.Errorf("op: %w", context.Canceled), "canceled"},
		{"deadline", context.DeadlineExceeded, "canceled"},
		{"throttling code", &smithy.GenericAPIError{Code: "Throttling"}, "throttled"},
		{"EC2 throttling code", &smithy.GenericAPIError{Code: "RequestLimitExceeded", Fault: smithy.FaultServer}, "throttled"},
		{"429", responseError(http.StatusTooManyRequests), "throttled"},
		{"500", responseError(500), "server_error"},
		{"403", responseError(403), "client_error"},
		{"client fault without a response", &smithy.GenericAPIError{Code: "InvalidParameter", Fault: smithy.FaultClient}, "client_error"},
		{"server fault without a response", &smithy.GenericAPIError{Code: "InternalError", Fault: smithy.FaultServer}, "server_error"},
		{"no answer", errors.New("dial tcp: connection refused"), "error"},
	}
	for _, tc := range tests {
		if got := metrics.Outcome(tc.err); got != tc.want {
			t.Errorf("%s: Outcome(%v) = %q, want %q", tc.name, tc.err, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int64
		want string
	}{
		{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {1536, "1.5 KiB"},
		{16 << 20, "16.0 MiB"}, {3 << 30, "3.0 GiB"}, {-2048, "-2.0 KiB"},
	} {
		if got := metrics.Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

func TestListen(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tc := range []struct {
		addr, want string
	}{
		{"nonsense", "give host:port"},
		{"127.0.0.1", "give host:port"},
		{"127.0.0.1:", "give host:port"},
		{taken.Addr().String(), "address already in use"},
	} {
		l, err := metrics.Listen(tc.addr)
		if err == nil {
			l.Close()
			t.Errorf("Listen(%q) succeeded", tc.addr)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "--metrics-listen") {
			t.Errorf("Listen(%q): %v, want it to say %q and name the flag", tc.addr, err, tc.want)
		}
	}
}

// family returns the metric family name from reg, or nil.
func family(t *testing.T, m *metrics.Metrics, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	return nil
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// value returns the value of the metric of family name whose labels
// include want, and whether there is one.
func value(t *testing.T, m *metrics.Metrics, name string, want map[string]string) (float64, bool) {
	t.Helper()
	f := family(t, m, name)
	if f == nil {
		return 0, false
	}
next:
	for _, mt := range f.GetMetric() {
		got := labels(mt)
		for k, v := range want {
			if got[k] != v {
				continue next
			}
		}
		switch {
		case mt.Counter != nil:
			return mt.Counter.GetValue(), true
		case mt.Gauge != nil:
			return mt.Gauge.GetValue(), true
		}
		return 0, true
	}
	return 0, false
}

// TestInstrumentCountsCloudCalls: calls made with an instrumented config
// are counted by service, operation and outcome.
func TestInstrumentCountsCloudCalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	m, err := metrics.New(ctx, srv.NewDB(t), "iasql_x")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cfg := testkit.StartCloud(t, emulator.Options{}).AWS
	m.Instrument(&cfg)
	client := s3.NewFromConfig(cfg, testkit.PathStyle)
	for range 2 {
		if _, err := client.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("no-such-bucket")}); err == nil {
		t.Fatal("HeadBucket of a missing bucket succeeded")
	}
	for _, tc := range []struct {
		op, outcome string
		want        float64
	}{{"ListBuckets", "ok", 2}, {"HeadBucket", "client_error", 1}} {
		got, ok := value(t, m, "iasql_cloud_calls_total", map[string]string{"service": "S3", "operation": tc.op, "outcome": tc.outcome})
		if !ok || got != tc.want {
			t.Errorf("iasql_cloud_calls_total{S3,%s,%s} = %v (present %v), want %v", tc.op, tc.outcome, got, ok, tc.want)
		}
	}
}

// TestCollectorReadsTheDatabase: capture, slot, leadership and cycle
// metrics come from the database at scrape time; cycles are counted from
// when the metrics started, with their durations in the histogram.
func TestCollectorReadsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := srv.NewDB(t)
	conn := pgtest.Connect(t, dsn)
	if _, err := iasqlsql.InstallPlain(ctx, conn); err != nil {
		t.Fatal(err)
	}
	var db string
	if err := conn.QueryRow(ctx, `SELECT current_database()`).Scan(&db); err != nil {
		t.Fatal(err)
	}
	slot := "iasql_" + db
	// A cycle that ended before the metrics started is not counted. Cycle
	// records are written here as the engine writes them, with the guard
	// triggers off (only the sidecar's sessions may write the trail).
	cycle := func(id, outcome string, start, end time.Time) {
		t.Helper()
		pgtest.Exec(t, dsn, fmt.Sprintf(`SET session_replication_role = replica;
			INSERT INTO iasql_audit_log (ts, change_type, origin, message) VALUES
			  ('%s', 'CYCLE_START', 'engine', '{"cycle": "%s", "reason": "test"}'),
			  ('%s', 'CYCLE_END', 'engine', '{"cycle": "%s", "reason": "test", "outcome": "%s", "summary": "nothing to do"}')`,
			start.Format(time.RFC3339Nano), id, end.Format(time.RFC3339Nano), id, outcome))
	}
	long := time.Now().Add(-time.Hour)
	cycle("old", "done", long, long.Add(time.Second))

	m, err := metrics.New(ctx, dsn, slot)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if v, ok := value(t, m, "iasql_slot_active", nil); !ok || v != 0 {
		t.Errorf("iasql_slot_active without a slot = %v (present %v), want 0", v, ok)
	}
	if _, ok := value(t, m, "iasql_slot_wal_status", nil); ok {
		t.Error("iasql_slot_wal_status is present without a slot")
	}
	now := time.Now()
	cycle("a", "done", now, now.Add(300*time.Millisecond))
	cycle("b", "done", now, now.Add(3*time.Second))
	cycle("c", "failed", now, now.Add(45*time.Second))

	pgtest.Exec(t, dsn, fmt.Sprintf(`SELECT pg_create_logical_replication_slot('%s', 'pgoutput')`, slot))
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"iasql_cycles_total", map[string]string{"outcome": "done"}, 2},
		{"iasql_cycles_total", map[string]string{"outcome": "failed"}, 1},
		{"iasql_cycles_total", map[string]string{"outcome": "timeout"}, 0},
		{"iasql_slot_wal_status", map[string]string{"wal_status": "reserved"}, 1},
		{"iasql_slot_active", nil, 0},
		{"iasql_leader", nil, 0},
		{"iasql_database_up", nil, 1},
		{"iasql_requests_refused_total", map[string]string{"reason": "rate"}, 0},
		{"iasql_records", map[string]string{"state": "failed"}, 0},
		{"iasql_max_slot_wal_keep_size_bytes", nil, -1},
		{"iasql_changes_captured_total", nil, 0},
	} {
		got, ok := value(t, m, tc.name, tc.labels)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (present %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if _, ok := value(t, m, "iasql_slot_retained_wal_bytes", nil); !ok {
		t.Error("iasql_slot_retained_wal_bytes is missing")
	}
	if _, ok := value(t, m, "iasql_last_cycle_end_timestamp_seconds", map[string]string{"outcome": "failed"}); !ok {
		t.Error("iasql_last_cycle_end_timestamp_seconds{outcome=failed} is missing")
	}
	// Scrapes count each cycle once.
	if got, _ := value(t, m, "iasql_cycles_total", map[string]string{"outcome": "done"}); got != 2 {
		t.Errorf("a second scrape counts %v done cycles, want 2", got)
	}
	h := family(t, m, "iasql_cycle_duration_seconds").GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 3 || h.GetSampleSum() < 48.2 || h.GetSampleSum() > 48.4 {
		t.Errorf("cycle durations: count %d sum %v, want 3 and 48.3", h.GetSampleCount(), h.GetSampleSum())
	}
	cum := map[float64]uint64{}
	for _, b := range h.GetBucket() {
		cum[b.GetUpperBound()] = b.GetCumulativeCount()
	}
	for le, want := range map[float64]uint64{0.25: 0, 0.5: 1, 2.5: 1, 5: 2, 30: 2, 60: 3, 2700: 3} {
		if cum[le] != want {
			t.Errorf("cycle duration bucket le=%v holds %d, want %d", le, cum[le], want)
		}
	}

	// Leadership: this sidecar took it (OnReady) and the capture lock is held.
	m.SetLeader()
	if v, _ := value(t, m, "iasql_leader", nil); v != 0 {
		t.Errorf("iasql_leader = %v with nobody holding the capture lock, want 0", v)
	}
	lock := pgtest.Connect(t, dsn)
	if _, err := lock.Exec(ctx, `SELECT iasql_take_lock(1)`); err != nil {
		t.Fatal(err)
	}
	if v, _ := value(t, m, "iasql_leader", nil); v != 1 {
		t.Errorf("iasql_leader = %v while leading, want 1", v)
	}
}

// TestServe: /healthz and /metrics answer, and the server shuts down when
// its context ends.
func TestServe(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	m, err := metrics.New(ctx, dsn, "iasql_none")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	l, err := metrics.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- metrics.Serve(ctx, l, m.Handler(nil)) }()
	base := "http://" + l.Addr().String()
	get := func(path string) (int, string) {
		t.Helper()
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/healthz"); code != 200 || body != "ok standby\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "iasql_database_up 1") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d\n%s", code, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Serve after its context ended: %v", err)
	}
	if c, err := net.Dial("tcp", l.Addr().String()); err == nil {
		c.Close()
		t.Error("the metrics port still accepts connections after shutdown")
	}
}

// TestLogCalls: at debug, each cloud call is one log line; above, none.
func TestLogCalls(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	cloud := testkit.StartCloud(t, emulator.Options{})
	for _, tc := range []struct {
		level slog.Level
		want  []string
	}{
		{slog.LevelDebug, []string{`"msg":"cloud call"`, `"service":"S3"`, `"operation":"ListBuckets"`, `"outcome":"ok"`, `"duration":`}},
		{slog.LevelInfo, nil},
	} {
		var buf bytes.Buffer
		cfg := cloud.AWS
		metrics.LogCalls(&cfg, slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: tc.level})))
		client := s3.NewFromConfig(cfg, testkit.PathStyle)
		if _, err := client.ListBuckets(ctx, &s3.ListBucketsInput{}); err != nil {
			t.Fatal(err)
		}
		got := buf.String()
		if tc.want == nil && got != "" {
			t.Errorf("at %s, calls are logged: %s", tc.level, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) || strings.Count(got, "\n") != 1 {
				t.Errorf("at %s, the log %q lacks %s or is not one line", tc.level, got, w)
			}
		}
	}
}

// TestDatabaseDown: with the database out of reach, /metrics still answers
// (iasql_database_up 0, the cloud calls) and /healthz answers 503.
func TestDatabaseDown(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	m, err := metrics.New(t.Context(), "postgres://nobody@"+closed+"/x?connect_timeout=5", "iasql_x")
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	h := m.Handler(slog.New(slog.NewTextHandler(io.Discard, nil)))
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/metrics", 200, "iasql_database_up 0"},
		{"/healthz", 503, "database: "},
	} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", tc.path, nil))
		if rec.Code != tc.code || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%s: %d %q, want %d and %q", tc.path, rec.Code, rec.Body.String(), tc.code, tc.want)
		}
	}
}
