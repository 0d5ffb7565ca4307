package bridge_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// version is a row of iasql_history.
type version struct {
	at      time.Time
	origin  string
	actor   string
	changed []string
	row     map[string]any
}

func history(t *testing.T, c *pgx.Conn, table string, id int64) []version {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT at, origin, coalesce(actor, ''), changed, "row" FROM iasql_history($1, $2)`, table, id)
	if err != nil {
		t.Fatalf("as %s: iasql_history: %v", c.Config().User, err)
	}
	vs, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (v version, err error) {
		err = r.Scan(&v.at, &v.origin, &v.actor, &v.changed, &v.row)
		return v, err
	})
	if err != nil {
		t.Fatalf("as %s: iasql_history: %v", c.Config().User, err)
	}
	return vs
}

// bucketsAsOf is iasql_as_of('bucket', at): each bucket's name and
// versioning.
func bucketsAsOf(c *pgx.Conn, at time.Time) (string, error) {
	var s string
	err := c.QueryRow(context.Background(), `SELECT coalesce(string_agg((r->>'name') || ':' || (r->>'versioning'), ',' ORDER BY r->>'name'), '')
		FROM iasql_as_of('bucket', $1) r`, at).Scan(&s)
	return s, err
}

// TestHistory: a bucket created by a role, updated by another (SET ROLE),
// changed in the cloud out of band and deleted shows those four versions
// with their origins and actors (and the engine's write-backs, origin
// engine, between); iasql_as_of shows the table before and after each
// change; a role that may SELECT the table, and no more, reads its history;
// a role that may not is refused in one line; a forged actor message names
// no other role.
func TestHistory(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	e, ctx := r.env, context.Background()
	s3c := s3.NewFromConfig(e.AWS, testkit.PathStyle)
	ops, viewer := dbName(t, r.dsn)+"_ops", dbName(t, r.dsn)+"_viewer"
	execAs(t, r.admin, `CREATE ROLE `+ops+` IN ROLE iasql_writer`, `GRANT `+ops+` TO `+r.appRole,
		`CREATE ROLE `+viewer+` LOGIN`, `GRANT SELECT ON bucket TO `+viewer)
	var superuser string
	if err := r.admin.QueryRow(ctx, `SELECT current_user`).Scan(&superuser); err != nil {
		t.Fatal(err)
	}
	now := func() time.Time {
		var ts time.Time
		if err := r.admin.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&ts); err != nil {
			t.Fatal(err)
		}
		return ts
	}

	start := now()
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('hist')`, `CALL iasql_commit()`)
	var id int64
	if err := r.app.QueryRow(ctx, `SELECT id FROM bucket WHERE name = 'hist'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	created := now()
	execAs(t, r.app, `SET ROLE `+ops, `UPDATE bucket SET versioning = true WHERE name = 'hist'`, `RESET ROLE`, `CALL iasql_commit()`)
	updated := now()
	if _, err := s3c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("hist"),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusSuspended}}); err != nil {
		t.Fatal(err)
	}
	execAs(t, r.app, `CALL iasql_refresh()`)
	if n := count(t, r.app, `SELECT count(*) FROM bucket WHERE name = 'hist' AND NOT versioning`); n != 1 {
		t.Fatal("the cloud's change did not reach the row")
	}
	changed := now()
	execAs(t, r.app, `DELETE FROM bucket WHERE name = 'hist'`, `CALL iasql_commit()`)
	deleted := now()

	// What users made, in order, and the engine's writes between.
	type want struct {
		origin, actor string
		changed       []string
		versioning    any // the row's; nil once deleted
	}
	wants := []want{
		{"user", r.appRole, []string{"id", "name", "region", "versioning", "created_at"}, false},
		{"user", ops, []string{"versioning"}, true},
		{"cloud", "", []string{"versioning"}, false},
		{"user", r.appRole, []string{"id", "name", "region", "versioning", "created_at"}, nil},
	}
	for _, c := range []*pgx.Conn{r.reader, pgtest.Connect(t, asRole(t, r.dsn, viewer))} {
		vs := history(t, c, "bucket", id)
		var got []version
		for _, v := range vs {
			if v.origin == "engine" {
				if v.actor != r.sidecarRole || v.row == nil {
					t.Errorf("as %s: an engine version by %q, row %v; want by %s", c.Config().User, v.actor, v.row, r.sidecarRole)
				}
				continue
			}
			got = append(got, v)
		}
		if len(got) != len(wants) {
			t.Fatalf("as %s: %d versions not the engine's, want %d: %+v", c.Config().User, len(got), len(wants), vs)
		}
		for i, w := range wants {
			g := got[i]
			var versioning any
			if g.row != nil {
				versioning = g.row["versioning"]
			}
			if g.origin != w.origin || g.actor != w.actor || !slices.Equal(g.changed, w.changed) || versioning != w.versioning {
				t.Errorf("as %s: version %d: %s by %q changed %v versioning %v; want %s by %q changed %v versioning %v",
					c.Config().User, i+1, g.origin, g.actor, g.changed, versioning, w.origin, w.actor, w.changed, w.versioning)
			}
		}
		if !slices.IsSortedFunc(vs, func(a, b version) int { return a.at.Compare(b.at) }) || vs[0].at.Before(start) || vs[len(vs)-1].at.After(deleted) {
			t.Errorf("as %s: versions not in time order within the test: %+v", c.Config().User, vs)
		}
		for _, tc := range []struct {
			at   time.Time
			want string
		}{{start, ""}, {created, "hist:false"}, {updated, "hist:true"}, {changed, "hist:false"}, {deleted, ""}} {
			if got, err := bucketsAsOf(c, tc.at); err != nil || got != tc.want {
				t.Errorf("as %s: iasql_as_of at %v: %q, %v; want %q", c.Config().User, tc.at, got, err, tc.want)
			}
		}
	}
	// The viewer may read the table's history, not the audit trail.
	if msg := refused(t, pgtest.Connect(t, asRole(t, r.dsn, viewer)), `SELECT count(*) FROM iasql_audit_log`); !strings.Contains(msg, "permission denied") {
		t.Errorf("the viewer reads the audit trail: %s", msg)
	}
	for _, q := range []string{fmt.Sprintf(`SELECT * FROM iasql_history('bucket', %d)`, id), `SELECT * FROM iasql_as_of('bucket', now())`} {
		_, err := r.nobody.Exec(ctx, q)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" || !strings.HasPrefix(pg.Message, "permission denied for table bucket: ") || !strings.HasSuffix(pg.Message, "needs SELECT on it") {
			t.Errorf("a role without SELECT: %s: %v; want 42501 naming the table and SELECT", q, err)
		}
	}

	// Forged actors: a message naming another role (without the key), and
	// iasql_emit_actor for a role the writer is not a member of, before
	// and after its first write of the transaction.
	forge := `SELECT pg_logical_emit_message(true, 'iasql_actor', 'x:` + superuser + `')`
	forgeFn := `SELECT iasql_emit_actor('` + superuser + `')`
	for i, steps := range [][]string{
		{forge, `INSERT INTO bucket (name) VALUES ('forged-0')`},
		{`INSERT INTO bucket (name) VALUES ('forged-1')`, forge, `UPDATE bucket SET versioning = true WHERE name = 'forged-1'`},
		{forgeFn, `INSERT INTO bucket (name) VALUES ('forged-2')`},
		{`INSERT INTO bucket (name) VALUES ('forged-3')`, forgeFn, `UPDATE bucket SET versioning = true WHERE name = 'forged-3'`},
	} {
		execAs(t, r.app, append(append([]string{"BEGIN"}, steps...), "COMMIT")...)
		name := fmt.Sprintf("forged-%d", i)
		testkit.WaitQuery(t, r.reader, 30*time.Second, name+"'s changes captured",
			`SELECT count(*) = $2 FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = $1`, name, len(steps)-1)
		var actors []string
		if err := r.reader.QueryRow(ctx, `SELECT array_agg(DISTINCT coalesce(actor, '')) FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = $1`, name).Scan(&actors); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(actors, []string{r.appRole}) {
			t.Errorf("%s: %v: the audit trail names %v, want %s only", name, steps, actors, r.appRole)
		}
	}
}

// TestHistoryRetention: the sidecar (its least-privilege role) prunes the
// audit trail, keeping the newest version of a live bucket, so
// iasql_as_of answers at the oldest time kept; a time before it is refused
// in one line naming that time, with a hint on the retention.
func TestHistoryRetention(t *testing.T) {
	t.Parallel()
	r := newRecipe(t, func(o *enginetest.Options) { o.Interval, o.AuditRetention = time.Second, time.Second })
	ctx := context.Background()
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('kept')`, `CALL iasql_commit()`,
		`UPDATE bucket SET versioning = true WHERE name = 'kept'`, `CALL iasql_commit()`)
	var last time.Time
	if err := r.reader.QueryRow(ctx, `SELECT max(ts) FROM iasql_audit_log WHERE table_name = 'bucket'`).Scan(&last); err != nil {
		t.Fatal(err)
	}
	testkit.WaitQuery(t, r.reader, 60*time.Second, "the audit trail pruned past the bucket's last change",
		`SELECT iasql_history_start() > $1`, last)
	var from time.Time
	if err := r.reader.QueryRow(ctx, `SELECT iasql_history_start()`).Scan(&from); err != nil {
		t.Fatal(err)
	}
	if got, err := bucketsAsOf(r.reader, from); err != nil || got != "kept:true" {
		t.Errorf("iasql_as_of at the oldest time kept: %q, %v; want kept:true", got, err)
	}
	if n := count(t, r.reader, `SELECT count(*) FROM iasql_history('bucket', (SELECT id FROM bucket WHERE name = 'kept'))`); n != 1 {
		t.Errorf("%d versions of the bucket kept, want its newest", n)
	}
	_, err := bucketsAsOf(r.reader, from.Add(-time.Second))
	var pg *pgconn.PgError
	var fromText string
	if e := r.reader.QueryRow(ctx, `SELECT iasql_history_start()::text`).Scan(&fromText); e != nil {
		t.Fatal(e)
	}
	if !errors.As(err, &pg) || pg.Code != "22023" || strings.Contains(pg.Message, "\n") ||
		!strings.Contains(pg.Message, "keeps history from "+fromText) || !strings.Contains(pg.Hint, "--audit-retention") {
		t.Errorf("iasql_as_of before the oldest time kept: %v (hint %q); want one line naming %s, a hint on --audit-retention", err, hint(pg), fromText)
	}
}

func hint(pg *pgconn.PgError) string {
	if pg == nil {
		return ""
	}
	return pg.Hint
}
