package main_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestDropExtension follows the extension's drop path as the README gives
// it, with the least-privilege sidecar and aws_s3 installed:
//   - DROP EXTENSION iasql is refused (the module table's guard triggers use
//     iasql's functions) and changes nothing;
//   - DROP EXTENSION iasql CASCADE while the sidecar runs: the sidecar drops
//     the publication and its slot, says so and exits 0, and does not
//     install iasql again; the module table stays with its rows;
//   - DROP EXTENSION iasql CASCADE while no sidecar runs leaves the slot; a
//     sidecar started later installs iasql again and starts at a new slot,
//     so that a change made while iasql was not installed is not taken for
//     intent.
func TestDropExtension(t *testing.T) {
	t.Parallel()
	extensionInstalled(t)
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Destroy()
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE app", "CREATE ROLE iasql_sidecar LOGIN REPLICATION")
	dsn := c.DSN("app")
	emu := testkit.StartCloud(t, emulator.Options{})
	db := pgtest.Connect(t, dsn)
	mustExec(t, db, "CREATE EXTENSION iasql", "SELECT iasql_grant_sidecar('iasql_sidecar')")
	run := startRun(t, withUser(dsn, "iasql_sidecar"), emu.URL)
	mustExec(t, db, `SELECT * FROM iasql_install('aws_s3')`, `INSERT INTO bucket (name) VALUES ('kept')`, `CALL iasql_commit()`)

	if _, err := db.Exec(context.Background(), "DROP EXTENSION iasql"); err == nil || !strings.Contains(err.Error(), "other objects depend on it") {
		t.Errorf("DROP EXTENSION iasql with aws_s3 installed: %v, want refused", err)
	}
	testkit.WaitQuery(t, db, time.Minute, "iasql still installed and captured", `SELECT iasql_sidecar_connected() AND to_regclass('public.bucket') IS NOT NULL`)

	mustExec(t, db, "DROP EXTENSION iasql CASCADE")
	if err := run.WaitExit(time.Minute); err != nil {
		t.Fatalf("the sidecar did not stop after DROP EXTENSION: %v; its log:\n%s", err, run.Log)
	}
	if code := run.ExitCode(); code != 0 || !run.Log.Contains("iasql was removed from the database") ||
		!run.Log.Contains("dropped the publication iasql") || !run.Log.Contains("dropped the replication slot iasql_app") {
		t.Errorf("the sidecar after DROP EXTENSION: exit %d; its log:\n%s", code, run.Log)
	}
	var left string
	err = db.QueryRow(context.Background(), `SELECT concat_ws(', ',
		(SELECT 'publication ' || pubname FROM pg_publication WHERE pubname = 'iasql'),
		(SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_name = 'iasql_app'),
		(SELECT 'extension' FROM pg_extension WHERE extname = 'iasql'),
		(SELECT 'function iasql_version' WHERE to_regproc('public.iasql_version') IS NOT NULL))`).Scan(&left)
	if err != nil || left != "" {
		t.Errorf("after DROP EXTENSION with the sidecar running, left: %q (%v)", left, err)
	}
	var kept int
	if err := db.QueryRow(context.Background(), `SELECT count(*) FROM bucket WHERE name = 'kept'`).Scan(&kept); err != nil || kept != 1 {
		t.Errorf("the module table after DROP EXTENSION CASCADE: %d rows named kept (%v)", kept, err)
	}

	// With no sidecar running, the slot stays; a later one starts anew.
	pgtest.Exec(t, c.DSN("postgres"), "CREATE DATABASE other")
	other := c.DSN("other")
	odb := pgtest.Connect(t, other)
	mustExec(t, odb, "CREATE EXTENSION iasql", "SELECT iasql_grant_sidecar('iasql_sidecar')")
	run = startRun(t, withUser(other, "iasql_sidecar"), emu.URL)
	mustExec(t, odb, `SELECT * FROM iasql_install('aws_s3')`, `INSERT INTO bucket (name) VALUES ('kept-too')`, `CALL iasql_commit()`)
	_ = run.Stop(time.Minute)
	testkit.WaitQuery(t, odb, time.Minute, "the sidecar's slot let go", `SELECT NOT active FROM pg_replication_slots WHERE slot_name = 'iasql_other'`)
	mustExec(t, odb, "DROP EXTENSION iasql CASCADE", `INSERT INTO bucket (name) VALUES ('while-absent')`)
	run = startRun(t, withUser(other, "iasql_sidecar"), emu.URL)
	if !run.Log.Contains("dropped a replication slot left by an earlier install of iasql") {
		t.Errorf("the sidecar started after DROP EXTENSION did not renew the slot; its log:\n%s", run.Log)
	}
	// Everything written before now has been through capture once the
	// slot confirms a position past it.
	var now string
	if err := odb.QueryRow(context.Background(), `SELECT pg_current_wal_lsn()::text`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	testkit.WaitQuery(t, odb, time.Minute, "capture past the sidecar's start", `SELECT confirmed_flush_lsn >= '`+now+`'::pg_lsn FROM pg_replication_slots WHERE slot_name = 'iasql_other'`)
	var replayed int
	if err := odb.QueryRow(context.Background(), `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'bucket'`).Scan(&replayed); err != nil || replayed != 0 {
		t.Errorf("the audit trail of the new install holds %d changes to bucket made while iasql was not installed (%v)", replayed, err)
	}
}
