package sql_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	iasqlsql "github.com/iasql/iasql/sql"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// installLockKey is the advisory lock (one bigint key) first installs take.
const installLockKey = iasqlsql.InstallLockKey

// The generated scripts in extension/ must be what sql/ generates now.
func TestExtensionFilesCurrent(t *testing.T) {
	want := iasqlsql.ExtensionFiles()
	if _, ok := want["iasql--"+iasqlsql.Version+".sql"]; !ok {
		t.Fatalf("ExtensionFiles() lacks the install script iasql--%s.sql", iasqlsql.Version)
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		got, err := os.ReadFile(filepath.Join("..", "extension", name))
		if err != nil {
			t.Errorf("extension/%s is missing: run make extension (%v)", name, err)
			continue
		}
		if string(got) != want[name] {
			t.Errorf("extension/%s is stale (differs from sql/): run make extension", name)
		}
	}
	present, _ := filepath.Glob(filepath.Join("..", "extension", "iasql--*.sql"))
	for _, p := range present {
		if _, ok := want[filepath.Base(p)]; !ok {
			t.Errorf("extension/%s is not generated from sql/ (no sql/upgrades file): remove it, or add its source and run make extension", filepath.Base(p))
		}
	}
	control, err := os.ReadFile(filepath.Join("..", "extension", "iasql.control"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^default_version\s*=\s*'([^']*)'`).FindSubmatch(control)
	if m == nil || string(m[1]) != iasqlsql.Version {
		t.Errorf("extension/iasql.control: default_version is not '%s' (sql.Version)", iasqlsql.Version)
	}
}

// fakeVersion makes a plain install claim another version.
func fakeVersion(v string) string {
	return `CREATE OR REPLACE FUNCTION public.iasql_version() RETURNS text LANGUAGE sql IMMUTABLE AS $$ SELECT '` + v + `'::text $$`
}

func ensure(prefer bool) func(context.Context, *pgx.Conn) (string, error) {
	return func(ctx context.Context, conn *pgx.Conn) (string, error) { return iasqlsql.Ensure(ctx, conn, prefer) }
}

var (
	installed = "installed iasql " + iasqlsql.Version
	created   = "created extension iasql " + iasqlsql.Version
)

func TestInstall(t *testing.T) {
	plain := iasqlsql.Installed{Version: iasqlsql.Version}
	ext := iasqlsql.Installed{Version: iasqlsql.Version, Extension: true}
	cases := []struct {
		name       string
		needsExt   bool     // the server must offer the extension
		setup      []string // run on the fresh database first
		plainFirst bool     // InstallPlain before setup
		do         func(context.Context, *pgx.Conn) (string, error)
		wantDid    string
		wantErr    string // substring of the error; "" for success
		wantIs     error
		want       iasqlsql.Installed // what Detect reports afterwards
	}{
		{name: "plain install on an empty database", do: iasqlsql.InstallPlain, wantDid: installed, want: plain},
		{name: "plain install again does nothing", plainFirst: true, do: iasqlsql.InstallPlain, wantDid: "", want: plain},
		{name: "ensure creates the extension when available", needsExt: true, do: ensure(true), wantDid: created, want: ext},
		{name: "ensure without extension installs plain", do: ensure(false), wantDid: installed, want: plain},
		{name: "ensure keeps a current plain install", plainFirst: true, do: ensure(true), wantDid: "", want: plain},
		{name: "ensure keeps a current extension", needsExt: true, setup: []string{"CREATE EXTENSION iasql"}, do: ensure(true), wantDid: "", want: ext},
		{name: "plain install refuses the extension", needsExt: true, setup: []string{"CREATE EXTENSION iasql"},
			do: iasqlsql.InstallPlain, wantErr: "ALTER EXTENSION", want: ext},
		{name: "ensure refuses newer objects", plainFirst: true, setup: []string{fakeVersion("9.0.0")},
			do: ensure(true), wantIs: iasqlsql.ErrNewer, wantErr: "9.0.0", want: iasqlsql.Installed{Version: "9.0.0"}},
		{name: "plain install refuses newer objects", plainFirst: true, setup: []string{fakeVersion("9.0.0")},
			do: iasqlsql.InstallPlain, wantIs: iasqlsql.ErrNewer, wantErr: "9.0.0", want: iasqlsql.Installed{Version: "9.0.0"}},
		{name: "no upgrade path from an unknown older version", plainFirst: true, setup: []string{fakeVersion("0.0.1")},
			do: ensure(true), wantErr: "no upgrade path from iasql 0.0.1", want: iasqlsql.Installed{Version: "0.0.1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn := srv.NewDB(t)
			conn := pgtest.Connect(t, dsn)
			available := requireAvailable(ctx, t, conn, tc.needsExt)
			if tc.plainFirst {
				if did, err := iasqlsql.InstallPlain(ctx, conn); err != nil || did != installed {
					t.Fatalf("first InstallPlain: %q, %v", did, err)
				}
			}
			pgtest.Exec(t, dsn, tc.setup...)

			did, err := tc.do(ctx, conn)
			switch {
			case tc.wantErr == "" && tc.wantIs == nil:
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				if did != tc.wantDid {
					t.Errorf("did = %q, want %q", did, tc.wantDid)
				}
			default:
				if err == nil {
					t.Fatalf("no error (did %q), want one mentioning %q", did, tc.wantErr)
				}
				if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
					t.Errorf("error %v is not %v", err, tc.wantIs)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not mention %q", err, tc.wantErr)
				}
				if did != "" {
					t.Errorf("did = %q after an error", did)
				}
			}

			in, err := iasqlsql.Detect(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if in.Version != tc.want.Version || in.Extension != tc.want.Extension || in.Available != available {
				t.Errorf("Detect = %+v, want version %q extension %v available %v", in, tc.want.Version, tc.want.Extension, available)
			}
			checkObjectsOnce(ctx, t, conn)
		})
	}
}

