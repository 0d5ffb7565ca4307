package bridge_test

// Review of issues 23 and 24: failing tests that prove findings.

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestReviewActorSuppressedByGUC: a writer sets the custom setting
// iasql_note_actor caches its last message in (iasql.actor, settable by any
// role) to what the trigger would set, so no actor message is emitted: the
// audit trail records the user's change with no actor (audit evasion).
func TestReviewActorSuppressedByGUC(t *testing.T) {
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
		t.Errorf("a user INSERT after SET iasql.actor is recorded with actor %v; want %s (a writer can make its changes anonymous)", actor, r.appRole)
	}
}

// TestReviewHistoryIgnoresRLS: a role that may SELECT a table but whom
// row-level security limits to some of its rows reads, through
// iasql_as_of (and iasql_history, iasql_changes), the rows the policy
// hides from it.
func TestReviewHistoryIgnoresRLS(t *testing.T) {
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
	execAs(t, r.app, `SET ROLE `+viewer)
	defer execAs(t, r.app, `RESET ROLE`)
	visible := count(t, r.app, `SELECT count(*) FROM bucket`)
	viaHistory := count(t, r.app, `SELECT count(*) FROM iasql_as_of('bucket', now()) r`)
	viaView := count(t, r.app, `SELECT count(*) FROM iasql_changes WHERE table_name = 'bucket'`)
	_ = ctx
	if viaHistory > visible || viaView > visible {
		t.Errorf("row-level security shows the role %d bucket rows; iasql_as_of shows it %d and iasql_changes %d (history reads past RLS)", visible, viaHistory, viaView)
	}
}

// TestReviewOversizedAttributionBecomesUserIntent: an Event cycle puts
// what the event says of who made a change (its userIdentity ARN,
// sourceIPAddress: unbounded, up to SQS's 256 KiB) into its engine marker
// (store.CloudMarker). Capture cuts any message above
// logical.MaxMessageBytes to nothing, so the marker loses its key and the
// engine's write is recorded as a user change (origin user: intent).
func TestReviewOversizedAttributionBecomesUserIntent(t *testing.T) {
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
	var origin string
	if err := r.reader.QueryRow(ctx, `SELECT origin FROM iasql_audit_log WHERE table_name = 'bucket' AND new_row->>'name' = 'pulled'`).Scan(&origin); err != nil {
		t.Fatal(err)
	}
	if origin != "cloud" {
		t.Errorf("an engine pull whose marker carries a 200 KiB attribution is recorded with origin %s; want cloud (a forged event turns the engine's write into user intent)", origin)
	}
}

// TestReviewChangesLeakThroughExplain: iasql_changes is granted to PUBLIC
// and filters by has_table_privilege above the audit log's scan; the
// leakproof quals of a caller (text =, timestamptz <) are pushed below
// the security barrier, so EXPLAIN ANALYZE's row counts tell a role with
// no SELECT on a table who changed it, which record and when.
func TestReviewChangesLeakThroughExplain(t *testing.T) {
	t.Parallel()
	r := newRecipe(t)
	ctx := context.Background()
	execAs(t, r.app, `INSERT INTO bucket (name) VALUES ('secret')`)
	testkit.WaitQuery(t, r.reader, 30*time.Second, "insert captured",
		`SELECT count(*) = 1 FROM iasql_audit_log WHERE table_name = 'bucket' AND change_type = 'INSERT'`)
	probe := func(actor string) string {
		rows, err := r.nobody.Query(ctx, `EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF)
			SELECT * FROM iasql_changes WHERE table_name = 'bucket' AND actor = '`+actor+`'`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var all []string
		for rows.Next() {
			var l string
			if err := rows.Scan(&l); err != nil {
				t.Fatal(err)
			}
			all = append(all, l)
		}
		return strings.Join(all, "\n")
	}
	yes, no := probe(r.appRole), probe("nobody-at-all")
	if yes != no {
		t.Errorf("a role without SELECT on bucket tells, from EXPLAIN ANALYZE of iasql_changes, whether %s changed it:\n%s\n--- versus ---\n%s", r.appRole, yes, no)
	}
}
