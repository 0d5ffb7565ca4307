package bridge_test

import (
	"context"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// The answer a caller waits for is bounded by the test, far below
// iasql_commit's own timeout (an hour): these tests are about callers that
// would otherwise wait for it.
const promptly = 60 * time.Second

// TestRequestFailsWhenSidecarIsKilled: a sidecar SIGKILLed while a
// CALL iasql_commit() it took is running (its create call held up by the
// emulator) cannot answer; the caller sees that the engine session that
// took the request is gone and fails at once, saying that the commit may
// or may not have acted. The next sidecar to lead marks the request failed,
// and calling iasql_commit again does what is left to do.
func TestRequestFailsWhenSidecarIsKilled(t *testing.T) {
	e := newEnv(t)
	e.Stop() // the in-process sidecar makes way for one that can be killed
	sc := startBinarySidecar(t, e.Env)

	e.Emu.Inject(emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Latency, Delay: 10 * time.Minute})
	e.Exec(`INSERT INTO bucket (name) VALUES ('killed-mid-commit')`)
	// The caller is no superuser: it sees other roles' sessions in
	// pg_stat_activity only by their process ids, which is enough.
	role := nonSuperuser(t, e.DSN)
	done := callAsync(t, e.DSN, `SET ROLE `+role+`; CALL iasql_commit()`, nil)
	waitCommitInCreate(t, e)

	sc.Kill()
	err := waitCall(t, done)
	if err == nil {
		t.Fatal("CALL iasql_commit() succeeded although its sidecar was killed before answering")
	}
	for _, want := range []string{"ended before answering", "may or may not have acted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CALL iasql_commit() failed with %q, want it to say %q", err, want)
		}
	}
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || !strings.Contains(pgErr.Hint, "call it again") {
		t.Errorf("CALL iasql_commit() failed without a hint saying what to do: %v", err)
	}

	e.Emu.ClearFaults()
	e.StartSidecar(true)
	testkit.Until(t, 30*time.Second, "the new leader to settle the orphaned request", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_requests WHERE kind = 'commit' AND status = 'accepted'`) == 0
	})
	if got := e.String(`SELECT status || ': ' || coalesce(error, '') FROM iasql_requests WHERE kind = 'commit'`); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "ended before answering") {
		t.Errorf("the killed sidecar's request is %q, want it failed as ended before answering", got)
	}
	e.Commit() // idempotent: does what is left
	if !e.cloudBuckets()["killed-mid-commit"] {
		t.Error("calling iasql_commit again did not create the bucket")
	}
}

// TestRequestAnsweredWhenSidecarStopsDuringCommit: a sidecar stopped (its
// context ended, as on SIGTERM or a lost leadership) while a commit it took
// runs answers before its session closes: the caller fails at once with
// what to do, and the request is not left accepted.
func TestRequestAnsweredWhenSidecarStopsDuringCommit(t *testing.T) {
	e := newEnv(t)
	e.Emu.Inject(emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Latency, Delay: 10 * time.Minute})
	e.Exec(`INSERT INTO bucket (name) VALUES ('stopped-mid-commit')`)
	done := callAsync(t, e.DSN, `CALL iasql_commit()`, nil)
	waitCommitInCreate(t, e)

	e.Stop()
	err := waitCall(t, done)
	if err == nil {
		t.Fatal("CALL iasql_commit() succeeded although its sidecar stopped before the create finished")
	}
	for _, want := range []string{"before answering", "may or may not have acted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("CALL iasql_commit() failed with %q, want it to say %q", err, want)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_requests WHERE status = 'accepted'`); n != 0 {
		t.Errorf("%d requests left accepted by a sidecar that stopped", n)
	}
}

