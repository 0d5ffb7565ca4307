package logical_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/logical"
)

var roles atomic.Int64

// ownedDB creates a role with LOGIN and REPLICATION but no superuser (what
// managed Postgres grants), and a database it owns; it returns the
// database's DSN as the superuser and as the role.
func ownedDB(t *testing.T) (admin, owner string) {
	t.Helper()
	role := fmt.Sprintf("iasql_live_%d_%d", os.Getpid(), roles.Add(1))
	const password = "iasql-test"
	pgtest.Exec(t, srv.AdminDSN(), `CREATE ROLE `+role+` LOGIN REPLICATION NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '`+password+`'`)
	// Cleanups run last-in first-out: the database goes before its owner.
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), srv.AdminDSN())
		if err == nil {
			_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
			c.Close(context.Background())
		}
	})
	// The roles iasql grants to are the cluster's, made once by a role
	// that may (iasql says so when they are missing): here, as other tests
	// would have left them, so that this test also passes alone.
	for _, r := range []string{"iasql_reader NOLOGIN", "iasql_writer NOLOGIN IN ROLE iasql_reader", "iasql_admin NOLOGIN IN ROLE iasql_writer"} {
		pgtest.Exec(t, srv.AdminDSN(), `DO $$ BEGIN CREATE ROLE `+r+`; EXCEPTION WHEN duplicate_object OR unique_violation THEN NULL; END $$`)
	}
	admin = srv.NewDB(t)
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, admin, `ALTER DATABASE `+cfg.Database+` OWNER TO `+role)
	u, err := url.Parse(admin)
	if err != nil || u.Scheme == "" {
		return admin, admin + " user=" + role + " password=" + password
	}
	u.User = url.UserPassword(role, password)
	return admin, u.String()
}

func backendPID(t testing.TB, conn *pgx.Conn) int32 {
	t.Helper()
	var pid int32
	if err := conn.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return pid
}

