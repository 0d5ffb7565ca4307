package bridge_test

import (
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// session opens another user's session on the env's database, as role
// (a LOGIN role that may write buckets; "" for the env's own role).
func session(t *testing.T, e *enginetest.Env, role string) *pgx.Conn {
	t.Helper()
	dsn := e.DSN
	if role != "" {
		pgtest.Exec(t, e.DSN, `DO $$ BEGIN CREATE ROLE `+role+` LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`)
		pgtest.Exec(t, e.DSN, `GRANT SELECT, INSERT, UPDATE, DELETE ON bucket TO `+role)
		pgtest.Exec(t, e.DSN, `GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO `+role)
		pgtest.Exec(t, e.DSN, `DO $$ BEGIN IF pg_catalog.to_regrole('iasql_writer') IS NOT NULL THEN GRANT iasql_writer TO `+role+`; END IF; END $$`)
		u, err := url.Parse(dsn)
		if err != nil {
			t.Fatal(err)
		}
		u.User = url.User(role)
		dsn = u.String()
	}
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func execErr(c *pgx.Conn, sql string) error {
	_, err := c.Exec(context.Background(), sql)
	return err
}

// TestTransactionBelongsToItsSession: while one session's iasql transaction
// is open, another session's writes to module tables, its commit and its
// rollback are refused, naming the owner; the owner commits; an
// iasql_admin (here a superuser) may end another's transaction.
func TestTransactionBelongsToItsSession(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	owner := session(t, e.Env, "tx_owner")
	other := session(t, e.Env, "tx_other")
	if err := execErr(owner, `CALL iasql_begin()`); err != nil {
		t.Fatal(err)
	}
	if err := execErr(owner, `INSERT INTO bucket (name) VALUES ('tx-owner')`); err != nil {
		t.Fatalf("the owner's write: %v", err)
	}
	for _, c := range []struct{ sql, want string }{
		{`INSERT INTO bucket (name) VALUES ('tx-other')`, "an iasql transaction is open (opened by tx_owner"},
		{`UPDATE bucket SET versioning = true WHERE name = 'tx-owner'`, "an iasql transaction is open (opened by tx_owner"},
		{`CALL iasql_commit()`, "not yours to commit: it was opened by tx_owner"},
		{`CALL iasql_rollback()`, "not yours to roll back: it was opened by tx_owner"},
	} {
		if err := execErr(other, c.sql); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s from another session: %v; want it refused (%s)", c.sql, err, c.want)
		}
	}
	if err := execErr(owner, `CALL iasql_commit()`); err != nil {
		t.Fatalf("the owner's commit: %v", err)
	}
	if !e.cloudBuckets()["tx-owner"] || e.cloudBuckets()["tx-other"] {
		t.Errorf("buckets in the cloud after the owner's commit: %v", e.cloudBuckets())
	}
	if err := execErr(other, `INSERT INTO bucket (name) VALUES ('tx-other')`); err != nil {
		t.Errorf("another session's write once the transaction ended: %v", err)
	}

	// An administrator ends someone else's transaction.
	if err := execErr(owner, `CALL iasql_begin()`); err != nil {
		t.Fatal(err)
	}
	if err := execErr(owner, `DELETE FROM bucket WHERE name = 'tx-owner'`); err != nil {
		t.Fatal(err)
	}
	e.Exec(`CALL iasql_rollback()`)
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-owner'`); n != 1 {
		t.Error("the administrator's rollback did not restore the owner's deleted bucket")
	}
	if n := e.Count(`SELECT count(*) FROM iasql_transaction`); n != 0 {
		t.Error("the transaction is still open after the administrator's rollback")
	}
}

// TestTransactionExpires: an iasql transaction whose session ends, or
// stays idle past the transaction timeout (here 2 s; also after
// BEGIN; CALL iasql_begin(); ROLLBACK;), is rolled back: what it wrote
// does not reach the cloud, the rollback's cycle record says why, and
// automatic cycles resume.
func TestTransactionExpires(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, why string
		end       func(c *pgx.Conn)
	}{
		{"the session ends", "its session ended", func(c *pgx.Conn) { c.Close(context.Background()) }},
		{"the session stays idle", "its session was idle", func(*pgx.Conn) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			te := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{aws_s3.Module()}, Install: []string{"aws_s3"},
				TransactionTimeout: 2 * time.Second})
			e := &env{Env: te, s3: s3.NewFromConfig(te.AWS, testkit.PathStyle)}
			owner := session(t, e.Env, "")
			for _, q := range []string{`BEGIN`, `CALL iasql_begin()`, `ROLLBACK`, `INSERT INTO bucket (name) VALUES ('tx-expired')`} {
				if err := execErr(owner, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			tc.end(owner)
			testkit.Until(t, 30*time.Second, "the transaction rolled back", func() bool {
				return e.Count(`SELECT count(*) FROM iasql_transaction`) == 0
			})
			if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-expired'`); n != 0 {
				t.Error("the expired transaction's insert was kept")
			}
			if e.cloudBuckets()["tx-expired"] {
				t.Error("the expired transaction's insert reached the cloud")
			}
			if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_START'
				AND message::jsonb->>'reason' LIKE 'transaction expired: ' || $1 || '%'`, tc.why); n != 1 {
				t.Errorf("no cycle record says the transaction expired because %s", tc.why)
			}
			// Automatic cycles run again: a write is enacted without a commit.
			e.Exec(`INSERT INTO bucket (name) VALUES ('tx-after')`)
			testkit.Until(t, 30*time.Second, "an automatic cycle after the expiry", func() bool { return e.cloudBuckets()["tx-after"] })
		})
	}
}
