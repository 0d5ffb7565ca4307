package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

const otherAccount = "210987654321"

// moveToAccount stops the env's sidecar and starts another whose cloud is
// a new, empty emulator playing account (another account and endpoint).
func (e *env) moveToAccount(t *testing.T, account string) {
	t.Helper()
	e.Stop()
	cloud := testkit.StartCloud(t, emulator.Options{AccountID: account})
	e.Emu, e.AWS = cloud.Emu, cloud.AWS
	e.s3 = s3.NewFromConfig(e.AWS, testkit.PathStyle)
	e.StartSidecar(true)
}

// sqlError runs q and returns its error's message, failing the test when
// it succeeds.
func (e *env) sqlError(t *testing.T, q string) string {
	t.Helper()
	_, err := e.DB.Exec(context.Background(), q)
	if err == nil {
		t.Fatalf("%s succeeded", q)
	}
	var pg *pgconn.PgError
	if !errors.As(err, &pg) {
		t.Fatalf("%s: %v", q, err)
	}
	return pg.Message
}

// A database bound to account A, a sidecar whose credentials are for
// account B: every request that would run a cycle fails with one line
// naming account A and the rebind; nothing changes in the tables or in B's
// cloud; capture still records the user's changes.
func TestAccountMismatchRefusesCycles(t *testing.T) {
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) VALUES ('acct-a-one')`)
	e.Commit()
	if got := e.String(`SELECT account_id FROM iasql_account`); got != emulator.DefaultAccountID {
		t.Fatalf("bound to %q, want %s", got, emulator.DefaultAccountID)
	}
	e.moveToAccount(t, otherAccount)
	e.Emu.Reset()
	e.Exec(`INSERT INTO bucket (name) VALUES ('acct-b-two')`)
	for _, q := range []string{`CALL iasql_commit()`, `CALL iasql_refresh()`, `SELECT * FROM iasql_preview()`, `SELECT * FROM iasql_install('aws_s3')`} {
		msg := e.sqlError(t, q)
		if strings.Contains(msg, "\n") || !strings.Contains(msg, "bound to AWS account "+emulator.DefaultAccountID) ||
			!strings.Contains(msg, "credentials are for AWS account "+otherAccount) || !strings.Contains(msg, "SELECT iasql_rebind_account()") {
			t.Errorf("%s failed with %q, want one line naming account %s and the rebind", q, msg, emulator.DefaultAccountID)
		}
	}
	// Capture goes on: the user's insert is in the audit trail.
	testkit.Until(t, 10*time.Second, "the insert captured", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'acct-b-two'`) == 1
	})
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name IN ('acct-a-one', 'acct-b-two')`); n != 2 {
		t.Errorf("bucket rows: %d, want both kept", n)
	}
	for op := range e.Emu.Calls() {
		if !strings.HasPrefix(op, "sts:") {
			t.Errorf("the refusing sidecar called %s in account %s", op, otherAccount)
		}
	}
	if got := e.String(`SELECT account_id FROM iasql_account`); got != emulator.DefaultAccountID {
		t.Errorf("binding changed to %q", got)
	}
}

// After the deliberate rebind, the sidecar binds the database to its own
// account and commits work there. A role without EXECUTE cannot rebind.
func TestAccountRebind(t *testing.T) {
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) VALUES ('acct-a-one')`)
	e.Commit()
	e.moveToAccount(t, otherAccount)
	e.Exec(`INSERT INTO bucket (name) VALUES ('acct-b-two')`)
	e.sqlError(t, `CALL iasql_commit()`)

	e.Exec(`CREATE ROLE acct_nobody`, `SET ROLE acct_nobody`)
	if msg := e.sqlError(t, `SELECT iasql_rebind_account()`); !strings.Contains(msg, "permission denied") {
		t.Errorf("a role without EXECUTE rebinding: %q", msg)
	}
	e.Exec(`RESET ROLE`)

	msg := e.String(`SELECT iasql_rebind_account()`)
	if !strings.Contains(msg, "bound to AWS account "+otherAccount) || !strings.Contains(msg, "was bound to AWS account "+emulator.DefaultAccountID) {
		t.Errorf("rebind answered %q", msg)
	}
	if got := e.String(`SELECT account_id || ' ' || previous_account_id FROM iasql_account`); got != otherAccount+" "+emulator.DefaultAccountID {
		t.Errorf("binding %q", got)
	}
	e.Commit()
	if b := e.cloudBuckets(); !b["acct-b-two"] || len(b) != 1 {
		t.Errorf("buckets in account %s: %v, want acct-b-two", otherAccount, b)
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'acct-b-two' AND created_at IS NOT NULL`); n != 1 {
		t.Errorf("acct-b-two not enacted")
	}
}

// First use binds; a later sidecar with the same account and endpoint
// runs cycles, and the binding stays as it was.
func TestAccountSameAccountRestarts(t *testing.T) {
	e := newEnv(t)
	endpoint := e.String(`SELECT endpoint FROM iasql_account`)
	if endpoint == "" || e.String(`SELECT account_id FROM iasql_account`) != emulator.DefaultAccountID {
		t.Fatalf("first use did not bind: %q", endpoint)
	}
	bound := e.String(`SELECT bound_at::text FROM iasql_account`)
	e.Stop()
	e.StartSidecar(true)
	e.Exec(`INSERT INTO bucket (name) VALUES ('acct-same')`)
	e.Commit()
	if !e.cloudBuckets()["acct-same"] {
		t.Error("the restarted sidecar did not create acct-same")
	}
	if got := e.String(`SELECT bound_at::text || ' ' || endpoint FROM iasql_account`); got != bound+" "+endpoint {
		t.Errorf("binding changed: %q, was %q", got, bound+" "+endpoint)
	}
}