// TestKeepAlive: a bounded session (logical.Connect) that says nothing is
// ended by the server within the bound, with a role that is no superuser;
// one that KeepAlive keeps busy lives on.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	const bound = time.Second
	admin, owner := ownedDB(t)
	ctx := context.Background()
	idle, err := logical.Connect(ctx, owner, "iasql idle", bound)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close(ctx)
	kept, err := logical.Connect(ctx, owner, "iasql kept", bound)
	if err != nil {
		t.Fatal(err)
	}
	defer kept.Close(ctx)
	for name, want := range logical.SessionParams(bound) {
		var got string
		if err := kept.QueryRow(ctx, `SELECT setting FROM pg_settings WHERE name = $1`, name).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("%s = %s, want %s", name, got, want)
		}
	}
	idlePID, keptPID := backendPID(t, idle), backendPID(t, kept)
	start := time.Now()

	kctx, stop := context.WithCancel(ctx)
	var mu sync.Mutex
	var wg sync.WaitGroup
	var keepErr error
	wg.Go(func() { keepErr = logical.KeepAlive(kctx, kept, &mu, bound) })
	defer func() {
		stop()
		wg.Wait()
		if keepErr != nil {
			t.Errorf("KeepAlive: %v", keepErr)
		}
	}()

	mon := pgtest.Connect(t, admin)
	alive := func(pid int32) bool {
		return count(t, mon, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid) == 1
	}
	testkit.Until(t, bound+5*time.Second, "the server ends the idle session", func() bool { return !alive(idlePID) })
	t.Logf("idle session ended %s after it last spoke", time.Since(start).Round(10*time.Millisecond))
	// The kept session must outlive several bounds, and its owner can still
	// use it (under the lock) meanwhile.
	for time.Since(start) < 4*bound {
		if !alive(keptPID) {
			t.Fatalf("the kept session was ended %s after it started", time.Since(start).Round(10*time.Millisecond))
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	_, err = kept.Exec(ctx, `SELECT 1`)
	mu.Unlock()
	if err != nil {
		t.Errorf("the kept session after %s: %v", 4*bound, err)
	}
	if _, err := idle.Exec(ctx, `SELECT 1`); err == nil {
		t.Error("the idle session still answers")
	}
}

// TestFrozenLeader: a capture leader frozen with SIGSTOP (it keeps its TCP
// connections) loses the leadership within the leader timeout: PostgreSQL
// ends its lock session and its replication connection, a standby takes
// the lock and the slot and captures what is written meanwhile; once thawed,
// the old leader waits as a standby. Both run as a role that is no
// superuser.
func TestFrozenLeader(t *testing.T) {
	t.Parallel()
	const bound = 3 * time.Second
	// The standby polls every bound/3, then may wait for the walsender's
	// own timeout check; the rest is slack for a loaded machine.
	const margin = 5 * time.Second
	admin, owner := ownedDB(t)
	env := []string{logical.LeaderTimeoutEnv + "=" + bound.String()}
	pgtest.Exec(t, owner, `CREATE TABLE thing (id int PRIMARY KEY, v int)`)
	a := startSidecar(t, owner, env...)
	testkit.Until(t, 30*time.Second, "first sidecar capturing", func() bool { return capturing(a) })
	b := startSidecar(t, owner, env...)
	testkit.Until(t, 30*time.Second, "second sidecar waiting", func() bool { return b.Log.Contains("waiting to take over") })
	pgtest.Exec(t, owner, `INSERT INTO iasql_tables (table_name) VALUES ('thing')`, `INSERT INTO thing SELECT g, 0 FROM generate_series(1, 100) g`)
	mon := pgtest.Connect(t, admin)
	waitCaptured(t, mon, 30*time.Second)

	ctx := context.Background()
	leaderQ := `SELECT holder_pid FROM iasql_lock_holders WHERE lock_id = 1`
	leader := func() int32 {
		var pid int32
		err := mon.QueryRow(ctx, leaderQ).Scan(&pid)
		if err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return pid
	}
	walsenderQ := `SELECT r.pid FROM pg_stat_replication r JOIN pg_stat_activity a USING (pid)
		WHERE r.application_name = 'iasql capture' AND a.datname = current_database()`
	walsenders := func() []int32 {
		rows, err := mon.Query(ctx, walsenderQ)
		if err != nil {
			t.Fatal(err)
		}
		pids, err := pgx.CollectRows(rows, pgx.RowTo[int32])
		if err != nil {
			t.Fatal(err)
		}
		return pids
	}
	// The engine's service lock (4) moves with the leadership: its session
	// is bounded and kept alive the same way.
	engineQ := strings.Replace(leaderQ, "objid = 1", "objid = 4", 1)
	engine := func() int32 {
		var pid int32
		if err := mon.QueryRow(ctx, engineQ).Scan(&pid); err != nil && err != pgx.ErrNoRows {
			t.Fatal(err)
		}
		return pid
	}
	testkit.Until(t, 30*time.Second, "the leader's engine running", func() bool { return engine() != 0 })
	enginePID := engine()
	lockPID, senders := leader(), walsenders()
	if lockPID == 0 || len(senders) != 1 {
		t.Fatalf("before the freeze: leader session %d, walsenders %v; want one of each", lockPID, senders)
	}
	if n := count(t, mon, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1) AND usename = current_user`, []int32{lockPID, senders[0]}); n != 0 {
		t.Fatalf("the leader's sessions run as the superuser; the test must run them as a role that is none")
	}

	if err := syscall.Kill(a.Cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("freeze the leader: %v", err)
	}
	frozen := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			_ = syscall.Kill(a.Cmd.Process.Pid, syscall.SIGCONT)
		}
	}
	t.Cleanup(thaw)

	testkit.Until(t, bound+margin, "the standby takes the leadership lock", func() bool {
		p := leader()
		return p != 0 && p != lockPID
	})
	t.Logf("the standby holds the leadership %s after the freeze (bound %s)", time.Since(frozen).Round(10*time.Millisecond), bound)
	testkit.Until(t, bound+margin, "the frozen leader's lock session and walsender end", func() bool {
		return count(t, mon, `SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)`, []int32{lockPID, senders[0]}) == 0
	})
	t.Logf("the frozen leader's sessions ended %s after the freeze", time.Since(frozen).Round(10*time.Millisecond))

	// The standby has the slot too: it captures what is written now.
	pgtest.Exec(t, owner, `UPDATE thing SET v = v + 1`)
	testkit.Until(t, bound+margin, "the standby capturing", func() bool { return capturing(b) })
	waitCaptured(t, mon, bound+margin)
	t.Logf("the standby captured a change made after the freeze %s after the freeze", time.Since(frozen).Round(10*time.Millisecond))
	testkit.Until(t, bound+margin, "the standby's engine takes the service lock", func() bool {
		p := engine()
		return p != 0 && p != enginePID
	})
	t.Logf("the standby's engine leads %s after the freeze", time.Since(frozen).Round(10*time.Millisecond))

	// Thawed, the old leader finds its sessions gone and waits its turn.
	thaw()
	testkit.Until(t, 30*time.Second, "the thawed sidecar waits as a standby", func() bool { return a.Log.Contains("waiting to take over") })
	pgtest.Exec(t, owner, `UPDATE thing SET v = v + 1`)
	waitCaptured(t, mon, 30*time.Second)
	if n := len(walsenders()); n != 1 {
		t.Errorf("%d replication consumers after the thaw, want 1", n)
	}
	if p := leader(); p == 0 || p == lockPID {
		t.Errorf("leadership session after the thaw: %d (the frozen leader's was %d)", p, lockPID)
	}
	if n := count(t, mon, `SELECT count(*) FROM iasql_audit_log`); n != 300 {
		t.Errorf("%d audit rows, want 300 (100 inserts, 2 x 100 updates)", n)
	}
	if n := count(t, mon, `SELECT count(*) FROM (SELECT lsn, seq FROM iasql_audit_log GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d changes recorded twice", n)
	}
}

