package main_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// TestReadmeHistory runs the SQL blocks of the README's "History", in
// order, on a database with aws_s3 (a sidecar and the emulator), and
// checks after each what the text says.
func TestReadmeHistory(t *testing.T) {
	t.Parallel()
	blocks := readmeSQL(t, "## History")
	if len(blocks) != 3 {
		t.Fatalf("README's History has %d sql blocks; the test knows 3 (iasql_history, iasql_as_of, a role with SELECT)", len(blocks))
	}
	// The role the README creates is the cluster's: dropped once the
	// database (and its grants to it) is.
	t.Cleanup(func() { pgtest.Exec(t, srv.AdminDSN(), `DROP ROLE IF EXISTS auditor`) })
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{aws_s3.Module()}, Install: []string{"aws_s3"}})
	ctx := context.Background()
	one := func(q string) string {
		t.Helper()
		var s string
		if err := e.DB.QueryRow(ctx, q).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		return s
	}
	var user string
	if err := e.DB.QueryRow(ctx, `SELECT current_user`).Scan(&user); err != nil {
		t.Fatal(err)
	}
	history := `iasql_history('bucket', (SELECT id FROM bucket WHERE name = 'audited'))`
	steps := []struct {
		what  string
		check func()
	}{
		{"iasql_history", func() {
			want := fmt.Sprintf("user %s {id,name,region,versioning,created_at} false; engine iasql_sidecar {created_at} false; user %s {versioning} true", user, user)
			// The sidecar runs as the test's login role here.
			want = strings.Replace(want, "iasql_sidecar", user, 1)
			if got := one(`SELECT string_agg(origin || ' ' || actor || ' ' || changed::text || ' ' || ("row"->>'versioning'), '; ' ORDER BY at) FROM ` + history); got != want {
				t.Errorf("the bucket's history: %s; want %s", got, want)
			}
		}},
		{"iasql_as_of", func() {
			if got := one(`SELECT count(*)::text FROM iasql_as_of('bucket', now() - interval '1 minute')`); got != "0" {
				t.Errorf("a minute ago (before the test made the bucket) the table had %s rows, want none", got)
			}
			if got := one(`SELECT string_agg((r->>'name') || ' ' || (r->>'versioning'), ',') FROM iasql_as_of('bucket', now()) r`); got != "audited true" {
				t.Errorf("the table now: %s, want audited true", got)
			}
		}},
		{"a role with SELECT", func() {
			e.Exec(`SET ROLE auditor`)
			defer e.Exec(`RESET ROLE`)
			if got := one(`SELECT count(*)::text FROM ` + history); got != "3" {
				t.Errorf("auditor reads %s versions, want 3", got)
			}
			for q, want := range map[string]string{
				`SELECT count(*) FROM iasql_audit_log`:                     "permission denied for table iasql_audit_log",
				`SELECT count(*) FROM iasql_history('bucket_object', 1)`:   "permission denied for table bucket_object: iasql_history needs SELECT on it",
				`SELECT count(*) FROM iasql_as_of('bucket_object', now())`: "permission denied for table bucket_object: iasql_as_of needs SELECT on it",
			} {
				_, err := e.DB.Exec(ctx, q)
				var pg *pgconn.PgError
				if !errors.As(err, &pg) || pg.Message != want {
					t.Errorf("as auditor: %s: %v; want %q", q, err, want)
				}
			}
		}},
	}
	for i, s := range steps {
		for _, q := range statements(blocks[i]) {
			if _, err := e.DB.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", s.what, q, err)
			}
		}
		s.check()
		if t.Failed() {
			t.Fatalf("after %s, the README does not hold", s.what)
		}
	}
}
