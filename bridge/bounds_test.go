package bridge_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// peakRSS is the peak resident set size (VmHWM) of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("read the sidecar's status: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", rest, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc/<pid>/status")
	return 0
}

// dbName is the test database's name (unique per test: roles are
// cluster-wide, so tests name theirs after it).
func dbName(t *testing.T, dsn string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimPrefix(u.Path, "/")
}

// TestForgedHugeMessageIsNotRead: a role with only LOGIN emits a 20 MB
// iasql_request by hand while `iasql run` captures. The sidecar drops it
// without reading it into memory (its peak RSS grows by far less than the
// message), says so in one line naming the size, and goes on: a later
// change is captured and a later request answered.
func TestForgedHugeMessageIsNotRead(t *testing.T) {
	const size = 20 << 20
	e := newEnv(t)
	e.Stop() // a process of its own, whose memory can be measured
	sc := startBinarySidecar(t, e.Env)
	// Warm up (a cycle, a request) so that what is measured is the message.
	e.Exec(`INSERT INTO bucket (name) VALUES ('before-the-flood')`, `CALL iasql_commit()`)
	before := peakRSS(t, sc.Cmd.Process.Pid)

	role := dbName(t, e.DSN) + "_login"
	pgtest.Exec(t, e.DSN, `CREATE ROLE `+role+` LOGIN`)
	forger := pgtest.Connect(t, asRole(t, e.DSN, role))
	logged := len(sc.Log.String())
	if _, err := forger.Exec(context.Background(), `SELECT pg_logical_emit_message(false, 'iasql_request', repeat('x', $1))`, size); err != nil {
		t.Fatalf("emit a %d-byte message: %v", size, err)
	}
	testkit.Until(t, 60*time.Second, "the sidecar to drop the message's content", func() bool {
		return sc.Log.Contains("dropped the content of a logical-decoding message larger than the limit") &&
			sc.Log.Contains(fmt.Sprintf("bytes_cut=%d", size))
	})
	if n := strings.Count(sc.Log.String()[logged:], "level=WARN"); n != 1 {
		t.Errorf("%d warnings logged for the message, want 1", n)
	}
	e.Exec(`INSERT INTO bucket (name) VALUES ('after-the-flood')`, `CALL iasql_commit()`)
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE origin = 'user' AND table_name = 'bucket' AND new_row->>'name' = 'after-the-flood'`); n != 1 {
		t.Errorf("%d audit rows for the change after the message, want 1", n)
	}
	if !e.cloudBuckets()["after-the-flood"] {
		t.Error("the commit after the message did not create the bucket")
	}
	after := peakRSS(t, sc.Cmd.Process.Pid)
	t.Logf("peak RSS %d kB before the message, %d kB after", before>>10, after>>10)
	if grew := after - before; grew >= 10<<20 {
		t.Errorf("the sidecar's peak RSS grew by %d MB (from %d MB) for a %d MB message", grew>>20, before>>20, size>>20)
	}
}

// TestRateLimitSurvivesFailover: a role that exhausts its request rate
// (a burst past its bucket) finds it still exhausted after the sidecar
// restarts (a new leader seeds the buckets from iasql_requests): its next
// burst, within the bucket's window, is refused with the rate message, while
// another role's request is answered.
func TestRateLimitSurvivesFailover(t *testing.T) {
	t.Parallel()
	const window = 5 * time.Second // the bucket's: 50 requests, refilled at 10 a second
	r := newRecipe(t)
	ctx := context.Background()
	flood := dbName(t, r.dsn) + "_flood"
	pgtest.Exec(t, r.dsn, `CREATE ROLE `+flood+` LOGIN IN ROLE iasql_admin`)
	f := pgtest.Connect(t, asRole(t, r.dsn, flood))
	// send sends n requests by hand, proving the sender as iasql_request
	// does, and waits until the sidecar has answered or refused each.
	sent := 0
	send := func(n int) {
		t.Helper()
		tx, err := f.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		if _, err := tx.Exec(ctx, fmt.Sprintf(`DO $$
			DECLARE m bytea;
			BEGIN
			  FOR i IN 1..%d LOOP
			    m := convert_to(jsonb_build_object('id', gen_random_uuid(), 'kind', 'flood', 'pid', pg_backend_pid())::text, 'UTF8');
			    PERFORM pg_advisory_xact_lock(iasql_request_key(m));
			    PERFORM pg_logical_emit_message(false, 'iasql_request', m);
			  END LOOP;
			END $$`, n)); err != nil {
			t.Fatalf("send requests by hand: %v", err)
		}
		sent += n
		testkit.Until(t, 30*time.Second, "the sidecar to answer or refuse every request", func() bool {
			return count(t, r.admin, `SELECT (SELECT count(*) FROM iasql_requests WHERE requested_by = '`+flood+`' AND status <> 'accepted')
			  + coalesce((SELECT sum(refused) FROM iasql_request_refusals WHERE role_name = '`+flood+`'), 0)`) == sent
		})
	}
	limited := func() int {
		t.Helper()
		return count(t, r.admin, `SELECT coalesce(sum(refused), 0) FROM iasql_request_refusals WHERE role_name = '`+flood+`' AND reason = 'rate' AND message LIKE 'role `+flood+` sent more than 50 requests at once%'`)
	}

	send(60)
	before := limited()
	if before == 0 {
		t.Fatal("a burst of 60 requests was not limited")
	}
	var last time.Time
	if err := r.admin.QueryRow(ctx, `SELECT max(accepted_at) FROM iasql_requests WHERE requested_by = $1`, flood).Scan(&last); err != nil {
		t.Fatal(err)
	}

	r.env.Stop()
	r.env.StartSidecar(true)
	var within bool
	if err := r.admin.QueryRow(ctx, `SELECT clock_timestamp() - $1 < $2::interval`, last, window.String()).Scan(&within); err != nil {
		t.Fatal(err)
	}
	if !within {
		t.Fatalf("the sidecar took longer than the bucket's window (%s) to restart: the test cannot tell a limit that survived", window)
	}
	send(50) // a full bucket's worth
	if limited() == before {
		t.Error("after a restart, the role's next burst was not limited: its bucket started full")
	}
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('other-role')`, `CALL iasql_commit()`)
}

