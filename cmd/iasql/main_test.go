package main_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, cmd := range []string{"run", "install", "status", "demo", "emulator"} {
		r := testkit.Run(t, 10*time.Second, cmd, "--help")
		if r.Code != 0 {
			t.Errorf("%s --help exited %d", cmd, r.Code)
		}
		help := r.Stdout + r.Stderr
		if !strings.Contains(help, "Usage: iasql "+cmd) || !strings.Contains(help, "Examples:") {
			t.Errorf("%s --help lacks usage or examples:\n%s", cmd, help)
		}
		if cmd != "demo" && cmd != "emulator" && !strings.Contains(help, "env IASQL_DSN") {
			t.Errorf("%s --help does not name IASQL_DSN:\n%s", cmd, help)
		}
	}
	if r := testkit.Run(t, 10*time.Second, "--help"); r.Code != 0 || !strings.Contains(r.Stdout, "Commands:") {
		t.Errorf("--help: exit %d, %q", r.Code, r.Stdout)
	}
	if r := testkit.Run(t, 10*time.Second, "--version"); r.Code != 0 || !strings.HasPrefix(r.Stdout, "iasql ") {
		t.Errorf("--version: exit %d, %q", r.Code, r.Stdout)
	}
	if r := testkit.Run(t, 10*time.Second, "frobnicate"); r.Code != 1 || !strings.Contains(r.Stderr, "unknown command") {
		t.Errorf("unknown command: exit %d, %q", r.Code, r.Stderr)
	}
}

func withUser(dsn, user string) string {
	return strings.Replace(dsn, "postgres@", user+"@", 1)
}

// nothingInstalled asserts that a failed start left no state behind.
func nothingInstalled(t *testing.T, adminDSN string) {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), adminDSN)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(context.Background())
	var objects, slots, pubs int
	err = conn.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'iasql%') + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'iasql%'),
		       (SELECT count(*) FROM pg_replication_slots WHERE database = current_database()),
		       (SELECT count(*) FROM pg_publication)`).Scan(&objects, &slots, &pubs)
	if err != nil {
		t.Fatal(err)
	}
	if objects+slots+pubs != 0 {
		t.Errorf("a failed start left %d iasql objects, %d slots, %d publications behind", objects, slots, pubs)
	}
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

func TestRunRefusesBadInput(t *testing.T) {
	t.Parallel()
	walReplica, err := pgcluster.Start(context.Background(), pgcluster.Options{Settings: map[string]string{"wal_level": "replica"}})
	if err != nil {
		t.Fatal(err)
	}
	defer walReplica.Destroy()
	oneSlot, err := pgcluster.Start(context.Background(), pgcluster.Options{Settings: map[string]string{"max_replication_slots": "1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer oneSlot.Destroy()
	pgtest.Exec(t, oneSlot.DSN("postgres"), `SELECT pg_create_logical_replication_slot('someone_else', 'pgoutput')`)

	tests := []struct {
		name  string
		setup func(t *testing.T) (dsn, admin string)
		args  []string
		want  []string
	}{
		{"no dsn", nil, []string{"run"}, []string{"no database given", "--dsn"}},
		{"unparsable dsn", nil, []string{"run", "--dsn", "postgres://u:secret@host:notaport/db"}, []string{"invalid DSN"}},
		{"unreachable server", func(t *testing.T) (string, string) {
			return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/x?connect_timeout=5", closedPort(t)), ""
		}, []string{"run"}, []string{"cannot connect", "check that PostgreSQL is running"}},
		{"missing database", func(t *testing.T) (string, string) {
			return pgtest.WithDatabase(srv.AdminDSN(), "no_such_db"), ""
		}, []string{"run"}, []string{`database "no_such_db" does not exist`}},
		{"wal_level not logical", func(t *testing.T) (string, string) {
			return walReplica.DSN("postgres"), walReplica.DSN("postgres")
		}, []string{"run"}, []string{`wal_level is "replica"`, "wal_level = logical", "restart PostgreSQL"}},
		{"role without REPLICATION", func(t *testing.T) (string, string) {
			dsn := srv.NewDB(t)
			pgtest.Exec(t, dsn, `DO $$ BEGIN CREATE ROLE norepl LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
				`GRANT CREATE ON DATABASE `+dbName(dsn)+` TO norepl`, `GRANT CREATE ON SCHEMA public TO norepl`)
			return withUser(dsn, "norepl"), dsn
		}, []string{"run"}, []string{"role norepl lacks REPLICATION", "ALTER ROLE norepl REPLICATION"}},
		{"role without CREATE rights", func(t *testing.T) (string, string) {
			dsn := srv.NewDB(t)
			pgtest.Exec(t, dsn, `DO $$ BEGIN CREATE ROLE nocreate LOGIN REPLICATION; EXCEPTION WHEN duplicate_object THEN NULL; END $$`,
				`REVOKE CREATE ON SCHEMA public FROM PUBLIC`)
			return withUser(dsn, "nocreate"), dsn
		}, []string{"run"}, []string{"role nocreate lacks", "CREATE on the database", "CREATE on schema public"}},
		{"replication slots exhausted", func(t *testing.T) (string, string) {
			pgtest.Exec(t, oneSlot.DSN("postgres"), `CREATE DATABASE slots`)
			return oneSlot.DSN("slots"), oneSlot.DSN("slots")
		}, []string{"run"}, []string{"max_replication_slots (1) are in use", "raise max_replication_slots"}},
		{"bad log format", func(t *testing.T) (string, string) { return srv.AdminDSN(), "" }, []string{"run", "--log-format", "xml"}, []string{"invalid --log-format"}},
		{"bad metrics address", func(t *testing.T) (string, string) { return srv.AdminDSN(), "" }, []string{"run", "--metrics-listen", "localhost"}, []string{"invalid --metrics-listen", "host:port"}},
		{"bad events queue", func(t *testing.T) (string, string) { return srv.AdminDSN(), "" }, []string{"run", "--events-queue", "iasql-events"}, []string{"--events-queue \"iasql-events\": give the queue's URL"}},
		{"bad trail lookups", func(t *testing.T) (string, string) { return srv.AdminDSN(), "" }, []string{"run", "--trail-lookups", "-1"}, []string{"--trail-lookups \"-1\": give a whole number of 0 or more"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := tc.args
			var admin string
			if tc.setup != nil {
				var dsn string
				dsn, admin = tc.setup(t)
				args = append(args, "--dsn", dsn)
			}
			r := testkit.Run(t, 30*time.Second, args...)
			if r.Code != 1 {
				t.Errorf("exit code %d, want 1; stderr: %s", r.Code, r.Stderr)
			}
			msg := strings.TrimRight(r.Stderr, "\n")
			if strings.Count(msg, "\n") != 0 {
				t.Errorf("error is not one line:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not say %q", msg, w)
				}
			}
			if strings.Contains(msg, "secret") {
				t.Errorf("error shows the password: %s", msg)
			}
			if admin != "" {
				nothingInstalled(t, admin)
			}
		})
	}
}