// requireAvailable reports whether the server offers the extension, failing
// when the case needs it.
func requireAvailable(ctx context.Context, t *testing.T, conn *pgx.Conn, need bool) bool {
	t.Helper()
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		t.Fatal(err)
	}
	if need && !in.Available {
		t.Fatalf("the server does not offer extension iasql %s: run 'make extension-install' first", iasqlsql.Version)
	}
	return in.Available
}

// checkObjectsOnce checks that the main objects exist, once, and that the
// installed functions work.
func checkObjectsOnce(ctx context.Context, t *testing.T, conn *pgx.Conn) {
	t.Helper()
	var tables, funcs, exts int
	err := conn.QueryRow(ctx, `
		SELECT (SELECT count(*) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
		         WHERE n.nspname = 'public' AND c.relkind = 'r'
		           AND c.relname IN ('iasql_tables', 'iasql_audit_log', 'iasql_capture_progress')),
		       (SELECT count(*) FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		         WHERE n.nspname = 'public' AND p.proname = 'iasql_version'),
		       (SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'iasql')`).Scan(&tables, &funcs, &exts)
	if err != nil {
		t.Fatal(err)
	}
	if tables != 3 || funcs != 1 || exts > 1 {
		t.Errorf("objects: %d tables (want 3), %d iasql_version functions (want 1), %d extensions", tables, funcs, exts)
	}
}

