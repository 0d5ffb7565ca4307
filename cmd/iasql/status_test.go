package main_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/launch"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
)

// sidecar is an `iasql run` child whose stderr (its log) is kept.
type sidecar struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	log   strings.Builder
	lines chan string
	done  chan struct{}
}

// startSidecar starts iasql run with args against the emulator at
// endpoint ("": none, launch.NoCloud).
func startSidecar(t *testing.T, endpoint string, args ...string) *sidecar {
	t.Helper()
	s := &sidecar{cmd: launch.Command(context.Background(), endpoint, bin, append([]string{"run"}, args...)...), lines: make(chan string, 1000), done: make(chan struct{})}
	s.cmd.Env = append(s.cmd.Env, "IASQL_DSN=")
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			s.mu.Lock()
			s.log.WriteString(sc.Text() + "\n")
			s.mu.Unlock()
			select {
			case s.lines <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() {
		_ = s.cmd.Process.Kill()
		<-s.done
		_ = s.cmd.Wait()
	})
	return s
}

func (s *sidecar) Log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// waitLine returns the first log line matching re (its first group).
func (s *sidecar) waitLine(t *testing.T, re *regexp.Regexp) string {
	t.Helper()
	timeout := time.After(60 * time.Second)
	for {
		select {
		case l := <-s.lines:
			if m := re.FindStringSubmatch(l); m != nil {
				return m[1]
			}
		case <-s.done:
			t.Fatalf("the sidecar exited before logging %s:\n%s", re, s.Log())
		case <-timeout:
			t.Fatalf("the sidecar did not log %s within 60s:\n%s", re, s.Log())
		}
	}
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
	emu := emulator.New(emulator.Options{})
	es, err := emu.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc := startSidecar(t, es.URL, "--dsn", dsn, "--metrics-listen", "127.0.0.1:0", "--log-format", "json", "--log-level", "debug")
	addr := sc.waitLine(t, regexp.MustCompile(`"msg":"serving metrics","addr":"([^"]+)"`))
	base := "http://" + addr

	conn := pgtest.Connect(t, dsn)
	for deadline := time.Now().Add(60 * time.Second); ; {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_modules`).Scan(&n); err == nil && n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the sidecar did not register its modules:\n%s", sc.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, q := range []string{`SELECT * FROM iasql_install('aws_s3')`, `INSERT INTO bucket (name) VALUES ('ops-ok')`, `CALL iasql_commit()`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v\n%s", q, err, sc.Log())
		}
	}
	r := iasql(t, 30*time.Second, "status", "--dsn", dsn)
	if r.code != 0 {
		t.Fatalf("status with everything in sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// How much WAL the slot retains depends on when status looks: a
	// number of bytes, and the same in a unit a person reads.
	if !regexp.MustCompile(`retained_wal:\s+\d+ \(\d+(\.\d+)? (B|KiB|MiB|GiB)\)`).MatchString(r.stdout) {
		t.Errorf("status lacks retained_wal in bytes and units:\n%s", r.stdout)
	}
	for _, want := range []string{"wal_status:         reserved", "max_slot_wal_keep_size: -1 (unlimited", "other iasql slots:  ",
		"consumer:           active (pid", "iasql capture)", "last cycle:         20", " done in ", "records:            0 pending, 0 in progress, 0 failed, 0 waiting, 0 unverified", "sync:               healthy"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
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
	r = iasql(t, 30*time.Second, "status", "--dsn", dsn)
	if r.code != 2 || !strings.Contains(r.stderr, "records are failing") || !strings.Contains(r.stdout, "capture:            healthy") || !strings.Contains(r.stdout, "1 failed") {
		t.Errorf("status with a failing record: exit %d, want 2\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = iasql(t, 30*time.Second, "status", "--dsn", dsn, "--json")
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
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if r.code != 2 || js.Slot.WALStatus != "reserved" || !js.Slot.Active || js.Slot.RetainedBytes == nil || js.MaxKeep != "-1" ||
		js.Capture != "healthy" || js.Sync != "not healthy" || js.Records["failed"] != 1 || js.LastCycle == nil || js.Changes == 0 || js.Warnings == nil {
		t.Errorf("status --json: exit %d, %+v\n%s", r.code, js, r.stdout)
	}

	// A monitoring role with nothing but LOGIN sees capture (the slot);
	// iasql's tables are iasql_reader's, so it is told what it lacks for
	// capture progress, the last cycle and the records, and as a member of
	// iasql_reader it sees the same as the owner.
	pgtest.Exec(t, dsn, `DO $$ BEGIN CREATE ROLE ops_monitor LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`)
	r = iasql(t, 30*time.Second, "status", "--dsn", withUser(dsn, "ops_monitor"))
	// (The last cycle may be the failed commit's, or a later one's.)
	if r.code == 1 || !strings.Contains(r.stdout, "records:            unknown") || !strings.Contains(r.stdout, "warning: cannot count the records not in sync (iasql_status: permission denied for view iasql_status") ||
		!strings.Contains(r.stdout, "last cycle:         unknown") || !strings.Contains(r.stdout, "needs iasql_reader") ||
		!strings.Contains(r.stdout, "consumer:           active (pid") || !strings.Contains(r.stdout, "capture:            healthy") ||
		!strings.Contains(r.stdout, "warning: cannot read what capture recorded (iasql_capture_progress: permission denied") ||
		!strings.Contains(r.stdout, "iasql transaction:  unknown") {
		t.Errorf("status as a role with only LOGIN: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pgtest.Exec(t, dsn, `GRANT iasql_reader TO ops_monitor`)
	r = iasql(t, 30*time.Second, "status", "--dsn", withUser(dsn, "ops_monitor"))
	if r.code != 2 || !strings.Contains(r.stdout, "1 failed") || !strings.Contains(r.stderr, "records are failing") {
		t.Errorf("status as a member of iasql_reader: exit %d\n%s%s", r.code, r.stdout, r.stderr)
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
		if !regexp.MustCompile(re).MatchString(sc.Log()) {
			t.Errorf("the log has no line matching %s:\n%s", re, sc.Log())
		}
	}

	// A second sidecar stands by: it is no leader, and healthy.
	standby := startSidecar(t, es.URL, "--dsn", dsn, "--metrics-listen", "127.0.0.1:0", "--log-format", "json")
	standbyAddr := standby.waitLine(t, regexp.MustCompile(`"msg":"serving metrics","addr":"([^"]+)"`))
	standby.waitLine(t, regexp.MustCompile(`"msg":"(another sidecar is capturing; waiting to take over)"`))
	if _, body := httpGet(t, "http://"+standbyAddr+"/metrics"); !strings.Contains(body, "\niasql_leader 0\n") {
		t.Errorf("the standby's iasql_leader is not 0:\n%s", body)
	}
	if code, body := httpGet(t, "http://"+standbyAddr+"/healthz"); code != 200 || body != "ok standby\n" {
		t.Errorf("the standby's /healthz: %d %q", code, body)
	}

	// SIGTERM stops the sidecar and its metrics server; the standby takes over.
	_ = sc.cmd.Process.Signal(syscall.SIGTERM)
	<-sc.done
	if err := sc.cmd.Wait(); err != nil {
		t.Errorf("run after SIGTERM: %v\n%s", err, sc.Log())
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Errorf("the metrics port %s still accepts connections after the sidecar stopped", addr)
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		if _, body := httpGet(t, "http://"+standbyAddr+"/metrics"); strings.Contains(body, "\niasql_leader 1\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the standby did not lead within 60s of the leader's exit:\n%s", standby.Log())
		}
		time.Sleep(100 * time.Millisecond)
	}
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
	if r := iasql(t, 30*time.Second, "install", "--dsn", dsn); r.code != 0 {
		t.Fatalf("install: %d %s", r.code, r.stderr)
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
	r := iasql(t, 30*time.Second, "status", "--dsn", dsn)
	if r.code != 1 || !strings.Contains(r.stderr, "no sidecar is consuming") {
		t.Errorf("status of an unconsumed slot: exit %d, %s", r.code, r.stderr)
	}
	for _, want := range []string{"wal_status:         extended", "max_slot_wal_keep_size: 64MB", "safe_wal_size:      ", "MiB)",
		"other iasql slots:  iasql_other (database other, inactive, reserved",
		"warning: slot iasql_app retains more WAL than max_wal_size (wal_status = extended)",
		"warning: slot iasql_other (database other) has no consumer and retains"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
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
	emu := emulator.New(emulator.Options{})
	es, err := emu.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sc := startSidecar(t, es.URL, "--dsn", dsn)
	sc.waitLine(t, regexp.MustCompile(`msg="(engine running)"`))
	conn := pgtest.Connect(t, dsn)
	for _, q := range []string{`SELECT * FROM iasql_install('aws_s3')`, `SELECT pg_logical_emit_message(false, 'iasql_request', '{"kind": "commit"}')`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v\n%s", q, err, sc.Log())
		}
	}
	sc.waitLine(t, regexp.MustCompile(`msg="(ignoring a request without an id)"`))

	// A cycle is creating a bucket (the emulator holds the call) when the
	// sidecar is told to stop.
	emu.Inject(emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Latency, Delay: time.Minute, Times: 1})
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name) VALUES ('slow-one')`); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); emu.Calls()["s3:CreateBucket"] == 0; {
		if time.Now().After(deadline) {
			t.Fatalf("no cycle called CreateBucket within 30s:\n%s", sc.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := sc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sc.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the sidecar did not stop within 30s of SIGTERM:\n%s", sc.Log())
	}
	if err := sc.cmd.Wait(); err != nil {
		t.Errorf("the sidecar exited with %v after SIGTERM:\n%s", err, sc.Log())
	}
	log := sc.Log()
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
	r := iasql(t, 30*time.Second, "status", "--dsn", dsn)
	if r.code != 1 || !regexp.MustCompile(`records:\s+[1-9]\d* pending \(1 not captured yet\)`).MatchString(r.stdout) {
		t.Errorf("status with a change only the slot holds: exit %d, want 1 and it counted as pending\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = iasql(t, 30*time.Second, "status", "--dsn", dsn, "--json")
	var js struct {
		Records    map[string]int64 `json:"records_not_in_sync"`
		Uncaptured *struct {
			Changes int64 `json:"changes"`
		} `json:"uncaptured"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &js); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if js.Uncaptured == nil || js.Uncaptured.Changes != 1 || js.Records["pending"] < 1 {
		t.Errorf("status --json: uncaptured %+v, records %v; want 1 change not captured, counted as pending\n%s", js.Uncaptured, js.Records, r.stdout)
	}
}
