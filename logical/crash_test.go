package logical_test

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// privateCluster starts a cluster of the test's own: these tests crash and
// restart the server, which a shared one cannot take.
func privateCluster(t *testing.T) (*pgcluster.Cluster, string) {
	t.Helper()
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
	if err != nil {
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server log:\n%s", testkit.Tail(c.Log(), 3000))
		}
		c.Destroy()
	})
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app")
	return c, c.DSN("app")
}

// TestCrashes runs the 10,000-change workload while the sidecar is killed
// with SIGKILL at random moments and restarted, and while PostgreSQL itself
// crashes (immediate shutdown) and restarts mid-stream: the audit trail
// still holds every committed change exactly once, in commit order.
func TestCrashes(t *testing.T) {
	t.Parallel()
	c, dsn := privateCluster(t)
	pgtest.Exec(t, dsn, workloadSchema)
	first := startSidecar(t, dsn)
	testkit.Until(t, 30*time.Second, "sidecar capturing", func() bool { return capturing(first) })
	pgtest.Exec(t, dsn, registerWorkload)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	current := first
	kills, restarts := 0, 0
	wg.Add(1)
	go func() { // the killer
		defer wg.Done()
		rng := rand.New(rand.NewSource(7))
		for ctx.Err() == nil {
			time.Sleep(time.Duration(100+rng.Intn(700)) * time.Millisecond)
			mu.Lock()
			current.Kill()
			kills++
			time.Sleep(time.Duration(rng.Intn(300)) * time.Millisecond)
			current = startSidecar(t, dsn)
			mu.Unlock()
		}
	}()
	wg.Add(1)
	go func() { // the server crash, once the workload is under way
		defer wg.Done()
		if err := underWay(ctx, dsn, 1000); err != nil {
			t.Errorf("the workload did not get under way: %v", err)
			return
		}
		if err := c.Restart(context.Background(), "immediate"); err != nil {
			t.Errorf("restart server: %v", err)
			return
		}
		restarts++
	}()
	workload(ctx, t, dsn, 10000, 2)
	cancel()
	wg.Wait()
	if restarts != 1 || kills < 3 {
		t.Fatalf("the test did not disturb capture enough: %d kills, %d server restarts", kills, restarts)
	}
	conn := pgtest.Connect(t, dsn)
	waitCaptured(t, conn, 2*time.Minute)
	compareAudit(t, conn)
	t.Logf("%d sidecar kills, %d server crash", kills, restarts)
}

// underWay waits until the workload has committed n changes
// (expected_log counts them): it is under way.
func underWay(ctx context.Context, dsn string, n int) error {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return testkit.Poll(ctx, time.Minute, fmt.Sprintf("%d changes of the workload", n), func() error {
		var done int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM expected_log`).Scan(&done); err != nil {
			return err
		}
		if done < n {
			return fmt.Errorf("%d committed", done)
		}
		return nil
	})
}

// TestTwoSidecars: one captures, the other waits; when the first dies the
// second takes over within 10 seconds, and no change is lost or doubled.
func TestTwoSidecars(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	pgtest.Exec(t, dsn, `CREATE TABLE thing (id int PRIMARY KEY, v int)`)
	a := startSidecar(t, dsn)
	testkit.Until(t, 30*time.Second, "first sidecar capturing", func() bool { return capturing(a) })
	b := startSidecar(t, dsn)
	testkit.Until(t, 30*time.Second, "second sidecar waiting", func() bool { return b.Log.Contains("waiting to take over") })
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name) VALUES ('thing')`, `INSERT INTO thing SELECT g, 0 FROM generate_series(1, 100) g`)
	conn := pgtest.Connect(t, dsn)
	waitCaptured(t, conn, 30*time.Second)

	consumers := `SELECT count(*) FROM pg_stat_replication r JOIN pg_stat_activity a USING (pid)
		WHERE r.application_name = 'iasql capture' AND a.datname = current_database()`
	leaders := `SELECT count(*) FROM iasql_lock_holders WHERE lock_id = 1`
	if n := count(t, conn, consumers); n != 1 {
		t.Errorf("%d replication consumers, want 1", n)
	}
	if n := count(t, conn, leaders); n != 1 {
		t.Errorf("%d capture leaders, want 1", n)
	}
	if capturing(b) {
		t.Fatal("the second sidecar captures while the first does")
	}

	a.Kill()
	killed := time.Now()
	pgtest.Exec(t, dsn, `UPDATE thing SET v = v + 1`)
	testkit.Until(t, 10*time.Second, "second sidecar takes over", func() bool { return capturing(b) })
	waitCaptured(t, conn, 10*time.Second)
	t.Logf("took over and caught up %s after the kill", time.Since(killed).Round(10*time.Millisecond))
	if n := count(t, conn, consumers); n != 1 {
		t.Errorf("%d replication consumers after takeover, want 1", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM iasql_audit_log`); n != 200 {
		t.Errorf("%d audit rows, want 200 (100 inserts, 100 updates)", n)
	}
	if n := count(t, conn, `SELECT count(*) FROM (SELECT record_id, change_type FROM iasql_audit_log GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
		t.Errorf("%d changes recorded twice", n)
	}
}
