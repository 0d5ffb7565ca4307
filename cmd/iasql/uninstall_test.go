package main_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestUninstall installs iasql (as plain SQL and as the extension) with the
// least-privilege sidecar, lets that sidecar run (its slot, publication and
// grants), installs aws_s3 and makes a bucket, then removes iasql each way
// the README gives, and compares the database's catalog (relations,
// routines, schemas, extensions, triggers, publications, slots, event
// triggers, the database's and schema public's privileges, and the
// server's roles) with what it was before the install: equal, but for what
// each way says it leaves. While the sidecar runs, uninstall is refused
// with one line and changes nothing; --roles is refused while another
// database uses the roles.
func TestUninstall(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		extension bool
		// byHand is the DROP EXTENSION run before iasql uninstall ("" none).
		byHand string
		// uninstallModule: iasql_uninstall('aws_s3') first, with the sidecar.
		uninstallModule bool
		args            []string
		// what stays after byHand, besides iasql's roles (README).
		afterHand                     []string
		keepsModuleTables, keepsRoles bool
	}{
		{name: "plain, everything", args: []string{"--module-tables", "--roles"}},
		{name: "extension, everything", extension: true, args: []string{"--module-tables", "--roles"}},
		{name: "plain, module tables and roles kept", keepsModuleTables: true, keepsRoles: true},
		{name: "extension, DROP EXTENSION CASCADE by hand", extension: true, byHand: "DROP EXTENSION iasql CASCADE",
			afterHand: []string{"publication iasql", "slot iasql_app", "relation public.bucket"}, args: []string{"--roles"}, keepsModuleTables: true},
		{name: "extension, DROP EXTENSION by hand once the modules are uninstalled", extension: true, byHand: "DROP EXTENSION iasql", uninstallModule: true,
			afterHand: []string{"publication iasql", "slot iasql_app"}, args: []string{"--roles"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if tc.extension {
				extensionInstalled(t)
			}
			c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Destroy()
			pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app", "CREATE ROLE iasql_sidecar LOGIN REPLICATION", "CREATE ROLE app LOGIN")
			dsn := c.DSN("app")
			before := catalogOf(t, dsn)
			if tc.extension {
				pgtest.Exec(t, dsn, "CREATE EXTENSION iasql", "SELECT iasql_grant_sidecar('iasql_sidecar')")
			} else if r := testkit.Run(t, 30*time.Second, "install", "--dsn", dsn, "--sidecar-role", "iasql_sidecar"); r.Code != 0 {
				t.Fatalf("install: exit %d: %s", r.Code, r.Stderr)
			}
			pgtest.Exec(t, c.DSN("postgres"), "GRANT iasql_writer TO app")
			emu := testkit.StartCloud(t, emulator.Options{})
			run := startRun(t, withUser(dsn, "iasql_sidecar"), emu.URL)
			db := pgtest.Connect(t, dsn)
			mustExec(t, db, `SELECT * FROM iasql_install('aws_s3')`, `INSERT INTO bucket (name) VALUES ('kept')`, `CALL iasql_commit()`)

			// A running sidecar: refused, in one line naming how to stop it.
			r := testkit.Run(t, 30*time.Second, "uninstall", "--dsn", dsn, "--module-tables", "--roles")
			if r.Code != 1 || !strings.Contains(r.Stderr, "a sidecar is running on database app") || !strings.Contains(r.Stderr, "stop every 'iasql run'") ||
				strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
				t.Errorf("uninstall while the sidecar runs: exit %d, %q", r.Code, r.Stderr)
			}
			testkit.WaitQuery(t, db, time.Minute, "iasql still installed", `SELECT to_regclass('public.bucket') IS NOT NULL AND to_regproc('public.iasql_version') IS NOT NULL`)
			if tc.uninstallModule {
				mustExec(t, db, `SELECT * FROM iasql_uninstall('aws_s3')`)
			}
			_ = run.Stop(time.Minute)
			testkit.WaitQuery(t, db, time.Minute, "the sidecar's sessions ended", `SELECT NOT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() AND application_name LIKE 'iasql %')
				AND NOT EXISTS (SELECT 1 FROM pg_replication_slots WHERE active)`)
			installed := catalogOf(t, dsn)
			// What the module left: kept by each way that keeps module tables.
			var module []string
			for _, o := range installed {
				if !slices.Contains(before, o) && !strings.Contains(o, "iasql") {
					module = append(module, o)
				}
			}

			if tc.byHand != "" {
				mustExec(t, db, tc.byHand)
				got := catalogOf(t, dsn)
				for _, o := range got {
					if strings.Contains(o, "iasql") && !slices.Contains(tc.afterHand, o) && !strings.HasPrefix(o, "role iasql_") && !slices.Contains(before, o) && !sidecarGrants(o) {
						t.Errorf("%s left %s, which the README does not say", tc.byHand, o)
					}
				}
				for _, o := range tc.afterHand {
					if !slices.Contains(got, o) {
						t.Errorf("%s did not leave %s, which the README says it leaves", tc.byHand, o)
					}
				}
			}
			if slices.Contains(tc.args, "--roles") {
				// Another database using the roles: --roles is refused.
				pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE other")
				if r := testkit.Run(t, 30*time.Second, "install", "--dsn", c.DSN("other")); r.Code != 0 {
					t.Fatalf("install in another database: exit %d: %s", r.Code, r.Stderr)
				}
				r := testkit.Run(t, 30*time.Second, append([]string{"uninstall", "--dsn", dsn}, tc.args...)...)
				if r.Code != 1 || !strings.Contains(r.Stderr, "are still used in other") || strings.Count(strings.TrimSpace(r.Stderr), "\n") != 0 {
					t.Errorf("uninstall --roles while another database uses them: exit %d, %q", r.Code, r.Stderr)
				}
				if r := testkit.Run(t, 30*time.Second, "uninstall", "--dsn", c.DSN("other")); r.Code != 0 {
					t.Fatalf("uninstall in the other database: exit %d: %s", r.Code, r.Stderr)
				}
				pgtest.Exec(t, c.DSN("postgres"), "DROP DATABASE other")
			}
			r = testkit.Run(t, 30*time.Second, append([]string{"uninstall", "--dsn", dsn}, tc.args...)...)
			if r.Code != 0 || !strings.HasPrefix(r.Stdout, "uninstalled iasql from database app") {
				t.Fatalf("uninstall %v: exit %d, %s %s", tc.args, r.Code, r.Stdout, r.Stderr)
			}
			want := slices.Clone(before)
			if tc.keepsModuleTables {
				want = append(want, module...)
			}
			if tc.keepsRoles {
				want = append(want, "role iasql_admin", "role iasql_reader", "role iasql_writer")
			}
			if tc.byHand != "" {
				// DROP EXTENSION leaves the sidecar role's grants on the
				// database and schema public (README), and uninstall no
				// longer knows the role.
				want = slices.DeleteFunc(want, sidecarGrants)
				for _, o := range installed {
					if sidecarGrants(o) {
						want = append(want, o)
					}
				}
			}
			slices.Sort(want)
			got := catalogOf(t, dsn)
			for _, o := range got {
				if !slices.Contains(want, o) {
					t.Errorf("after uninstall %v the database holds %s", tc.args, o)
				}
			}
			for _, o := range want {
				if !slices.Contains(got, o) {
					t.Errorf("after uninstall %v the database lacks %s", tc.args, o)
				}
			}
			if tc.keepsModuleTables {
				// The kept table works on its own: its row, and writes.
				mustExec(t, db, `UPDATE bucket SET versioning = true WHERE name = 'kept'`)
				var n int
				if err := db.QueryRow(context.Background(), `SELECT count(*) FROM bucket WHERE name = 'kept'`).Scan(&n); err != nil || n != 1 {
					t.Errorf("the kept bucket table has %d rows named kept (%v)", n, err)
				}
			}
			// Nothing left to do: a second uninstall says so.
			if r := testkit.Run(t, 30*time.Second, append([]string{"uninstall", "--dsn", dsn}, tc.args...)...); r.Code != 0 || r.Stdout != "nothing of iasql is in database app\n" {
				t.Errorf("a second uninstall: exit %d, %q %s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}

// sidecarGrants: the privileges on the database and on schema public.
func sidecarGrants(o string) bool {
	return strings.HasPrefix(o, "schema public ") || strings.HasPrefix(o, "database app ")
}

// catalogOf lists the objects of a database that iasql could have made or
// changed, one "kind name" string each, sorted. Privileges are compared as
// they apply: no ACL is the owner's default, as a REVOKE that restores the
// default writes it out.
func catalogOf(t *testing.T, dsn string) []string {
	t.Helper()
	conn := pgtest.Connect(t, dsn)
	rows, err := conn.Query(context.Background(), `
		SELECT 'relation ' || n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND n.nspname NOT LIKE 'pg\_temp%'
		UNION ALL SELECT 'routine ' || p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')
		UNION ALL SELECT 'type ' || t.oid::regtype::text FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
		 WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_toast%' AND t.typrelid = 0 AND t.typelem = 0
		UNION ALL SELECT 'schema ' || nspname || ' ' || coalesce(nspacl, acldefault('n', nspowner))::text FROM pg_namespace WHERE nspname NOT LIKE 'pg\_%' AND nspname <> 'information_schema'
		UNION ALL SELECT 'extension ' || extname FROM pg_extension
		UNION ALL SELECT 'trigger ' || tgrelid::regclass::text || '.' || tgname FROM pg_trigger WHERE NOT tgisinternal
		UNION ALL SELECT 'publication ' || pubname FROM pg_publication
		UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots
		UNION ALL SELECT 'event trigger ' || evtname FROM pg_event_trigger
		UNION ALL SELECT 'database ' || datname || ' ' || coalesce(datacl, acldefault('d', datdba))::text FROM pg_database WHERE datname = current_database()
		UNION ALL SELECT 'role ' || rolname FROM pg_roles WHERE rolname NOT LIKE 'pg\_%'
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