// TestRequestWaitsForCaptureBacklog: while the sidecar is connected but its
// capture has not reached the request (here: it cannot write the audit
// trail, held up by a lock), the caller waits, with a NOTICE saying how far
// behind capture is, instead of failing after 5 seconds; once capture
// catches up, the request is answered.
func TestRequestWaitsForCaptureBacklog(t *testing.T) {
	dsn := srv.NewDB(t)
	// Capture stands still while it is held up; the test cluster's
	// wal_sender_timeout (10s) would end its replication connection.
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, srv.AdminDSN(), `ALTER DATABASE `+pgx.Identifier{cfg.Database}.Sanitize()+` SET wal_sender_timeout = '2min'`)
	e := newEnvOn(t, dsn, time.Hour)

	locker := pgtest.Connect(t, e.DSN)
	ctx := context.Background()
	if _, err := locker.Exec(ctx, `BEGIN; LOCK TABLE public.iasql_audit_log IN EXCLUSIVE MODE`); err != nil {
		t.Fatalf("lock the audit trail: %v", err)
	}
	unlocked := false
	unlock := func() {
		if !unlocked {
			unlocked = true
			if _, err := locker.Exec(ctx, `ROLLBACK`); err != nil {
				t.Errorf("release the audit trail: %v", err)
			}
		}
	}
	defer unlock()
	e.Exec(`INSERT INTO bucket (name) VALUES ('behind-capture')`)
	testkit.Until(t, 30*time.Second, "capture to wait for the audit trail", func() bool {
		return e.Count(`SELECT count(*) FROM pg_locks WHERE relation = 'public.iasql_audit_log'::regclass AND NOT granted`) > 0
	})

	notices := make(chan string, 16)
	done := callAsync(t, e.DSN, `SELECT count(*) FROM iasql_preview()`, notices)
	deadline := time.After(promptly)
wait:
	for {
		select {
		case n := <-notices:
			if strings.Contains(n, "behind this request") {
				break wait
			}
		case err := <-done:
			t.Fatalf("iasql_preview() ended while capture was behind, before any notice that it waits: %v", err)
		case <-deadline:
			t.Fatalf("no notice that capture is behind within %s", promptly)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_requests WHERE kind = 'preview'`); n != 0 {
		t.Fatalf("%d requests taken while capture was held up: the test did not hold capture back", n)
	}
	unlock()
	if err := waitCall(t, done); err != nil {
		t.Fatalf("iasql_preview() failed after capture caught up: %v", err)
	}
}

// nonSuperuser creates a role with no privileges but iasql_reader's (it
// reads the answer; dropped when the test ends) that a superuser session
// can SET ROLE to.
func nonSuperuser(t *testing.T, dsn string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	role := pgx.Identifier{cfg.Database + "_caller"}.Sanitize()
	pgtest.Exec(t, srv.AdminDSN(), `CREATE ROLE `+role+` NOLOGIN NOSUPERUSER IN ROLE iasql_reader`)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, srv.AdminDSN()); err == nil {
			_, _ = conn.Exec(ctx, `DROP ROLE IF EXISTS `+role)
			conn.Close(ctx)
		}
	})
	return role
}

// callAsync runs sql on a connection of its own and sends its outcome;
// notices, when given, receive the NOTICE messages it raises.
func callAsync(t *testing.T, dsn, sql string, notices chan<- string) <-chan error {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if notices != nil {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			select {
			case notices <- n.Message:
			default:
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("connect: %v", err)
	}
	done := make(chan error, 1)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, err := conn.Exec(ctx, sql)
		done <- err
	}()
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		conn.Close(context.Background())
	})
	return done
}

// waitCall waits for a call started by callAsync, failing the test when it
// has not returned promptly.
func waitCall(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(promptly):
		t.Fatalf("the call did not return within %s", promptly)
		return nil
	}
}

// waitCommitInCreate waits until the commit request is taken and its cycle
// is inside the (held up) create call.
func waitCommitInCreate(t *testing.T, e *env) {
	t.Helper()
	testkit.Until(t, 30*time.Second, "the commit to be taken and to call CreateBucket", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_requests WHERE kind = 'commit' AND status = 'accepted'`) == 1 &&
			e.Emu.Calls()["s3:CreateBucket"] > 0
	})
}

// engineRunning is the line a sidecar logs once its engine runs.
var engineRunning = regexp.MustCompile(`msg="engine running"`)

// startBinarySidecar starts `iasql run` in a process of its own, against
// e's database and emulator, so that it can be killed, and waits until its
// engine runs.
func startBinarySidecar(t *testing.T, e *enginetest.Env) *testkit.Process {
	t.Helper()
	s := launchBinarySidecar(t, e)
	s.WaitLog(30*time.Second, engineRunning)
	return s
}

// launchBinarySidecar starts the process without waiting for it.
func launchBinarySidecar(t *testing.T, e *enginetest.Env) *testkit.Process {
	t.Helper()
	return testkit.Start(t, *e.AWS.BaseEndpoint, nil, "run", "--dsn", e.DSN, "--interval", "1h", "--log-level", "debug")
}
