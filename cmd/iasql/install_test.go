package main_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	side "github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestInstallByCreateRoleAdmin: an administrator without superuser, with
// CREATEROLE and the database, installs and names a sidecar role it may not
// SET ROLE to (creating a role, or CREATEROLE, is not membership). The
// install changes nothing and says in one line what to grant; once it is
// granted, the same command installs, and the named role passes run's
// checks and prepares to run without superuser.
func TestInstallByCreateRoleAdmin(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	db := dbName(dsn)
	dba, sc := db+"_dba", db+"_sc"
	pgtest.Exec(t, dsn, "CREATE ROLE "+dba+" LOGIN CREATEROLE", "CREATE ROLE "+sc+" LOGIN REPLICATION", "ALTER DATABASE "+db+" OWNER TO "+dba)
	admin := withUser(dsn, dba)

	r := testkit.Run(t, 30*time.Second, "install", "--dsn", admin, "--sidecar-role", sc)
	msg := strings.TrimSpace(r.Stderr)
	if r.Code != 1 || strings.Contains(r.Stdout, "installed") || strings.Contains(msg, "\n") ||
		!strings.Contains(msg, "nothing was changed: GRANT "+sc+" TO "+dba+" (to hand it the publication iasql and the module tables); then run it again") {
		t.Errorf("install --sidecar-role by an administrator who may not SET ROLE to it: exit %d, stdout %q, stderr %q", r.Code, r.Stdout, r.Stderr)
	}
	conn := pgtest.Connect(t, dsn)
	var objects, pubs int
	if err := conn.QueryRow(context.Background(), `
		SELECT (SELECT count(*) FROM pg_class WHERE relname LIKE 'iasql%') + (SELECT count(*) FROM pg_proc WHERE proname LIKE 'iasql%'),
		       (SELECT count(*) FROM pg_publication)`).Scan(&objects, &pubs); err != nil {
		t.Fatal(err)
	}
	if objects+pubs != 0 {
		t.Fatalf("the refused install left %d iasql objects and %d publications", objects, pubs)
	}

	pgtest.Exec(t, dsn, "GRANT "+sc+" TO "+dba)
	r = testkit.Run(t, 30*time.Second, "install", "--dsn", admin, "--sidecar-role", sc)
	if r.Code != 0 || !strings.Contains(r.Stdout, "installed iasql") || !strings.Contains(r.Stdout, "role "+sc+" is the iasql sidecar's role in database "+db) {
		t.Fatalf("install once granted: exit %d, %s%s", r.Code, r.Stdout, r.Stderr)
	}
	var owner, named string
	if err := conn.QueryRow(context.Background(), `SELECT pubowner::regrole::text, (SELECT role_name FROM iasql_sidecar) FROM pg_publication WHERE pubname = 'iasql'`).Scan(&owner, &named); err != nil {
		t.Fatal(err)
	}
	if owner != sc || named != sc {
		t.Errorf("the publication belongs to %s and the sidecar's role is %s, want %s", owner, named, sc)
	}
	scConn, err := side.Connect(context.Background(), withUser(dsn, sc))
	if err != nil {
		t.Fatal(err)
	}
	defer scConn.Close(context.Background())
	if _, err := side.Prepare(context.Background(), scConn, "", slog.New(slog.NewTextHandler(io.Discard, nil))); err != nil {
		t.Errorf("the sidecar's role after the install: %v", err)
	}
}
