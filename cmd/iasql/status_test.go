package main_test

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// startSidecar starts iasql run with args against the emulator at
// endpoint ("": none, launch.NoCloud).
func startSidecar(t *testing.T, endpoint string, args ...string) *testkit.Process {
	t.Helper()
	return testkit.Start(t, endpoint, nil, append([]string{"run"}, args...)...)
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// metricValue finds the sample of name whose labels include every one of
// labels (name="value" pairs) in a Prometheus text exposition.
func metricValue(body, name string, labels ...string) (float64, bool) {
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		i := strings.LastIndexByte(rest, ' ')
		if i < 0 {
			continue
		}
		match := true
		for _, l := range labels {
			if !strings.Contains(rest[:i], l) {
				match = false
			}
		}
		if !match {
			continue
		}
		v, err := strconv.ParseFloat(rest[i+1:], 64)
		return v, err == nil
	}
	return 0, false
}

// TestStatusAndMetrics: status reports the slot's WAL retention, the last
// cycle and the records not in sync, as text and JSON, and exits 2 when
// records fail; run --metrics-listen serves the same as metrics, with the
// cloud calls it made, and /healthz; the server stops with the sidecar.
func TestStatusAndMetrics(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := srv.NewDB(t)
	es := testkit.StartCloud(t, emulator.Options{})
	emu := es.Emu
	sc := startSidecar(t, es.URL, "--dsn", dsn, "--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug")
	addr := sc.WaitLog(time.Minute, regexp.MustCompile(`"msg":"serving metrics","addr":"([^"]+)"`))
	base := "http://" + addr

	conn := pgtest.Connect(t, dsn)
	testkit.WaitQuery(t, conn, time.Minute, "the sidecar to register its modules", `SELECT count(*) > 0 FROM iasql_modules`)
	for _, q := range []string{`SELECT * FROM iasql_install('aws_s3')`, `INSERT INTO bucket (name) VALUES ('ops-ok')`, `CALL iasql_commit()`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v\n%s", q, err, sc.Log.String())
		}
	}
	r := testkit.Run(t, 30*time.Second, "status", "--dsn", dsn)
	if r.Code != 0 {
		t.Fatalf("status with everything in sync: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	// How much WAL the slot retains depends on when status looks: a
	// number of bytes, and the same in a unit a person reads.
	if !regexp.MustCompile(`retained_wal:\s+\d+ \(\d+(\.\d+)? (B|KiB|MiB|GiB)\)`).MatchString(r.Stdout) {
		t.Errorf("status lacks retained_wal in bytes and units:\n%s", r.Stdout)
	}
	for _, want := range []string{"wal_status:         reserved", "max_slot_wal_keep_size: -1 (unlimited", "other iasql slots:  ",
		"consumer:           active (pid", "iasql capture)", "last cycle:         20", " done in ", "records:            0 pending, 0 in progress, 0 failed, 0 waiting, 0 unverified", "sync:               healthy"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.Stdout)
		}
	}

	// A bucket the cloud refuses: the commit fails, the record is failing.
	emu.Inject(emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Denied})
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name) VALUES ('ops-refused')`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err == nil {
		t.Fatal("a commit the cloud refuses succeeded")
	}
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", dsn)
	if r.Code != 2 || !strings.Contains(r.Stderr, "records are failing") || !strings.Contains(r.Stdout, "capture:            healthy") || !strings.Contains(r.Stdout, "1 failed") {
		t.Errorf("status with a failing record: exit %d, want 2\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", dsn, "--json")
	var js struct {
		Slot struct {
			WALStatus     string `json:"wal_status"`
			Active        bool   `json:"active"`
			RetainedBytes *int64 `json:"retained_wal_bytes"`
		} `json:"slot"`
		MaxKeep   string           `json:"max_slot_wal_keep_size"`
		Capture   string           `json:"capture"`
		Sync      string           `json:"sync"`
		Records   map[string]int64 `json:"records_not_in_sync"`
		LastCycle *struct {
			Outcome string `json:"outcome"`
		} `json:"last_cycle"`
		Changes  int64    `json:"changes_captured"`
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	if r.Code != 2 || js.Slot.WALStatus != "reserved" || !js.Slot.Active || js.Slot.RetainedBytes == nil || js.MaxKeep != "-1" ||
		js.Capture != "healthy" || js.Sync != "not healthy" || js.Records["failed"] != 1 || js.LastCycle == nil || js.Changes == 0 || js.Warnings == nil {
		t.Errorf("status --json: exit %d, %+v\n%s", r.Code, js, r.Stdout)
	}

	// A monitoring role with nothing but LOGIN sees capture (the slot);
	// iasql's tables are iasql_reader's, so it is told what it lacks for
	// capture progress, the last cycle and the records, and as a member of
	// iasql_reader it sees the same as the owner.
	pgtest.Exec(t, dsn, `DO $$ BEGIN CREATE ROLE ops_monitor LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`)
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", withUser(dsn, "ops_monitor"))
	// (The last cycle may be the failed commit's, or a later one's.)
	if r.Code == 1 || !strings.Contains(r.Stdout, "records:            unknown") || !strings.Contains(r.Stdout, "warning: cannot count the records not in sync (iasql_status: permission denied for view iasql_status") ||
		!strings.Contains(r.Stdout, "last cycle:         unknown") || !strings.Contains(r.Stdout, "needs iasql_reader") ||
		!strings.Contains(r.Stdout, "consumer:           active (pid") || !strings.Contains(r.Stdout, "capture:            healthy") ||
		!strings.Contains(r.Stdout, "warning: cannot read what capture recorded (iasql_capture_progress: permission denied") ||
		!strings.Contains(r.Stdout, "iasql transaction:  unknown") {
		t.Errorf("status as a role with only LOGIN: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	pgtest.Exec(t, dsn, `GRANT iasql_reader TO ops_monitor`)
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", withUser(dsn, "ops_monitor"))
	if r.Code != 2 || !strings.Contains(r.Stdout, "1 failed") || !strings.Contains(r.Stderr, "records are failing") {
		t.Errorf("status as a member of iasql_reader: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	code, body := httpGet(t, base+"/metrics")
	if code != 200 {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	for _, tc := range []struct {
		name   string
		labels []string
		min    float64
	}{
		{"iasql_cloud_calls_total", []string{`service="S3"`, `operation="CreateBucket"`, `outcome="ok"`}, 1},
		{"iasql_cloud_calls_total", []string{`service="S3"`, `operation="CreateBucket"`, `outcome="client_error"`}, 1},
		{"iasql_cloud_calls_total", []string{`service="STS"`, `operation="GetCallerIdentity"`, `outcome="ok"`}, 1},
		{"iasql_cycles_total", []string{`outcome="done"`}, 1},
		{"iasql_cycle_duration_seconds_count", nil, 2},
		{"iasql_records", []string{`state="failed"`}, 1},
		{"iasql_leader", nil, 1},
		{"iasql_slot_active", nil, 1},
		{"iasql_slot_wal_status", []string{`wal_status="reserved"`}, 1},
		{"iasql_changes_captured_total", nil, 2},
		{"iasql_capture_lag_bytes", nil, 0},
		{"iasql_slot_retained_wal_bytes", nil, 1},
		{"iasql_database_up", nil, 1},
	} {
		v, ok := metricValue(body, tc.name, tc.labels...)
		if !ok || v < tc.min {
			t.Errorf("%s%v = %v (present %v), want at least %v", tc.name, tc.labels, v, ok, tc.min)
		}
	}
	if code, body := httpGet(t, base+"/healthz"); code != 200 || body != "ok leader\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}

	// Debug logs each cloud call; durations are in human units, in JSON too.
	for _, re := range []string{`"msg":"cloud call","service":"S3","operation":"CreateBucket","region":"us-east-1","outcome":"ok","duration":"[0-9.]+[mµn]?s"`,
		`"msg":"cloud call","service":"S3","operation":"CreateBucket","region":"us-east-1","outcome":"client_error","duration":"[^"]+","err":`,
		`"msg":"engine running","interval":"2m0s"`} {
		if !regexp.MustCompile(re).MatchString(sc.Log.String()) {
			t.Errorf("the log has no line matching %s:\n%s", re, sc.Log.String())
		}
	}

	// A second sidecar stands by: it is no leader, and healthy.
	standby := startSidecar(t, es.URL, "--dsn", dsn, "--metrics-listen", "127.0.0.1:0", "--log-format", "json")
	standbyAddr := standby.WaitLog(time.Minute, regexp.MustCompile(`"msg":"serving metrics","addr":"([^"]+)"`))
	standby.WaitLog(time.Minute, regexp.MustCompile(`"msg":"(another sidecar is capturing; waiting to take over)"`))
	if _, body := httpGet(t, "http://"+standbyAddr+"/metrics"); !strings.Contains(body, "\niasql_leader 0\n") {
		t.Errorf("the standby's iasql_leader is not 0:\n%s", body)
	}
	if code, body := httpGet(t, "http://"+standbyAddr+"/healthz"); code != 200 || body != "ok standby\n" {
		t.Errorf("the standby's /healthz: %d %q", code, body)
	}

	// SIGTERM stops the sidecar and its metrics server; the standby takes over.
	if err := sc.Stop(time.Minute); err != nil {
		t.Errorf("run after SIGTERM: %v\n%s", err, sc.Log.String())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("the metrics port %s still accepts connections after the sidecar stopped", addr)
	}
	testkit.Until(t, time.Minute, "the standby to lead after the leader's exit", func() bool {
		_, body := httpGet(t, "http://"+standbyAddr+"/metrics")
		return strings.Contains(body, "\niasql_leader 1\n")
	})
}

