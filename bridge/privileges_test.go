package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
	iasqlsql "github.com/iasql/iasql/sql"
)

// asRole is dsn with its user replaced (the test cluster trusts local
// connections, so no password is needed).
func asRole(t *testing.T, dsn, role string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		t.Fatalf("test DSN %q is not a URL", dsn)
	}
	u.User = url.User(role)
	return u.String()
}

// recipe is the README's "Roles and grants": an administrator (superuser)
// installs iasql and names the sidecar's role; the sidecar runs as a role
// with REPLICATION and nothing else; an application role is a member of
// iasql_writer, a reporting role of iasql_reader; another role has nothing.
type recipe struct {
	dsn                           string // as the administrator
	admin, app, reader, nobody    *pgx.Conn
	sidecarRole, appRole, nothing string
	log                           *testkit.Log
	env                           *enginetest.Env
}

// opts change the sidecar's options.
func newRecipe(t *testing.T, opts ...func(*enginetest.Options)) *recipe {
	t.Helper()
	dsn := srv.NewDB(t)
	u, _ := url.Parse(dsn)
	p := strings.TrimPrefix(u.Path, "/") // unique per test: roles are cluster-wide
	r := &recipe{dsn: dsn, sidecarRole: p + "_sidecar", appRole: p + "_app", nothing: p + "_nobody", log: &testkit.Log{}}
	ctx := context.Background()
	pgtest.Exec(t, dsn, fmt.Sprintf(`CREATE ROLE %s LOGIN REPLICATION`, r.sidecarRole))
	admin := pgtest.Connect(t, dsn)
	if _, err := iasqlsql.InstallPlain(ctx, admin); err != nil {
		t.Fatal(err)
	}
	var said string
	if err := admin.QueryRow(ctx, `SELECT iasql_grant_sidecar($1)`, r.sidecarRole).Scan(&said); err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, dsn,
		fmt.Sprintf(`CREATE ROLE %s LOGIN IN ROLE iasql_writer`, r.appRole),
		fmt.Sprintf(`CREATE ROLE %s_reader LOGIN IN ROLE iasql_reader`, p),
		fmt.Sprintf(`CREATE ROLE %s LOGIN`, r.nothing))
	opt := enginetest.Options{DSN: asRole(t, dsn, r.sidecarRole),
		Modules: []module.Module{aws_s3.Module()},
		Logger:  slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelInfo}))}
	for _, o := range opts {
		o(&opt)
	}
	r.env = enginetest.New(t, srv, opt)
	r.admin = admin
	r.app = pgtest.Connect(t, asRole(t, dsn, r.appRole))
	r.reader = pgtest.Connect(t, asRole(t, dsn, p+"_reader"))
	r.nobody = pgtest.Connect(t, asRole(t, dsn, r.nothing))
	if _, err := admin.Exec(ctx, `SELECT * FROM iasql_install('aws_s3')`); err != nil {
		t.Fatalf("the administrator installs aws_s3: %v", err)
	}
	return r
}

func execAs(t *testing.T, c *pgx.Conn, sqls ...string) {
	t.Helper()
	for _, q := range sqls {
		if _, err := c.Exec(context.Background(), q); err != nil {
			t.Fatalf("as %s: %s: %v", c.Config().User, q, err)
		}
	}
}

// refused runs q on c and returns the error's message (one line), failing
// the test when q succeeds.
func refused(t *testing.T, c *pgx.Conn, q string) string {
	t.Helper()
	_, err := c.Exec(context.Background(), q)
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		t.Fatalf("as %s: %s: want an error from PostgreSQL, got %v", c.Config().User, q, err)
	}
	if strings.Contains(pg.Message, "\n") {
		t.Errorf("as %s: %s: the error is not one line: %q", c.Config().User, q, pg.Message)
	}
	return pg.Message
}

func count(t *testing.T, c *pgx.Conn, q string) int {
	t.Helper()
	var n int
	if err := c.QueryRow(context.Background(), q).Scan(&n); err != nil {
		t.Fatalf("as %s: %s: %v", c.Config().User, q, err)
	}
	return n
}