func dbName(dsn string) string {
	cfg, _ := pgx.ParseConfig(dsn)
	return cfg.Database
}

func TestInstallAndStatus(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	r := testkit.Run(t, 30*time.Second, "install", "--dsn", dsn)
	if r.Code != 0 || !strings.Contains(r.Stdout, "installed iasql") {
		t.Fatalf("install: exit %d, %s %s", r.Code, r.Stdout, r.Stderr)
	}
	if r := testkit.Run(t, 30*time.Second, "install", "--dsn", dsn); r.Code != 0 || !strings.Contains(r.Stdout, "already installed") {
		t.Fatalf("second install: exit %d, %s %s", r.Code, r.Stdout, r.Stderr)
	}
	r = testkit.Run(t, 30*time.Second, "status", "--dsn", dsn)
	if r.Code != 1 || !strings.Contains(r.Stderr, "does not exist: start 'iasql run'") {
		t.Errorf("status before run: exit %d, %s", r.Code, r.Stderr)
	}

	run := testkit.Start(t, "", nil, "run", "--dsn", dsn)
	// Capture starts from the slot the first run creates.
	waitStatus(t, dsn, "healthy", func(r testkit.Result) bool { return r.Code == 0 })
	pgtest.Exec(t, dsn, `CREATE TABLE t (id int PRIMARY KEY)`, `INSERT INTO iasql_tables (table_name) VALUES ('t')`, `INSERT INTO t VALUES (1), (2)`)
	r = waitStatus(t, dsn, "healthy with 2 changes", func(r testkit.Result) bool {
		return r.Code == 0 && strings.Contains(r.Stdout, "changes_captured:   2")
	})
	for _, want := range []string{"slot:               iasql_", "consumer:           active (pid", "lag_bytes:", "last_captured_lsn:  0/", "last_commit_time:   20", "capture:            healthy"} {
		if !strings.Contains(r.Stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.Stdout)
		}
	}

	// SIGTERM stops it cleanly; status then says nobody consumes.
	if err := run.Stop(time.Minute); err != nil {
		t.Errorf("run after SIGTERM: %v", err)
	}
	waitStatus(t, dsn, "no consumer after stop", func(r testkit.Result) bool {
		return r.Code == 1 && strings.Contains(r.Stderr, "no sidecar is consuming")
	})
}