// TestStartNamesBlockingSessions: a session that holds, in a transaction it
// keeps open, a lock the sidecar's start needs (the install lock Ensure
// takes, as an administrator's install would; a lock on iasql_tables, which
// the publication's sync reads) does not stall `iasql run` silently: within the wait, the log
// names that session's pid; once its transaction ends, the sidecar starts
// and works.
func TestStartNamesBlockingSessions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		as   func(r *recipe) string // the blocking session's DSN
		lock string
	}{
		{"install lock", func(r *recipe) string { return r.dsn }, `SELECT 1 FROM iasql_private.iasql_locks WHERE lock_id = 5 FOR UPDATE`},
		{"iasql_tables", func(r *recipe) string { return r.dsn }, `LOCK TABLE public.iasql_tables IN ACCESS EXCLUSIVE MODE`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRecipe(t)
			r.env.Stop()
			ctx := context.Background()
			blocker := pgtest.Connect(t, tc.as(r))
			var pid int32
			if err := blocker.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
				t.Fatal(err)
			}
			tx, err := blocker.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			if _, err := tx.Exec(ctx, tc.lock); err != nil {
				t.Fatalf("%s: %v", tc.lock, err)
			}
			sc := launchBinarySidecar(t, r.env)
			named := fmt.Sprintf("blocking_pids=%d ", pid)
			testkit.Until(t, 30*time.Second, "the sidecar to name the blocking session", func() bool {
				return sc.Log.Contains(named)
			})
			for _, line := range strings.Split(sc.Log.String(), "\n") {
				if strings.Contains(line, named) {
					t.Logf("the sidecar said: %s", line)
					break
				}
			}
			if sc.Log.Contains("msg=capturing") {
				t.Fatal("the sidecar captured while the lock it waits for was held")
			}
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			sc.WaitLog(30*time.Second, engineRunning)
			execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('after-the-wait')`, `CALL iasql_commit()`)
		})
	}
}

// TestRefusedFloodCostsNothing: a role without grants that floods the
// sidecar with requests it proves as iasql_request does (3,000 installs,
// 1,000 at a time) does not make a writer's commits fail, and its requests
// are counted, not stored: no row in iasql_requests, every one in
// iasql_request_refusals. (How long the writer's commit takes under such
// a flood is make bench's commit_ms_under_flood.)
func TestRefusedFloodCostsNothing(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	const rounds, each = 3, 1000
	flooded := make(chan error, 1)
	go func() {
		for i := 1; i <= rounds; i++ {
			// Each message's lock is held until the sidecar has counted the
			// round (so none is dropped as forged), at most 60 s.
			// The role cannot read the count: it sends in a transaction
			// that holds the locks, and the administrator watches.
			err := pgx.BeginFunc(ctx, r.nobody, func(tx pgx.Tx) error {
				if _, err := tx.Exec(ctx, fmt.Sprintf(`DO $$
				DECLARE m bytea;
				BEGIN
				  FOR i IN 1..%d LOOP
				    m := convert_to(jsonb_build_object('id', gen_random_uuid(), 'kind', 'install',
				      'args', jsonb_build_object('modules', jsonb_build_array('aws_s3')), 'pid', pg_backend_pid())::text, 'UTF8');
				    PERFORM pg_advisory_xact_lock(iasql_request_key(m));
				    PERFORM pg_logical_emit_message(false, 'iasql_request', m);
				  END LOOP;
				END $$`, each)); err != nil {
					return err
				}
				return testkit.Poll(ctx, 60*time.Second, fmt.Sprintf("the sidecar to count %d refusals", i*each), func() error {
					var n int64
					if err := r.admin.QueryRow(ctx, `SELECT coalesce(sum(refused), 0) FROM iasql_request_refusals WHERE role_name = $1`, r.nothing).Scan(&n); err != nil {
						return err
					}
					if n < int64(i*each) {
						return fmt.Errorf("%d counted", n)
					}
					return nil
				})
			})
			if err != nil {
				flooded <- fmt.Errorf("flood round %d: %w", i, err)
				return
			}
		}
		flooded <- nil
	}()
	commits := 0
	for done := false; !done; {
		select {
		case err := <-flooded:
			if err != nil {
				t.Fatal(err)
			}
			done = true
		default:
		}
		commits++
		if _, err := r.app.Exec(ctx, fmt.Sprintf(`INSERT INTO bucket (name) VALUES ('under-flood-%d')`, commits)); err != nil {
			t.Fatalf("the writer's insert %d: %v", commits, err)
		}
		if _, err := r.app.Exec(ctx, `CALL iasql_commit()`); err != nil {
			t.Fatalf("the writer's commit %d, during a flood of refused requests: %v", commits, err)
		}
	}
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_requests WHERE requested_by = '`+r.nothing+`'`); n != 0 {
		t.Errorf("the flood stored %d row(s) in iasql_requests; refusals are to be counted only", n)
	}
	if n := count(t, r.admin, `SELECT coalesce(sum(refused), 0) FROM iasql_request_refusals WHERE role_name = '`+r.nothing+`'`); n != rounds*each {
		t.Errorf("iasql_request_refusals counts %d refusals of the flood, want %d", n, rounds*each)
	}
	if n := count(t, r.admin, `SELECT coalesce(sum(refused), 0) FROM iasql_request_refusals WHERE role_name = '`+r.nothing+`' AND reason = 'rate'`); n == 0 {
		t.Error("the rate limit did not apply to refused requests")
	}
	t.Logf("%d commits during the flood", commits)
}