// A role that owns its database but is no superuser can install.
func TestInstallAsDatabaseOwner(t *testing.T) {
	cases := []struct {
		name     string
		needsExt bool
		do       func(context.Context, *pgx.Conn) (string, error)
		wantDid  string
		wantExt  bool
	}{
		{name: "plain", do: iasqlsql.InstallPlain, wantDid: installed},
		{name: "ensure without extension", do: ensure(false), wantDid: installed},
		{name: "ensure with extension", needsExt: true, do: ensure(true), wantDid: created, wantExt: true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			role := fmt.Sprintf("iasql_test_owner_%d_%d", os.Getpid(), i)
			const password = "iasql-test"
			pgtest.Exec(t, srv.AdminDSN(), `CREATE ROLE `+role+` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '`+password+`'`)
			// Cleanups run last-in first-out: the database goes before its owner.
			t.Cleanup(func() {
				c, err := pgx.Connect(context.Background(), srv.AdminDSN())
				if err == nil {
					_, _ = c.Exec(context.Background(), `DROP ROLE IF EXISTS `+role)
					c.Close(context.Background())
				}
			})
			dsn := srv.NewDB(t)
			cfg, err := pgx.ParseConfig(dsn)
			if err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, dsn, `ALTER DATABASE `+cfg.Database+` OWNER TO `+role)
			cfg.User, cfg.Password = role, password
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatalf("connect as %s: %v", role, err)
			}
			defer conn.Close(context.Background())
			requireAvailable(ctx, t, conn, tc.needsExt)

			did, err := tc.do(ctx, conn)
			if err != nil {
				t.Fatalf("install as database owner: %v", err)
			}
			if did != tc.wantDid {
				t.Errorf("did = %q, want %q", did, tc.wantDid)
			}
			in, err := iasqlsql.Detect(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			if in.Version != iasqlsql.Version || in.Extension != tc.wantExt {
				t.Errorf("Detect = %+v, want version %s extension %v", in, iasqlsql.Version, tc.wantExt)
			}
			// The owner can use what it installed: register a table (which
			// creates the publication) and, holding the capture lock, write
			// the audit trail.
			for _, q := range []string{
				`CREATE TABLE items (id int PRIMARY KEY, name text)`,
				`INSERT INTO iasql_tables (table_name) VALUES ('items')`,
				`SELECT iasql_take_lock(1)`,
				`INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', 'user')`,
				`SELECT iasql_release_locks()`,
			} {
				if _, err := conn.Exec(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			var published bool
			if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_publication_tables WHERE pubname = 'iasql' AND tablename = 'items')`).Scan(&published); err != nil {
				t.Fatal(err)
			}
			if !published {
				t.Error("the registered table is not in the publication")
			}
		})
	}
}

// Two installers racing (two sidecars starting) both succeed; one installs.
func TestConcurrentInstall(t *testing.T) {
	cases := []struct {
		name     string
		needsExt bool
		do       func(context.Context, *pgx.Conn) (string, error)
		wantDid  string
	}{
		{name: "plain", do: iasqlsql.InstallPlain, wantDid: installed},
		{name: "ensure without extension", do: ensure(false), wantDid: installed},
		{name: "ensure with extension", needsExt: true, do: ensure(true), wantDid: created},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dsn := srv.NewDB(t)
			conns := []*pgx.Conn{pgtest.Connect(t, dsn), pgtest.Connect(t, dsn)}
			requireAvailable(ctx, t, conns[0], tc.needsExt)

			// Hold the install lock so that both installers are waiting on
			// it before either proceeds.
			holder := pgtest.Connect(t, dsn)
			tx, err := holder.Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, installLockKey); err != nil {
				t.Fatal(err)
			}
			dids := make([]string, 2)
			errs := make([]error, 2)
			var wg sync.WaitGroup
			for i := range conns {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					dids[i], errs[i] = tc.do(ctx, conns[i])
				}(i)
			}
			waitForWaiters(ctx, t, holder, 2)
			if err := tx.Rollback(ctx); err != nil {
				t.Fatal(err)
			}
			wg.Wait()

			for i, err := range errs {
				if err != nil {
					t.Fatalf("installer %d: %v", i, err)
				}
			}
			got := []string{dids[0], dids[1]}
			sort.Strings(got)
			if got[0] != "" || got[1] != tc.wantDid {
				t.Errorf("installers did %q, want one %q and one nothing", dids, tc.wantDid)
			}
			checkObjectsOnce(ctx, t, conns[0])
			if v, err := iasqlsql.Detect(ctx, conns[1]); err != nil || v.Version != iasqlsql.Version {
				t.Errorf("Detect = %+v, %v", v, err)
			}
		})
	}
}

// waitForWaiters waits until n sessions wait for the install lock.
func waitForWaiters(ctx context.Context, t *testing.T, conn *pgx.Conn, n int) {
	t.Helper()
	testkit.Wait(t, time.Minute, fmt.Sprintf("%d installers to wait for the install lock", n), func() error {
		var waiting int
		err := conn.QueryRow(ctx, `
			SELECT count(*) FROM pg_catalog.pg_locks
			 WHERE locktype = 'advisory' AND NOT granted AND classid = 0 AND objid = $1 AND objsubid = 1
			   AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())`,
			installLockKey).Scan(&waiting)
		if err != nil {
			t.Fatal(err)
		}
		if waiting < n {
			return fmt.Errorf("%d waiting", waiting)
		}
		return nil
	})
}

// schemaQuery lists iasql's objects in public by name, with definitions,
// grants and comments, so that two installs can be compared.
const schemaQuery = `
WITH rels AS (
  SELECT c.oid, c.relname, c.relkind, c.relreplident, c.relacl FROM pg_class c
   WHERE c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'iasql\_%'
), procs AS (
  SELECT p.oid FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'iasql\_%'
)
SELECT 'relation', r.relname, r.relkind::text || ' ' || r.relreplident::text || ' ' || coalesce(r.relacl::text, '') FROM rels r
UNION ALL
SELECT 'function', p.oid::regprocedure::text, pg_get_functiondef(p.oid) || coalesce(pr.proacl::text, '')
  FROM procs p JOIN pg_proc pr ON pr.oid = p.oid
UNION ALL
SELECT 'column', r.relname || '.' || a.attname, a.attnum || ' ' || format_type(a.atttypid, a.atttypmod) || ' '
       || a.attnotnull || ' ' || a.attidentity::text || ' ' || coalesce(pg_get_expr(d.adbin, d.adrelid), '')
  FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
UNION ALL
SELECT 'constraint', r.relname || '.' || co.conname, pg_get_constraintdef(co.oid)
  FROM rels r JOIN pg_constraint co ON co.conrelid = r.oid
UNION ALL
SELECT 'index', r.relname, pg_get_indexdef(r.oid) FROM rels r WHERE r.relkind = 'i'
UNION ALL
SELECT 'trigger', r.relname || '.' || tg.tgname, pg_get_triggerdef(tg.oid)
  FROM rels r JOIN pg_trigger tg ON tg.tgrelid = r.oid AND NOT tg.tgisinternal
UNION ALL
SELECT 'comment', pg_describe_object(d.classoid, d.objoid, d.objsubid), d.description
  FROM pg_description d
 WHERE (d.classoid = 'pg_class'::regclass AND d.objoid IN (SELECT oid FROM rels))
    OR (d.classoid = 'pg_proc'::regclass AND d.objoid IN (SELECT oid FROM procs))
    OR (d.classoid = 'pg_trigger'::regclass AND d.objoid IN (SELECT t.oid FROM pg_trigger t JOIN rels r ON t.tgrelid = r.oid))
    OR (d.classoid = 'pg_constraint'::regclass AND d.objoid IN (SELECT c.oid FROM pg_constraint c JOIN rels r ON c.conrelid = r.oid))
ORDER BY 1, 2, 3`

func schema(ctx context.Context, t *testing.T, conn *pgx.Conn) []string {
	t.Helper()
	rows, err := conn.Query(ctx, schemaQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var kind, name, def string
		if err := rows.Scan(&kind, &name, &def); err != nil {
			t.Fatal(err)
		}
		out = append(out, kind+" "+name+": "+def)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// A plain install holds the same objects as the extension.
func TestPlainMatchesExtension(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plainConn := pgtest.Connect(t, srv.NewDB(t))
	extConn := pgtest.Connect(t, srv.NewDB(t))
	requireAvailable(ctx, t, extConn, true)
	if _, err := iasqlsql.InstallPlain(ctx, plainConn); err != nil {
		t.Fatal(err)
	}
	if _, err := extConn.Exec(ctx, `CREATE EXTENSION iasql`); err != nil {
		t.Fatal(err)
	}
	plain, ext := schema(ctx, t, plainConn), schema(ctx, t, extConn)
	if len(plain) < 50 {
		t.Fatalf("schema query found only %d rows: %q", len(plain), plain)
	}
	inExt := map[string]bool{}
	for _, s := range ext {
		inExt[s] = true
	}
	inPlain := map[string]bool{}
	for _, s := range plain {
		inPlain[s] = true
		if !inExt[s] {
			t.Errorf("only in the plain install: %s", s)
		}
	}
	for _, s := range ext {
		if !inPlain[s] {
			t.Errorf("only in the extension: %s", s)
		}
	}
}