// TestRolesRecipe follows the README's least-privilege setup: the sidecar
// runs without superuser; the application inserts, commits and sees the
// cloud's answer; a reader reads but may not write or commit; a role with
// nothing is refused every procedure with one line naming the role it
// lacks; after an uninstall and install, the application still may write.
func TestRolesRecipe(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	var super bool
	if err := r.env.DB.QueryRow(context.Background(), `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`).Scan(&super); err != nil || super {
		t.Fatalf("the sidecar's session is a superuser (%v) or cannot say (%v)", super, err)
	}

	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('recipe-app')`, `CALL iasql_commit()`, `SELECT iasql_wait_for_all(30)`)
	if n := count(t, r.app, `SELECT count(*) FROM bucket WHERE name = 'recipe-app' AND created_at IS NOT NULL`); n != 1 {
		t.Fatal("the application's bucket has no created_at after its commit")
	}
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_transaction`); n != 0 {
		t.Fatal("an iasql transaction is open")
	}
	execAs(t, r.app, `CALL iasql_begin()`)
	if got := r.env.String(`SELECT opened_by FROM iasql_transaction`); got != r.appRole {
		t.Errorf("iasql_transaction.opened_by = %q, want the application's role %s (the sender's session user)", got, r.appRole)
	}
	execAs(t, r.app, `CALL iasql_rollback()`)

	// The reader reads module tables, the audit trail and the status, and
	// may preview; it may not write or commit.
	if n := count(t, r.reader, `SELECT count(*) FROM bucket`); n != 1 {
		t.Errorf("the reader sees %d buckets, want 1", n)
	}
	count(t, r.reader, `SELECT count(*) FROM iasql_audit_log`)
	count(t, r.reader, `SELECT count(*) FROM iasql_status`)
	count(t, r.reader, `SELECT count(*) FROM iasql_preview()`)
	if msg := refused(t, r.reader, `INSERT INTO bucket (name) VALUES ('recipe-reader')`); !strings.Contains(msg, "permission denied for table bucket") {
		t.Errorf("reader's insert: %s", msg)
	}
	reader := r.reader.Config().User
	if msg := refused(t, r.reader, `CALL iasql_commit()`); msg != "permission denied for iasql commit: role "+reader+" is not a member of iasql_writer" {
		t.Errorf("reader's commit: %s", msg)
	}

	// A role with nothing: one line naming the role it lacks.
	for q, want := range map[string]string{
		`SELECT * FROM iasql_uninstall('aws_s3')`: "iasql uninstall: role " + r.nothing + " is not a member of iasql_admin",
		`SELECT * FROM iasql_install('aws_s3')`:   "iasql install: role " + r.nothing + " is not a member of iasql_admin",
		`CALL iasql_begin()`:                      "iasql begin: role " + r.nothing + " is not a member of iasql_writer",
		`CALL iasql_rollback()`:                   "iasql rollback: role " + r.nothing + " is not a member of iasql_writer",
		`CALL iasql_commit()`:                     "iasql commit: role " + r.nothing + " is not a member of iasql_writer",
		`SELECT * FROM iasql_preview()`:           "iasql preview: role " + r.nothing + " is not a member of iasql_reader",
	} {
		if msg := refused(t, r.nobody, q); msg != "permission denied for "+want {
			t.Errorf("%s as a role with nothing: %q", q, msg)
		}
	}
	if msg := refused(t, r.nobody, `SELECT count(*) FROM iasql_audit_log`); !strings.Contains(msg, "permission denied") {
		t.Errorf("a role with nothing reads the audit trail: %s", msg)
	}

	// A member of iasql_admin (not a superuser) writes modes, uninstalls
	// and installs; the module's new tables get the roles' grants.
	if msg := refused(t, r.app, `INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'TRACK')`); !strings.Contains(msg, "permission denied for table iasql_mode") {
		t.Errorf("the application writes a mode rule: %s", msg)
	}
	dba := r.appRole + "_dba"
	execAs(t, r.admin, fmt.Sprintf(`CREATE ROLE %s LOGIN IN ROLE iasql_admin`, dba))
	admin := pgtest.Connect(t, asRole(t, r.dsn, dba))
	execAs(t, admin, `INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'ENFORCE')`, `DELETE FROM iasql_mode`,
		`SELECT * FROM iasql_uninstall('aws_s3')`, `SELECT * FROM iasql_install('aws_s3')`)
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('recipe-after')`, `CALL iasql_commit()`)
	if n := count(t, r.reader, `SELECT count(*) FROM bucket WHERE created_at IS NOT NULL`); n != 2 {
		t.Errorf("after uninstall and install the reader sees %d synced buckets, want 2", n)
	}
}

// TestRequestsCannotBeForged: a request is carried out only for the
// session that sent it, as that session's role. A message naming another
// session (which holds no lock for it) is dropped; a well-made request of a
// role that lacks the right is refused with one line; a message larger
// than the limit is dropped.
func TestRequestsCannotBeForged(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	var adminPID int32
	if err := r.admin.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&adminPID); err != nil {
		t.Fatal(err)
	}
	// The SQL side computes the sender's lock as the sidecar does
	// (sha256(`{"id": "x"}`)[:8], as in the internal TestSenderLock).
	var key int64
	if err := r.admin.QueryRow(ctx, `SELECT iasql_request_key(convert_to('{"id": "x"}', 'UTF8'))`).Scan(&key); err != nil {
		t.Fatal(err)
	}
	hi, lo := uint64(2839663100), uint64(3315468857)
	if want := int64(hi<<32 | lo); key != want {
		t.Errorf("iasql_request_key = %d, want %d", key, want)
	}

	// In the administrator's name: dropped, nothing uninstalled.
	forged := fmt.Sprintf(`{"id": "00000000-0000-4000-8000-000000000001", "kind": "uninstall", "args": {"modules": ["aws_s3"]}, "pid": %d, "role": "postgres"}`, adminPID)
	if _, err := r.nobody.Exec(ctx, `SELECT pg_logical_emit_message(false, 'iasql_request', $1::text)`, forged); err != nil {
		t.Fatalf("emit a forged request: %v", err)
	}
	testkit.Until(t, 10*time.Second, "the sidecar to drop the forged request", func() bool {
		return strings.Contains(r.log.String(), "ignoring a request whose sender cannot be verified") && strings.Contains(r.log.String(), "00000000-0000-4000-8000-000000000001")
	})
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_requests WHERE id = '00000000-0000-4000-8000-000000000001'`); n != 0 {
		t.Error("the forged request was recorded")
	}
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_modules_list() WHERE module = 'aws_s3' AND installed`); n != 1 {
		t.Fatal("a forged request uninstalled aws_s3")
	}

	// Well made, by a role without the right (bypassing iasql_request's own
	// check): refused by the sidecar, naming the role.
	tx, err := r.nobody.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `DO $$
		DECLARE m bytea := convert_to(jsonb_build_object('id', '00000000-0000-4000-8000-000000000002', 'kind', 'uninstall',
		  'args', jsonb_build_object('modules', jsonb_build_array('aws_s3')), 'pid', pg_backend_pid())::text, 'UTF8');
		BEGIN
		  PERFORM pg_advisory_xact_lock(iasql_request_key(m));
		  PERFORM pg_logical_emit_message(false, 'iasql_request', m);
		END $$`); err != nil {
		t.Fatalf("send a request by hand: %v", err)
	}
	// Refused requests are counted, not stored (a flood of them must cost
	// nothing): the count names the role, the message and the request.
	testkit.Until(t, 10*time.Second, "the sidecar to refuse the request", func() bool {
		var n int
		_ = r.admin.QueryRow(ctx, `SELECT count(*) FROM iasql_request_refusals WHERE '00000000-0000-4000-8000-000000000002' = ANY (recent)`).Scan(&n)
		return n == 1
	})
	var by, msg string
	if err := r.admin.QueryRow(ctx, `SELECT role_name, message FROM iasql_request_refusals WHERE '00000000-0000-4000-8000-000000000002' = ANY (recent)`).Scan(&by, &msg); err != nil {
		t.Fatal(err)
	}
	if by != r.nothing || !strings.HasPrefix(msg, "permission denied for iasql uninstall: role "+r.nothing+" is not a member of iasql_admin") {
		t.Errorf("refused request: by %q, error %q", by, msg)
	}
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_requests WHERE id = '00000000-0000-4000-8000-000000000002'`); n != 0 {
		t.Errorf("a refused request was stored in iasql_requests (%d row)", n)
	}
	_ = tx.Rollback(ctx)
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_modules_list() WHERE module = 'aws_s3' AND installed`); n != 1 {
		t.Fatal("a role without iasql_admin uninstalled aws_s3")
	}

	// Too large: iasql_request refuses it before sending; the sidecar
	// drops a larger message sent by hand.
	big := strings.Repeat("m", 70000)
	if msg := refused(t, r.admin, `SELECT * FROM iasql_install('`+big+`')`); !strings.Contains(msg, "request is too large") {
		t.Errorf("a large request: %s", msg)
	}
	if _, err := r.nobody.Exec(ctx, `SELECT pg_logical_emit_message(false, 'iasql_request', $1::text)`, `{"id": "00000000-0000-4000-8000-000000000003", "kind": "install", "args": {"modules": ["`+big+`"]}}`); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the sidecar to drop the large message", func() bool {
		return strings.Contains(r.log.String(), "ignoring a request larger than the limit")
	})
}

// TestGuardsNeedTheSidecarsRole: a role given every table privilege
// (GRANT ALL ON ALL TABLES IN SCHEMA public) can take none of the
// sidecar's locks, and holding the advisory locks that once were theirs,
// still may not write the engine's tables, call iasql_engine_mark, or pass
// off its change as the engine's with a marker of its own; the sidecar's
// role still works, and the other role's session is left alone.
func TestGuardsNeedTheSidecarsRole(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	execAs(t, r.admin, fmt.Sprintf(`GRANT ALL ON ALL TABLES IN SCHEMA public TO %s`, r.nothing),
		fmt.Sprintf(`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO %s`, r.nothing))
	squatter := pgtest.Connect(t, asRole(t, r.dsn, r.nothing))
	execAs(t, squatter, `SELECT pg_advisory_lock(1767994225, 2)`, `SELECT pg_advisory_lock(1767994225, 4)`)
	for q, want := range map[string]string{
		`SELECT iasql_take_lock(2)`:                                   "permission denied for schema iasql_private",
		`UPDATE iasql_lock_holders SET holder_pid = pg_backend_pid()`: "cannot update view",
	} {
		if msg := refused(t, squatter, q); !strings.Contains(msg, want) {
			t.Errorf("%s with every grant: %s", q, msg)
		}
	}
	for _, q := range []string{
		`INSERT INTO iasql_transaction (opened_by, opened_at, begin_lsn) VALUES ('x', now(), '0/0')`,
		`DELETE FROM iasql_audit_log`,
		`DELETE FROM iasql_requests`,
		`DELETE FROM iasql_records`,
		`DELETE FROM iasql_request_refusals`,
	} {
		if msg := refused(t, squatter, q); !strings.Contains(msg, "is written only by the iasql sidecar") {
			t.Errorf("%s with every grant and the old advisory locks: %s", q, msg)
		}
	}
	if msg := refused(t, r.nobody, `SELECT iasql_engine_mark('mine')`); !strings.Contains(msg, "permission denied for function iasql_engine_mark") {
		t.Errorf("iasql_engine_mark by another role: %s", msg)
	}
	if msg := refused(t, r.nobody, `SELECT mark_key FROM iasql_private.iasql_engine_key`); !strings.Contains(msg, "permission denied for schema iasql_private") {
		t.Errorf("another role reads the mark key: %s", msg)
	}
	if msg := refused(t, r.nobody, fmt.Sprintf(`UPDATE iasql_sidecar SET role_name = '%s'`, r.nothing)); !strings.Contains(msg, "iasql_sidecar is written only by its owner") {
		t.Errorf("another role names itself the sidecar's: %s", msg)
	}

	// A marker of its own does not make its change the engine's.
	tx, err := r.nobody.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT pg_logical_emit_message(true, 'iasql_engine', 'not the engine')`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bucket (name) VALUES ('guard-marked')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.Until(t, 10*time.Second, "the insert to be captured", func() bool {
		var n int
		_ = r.admin.QueryRow(ctx, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'guard-marked'`).Scan(&n)
		return n == 1
	})
	if got := r.env.String(`SELECT origin FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'guard-marked'`); got != "user" {
		t.Errorf("a change under a forged marker is recorded with origin %q, want user", got)
	}
	// The sidecar's own writes are still the engine's; nothing ended the
	// other role's session.
	execAs(t, r.app, `CALL iasql_commit()`)
	if err := squatter.Ping(ctx); err != nil {
		t.Errorf("the other role's session was ended: %v", err)
	}
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_audit_log a WHERE table_name = 'bucket' AND origin = 'engine' AND new_row->>'name' = 'guard-marked'
		AND EXISTS (SELECT 1 FROM iasql_audit_log c WHERE c.change_type = 'CYCLE_END' AND a.message = 'cycle ' || (c.message::jsonb->>'cycle'))`); n == 0 {
		t.Error("the engine's write-back (created_at) is not recorded as the engine's, with its message")
	}
}

// TestRunPreflightNamesMissingGrant: a REPLICATION role that is not the
// sidecar's, or lacks a grant, is refused by run's checks before anything
// is created (no slot).
func TestRunPreflightNamesMissingGrant(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	u, _ := url.Parse(dsn)
	role := strings.TrimPrefix(u.Path, "/") + "_repl"
	ctx := context.Background()
	admin := pgtest.Connect(t, dsn)
	if _, err := iasqlsql.InstallPlain(ctx, admin); err != nil {
		t.Fatal(err)
	}
	execAs(t, admin, fmt.Sprintf(`CREATE ROLE %s LOGIN REPLICATION`, role), fmt.Sprintf(`GRANT CREATE ON DATABASE %s TO %s`, u.Path[1:], role))
	run := func() error {
		c, err := pgx.Connect(ctx, asRole(t, dsn, role))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		_, err = sidecar.Prepare(ctx, c, "", slog.New(slog.NewTextHandler(io.Discard, nil)))
		return err
	}
	err := run()
	if err == nil || !strings.Contains(err.Error(), "role "+role+" is not the iasql sidecar's role") || !strings.Contains(err.Error(), "iasql install --sidecar-role "+role) {
		t.Errorf("run as a role that is not the sidecar's: %v", err)
	}
	execAs(t, admin, fmt.Sprintf(`SELECT iasql_grant_sidecar('%s')`, role), fmt.Sprintf(`REVOKE INSERT ON iasql_capture_progress FROM %s`, role))
	err = run()
	if err == nil || !strings.Contains(err.Error(), "lacks INSERT on iasql_capture_progress") {
		t.Errorf("run as a sidecar role without INSERT on iasql_capture_progress: %v", err)
	}
	if n := count(t, admin, `SELECT count(*) FROM pg_replication_slots WHERE database = current_database()`); n != 0 {
		t.Error("a refused run created a slot")
	}
	execAs(t, admin, fmt.Sprintf(`GRANT INSERT ON iasql_capture_progress TO %s`, role))
	if err := run(); err != nil {
		t.Errorf("run as the granted sidecar role: %v", err)
	}
}

// TestNoSearchPathHijack: a role with CREATE on the database makes a
// schema named after the sidecar's role holding a table named like a
// module's; the sidecar (search_path pg_catalog, public, and every name
// qualified) never touches it. No SECURITY DEFINER function lacks a fixed
// search_path.
func TestNoSearchPathHijack(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	u, _ := url.Parse(r.dsn)
	execAs(t, r.admin, fmt.Sprintf(`GRANT CREATE ON DATABASE %s TO %s`, strings.TrimPrefix(u.Path, "/"), r.nothing))
	schema := pgx.Identifier{r.sidecarRole}.Sanitize()
	execAs(t, r.nobody, `CREATE SCHEMA `+schema,
		`CREATE TABLE `+schema+`.bucket (id serial PRIMARY KEY, name text, region text, versioning boolean, created_at timestamptz)`,
		`GRANT USAGE ON SCHEMA `+schema+` TO PUBLIC`, `GRANT ALL ON `+schema+`.bucket TO PUBLIC`)
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('hijack-not')`, `CALL iasql_commit()`)
	if n := count(t, r.app, `SELECT count(*) FROM public.bucket WHERE name = 'hijack-not' AND created_at IS NOT NULL`); n != 1 {
		t.Error("the commit did not enact the application's bucket")
	}
	if n := count(t, r.admin, `SELECT count(*) FROM `+schema+`.bucket`); n != 0 {
		t.Errorf("the sidecar wrote %d rows into the look-alike table", n)
	}
	if n := count(t, r.admin, `SELECT count(*) FROM pg_proc p
		WHERE p.prosecdef AND p.pronamespace IN ('public'::regnamespace, 'iasql_private'::regnamespace)
		  AND NOT EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')`); n != 0 {
		t.Errorf("%d SECURITY DEFINER functions lack a fixed search_path", n)
	}
}

