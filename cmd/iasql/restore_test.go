package main_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/launch"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	iasqlsql "github.com/iasql/iasql/sql"
)

// TestBackupAndRestore runs the README's recipe (Running in production,
// Backup and restore) literally on a database with the product installed,
// both as plain SQL (iasql install) and as the extension, with the
// least-privilege sidecar of Roles and grants (a role with REPLICATION only,
// named by iasql install --sidecar-role): pg_dump with the sidecar running,
// restore into an empty database, iasql_grant_sidecar, iasql run on it as
// the DSN of the recipe's line names it. Capture resumes at a new slot, the
// registry, modes and audit trail are intact, the audit trail's ids
// continue; the intent pending at the dump (an insert of an open iasql
// transaction, and changes not captured by then) is enacted by the cycle
// the sidecar runs as it starts, with no commit and no write (its schedule
// is an hour away); and so is a new INSERT, which iasql_wait_for_all does not
// report before it is.
func TestBackupAndRestore(t *testing.T) {
	t.Parallel()
	recipe := readmeRecipe(t)
	cases := []struct {
		name, path string
		// another: restore on a second server, whose WAL positions are
		// far below those the source recorded.
		another bool
	}{
		{"plain", "plain", false},
		{"extension", "extension", false},
		{"plain on another server", "plain", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := tc.path
			if path == "extension" {
				extensionInstalled(t)
			}
			c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app")
			src := c.DSN("app")
			to := c // the server restored on
			if tc.another {
				if to, err = pgcluster.Start(context.Background(), pgcluster.Options{}); err != nil {
					t.Fatal(err)
				}
				defer to.Destroy()
				// The source's positions: past 0/10000000 (a fresh server
				// is near 0/1500000); its transaction ids: past 20,000 (the
				// restore's are a few hundred).
				for i := 0; i < 16; i++ {
					pgtest.Exec(t, src, `CHECKPOINT`, `SELECT pg_switch_wal()`)
				}
				pgtest.Exec(t, src, `DO $$ BEGIN FOR i IN 1..20000 LOOP PERFORM pg_catalog.pg_current_xact_id(); COMMIT; END LOOP; END $$`)
			}
			emu := testkit.StartCloud(t, emulator.Options{})

			// Roles and grants: the sidecar's role, without superuser.
			pgtest.Exec(t, c.DSN("postgres"), "CREATE ROLE iasql_sidecar LOGIN REPLICATION")
			if path == "plain" {
				if r := testkit.Run(t, 30*time.Second, "install", "--dsn", src, "--sidecar-role", "iasql_sidecar"); r.Code != 0 {
					t.Fatalf("install: exit %d: %s", r.Code, r.Stderr)
				}
			} else {
				pgtest.Exec(t, src, "CREATE EXTENSION iasql", "SELECT iasql_grant_sidecar('iasql_sidecar')")
			}
			srcRun := startRun(t, withUser(src, "iasql_sidecar"), emu.URL)
			db := pgtest.Connect(t, src)
			ctx := context.Background()
			mustExec(t, db, `SELECT * FROM iasql_install('aws_s3', 'aws_security_group')`,
				`INSERT INTO bucket (name) VALUES ('kept-before-dump'), ('updated-uncaptured'), ('deleted-uncaptured')`,
				`CALL iasql_commit()`,
				`INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'NORMAL')`,
				// Intent that is captured but not enacted when the dump is taken.
				`CALL iasql_begin()`,
				`INSERT INTO bucket (name) VALUES ('pending-at-dump')`)
			testkit.WaitQuery(t, db, time.Minute, "the pending insert captured",
				`SELECT EXISTS (SELECT 1 FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'pending-at-dump')`)
			var auditRows, maxID int64
			if err := db.QueryRow(ctx, `SELECT count(*), max(id) FROM iasql_audit_log`).Scan(&auditRows, &maxID); err != nil {
				t.Fatal(err)
			}
			// Changes in the dump that capture has not recorded by then (the
			// source's sidecar has stopped): the restored database takes them
			// for intent.
			_ = srcRun.Stop(time.Minute)
			mustExec(t, db, `INSERT INTO bucket (name) VALUES ('inserted-uncaptured')`,
				`UPDATE bucket SET versioning = true WHERE name = 'updated-uncaptured'`,
				`DELETE FROM bucket WHERE name = 'deleted-uncaptured'`)

			// The recipe, line by line, up to iasql run.
			dir := t.TempDir()
			for _, line := range recipe[:len(recipe)-1] {
				if strings.HasPrefix(line, "export ") {
					continue // the test's servers stand in for it
				}
				server := to // the restore's lines name the server restored on
				if strings.HasPrefix(line, "pg_dump ") || strings.HasPrefix(line, "pg_dumpall ") {
					server = c
				}
				cmd := launch.Command(context.Background(), "", "sh", "-c", line)
				cmd.Dir = dir
				cmd.Env = append(cmd.Env, "PATH="+c.BinDir+":"+os.Getenv("PATH"),
					"PGHOST=127.0.0.1", "PGPORT="+strconv.Itoa(server.Port), "PGUSER="+server.User)
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("%s: %v\n%s", line, err, out)
				}
			}
			_ = srcRun.Stop(time.Minute)

			dst := to.DSN("app_restored")
			if tc.another {
				var below bool
				err := db.QueryRow(ctx, `SELECT max(lsn) > $1::text::pg_lsn FROM iasql_audit_log`, walPosition(t, dst)).Scan(&below)
				if err != nil || !below {
					t.Fatalf("the restored server's WAL position is not below the positions the source recorded (%v)", err)
				}
			}
			// Before the sidecar runs on it, status says to start it (the
			// source's progress is not a lost slot here).
			if r := testkit.Run(t, 30*time.Second, "status", "--dsn", dst); r.Code != 1 || !strings.Contains(r.Stderr, "does not exist: start 'iasql run'") {
				t.Errorf("status of the restored database: exit %d, %s", r.Code, r.Stderr)
			}
			if path == "extension" {
				// A slot of the sidecar's name, made on the restored database
				// before the sidecar adopted it, may hold the restore's own
				// writes: the sidecar drops it and starts at a new one.
				pgtest.Exec(t, dst, `SELECT pg_create_logical_replication_slot('iasql_app_restored', 'pgoutput')`)
			}
			// The recipe's last line, on the test's server: the role it
			// names is the sidecar's, without superuser. Its schedule is an
			// hour away, so only the cycle it runs as it starts can enact
			// what was pending at the dump.
			runDSN := recipeRunDSN(t, recipe[len(recipe)-1], to.Port)
			var super bool
			if err := pgtest.Connect(t, dst).QueryRow(ctx, `SELECT rolsuper OR NOT rolreplication FROM pg_roles WHERE rolname = $1`, dbUser(runDSN)).Scan(&super); err != nil || super {
				t.Fatalf("the recipe's sidecar %s is a superuser or lacks REPLICATION (%v)", dbUser(runDSN), err)
			}
			run := startRun(t, runDSN, emu.URL, "--interval", "1h")
			if path == "extension" {
				// The line was written before the sidecar connected; poll
				// for it, since its copy from the pipe may still be on its way.
				testkit.Until(t, 10*time.Second, "the slot made before the adoption to be dropped", func() bool {
					return run.Log.Contains("dropped a slot made before the restored database was adopted")
				})
			}
			rdb := pgtest.Connect(t, dst)
			testkit.WaitQuery(t, rdb, time.Minute, "the sidecar connected", `SELECT iasql_sidecar_connected()`)
			// Before anyone writes or commits: what was pending at the dump
			// reaches the cloud.
			s3c := s3.NewFromConfig(emu.AWS, testkit.PathStyle)
			testkit.Wait(t, time.Minute, "the intent pending at the dump to be enacted as the sidecar starts", func() error {
				if got := bucketNames(t, s3c); got != "inserted-uncaptured,kept-before-dump,pending-at-dump,updated-uncaptured" {
					return fmt.Errorf("buckets in the cloud: %s", got)
				}
				return nil
			})

			checks := []struct{ what, query string }{
				{"registry intact", `SELECT count(*) = 3 FROM iasql_tables WHERE table_name IN ('bucket', 'bucket_object', 'iasql_mode')`},
				// Imported VPCs, subnets, groups and rules: their rows
				// (cidr, jsonb, arrays, timestamps) compare equal to the
				// trail, so none is taken for a change not captured.
				{"imported rows restored", `SELECT (SELECT count(*) FROM vpc) > 0 AND (SELECT count(*) FROM security_group_rule) > 0`},
				{"mode rule intact", `SELECT count(*) = 1 FROM iasql_mode WHERE table_name = 'bucket' AND mode = 'NORMAL'`},
				{"module installed", `SELECT installed FROM iasql_modules_list() WHERE module = 'aws_s3'`},
				{"capture at a new slot, progress of this origin only", `SELECT count(*) = 1 AND bool_and(lsn_origin = iasql_lsn_origin()) FROM iasql_capture_progress`},
				{"the open transaction of the old sidecar closed", `SELECT count(*) = 0 FROM iasql_transaction`},
				{"mode captured", `SELECT relreplident = 'f' FROM pg_class WHERE oid = 'iasql_mode'::regclass`},
				// Where iasql counts as installed is this server's position at
				// the adoption, not the source's: the slot made since starts
				// after it, and a restart before it records progress does not
				// take it for an earlier install's and drop it.
				// The least-privilege sidecar links Cloud Control references
				// at installs and unlinks them at uninstalls.
				{"the sidecar may link references", `SELECT has_function_privilege('iasql_sidecar', 'public.iasql_link_reference(text,text,text,boolean)', 'EXECUTE') AND has_function_privilege('iasql_sidecar', 'public.iasql_unlink_reference(text,text)', 'EXECUTE')`},
				{"installed as of the adoption", `SELECT k.installed_lsn <= s.confirmed_flush_lsn FROM iasql_private.iasql_engine_key k, pg_replication_slots s WHERE s.slot_name = 'iasql_app_restored'`},
			}
			for _, c := range checks {
				var ok bool
				if err := rdb.QueryRow(ctx, c.query).Scan(&ok); err != nil || !ok {
					t.Errorf("%s: %v (%v)", c.what, ok, err)
				}
			}
			var missed string
			if err := rdb.QueryRow(ctx, `SELECT string_agg(change_type || ' ' || (coalesce(new_row, old_row)->>'name'), ', ' ORDER BY change_type)
				FROM iasql_audit_log WHERE message LIKE 'restore:%' AND origin = 'user'`).Scan(&missed); err != nil || missed != "DELETE deleted-uncaptured, INSERT inserted-uncaptured, UPDATE updated-uncaptured" {
				t.Errorf("changes not captured before the dump recorded as: %q, want the three of them, nothing else (%v)", missed, err)
			}
			var restoredRows int64
			if err := rdb.QueryRow(ctx, `SELECT count(*) FROM iasql_audit_log WHERE id <= $1`, maxID).Scan(&restoredRows); err != nil || restoredRows != auditRows {
				t.Errorf("audit trail: %d rows up to id %d restored, want %d (%v)", restoredRows, maxID, auditRows, err)
			}

			// A new INSERT is captured after the restored trail and enacted;
			// iasql_wait_for_all returns only once it is.
			var id int
			if err := rdb.QueryRow(ctx, `INSERT INTO bucket (name) VALUES ('after-restore') RETURNING id`).Scan(&id); err != nil {
				t.Fatal(err)
			}
			// An update of a record enacted at the source is intent too,
			// though this server's positions may be below the source's.
			mustExec(t, rdb, `UPDATE bucket SET versioning = true WHERE name = 'kept-before-dump'`)
			mustExec(t, rdb, `SELECT iasql_wait_for_all(120)`)
			var created bool
			if err := rdb.QueryRow(ctx, `SELECT created_at IS NOT NULL FROM bucket WHERE id = $1`, id).Scan(&created); err != nil || !created {
				t.Errorf("iasql_wait_for_all returned before the new bucket was enacted (%v)", err)
			}
			mustExec(t, rdb, `SELECT iasql_wait_for('bucket', `+strconv.Itoa(id)+`, 'created_at IS NOT NULL', 60)`)
			var newIDs int64
			if err := rdb.QueryRow(ctx, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'after-restore' AND id > $1`, maxID).Scan(&newIDs); err != nil || newIDs == 0 {
				t.Errorf("the new insert's audit rows do not continue the restored ids (%d, %v)", newIDs, err)
			}
			var failed int64
			if err := rdb.QueryRow(ctx, `SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND id > $1 AND message::jsonb->>'outcome' <> 'done'`, maxID).Scan(&failed); err != nil || failed != 0 {
				t.Errorf("%d cycles after the restore did not end done (%v)", failed, err)
			}

			// The cloud has every bucket, each once: the one pending at the
			// dump enacted, the one enacted before it not again.
			if names := bucketNames(t, s3c); names != "after-restore,inserted-uncaptured,kept-before-dump,pending-at-dump,updated-uncaptured" {
				t.Errorf("buckets in the cloud: %v", names)
			}
			for _, name := range []string{"kept-before-dump", "updated-uncaptured"} {
				v, err := s3.NewFromConfig(emu.AWS, testkit.PathStyle).
					GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(name)})
				if err != nil {
					t.Fatal(err)
				}
				if v.Status != s3types.BucketVersioningStatusEnabled {
					t.Errorf("the update of %s was not enacted: versioning %q in the cloud", name, v.Status)
				}
				var versioned bool
				if err := rdb.QueryRow(ctx, `SELECT versioning FROM bucket WHERE name = $1`, name).Scan(&versioned); err != nil || !versioned {
					t.Errorf("the update of %s was undone in the row (%v)", name, err)
				}
			}
			if t.Failed() || os.Getenv("IASQL_TEST_LOG") != "" {
				t.Logf("sidecar log of the restored database:\n%s", run.Log)
			}
		})
	}
}

// bucketNames lists the buckets in the cloud, comma-separated.
func bucketNames(t *testing.T, c *s3.Client) string {
	t.Helper()
	out, err := c.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, *b.Name)
	}
	return strings.Join(names, ",")
}

// recipeRunDSN is the DSN of the recipe's "iasql run --dsn DSN" line, on
// the test's server (127.0.0.1:port) instead of the README's host.
func recipeRunDSN(t *testing.T, line string, port int) string {
	t.Helper()
	f := strings.Fields(line)
	if len(f) != 4 || f[0] != "iasql" || f[1] != "run" || f[2] != "--dsn" {
		t.Fatalf("the recipe's last line is not iasql run --dsn DSN: %q", line)
	}
	u, err := url.Parse(f[3])
	if err != nil {
		t.Fatalf("the recipe's DSN %q: %v", f[3], err)
	}
	u.Host = "127.0.0.1:" + strconv.Itoa(port)
	u.RawQuery = "sslmode=disable"
	return u.String()
}

func dbUser(dsn string) string {
	cfg, _ := pgx.ParseConfig(dsn)
	return cfg.User
}

func walPosition(t *testing.T, dsn string) string {
	t.Helper()
	var lsn string
	if err := pgtest.Connect(t, dsn).QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		t.Fatal(err)
	}
	return lsn
}

// readmeRecipe returns the command lines of the README's code block under
// "### Backup and restore".
func readmeRecipe(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "### Backup and restore\n")
	if !ok {
		t.Fatal("README.md has no section ### Backup and restore")
	}
	_, block, ok := strings.Cut(section, "```sh\n")
	if !ok {
		t.Fatal("README.md's Backup and restore has no sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 4 || !strings.HasPrefix(lines[len(lines)-1], "iasql run") {
		t.Fatalf("README.md's Backup and restore recipe is not dump, create, restore, run: %q", lines)
	}
	return lines
}

// extensionInstalled fails unless the server's extension files are this
// build's (make extension-install).
func extensionInstalled(t *testing.T) {
	t.Helper()
	bin, err := pgcluster.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(bin, "pg_config"), "--sharedir").Output()
	if err != nil {
		t.Fatalf("pg_config --sharedir: %v", err)
	}
	name := "iasql--" + iasqlsql.Version + ".sql"
	got, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "extension", name))
	if err != nil || string(got) != iasqlsql.ExtensionScript() {
		t.Fatalf("%s is missing from the server's extension directory or differs from this build's: run 'make extension-install'", name)
	}
}

// startRun runs iasql run against dsn and the emulator at endpoint, with
// args, until the test ends or it is stopped; it returns once the sidecar
// captures.
func startRun(t *testing.T, dsn, endpoint string, args ...string) *testkit.Process {
	t.Helper()
	p := testkit.Start(t, endpoint, nil, append([]string{"run", "--dsn", dsn, "--log-level", "debug"}, args...)...)
	testkit.WaitQuery(t, pgtest.Connect(t, dsn), time.Minute, "iasql run to capture",
		`SELECT to_regproc('public.iasql_sidecar_connected') IS NOT NULL AND iasql_sidecar_connected()`)
	return p
}

func mustExec(t *testing.T, conn *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		_, err := conn.Exec(ctx, q)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}