// waitStatus runs iasql status until ok says it shows what the test waits for.
func waitStatus(t *testing.T, dsn, what string, ok func(testkit.Result) bool) testkit.Result {
	t.Helper()
	var r testkit.Result
	testkit.Wait(t, 30*time.Second, "status "+what, func() error {
		if r = testkit.Run(t, 30*time.Second, "status", "--dsn", dsn); ok(r) {
			return nil
		}
		return fmt.Errorf("exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	})
	return r
}

// TestLostSlot: when PostgreSQL removed WAL the slot needed, run and status
// say so and exit 1, and the slot is not silently recreated.
func TestLostSlot(t *testing.T) {
	t.Parallel()
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{Settings: map[string]string{"max_slot_wal_keep_size": "'1MB'", "max_wal_size": "'32MB'", "min_wal_size": "'32MB'"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app")
	dsn := c.DSN("app")
	run := testkit.Start(t, "", nil, "run", "--dsn", dsn)
	pgtest.Exec(t, dsn, `CREATE TABLE t (id serial PRIMARY KEY, pad text)`)
	waitStatus(t, dsn, "healthy", func(r testkit.Result) bool { return r.Code == 0 })
	pgtest.Exec(t, dsn, `INSERT INTO iasql_tables (table_name) VALUES ('t')`)
	run.Kill()

	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for i := 0; ; i++ {
		var status string
		if err := conn.QueryRow(context.Background(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'iasql_app'`).Scan(&status); err != nil {
			t.Fatal(err)
		}
		if status == "lost" {
			break
		}
		if i == 30 {
			t.Fatalf("could not make the slot lose WAL (wal_status %s)", status)
		}
		pgtest.Exec(t, dsn, `INSERT INTO t (pad) SELECT repeat('x', 1000) FROM generate_series(1, 2000)`, `SELECT pg_switch_wal()`, `CHECKPOINT`)
	}
	for _, cmd := range []string{"run", "status"} {
		r := testkit.Run(t, 30*time.Second, cmd, "--dsn", dsn)
		if r.Code != 1 || !strings.Contains(r.Stderr, "lost") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
			t.Errorf("%s with a lost slot: exit %d, stderr %q", cmd, r.Code, r.Stderr)
		}
	}
	var status string
	if err := conn.QueryRow(context.Background(), `SELECT wal_status FROM pg_replication_slots WHERE slot_name = 'iasql_app'`).Scan(&status); err != nil || status != "lost" {
		t.Errorf("the lost slot was replaced or dropped: %q, %v", status, err)
	}
}

// TestDemoScenario: the scripted walkthrough make run offers passes.
func TestDemoScenario(t *testing.T) {
	t.Parallel()
	r := testkit.Run(t, 3*time.Minute, "demo", "--scenario", "--log-level", "warn")
	if r.Code != 0 || !strings.Contains(r.Stdout, "9 of 9 steps checked out") {
		t.Errorf("demo --scenario: exit %d\n%s\n%s", r.Code, r.Stdout, r.Stderr)
	}
}

// TestPasswordKeptOutOfPs: a password on the command line works but is
// warned about (ps shows it to every user); --dsn-file takes the
// connection string from a file instead; the two together are refused.
// Nothing prints the password.
func TestPasswordKeptOutOfPs(t *testing.T) {
	t.Parallel()
	withPassword := fmt.Sprintf("postgres://u:secret@127.0.0.1:%d/x?connect_timeout=5", closedPort(t))
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(withPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		args      []string
		warn      bool
		wantError string
	}{
		{"password on the command line", []string{"status", "--dsn", withPassword}, true, "cannot connect"},
		{"password in a file", []string{"status", "--dsn-file", file}, false, "cannot connect"},
		{"both", []string{"status", "--dsn-file", file, "--dsn", withPassword}, false, "give --dsn or --dsn-file, not both"},
		{"unreadable file", []string{"status", "--dsn-file", file + ".missing"}, false, "read --dsn-file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := testkit.Run(t, 30*time.Second, c.args...)
			if r.Code != 1 || !strings.Contains(r.Stderr, c.wantError) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", r.Code, r.Stderr, c.wantError)
			}
			if warned := strings.Contains(r.Stderr, "the password in --dsn is visible"); warned != c.warn {
				t.Errorf("warned about the password: %v, want %v (stderr %q)", warned, c.warn, r.Stderr)
			}
			if strings.Contains(r.Stderr+r.Stdout, "secret") {
				t.Errorf("the password was printed: %s", r.Stderr)
			}
		})
	}
}

// TestSidecarRole follows the README's least-privilege recipe from the
// command line: an administrator installs and names the sidecar's role; a
// REPLICATION role that is not it is refused by run before anything is
// created; the named role runs and captures without superuser.
func TestSidecarRole(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	sidecar, other := dbName(dsn)+"_sidecar", dbName(dsn)+"_other"
	pgtest.Exec(t, dsn, "CREATE ROLE "+sidecar+" LOGIN REPLICATION", "CREATE ROLE "+other+" LOGIN REPLICATION")
	r := testkit.Run(t, 30*time.Second, "install", "--dsn", dsn, "--sidecar-role", sidecar)
	if r.Code != 0 || !strings.Contains(r.Stdout, "role "+sidecar+" is the iasql sidecar's role in database "+dbName(dsn)) {
		t.Fatalf("install --sidecar-role: exit %d, %s %s", r.Code, r.Stdout, r.Stderr)
	}

	r = testkit.Run(t, 30*time.Second, "run", "--dsn", withUser(dsn, other))
	if r.Code != 1 || !strings.Contains(r.Stderr, "role "+other+" is not the iasql sidecar's role") || !strings.Contains(r.Stderr, "iasql install --sidecar-role "+other) {
		t.Errorf("run as another role: exit %d, %s", r.Code, r.Stderr)
	}
	var slots int
	conn := pgtest.Connect(t, dsn)
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`).Scan(&slots); err != nil || slots != 0 {
		t.Fatalf("a refused run left %d slots (%v)", slots, err)
	}

	run := testkit.Start(t, "", nil, "run", "--dsn", withUser(dsn, sidecar))
	waitStatus(t, dsn, "healthy", func(r testkit.Result) bool { return r.Code == 0 })
	pgtest.Exec(t, dsn, `CREATE TABLE t (id int PRIMARY KEY)`, `INSERT INTO iasql_tables (table_name) VALUES ('t')`, `INSERT INTO t VALUES (1), (2)`)
	waitStatus(t, dsn, "healthy with 2 changes captured by the non-superuser sidecar", func(r testkit.Result) bool {
		return r.Code == 0 && strings.Contains(r.Stdout, "changes_captured:   2")
	})
	if err := run.Stop(time.Minute); err != nil {
		t.Errorf("run after SIGTERM: %v\n%s", err, run.Log)
	}
}

// TestInstallRoles: on a server without iasql's roles, an installer without
// CREATEROLE is refused with one line giving the statements that create
// them; a superuser's install (in another database) creates them, NOLOGIN,
// each including the next; then the same installer installs (the roles
// exist: nothing is created, nothing fails).
func TestInstallRoles(t *testing.T) {
	t.Parallel()
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app", "CREATE DATABASE other", "CREATE ROLE installer LOGIN",
		"ALTER DATABASE app OWNER TO installer")
	pgtest.Exec(t, c.DSN("app"), "GRANT CREATE ON SCHEMA public TO installer")
	r := testkit.Run(t, 30*time.Second, "install", "--dsn", withUser(c.DSN("app"), "installer"))
	recipe := "CREATE ROLE iasql_reader NOLOGIN; CREATE ROLE iasql_writer NOLOGIN IN ROLE iasql_reader; CREATE ROLE iasql_admin NOLOGIN IN ROLE iasql_writer;"
	if r.Code != 1 || !strings.Contains(r.Stderr, "iasql needs the role iasql_reader, which does not exist, and role installer may not create it") ||
		!strings.Contains(r.Stderr, recipe) || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
		t.Fatalf("install without CREATEROLE: exit %d, %q", r.Code, r.Stderr)
	}
	if r := testkit.Run(t, 30*time.Second, "install", "--dsn", c.DSN("other")); r.Code != 0 {
		t.Fatalf("a superuser's install: exit %d, %s", r.Code, r.Stderr)
	}
	if r := testkit.Run(t, 30*time.Second, "install", "--dsn", withUser(c.DSN("app"), "installer")); r.Code != 0 {
		t.Fatalf("install once the roles exist: exit %d, %s", r.Code, r.Stderr)
	}
	conn := pgtest.Connect(t, c.DSN("other"))
	var ok bool
	if err := conn.QueryRow(context.Background(), `SELECT pg_has_role('iasql_admin', 'iasql_reader', 'MEMBER') AND NOT rolcanlogin FROM pg_roles WHERE rolname = 'iasql_admin'`).Scan(&ok); err != nil || !ok {
		t.Errorf("the superuser's install did not create iasql_admin NOLOGIN including iasql_reader (%v)", err)
	}
}
