package logical_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	iasqlsidecar "github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/logical"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// startCapture installs the SQL objects and runs capture in-process until
// the test ends (or stop is called).
func startCapture(t *testing.T, dsn string, tune func(*logical.Config)) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn := pgtest.Connect(t, dsn)
	slot, err := iasqlsidecar.Prepare(ctx, conn, "", quietLogger())
	if err != nil {
		t.Fatalf("prepare: %v", err)
	}
	ready := make(chan struct{})
	var readyOnce sync.Once
	cfg := logical.Config{DSN: dsn, Slot: slot, Logger: quietLogger(), OnLeader: func(context.Context, *logical.Capture) { readyOnce.Do(func() { close(ready) }) }}
	if tune != nil {
		tune(&cfg)
	}
	done := make(chan error, 1)
	go func() { done <- logical.New(cfg).Run(ctx) }()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("capture ended: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("capture did not start")
	}
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("capture: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// waitCaptured waits until the slot has confirmed everything written so far.
func waitCaptured(t testing.TB, conn *pgx.Conn, timeout time.Duration) {
	t.Helper()
	ctx := context.Background()
	var target string
	if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&target); err != nil {
		t.Fatal(err)
	}
	slot := logical.SlotName(conn.Config().Database)
	testkit.Wait(t, timeout, "capture to reach "+target, func() error {
		var ok bool
		if err := conn.QueryRow(ctx, `SELECT coalesce(confirmed_flush_lsn >= $2::pg_lsn, false) FROM pg_replication_slots WHERE slot_name = $1`, slot, target).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("the slot %s has not confirmed %s", slot, target)
		}
		return nil
	})
}

func count(t testing.TB, conn *pgx.Conn, q string, args ...any) int {
	t.Helper()
	var n int
	if err := conn.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

func TestCaptureMatchesCommittedChanges(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, workloadSchema)
	startCapture(t, dsn, nil)
	pgtest.Exec(t, dsn, registerWorkload)
	workload(context.Background(), t, dsn, 10000, 1)
	conn := pgtest.Connect(t, dsn)
	waitCaptured(t, conn, time.Minute)
	compareAudit(t, conn)
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE origin <> 'user'`); n != 0 {
		t.Errorf("%d user changes recorded with another origin", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'item' AND change_type = 'UPDATE' AND new_row->>'big' IS NULL AND old_row->>'big' IS NOT NULL AND new_row->>'qty' <> old_row->>'qty'`); n != 0 {
		t.Errorf("%d updates lost an unchanged TOASTed value", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'item' AND length(new_row->>'big') > 2000 AND change_type = 'UPDATE'`); n == 0 {
		t.Error("the workload made no updates of rows with TOASTed values; the test does not test them")
	}
}

func TestOrigin(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE thing (id int PRIMARY KEY, name text)`)
	// A tiny batch makes the marker arrive after rows were already written.
	startCapture(t, dsn, func(c *logical.Config) { c.BatchRows = 5 })
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name, module) VALUES ('thing', 'test')`)
	pgtest.Exec(t, dsn,
		`INSERT INTO thing VALUES (1, 'user')`,
		`BEGIN; SELECT iasql_engine_mark('cycle 7'); INSERT INTO thing VALUES (2, 'engine first'); UPDATE thing SET name = 'engine' WHERE id = 1; COMMIT`,
		`BEGIN; INSERT INTO thing SELECT g, 'late mark' FROM generate_series(10, 29) g; SELECT iasql_engine_mark('late'); COMMIT`,
		`INSERT INTO thing VALUES (3, 'user again')`,
		`BEGIN; SELECT iasql_engine_mark('rolled back'); INSERT INTO thing VALUES (4, 'never'); ROLLBACK`,
	)
	conn := pgtest.Connect(t, dsn)
	waitCaptured(t, conn, 30*time.Second)
	tests := []struct {
		name   string
		where  string
		rows   int
		origin string
		msg    string
	}{
		{"plain user insert", `record_id = '1' AND change_type = 'INSERT'`, 1, "user", ""},
		{"engine insert", `record_id = '2'`, 1, "engine", "cycle 7"},
		{"engine update", `record_id = '1' AND change_type = 'UPDATE'`, 1, "engine", "cycle 7"},
		{"marker after spilled rows", `new_row->>'name' = 'late mark'`, 20, "engine", "late"},
		{"user after engine", `record_id = '3'`, 1, "user", ""},
		{"rolled back", `record_id = '4'`, 0, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := `SELECT count(*) FROM iasql_audit_log WHERE ` + tc.where
			if n := count(t, conn, q); n != tc.rows {
				t.Fatalf("%d rows, want %d", n, tc.rows)
			}
			if tc.rows == 0 {
				return
			}
			if n := count(t, conn, q+` AND origin = $1 AND coalesce(message, '') = $2`, tc.origin, tc.msg); n != tc.rows {
				t.Errorf("%d of %d rows have origin %s and message %q", n, tc.rows, tc.origin, tc.msg)
			}
		})
	}
}

func TestRegistrationTruncateAndResume(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE a (id int PRIMARY KEY, v text)`, `CREATE TABLE b (id int PRIMARY KEY)`)
	stop := startCapture(t, dsn, nil)
	conn := pgtest.Connect(t, dsn)
	ctx := context.Background()

	// Registered by a user's INSERT: captured from the next transaction on.
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name) VALUES ('a')`, `INSERT INTO a VALUES (1, 'x')`, `INSERT INTO b VALUES (1)`)
	testkit.Until(t, 5*time.Second, "the capture of a change to a newly registered table", func() bool {
		return count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'a'`) == 1
	})
	pgtest.Exec(t, dsn, `TRUNCATE a`)
	// Unregistered: no longer captured.
	pgtest.Exec(t, dsn, `DELETE FROM iasql_tables WHERE table_name = 'a'`, `INSERT INTO a VALUES (2, 'y')`)
	waitCaptured(t, conn, 30*time.Second)
	tests := []struct {
		name string
		q    string
		want int
	}{
		{"unregistered table never captured", `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'b'`, 0},
		{"truncate is one row without record", `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'a' AND change_type = 'TRUNCATE' AND record_id IS NULL`, 1},
		{"no capture after unregistering", `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'a' AND record_id = '2'`, 0},
		{"publication follows the registry", `SELECT count(*) FROM pg_publication_tables WHERE pubname = 'iasql' AND tablename <> 'iasql_mode'`, 0},
	}
	for _, tc := range tests {
		if n := count(t, conn, tc.q); n != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, n, tc.want)
		}
	}

	// Changes made while no sidecar runs are captured once it is back.
	stop()
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name) VALUES ('b')`, `INSERT INTO b VALUES (2), (3)`, `DELETE FROM b WHERE id = 1`)
	startCapture(t, dsn, nil)
	waitCaptured(t, conn, 30*time.Second)
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'b'`); n != 3 {
		t.Errorf("after a restart %d changes to b were captured, want 3", n)
	}
	var changes int
	if err := conn.QueryRow(ctx, `SELECT changes FROM iasql_capture_progress`).Scan(&changes); err != nil {
		t.Fatal(err)
	}
	if total := count(t, conn, `SELECT count(*) FROM iasql_audit_log`); changes != total {
		t.Errorf("capture progress counts %d changes, the audit trail holds %d", changes, total)
	}
}