// TestStatusWarnsOfWALRetention: with max_slot_wal_keep_size set, status
// shows it and safe_wal_size; a slot past max_wal_size is warned about; the
// server's other iasql_* slots are listed, an unconsumed one with a warning.
func TestStatusWarnsOfWALRetention(t *testing.T) {
	t.Parallel()
	c, err := startCluster(t, map[string]string{"max_slot_wal_keep_size": "'64MB'", "max_wal_size": "'32MB'", "min_wal_size": "'32MB'"})
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app", "CREATE DATABASE other")
	dsn := c.DSN("app")
	if r := testkit.Run(t, 30*time.Second, "install", "--dsn", dsn); r.Code != 0 {
		t.Fatalf("install: %d %s", r.Code, r.Stderr)
	}
	pgtest.Exec(t, dsn, `SELECT pg_create_logical_replication_slot('iasql_app', 'pgoutput')`,
		`CREATE TABLE pad (id serial PRIMARY KEY, pad text)`)
	// Retain more WAL than max_wal_size (but less than the 64MB allowed).
	conn := pgtest.Connect(t, dsn)
	for {
		var status string
		if err := conn.QueryRow(t.Context(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'iasql_app'`).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == "extended" {
			break
		}
		if status != "reserved" {
			t.Fatalf("wal_status %s before extended", status)
		}
		pgtest.Exec(t, dsn, `INSERT INTO pad (pad) SELECT repeat('x', 1000) FROM generate_series(1, 2000)`, `SELECT pg_switch_wal()`, `CHECKPOINT`)
	}
	// Another database's slot, made now: it retains little.
	pgtest.Exec(t, c.DSN("other"), `SELECT pg_create_logical_replication_slot('iasql_other', 'pgoutput')`)
	r := testkit.Run(t, 30*time.Second, "status", "--dsn", dsn)
	if r.Code != 1 || !strings.Contains(r.Stderr, "no sidecar is consuming") {
		t.Errorf("status of an unconsumed slot: exit %d, %s", r.Code, r.Stderr)
	}
	for _, want := range []string{"wal_status:         extended", "max_slot_wal_keep_size: 64MB", "safe_wal_size:      ", "MiB)",
		"other iasql slots:  iasql_other (database other, inactive, reserved",
		"warning: slot iasql_app retains more WAL than max_wal_size (wal_status = extended)",
		"warning: slot iasql_other (database other) has no consumer and retains"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.Stdout)
		}
	}
}

func startCluster(t *testing.T, settings map[string]string) (*pgcluster.Cluster, error) {
	t.Helper()
	c, err := pgcluster.Start(t.Context(), pgcluster.Options{Settings: settings})
	if err == nil {
		t.Cleanup(func() { _ = c.Destroy() })
	}
	return c, err
}

// TestStopAndUncaptured: a request without an id is logged as such; a
// SIGTERM is logged when it arrives and once everything has stopped, and
// the cycle it cuts short ends "interrupted", not "failed"; with the
// sidecar stopped, status counts as pending the change committed since,
// which only the slot holds.
func TestStopAndUncaptured(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dsn := srv.NewDB(t)
	es := testkit.StartCloud(t, emulator.Options{})
	emu := es.Emu
	sc := startSidecar(t, es.URL, "--dsn", dsn)
	sc.WaitLog(time.Minute, regexp.MustCompile(`msg="(engine running)"`))
	conn := pgtest.Connect(t, dsn)
	for _, q := range []string{`SELECT * FROM iasql_install('aws_s3')`, `SELECT pg_logical_emit_message(false, 'iasql_request', '{"kind": "commit"}')`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v\n%s", q, err, sc.Log.String())
		}
	}
	sc.WaitLog(time.Minute, regexp.MustCompile(`msg="(ignoring a request without an id)"`))

	// A cycle is creating a bucket (the emulator holds the call) when the
	// sidecar is told to stop.
	emu.Inject(emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Latency, Delay: time.Minute, Times: 1})
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name) VALUES ('slow-one')`); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "a cycle to call CreateBucket", func() bool { return emu.Calls()["s3:CreateBucket"] > 0 })
	if err := sc.Stop(30 * time.Second); err != nil {
		t.Errorf("the sidecar exited with %v after SIGTERM:\n%s", err, sc.Log.String())
	}
	log := sc.Log.String()
	for _, re := range []string{`(?m)^time=\S+ level=INFO msg=stopping cause="terminated signal received"$`,
		`msg="cycle ended" .*outcome=interrupted`, `(?m)^time=\S+ level=INFO msg=stopped\n\z`} {
		if !regexp.MustCompile(re).MatchString(log) {
			t.Errorf("the log has no line matching %s:\n%s", re, log)
		}
	}
	for _, bad := range []string{"outcome=failed", "err=<nil>"} {
		if strings.Contains(log, bad) {
			t.Errorf("the log says %s:\n%s", bad, log)
		}
	}

	// Committed while no sidecar runs: only the slot holds it.
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name) VALUES ('while-stopped')`); err != nil {
		t.Fatal(err)
	}
	r := testkit.Run(t, 30*time.Second, "status", "--dsn", dsn)
	if r.Code != 1 || !regexp.MustCompile(`records:\s+[1-9]\d* pending \(1 not captured yet\)`).MatchString(r.Stdout) {
		t.Errorf("status with a change only the slot holds: exit %d, want 1 and it counted as pending\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", dsn, "--json")
	var js struct {
		Records    map[string]int64 `json:"records_not_in_sync"`
		Uncaptured *struct {
			Changes int64 `json:"changes"`
		} `json:"uncaptured"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.Stdout)
	}
	if js.Uncaptured == nil || js.Uncaptured.Changes != 1 || js.Records["pending"] < 1 {
		t.Errorf("status --json: uncaptured %+v, records %v; want 1 change not captured, counted as pending\n%s", js.Uncaptured, js.Records, r.Stdout)
	}
}