// TestSquattersCannotStall: a role without grants that holds every
// advisory lock key iasql ever used (the install key, each of the
// sidecar's, the subnet check's), in a session busy with a statement that
// sleeps (as any running statement, it has a virtualxid), makes no commit,
// install or sidecar start wait: each completes while the squatter still
// holds them all and sleeps, and nobody ends its session.
func TestSquattersCannotStall(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	squatter := pgtest.Connect(t, asRole(t, r.dsn, r.nothing))
	// Try-locks: none is held by the sidecar, which takes no advisory lock.
	execAs(t, squatter, `SELECT pg_try_advisory_lock(1767994225)`,
		`SELECT count(pg_try_advisory_lock(1767994225, k)) FROM generate_series(1, 5) k`,
		`SELECT count(pg_try_advisory_lock(hashtext('public.subnet cidr_block'), v)) FROM generate_series(1, 100) v`)
	var pid int32
	if err := squatter.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	held := func() int {
		return count(t, r.admin, fmt.Sprintf(`SELECT count(*) FROM pg_locks WHERE pid = %d AND locktype = 'advisory' AND granted`, pid))
	}
	if n := held(); n != 106 {
		t.Fatalf("the squatter holds %d advisory locks, want 106", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	slept := make(chan struct{}) // closed when the statement ends, with sleepErr
	var sleepErr error
	go func() {
		defer close(slept)
		_, sleepErr = squatter.Exec(ctx, `SELECT pg_try_advisory_xact_lock(1767994225, 3), pg_sleep(600)`)
	}()
	defer func() {
		cancel()
		<-slept
	}()
	testkit.Until(t, 10*time.Second, "the squatter's statement to run", func() bool {
		return count(t, r.admin, fmt.Sprintf(`SELECT count(*) FROM pg_locks WHERE pid = %d AND locktype = 'virtualxid'`, pid)) == 1
	})

	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('squatted-1')`, `CALL iasql_commit()`)
	execAs(t, r.admin, `SELECT * FROM iasql_uninstall('aws_s3')`, `SELECT * FROM iasql_install('aws_s3')`)
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('squatted-2')`, `CALL iasql_commit()`)
	r.env.Stop()
	r.env.StartSidecar(true)
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('squatted-3')`, `CALL iasql_commit()`)

	select {
	case <-slept:
		t.Fatalf("the squatter's statement ended: %v", sleepErr)
	default:
	}
	if n := held(); n != 106 {
		t.Errorf("the squatter holds %d advisory locks at the end, want 106", n)
	}
}

// TestWhoReadsWhat: iasql's state is read only with a grant. A role with
// nothing but LOGIN reads none of iasql's tables and views (the records'
// cloud ids, the operations, the requests and their answers, ...) but
// iasql_sidecar and iasql_tables, which repeat what pg_roles and
// pg_publication_tables show; the application (iasql_writer) commits,
// previews and waits as before, reads its own requests' answers
// (iasql_my_requests) and no one else's, not even through a function of
// its own in the WHERE clause; a reader reads what the README lists; a
// member of iasql_admin reads every request.
func TestWhoReadsWhat(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()

	// The administrator's preview names the application's bucket; the
	// application commits it.
	execAs(t, r.app, `CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('who-reads-secret')`)
	execAs(t, r.admin, `SELECT * FROM iasql_preview()`)
	if n := count(t, r.admin, `SELECT count(*) FROM iasql_requests WHERE kind = 'preview' AND requested_by = current_user AND result::text LIKE '%who-reads-secret%'`); n != 1 {
		t.Fatalf("the administrator's preview does not name the bucket (%d answers do)", n)
	}
	execAs(t, r.app, `CALL iasql_commit()`, `SELECT iasql_wait_for_all(30)`, `SELECT count(*) FROM iasql_preview()`)

	// A role with nothing: refused every relation of iasql's but two.
	open := map[string]bool{"iasql_sidecar": true, "iasql_tables": true}
	rows, err := r.admin.Query(ctx, `SELECT c.relname FROM pg_class c
		WHERE c.relnamespace IN ('public'::regnamespace, 'iasql_private'::regnamespace) AND c.relkind IN ('r', 'v', 'm', 'p')
		  AND (c.relname LIKE 'iasql\_%' OR c.relnamespace = 'iasql_private'::regnamespace) ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	rels, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"iasql_requests", "iasql_my_requests", "iasql_records", "iasql_operations", "iasql_status", "iasql_audit_log", "iasql_capture_progress", "iasql_unverified"} {
		if !slices.Contains(rels, want) {
			t.Errorf("%s is not among iasql's relations %v", want, rels)
		}
	}
	for _, rel := range rels {
		q := `SELECT count(*) FROM ` + pgx.Identifier{rel}.Sanitize()
		if open[rel] {
			continue
		}
		if rel == "iasql_engine_key" || rel == "iasql_locks" {
			q = `SELECT count(*) FROM iasql_private.` + pgx.Identifier{rel}.Sanitize()
		}
		if msg := refused(t, r.nobody, q); !strings.Contains(msg, "permission denied") {
			t.Errorf("a role with nothing reads %s: %s", rel, msg)
		}
	}
	if msg := refused(t, r.nobody, `SELECT iasql_wait_for_all(5)`); msg != "permission denied for iasql_wait_for_all: role "+r.nothing+" is not a member of iasql_reader" {
		t.Errorf("iasql_wait_for_all as a role with nothing: %s", msg)
	}
	// The answer is read as the current role: after SET ROLE to a role with
	// nothing, an administrator's session is refused the same way.
	su := pgtest.Connect(t, r.dsn)
	execAs(t, su, `SET ROLE `+r.nothing)
	if msg := refused(t, su, `CALL iasql_commit()`); msg != "permission denied for iasql commit: the current role "+r.nothing+" is not a member of iasql_reader, so it cannot read the answer" {
		t.Errorf("iasql_commit after SET ROLE to a role with nothing: %s", msg)
	}

	// The application: its own requests (begin, commit, preview) and their
	// answers, no one else's.
	if n := count(t, r.app, `SELECT count(*) FROM iasql_my_requests WHERE kind IN ('begin', 'commit', 'preview') AND status = 'done' AND requested_by = session_user`); n != 3 {
		t.Errorf("the application sees %d of its 3 answered requests", n)
	}
	if n := count(t, r.app, `SELECT count(*) FROM iasql_my_requests WHERE requested_by <> session_user`); n != 0 {
		t.Errorf("the application sees %d requests of others", n)
	}
	if msg := refused(t, r.app, `SELECT count(*) FROM iasql_requests`); !strings.Contains(msg, "permission denied for table iasql_requests") {
		t.Errorf("the application reads every request: %s", msg)
	}
	// A function of its own sees only the rows the view lets through
	// (security_barrier), whatever its cost.
	cfg, err := pgx.ParseConfig(asRole(t, r.dsn, r.appRole))
	if err != nil {
		t.Fatal(err)
	}
	var seen testkit.Log
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) { seen.Write([]byte(n.Message + "\n")) }
	leaky, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer leaky.Close(ctx)
	execAs(t, leaky, `CREATE FUNCTION pg_temp.peek(x text) RETURNS boolean LANGUAGE plpgsql COST 0.000001 AS $$ BEGIN RAISE NOTICE 'peek %', x; RETURN true; END $$`,
		`SELECT count(*) FROM iasql_my_requests WHERE pg_temp.peek(requested_by || ' ' || coalesce(result::text, ''))`)
	lines := strings.Split(strings.TrimSpace(seen.String()), "\n")
	if len(lines) < 3 {
		t.Errorf("the function saw %d of the application's requests, want its 3", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "peek "+r.appRole+" ") {
			t.Errorf("a function in the WHERE clause saw another role's request: %q", l)
		}
	}

	// A reader: what the README lists, and its own requests.
	for _, q := range []string{
		`SELECT count(*) FROM iasql_audit_log`, `SELECT count(*) FROM iasql_status`, `SELECT count(*) FROM iasql_records`,
		`SELECT count(*) FROM iasql_operations`, `SELECT count(*) FROM iasql_mode`, `SELECT count(*) FROM iasql_modules`,
		`SELECT count(*) FROM iasql_transaction`, `SELECT count(*) FROM iasql_capture_progress`, `SELECT count(*) FROM iasql_account`,
		`SELECT count(*) FROM iasql_unverified`, `SELECT count(*) FROM iasql_replacements`, `SELECT count(*) FROM iasql_engine_state`,
		`SELECT count(*) FROM iasql_deprecated_calls`, `SELECT count(*) FROM iasql_my_requests`, `SELECT count(*) FROM iasql_modules_list()`,
		`SELECT count(*) FROM iasql_preview()`, `SELECT iasql_wait_for_all(30)::int`,
	} {
		count(t, r.reader, q)
	}
	if n := count(t, r.reader, `SELECT count(*) FROM iasql_records WHERE table_name = 'bucket' AND cloud_id LIKE '%who-reads-secret%'`); n != 1 {
		t.Errorf("the reader sees %d records of the application's bucket, want 1", n)
	}
	if n := count(t, r.reader, `SELECT count(*) FROM iasql_my_requests`); n != 1 {
		t.Errorf("the reader sees %d requests, want its one preview", n)
	}

	// A member of iasql_admin (not a superuser) reads every request.
	dba := r.appRole + "_dba"
	execAs(t, r.admin, fmt.Sprintf(`CREATE ROLE %s LOGIN IN ROLE iasql_admin`, dba))
	admin := pgtest.Connect(t, asRole(t, r.dsn, dba))
	if n := count(t, admin, fmt.Sprintf(`SELECT count(DISTINCT requested_by) FROM iasql_requests WHERE requested_by IN ('%s', '%s', '%s')`, r.appRole, r.reader.Config().User, r.admin.Config().User)); n != 3 {
		t.Errorf("a member of iasql_admin sees the requests of %d of the 3 roles that made some", n)
	}
}