// startSidecar starts iasql run on dsn (no cloud), with env (NAME=value)
// added to its environment.
func startSidecar(t testing.TB, dsn string, env ...string) *testkit.Process {
	t.Helper()
	return testkit.Start(t, "", env, "run", "--dsn", dsn, "--log-level", "debug")
}

// capturing says whether the sidecar has logged that it captures.
func capturing(s *testkit.Process) bool { return s.Log.Contains("msg=capturing") }

// TestStartUnderLoad: a first start while other tables are being written
// must not leave the slot unable to decode (the publication has to exist
// before the slot does).
func TestStartUnderLoad(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE noise (id bigserial PRIMARY KEY, v int)`, `CREATE TABLE thing (id int PRIMARY KEY)`)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := pgx.Connect(ctx, dsn)
			if err != nil {
				return
			}
			defer conn.Close(context.Background())
			for ctx.Err() == nil {
				_, _ = conn.Exec(ctx, `INSERT INTO noise (v) VALUES (1)`)
			}
		}()
	}
	conn := pgtest.Connect(t, dsn)
	testkit.Until(t, 30*time.Second, "the writers to be writing", func() bool {
		return count(t, conn, `SELECT count(*) FROM noise`) > 0
	})
	startCapture(t, dsn, nil)
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name) VALUES ('thing')`, `INSERT INTO thing VALUES (1)`)
	cancel()
	wg.Wait()
	waitCaptured(t, conn, 30*time.Second)
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'thing'`); n != 1 {
		t.Errorf("%d changes to thing captured, want 1", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'noise'`); n != 0 {
		t.Errorf("%d changes to an unregistered table captured", n)
	}
}

// TestSlotCreationNamesOpenTransactions: creating the slot (a first start)
// waits for every write transaction open when it starts; a user's that
// stays open does not stall `iasql run` silently: the log names its
// session, which is left alone, and once it ends capture starts.
func TestSlotCreationNamesOpenTransactions(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE thing (id int PRIMARY KEY)`)
	ctx := context.Background()
	user := pgtest.Connect(t, dsn)
	var pid int32
	if err := user.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	tx, err := user.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO thing VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	s := startSidecar(t, dsn)
	named := fmt.Sprintf("blocking_pids=%d ", pid)
	testkit.Until(t, 30*time.Second, "the sidecar to name the open transaction", func() bool { return s.Log.Contains(named) })
	if capturing(s) {
		t.Fatal("captured before the slot could be made")
	}
	if err := user.Ping(ctx); err != nil {
		t.Fatalf("the user's session was ended: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 30*time.Second, "the sidecar to capture", func() bool { return capturing(s) })
}
