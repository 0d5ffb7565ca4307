package bridge_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestActorNotSuppressedBySetting: a writer that sets what an earlier
// version of the actor trigger cached (the setting iasql.actor) is named
// all the same: every statement names its role.
func TestActorNotSuppressedBySetting(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	execAs(t, r.app, `BEGIN`,
		`SELECT set_config('iasql.actor', pg_current_xact_id()::text || ':' || current_user, true)`,
		`INSERT INTO bucket (name) VALUES ('anon')`, `COMMIT`)
	testkit.WaitQuery(t, r.reader, 30*time.Second, "anon's insert captured",
		`SELECT count(*) = 1 FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'anon'`)
	var actor *string
	if err := r.reader.QueryRow(ctx, `SELECT actor FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'anon'`).Scan(&actor); err != nil {
		t.Fatal(err)
	}
	if actor == nil || *actor != r.appRole {
		t.Errorf("a user INSERT after SET iasql.actor is recorded with actor %v; want %s", actor, r.appRole)
	}
}

// TestHistoryRights: history is read for the caller's role and within its
// rights: a role whose rows row-level security limits is refused (the
// audit trail holds them all); a role may not name a reader it is not a
// member of; a role with no SELECT learns nothing, EXPLAIN ANALYZE
// included (no relation of the audit trail is open to it).
func TestHistoryRights(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	viewer := dbName(t, r.dsn) + "_rlsviewer"
	execAs(t, r.admin, `CREATE ROLE `+viewer, `GRANT SELECT ON bucket TO `+viewer, `GRANT `+viewer+` TO `+r.appRole,
		`ALTER TABLE bucket ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY web_only ON bucket FOR SELECT TO `+viewer+` USING (name LIKE 'web-%')`,
		`CREATE POLICY writers ON bucket TO iasql_writer USING (true) WITH CHECK (true)`)
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('web-1'), ('secret-1')`)
	testkit.WaitQuery(t, r.reader, 30*time.Second, "inserts captured",
		`SELECT count(*) = 2 FROM iasql_audit_log WHERE table_name = 'bucket' AND change_type = 'INSERT'`)
	refused := func(who *pgx.Conn, q, want string) {
		t.Helper()
		_, err := who.Exec(ctx, q)
		var pg *pgconn.PgError
		if !errors.As(err, &pg) || pg.Code != "42501" || !strings.Contains(pg.Message, want) || strings.Contains(pg.Message, "\n") {
			t.Errorf("%s: %v; want one line (42501) saying %q", q, err, want)
		}
	}
	execAs(t, r.app, `SET ROLE `+viewer)
	refused(r.app, `SELECT * FROM iasql_as_of('bucket', now())`, "row-level security limits which of its rows")
	refused(r.app, `SELECT * FROM iasql_history('bucket', 1)`, "row-level security limits which of its rows")
	execAs(t, r.app, `RESET ROLE`)

	refused(r.nobody, `SELECT * FROM iasql_as_of('bucket', now())`, "permission denied for table bucket: iasql_as_of needs SELECT on it")
	refused(r.nobody, `SELECT * FROM iasql_as_of('bucket', now(), '`+r.appRole+`')`, "may not read as "+r.appRole)
	for _, q := range []string{`EXPLAIN (ANALYZE) SELECT * FROM iasql_audit_log WHERE actor = '` + r.appRole + `'`,
		`SELECT count(*) FROM iasql_changes`} {
		if _, err := r.nobody.Exec(ctx, q); err == nil {
			t.Errorf("a role with nothing: %s answered", q)
		}
	}
}

// TestOversizedAttributionStaysCloud: what an event says of who made a
// change is anyone's text (up to SQS's 256 KiB); the engine's marker
// bounds it, so capture reads the whole marker, key included, and records
// the pull as the cloud's, never as user intent.
func TestOversizedAttributionStaysCloud(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	side := pgtest.Connect(t, asRole(t, r.dsn, r.sidecarRole))
	marker := store.CloudMarker("cycle 1", &snapshot.Attribution{Actor: "arn:aws:iam::123456789012:user/x",
		Event: "CreateTags", At: "2026-11-27T07:00:00Z", Source: strings.Repeat("1", 200<<10)})
	tx, err := side.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.MarkEngine(ctx, tx, marker); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO bucket (name) VALUES ('pulled')`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitQuery(t, r.reader, 30*time.Second, "the pull captured",
		`SELECT count(*) = 1 FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'pulled'`)
	var origin, actor string
	var source int
	if err := r.reader.QueryRow(ctx, `SELECT origin, actor, length(attribution->>'source') FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'pulled'`).Scan(&origin, &actor, &source); err != nil {
		t.Fatal(err)
	}
	if origin != "cloud" || actor != "arn:aws:iam::123456789012:user/x" || source > 256 {
		t.Errorf("an engine pull whose attribution carries a 200 KiB source: origin %s, actor %s, source of %d bytes; want cloud, the ARN, at most 256", origin, actor, source)
	}
}