// TestClaimSlot: a deposed leader's replication connection that outlives
// its lock session (one whose walsender has no short timeout: an older
// sidecar, another setting) is ended by the new leader, which then
// captures, instead of waiting for it; no superuser needed.
func TestClaimSlot(t *testing.T) {
	t.Parallel()
	const bound = 2 * time.Second
	admin, owner := ownedDB(t)
	pgtest.Exec(t, owner, `CREATE TABLE thing (id int PRIMARY KEY)`)
	stop := startCapture(t, owner, nil)
	stop()
	pgtest.Exec(t, owner, `INSERT INTO iasql_tables (table_name) VALUES ('thing')`)

	ctx := context.Background()
	cfg, err := pgconn.ParseConfig(owner)
	if err != nil {
		t.Fatal(err)
	}
	cfg.RuntimeParams["replication"] = "database"
	cfg.RuntimeParams["application_name"] = "iasql capture"
	cfg.RuntimeParams["wal_sender_timeout"] = "0"
	slot := logical.SlotName(cfg.Database)
	mon := pgtest.Connect(t, admin)
	// The first capture's walsender lets the slot go a moment after the
	// capture has stopped.
	testkit.WaitQuery(t, mon, 10*time.Second, "the first capture's slot let go", `SELECT NOT active FROM pg_replication_slots WHERE slot_name = $1`, slot)
	stale, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Close(ctx)
	if err := pglogrepl.StartReplication(ctx, stale, slot, 0, pglogrepl.StartReplicationOptions{
		PluginArgs: []string{"proto_version '1'", "publication_names '" + logical.Publication + "'"},
	}); err != nil {
		t.Fatalf("start the stale stream: %v", err)
	}
	active := `SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1 AND active_pid = $2`
	if n := count(t, mon, active, slot, int32(stale.PID())); n != 1 {
		t.Fatal("the stale stream does not hold the slot")
	}

	start := time.Now()
	startCapture(t, owner, func(c *logical.Config) { c.LeaderTimeout = bound })
	t.Logf("captured %s after it started", time.Since(start).Round(10*time.Millisecond))
	if d := time.Since(start); d > 2*bound {
		t.Errorf("took %s to capture, want the stale stream ended at once", d)
	}
	if n := count(t, mon, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, int32(stale.PID())); n != 0 {
		t.Error("the stale stream's walsender still runs")
	}
	pgtest.Exec(t, owner, `INSERT INTO thing VALUES (1)`)
	waitCaptured(t, mon, 10*time.Second)
	if n := count(t, mon, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'thing'`); n != 1 {
		t.Errorf("%d changes captured, want 1", n)
	}
}
