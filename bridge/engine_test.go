package bridge_test

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is one database with a sidecar running against its own emulator,
// with aws_s3 installed.
type env struct {
	*enginetest.Env
	s3 *s3.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, srv.NewDB(t), time.Hour)
}

// newEnvOn starts the emulator and a sidecar on dsn with the given
// automatic-cycle interval, and installs aws_s3.
func newEnvOn(t *testing.T, dsn string, interval time.Duration, extra ...module.Module) *env {
	t.Helper()
	return newEnvWith(t, enginetest.Options{DSN: dsn, Interval: interval, Modules: extra})
}

// newEnvWith is newEnvOn with opt: aws_s3 is offered before opt.Modules
// and installed.
func newEnvWith(t *testing.T, opt enginetest.Options) *env {
	t.Helper()
	opt.Modules = append([]module.Module{aws_s3.Module()}, opt.Modules...)
	opt.Install = []string{"aws_s3"}
	// "someone-elses" belongs to another account: creating it fails, as in AWS.
	opt.Emulator = emulator.Options{ForeignBuckets: []string{"someone-elses"}}
	te := enginetest.New(t, srv, opt)
	return &env{Env: te, s3: s3.NewFromConfig(te.AWS, testkit.PathStyle)}
}

func (e *env) cloudBuckets() map[string]bool {
	e.T.Helper()
	out, err := e.s3.ListBuckets(context.Background(), &s3.ListBucketsInput{})
	if err != nil {
		e.T.Fatalf("list buckets: %v", err)
	}
	m := map[string]bool{}
	for _, b := range out.Buckets {
		m[aws.ToString(b.Name)] = true
	}
	return m
}

func (e *env) cloudVersioning(name string) bool {
	e.T.Helper()
	out, err := e.s3.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(name)})
	if err != nil {
		e.T.Fatalf("get versioning of %s: %v", name, err)
	}
	return out.Status == s3types.BucketVersioningStatusEnabled
}

func (e *env) setCloudVersioning(name string, on bool) {
	e.T.Helper()
	st := s3types.BucketVersioningStatusSuspended
	if on {
		st = s3types.BucketVersioningStatusEnabled
	}
	if _, err := e.s3.PutBucketVersioning(context.Background(), &s3.PutBucketVersioningInput{Bucket: aws.String(name),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: st}}); err != nil {
		e.T.Fatalf("put versioning of %s: %v", name, err)
	}
}

// TestDirections: every cell of DESIGN.md's direction table (NORMAL), each
// against a real database and the emulator.
func TestDirections(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(e *env)          // brings the record to the cell
		act   func(e *env)          // the change that puts it in the cell
		check func(e *env) []string // what a user would check; returns problems
	}{
		{
			name: "row only in database, with intent: created in the cloud",
			act:  func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('cell-create')`) },
			check: func(e *env) (p []string) {
				if !e.cloudBuckets()["cell-create"] {
					p = append(p, "bucket not created in the cloud")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-create' AND created_at IS NOT NULL`) != 1 {
					p = append(p, "created_at not written back to the row")
				}
				return p
			},
		},
		{
			name:  "row only in database, no intent: row deleted (the cloud deleted it)",
			setup: func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('cell-gone')`); e.Commit() },
			act: func(e *env) {
				if _, err := e.s3.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String("cell-gone")}); err != nil {
					e.T.Fatal(err)
				}
				e.Refresh() // a commit leaves what it does not act on as last read
			},
			check: func(e *env) (p []string) {
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-gone'`) != 0 {
					p = append(p, "row not deleted")
				}
				if e.cloudBuckets()["cell-gone"] {
					p = append(p, "bucket recreated in the cloud")
				}
				return p
			},
		},
		{
			name:  "resource only in cloud, with intent: deleted in the cloud (the user deleted the row)",
			setup: func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('cell-delete')`); e.Commit() },
			act:   func(e *env) { e.Exec(`DELETE FROM bucket WHERE name = 'cell-delete'`) },
			check: func(e *env) (p []string) {
				if e.cloudBuckets()["cell-delete"] {
					p = append(p, "bucket still in the cloud")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-delete'`) != 0 {
					p = append(p, "row came back")
				}
				return p
			},
		},
		{
			name: "resource only in cloud, no intent: imported",
			act: func(e *env) {
				if _, err := e.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("cell-import")}); err != nil {
					e.T.Fatal(err)
				}
				e.Refresh() // a commit leaves what it does not act on as last read
			},
			check: func(e *env) (p []string) {
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-import' AND region = 'us-east-1' AND NOT versioning AND created_at IS NOT NULL`) != 1 {
					p = append(p, "bucket not imported as a row")
				}
				return p
			},
		},
		{
			name:  "both, different, with intent: updated in the cloud",
			setup: func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('cell-push')`); e.Commit() },
			act:   func(e *env) { e.Exec(`UPDATE bucket SET versioning = true WHERE name = 'cell-push'`) },
			check: func(e *env) (p []string) {
				if !e.cloudVersioning("cell-push") {
					p = append(p, "versioning not enabled in the cloud")
				}
				return p
			},
		},
		{
			name:  "both, different, no intent: row updated from the cloud",
			setup: func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('cell-pull')`); e.Commit() },
			act: func(e *env) {
				e.setCloudVersioning("cell-pull", true)
				e.Refresh() // a commit reuses recent reads of what it does not act on
			},
			check: func(e *env) (p []string) {
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-pull' AND versioning`) != 1 {
					p = append(p, "row not updated from the cloud")
				}
				return p
			},
		},
		{
			name: "conflict: user and cloud both changed it, the user wins and the trail says so",
			setup: func(e *env) {
				e.Exec(`INSERT INTO bucket (name, versioning) VALUES ('cell-conflict', true)`)
				e.Commit()
			},
			act: func(e *env) {
				e.Exec(`CALL iasql_begin()`) // keep automatic cycles out of the way
				e.setCloudVersioning("cell-conflict", false)
				e.Exec(`UPDATE bucket SET versioning = true, region = region WHERE name = 'cell-conflict'`)
			},
			check: func(e *env) (p []string) {
				if !e.cloudVersioning("cell-conflict") {
					p = append(p, "the cloud's change won")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'cell-conflict' AND versioning`) != 1 {
					p = append(p, "the row lost the user's value")
				}
				if e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message LIKE '%user''s change wins%cell-conflict%'
					OR change_type = 'CYCLE_END' AND message LIKE '%cell-conflict%user''s change wins%'`) == 0 {
					p = append(p, "no cycle record says the user's change won")
				}
				return p
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			if tc.setup != nil {
				tc.setup(e)
			}
			tc.act(e)
			e.Commit()
			for _, problem := range tc.check(e) {
				t.Error(problem)
			}
			// A second cycle finds nothing to do: the loop has converged.
			e.Commit()
			if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND id = (SELECT max(id) FROM iasql_audit_log WHERE change_type = 'CYCLE_END') AND message LIKE '%in sync, nothing to do%'`); n != 1 {
				t.Error("a second cycle still found work")
			}
		})
	}
}

// TestTransaction: begin, preview, rollback of an insert, an update and a
// delete; preview equal to what commit then executes.
func TestTransaction(t *testing.T) {
	t.Parallel()
	log := &testkit.Log{}
	e := newEnvWith(t, enginetest.Options{Interval: time.Hour, Logger: log.Logger(slog.LevelDebug)})
	e.Exec(`INSERT INTO bucket (name) VALUES ('tx-keep'), ('tx-change'), ('tx-drop')`)
	e.Commit()
	ids := map[string]int{}
	for _, n := range []string{"tx-keep", "tx-change", "tx-drop"} {
		var id int
		if err := e.DB.QueryRow(context.Background(), `SELECT id FROM bucket WHERE name = $1`, n).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids[n] = id
	}

	e.Exec(`CALL iasql_begin()`)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_begin()`)
	if err == nil || !strings.Contains(err.Error(), "already open: opened by") {
		t.Errorf("a second begin: %v", err)
	}
	before := e.Count(`SELECT coalesce(max(id), 0) FROM iasql_audit_log`)
	e.Exec(`INSERT INTO bucket (name) VALUES ('tx-new')`, `UPDATE bucket SET versioning = true WHERE name = 'tx-change'`, `DELETE FROM bucket WHERE name = 'tx-drop'`)
	// Each captured change asks the engine for an automatic cycle (intent),
	// which it holds while the iasql transaction is open. Once the three
	// are captured, the engine's next decision on that intent shows.
	testkit.Until(t, 30*time.Second, "the three changes captured", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_audit_log WHERE id > $1 AND table_name = 'bucket' AND origin = 'user'`, before) == 3
	})
	mark := log.Mark()
	testkit.Until(t, 30*time.Second, "the engine to hold the automatic cycle the changes asked for", func() bool {
		return strings.Contains(log.Since(mark), `msg="automatic cycle held: an iasql transaction is open" reason=intent`)
	})
	if b := e.cloudBuckets(); b["tx-new"] || !b["tx-drop"] || e.cloudVersioning("tx-change") {
		t.Fatalf("the cloud changed while the iasql transaction was open: %v", b)
	}
	preview := previewRows(t, e.DB)
	want := []string{"create cloud bucket tx-new", "delete cloud bucket tx-drop", "update cloud bucket tx-change"}
	if strings.Join(preview, "\n") != strings.Join(want, "\n") {
		t.Errorf("preview:\n%s\nwant:\n%s", strings.Join(preview, "\n"), strings.Join(want, "\n"))
	}

	e.Exec(`CALL iasql_rollback()`)
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-new'`); n != 0 {
		t.Error("rollback kept the inserted row")
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-change' AND NOT versioning`); n != 1 {
		t.Error("rollback did not revert the update")
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-drop' AND id = $1`, ids["tx-drop"]); n != 1 {
		t.Error("rollback did not restore the deleted row under its id")
	}
	if b := e.cloudBuckets(); b["tx-new"] || !b["tx-drop"] || e.cloudVersioning("tx-change") {
		t.Errorf("rollback changed the cloud: %v", b)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_transaction`); n != 0 {
		t.Error("rollback left the transaction open")
	}

	// Preview equals what commit executes.
	e.Exec(`CALL iasql_begin()`)
	e.Exec(`INSERT INTO bucket (name) VALUES ('tx-new2')`, `UPDATE bucket SET versioning = true WHERE name = 'tx-keep'`)
	preview = previewRows(t, e.DB)
	e.Exec(`CALL iasql_commit()`)
	var actions []string
	rows, err := e.DB.Query(context.Background(), `SELECT a->>'action' || ' ' || (a->>'direction') || ' ' || (a->>'table_name') || ' ' || (a->>'cloud_id')
		FROM iasql_requests r, jsonb_array_elements(r.result->'actions') a WHERE r.kind = 'commit' AND r.finished_at = (SELECT max(finished_at) FROM iasql_requests WHERE kind = 'commit') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	actions, err = pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(preview, "\n") != strings.Join(actions, "\n") {
		t.Errorf("preview:\n%s\ncommit did:\n%s", strings.Join(preview, "\n"), strings.Join(actions, "\n"))
	}
	if !e.cloudBuckets()["tx-new2"] || !e.cloudVersioning("tx-keep") {
		t.Error("commit did not apply the changes")
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'tx-new2' AND created_at IS NOT NULL`); n != 1 {
		t.Error("after commit returns, the row does not show the cloud's feedback")
	}

	// rollback without begin is refused with a clear message.
	_, err = e.DB.Exec(context.Background(), `CALL iasql_rollback()`)
	if err == nil || !strings.Contains(err.Error(), "no iasql transaction is open") {
		t.Errorf("rollback without begin: %v", err)
	}
}

func previewRows(t *testing.T, db *pgx.Conn) []string {
	t.Helper()
	rows, err := db.Query(context.Background(), `SELECT action || ' ' || direction || ' ' || table_name || ' ' || cloud_id FROM iasql_preview() ORDER BY 1`)
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	return out
}

// TestConditionalWrites: a user update racing the engine's write-back is
// never lost, over many rounds.
func TestConditionalWrites(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := pgtest.Connect(t, e.DSN)
	for i := 0; i < 25; i++ {
		name := fmt.Sprintf("race-%02d", i)
		e.Exec(`INSERT INTO bucket (name) VALUES ('` + name + `')`)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i%5) * 3 * time.Millisecond)
			if _, err := other.Exec(context.Background(), `UPDATE bucket SET versioning = true WHERE name = $1`, name); err != nil {
				t.Errorf("user update: %v", err)
			}
		}()
		e.Commit()
		wg.Wait()
		e.Commit()
		if n := e.Count(`SELECT count(*) FROM bucket WHERE name = $1 AND versioning AND created_at IS NOT NULL`, name); n != 1 {
			t.Errorf("%s: the user's update or the feedback was lost", name)
		}
		if !e.cloudVersioning(name) {
			t.Errorf("%s: the user's update never reached the cloud", name)
		}
	}
}

// TestInstallUninstall: install imports what exists; uninstall drops the
// tables and leaves the cloud alone; errors are clear.
func TestInstallUninstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	rows := e.Count(`SELECT count(*) FROM iasql_modules_list() WHERE module = 'aws_s3' AND installed`)
	if rows != 1 {
		t.Fatal("aws_s3 not listed as installed")
	}
	e.Exec(`INSERT INTO bucket (name) VALUES ('keep-me')`)
	e.Commit()
	e.Exec(`SELECT * FROM iasql_uninstall('aws_s3')`)
	if n := e.Count(`SELECT count(*) FROM pg_tables WHERE tablename IN ('bucket', 'bucket_object')`); n != 0 {
		t.Error("uninstall left the tables")
	}
	if !e.cloudBuckets()["keep-me"] {
		t.Error("uninstall touched the cloud")
	}
	e.Exec(`SELECT * FROM iasql_install('aws_s3')`)
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'keep-me'`); n != 1 {
		t.Error("install did not import the existing bucket")
	}
	// The user's changes from before the uninstall are history: the new
	// table's rows (whose ids start again) have nothing pending.
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'bucket'`); n != 0 {
		t.Errorf("%d buckets out of sync after the reinstall: %s", n,
			e.String(`SELECT string_agg(concat_ws(' ', record_id, state, action), '; ') FROM iasql_status WHERE table_name = 'bucket'`))
	}
	e.Exec(`SELECT iasql_wait_for_all(10)`)
	_, err := e.DB.Exec(context.Background(), `SELECT * FROM iasql_install('no_such_module')`)
	if err == nil || !strings.Contains(err.Error(), `unknown module "no_such_module"`) {
		t.Errorf("unknown module: %v", err)
	}
}

// TestTwoSidecars: only one runs cycles; each create reaches the cloud once.
func TestTwoSidecars(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	first := e.Stop
	e.StartSidecar(false) // a second sidecar on the same database and cloud
	for i := 0; i < 10; i++ {
		e.Exec(`INSERT INTO bucket (name) VALUES ('two-` + string(rune('a'+i)) + `')`)
	}
	e.Commit()
	e.Commit()
	if got := e.Emu.Calls()["s3:CreateBucket"]; got != 10 {
		t.Errorf("%d CreateBucket calls for 10 new buckets", got)
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name LIKE 'two-%' AND created_at IS NOT NULL`); n != 10 {
		t.Errorf("%d of 10 rows have their feedback", n)
	}
	// The first stops: the second takes over capture and cycles.
	first()
	e.Exec(`INSERT INTO bucket (name) VALUES ('two-after')`)
	testkit.Until(t, 15*time.Second, "the second sidecar to answer", func() bool {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return err == nil
	})
	if !e.cloudBuckets()["two-after"] {
		t.Error("after takeover the new bucket was not created")
	}
	if got := e.Emu.Calls()["s3:CreateBucket"]; got != 11 {
		t.Errorf("%d CreateBucket calls for 11 new buckets", got)
	}
	// Cycle records never overlap.
	overlaps := e.Count(`
		WITH s AS (SELECT id, message::jsonb->>'cycle' AS c, change_type FROM iasql_audit_log WHERE change_type IN ('CYCLE_START', 'CYCLE_END'))
		SELECT count(*) FROM (SELECT change_type, lag(change_type) OVER (ORDER BY id) AS prev FROM s) x WHERE change_type = prev`)
	if overlaps != 0 {
		t.Errorf("%d cycles started before the previous one ended", overlaps)
	}
}

// TestAutomatic: new intent is enacted within 2 seconds without a commit;
// deprecated functions are counted.
func TestAutomatic(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var id int
	if err := e.DB.QueryRow(context.Background(), `INSERT INTO bucket (name) VALUES ('auto-created') RETURNING id`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	// iasql_wait_for returns once the cloud's feedback is in the row.
	var ok bool
	start := time.Now()
	if err := e.DB.QueryRow(context.Background(), `SELECT iasql_wait_for('bucket', $1, 'created_at IS NOT NULL', 10)`, id).Scan(&ok); err != nil || !ok {
		t.Fatalf("iasql_wait_for: %v %v", ok, err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Errorf("the new bucket took %s to be enacted without a commit", waited)
	}
	if !e.cloudBuckets()["auto-created"] {
		t.Error("the bucket is not in the cloud")
	}
	e.Exec(`SELECT iasql_apply()`, `SELECT iasql_apply()`, `SELECT iasql_sync()`)
	testkit.Until(t, 5*time.Second, "deprecated calls to be counted", func() bool {
		return e.Count(`SELECT coalesce(sum(calls), 0)::int FROM iasql_deprecated_calls`) == 3
	})
	if n := e.Count(`SELECT calls::int FROM iasql_deprecated_calls WHERE function_name = 'iasql_apply'`); n != 2 {
		t.Errorf("iasql_apply counted %d times, want 2", n)
	}
}

// TestEngineRecovers: when the engine's own session is killed (a DBA's
// pg_terminate_backend) while capture keeps leading, the engine starts
// again and answers requests.
func TestEngineRecovers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	if n := e.Count(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND application_name IN ('iasql engine', 'iasql cycle')) k`); n == 0 {
		t.Fatal("found no engine session to terminate")
	}
	e.Exec(`INSERT INTO bucket (name) VALUES ('after-kill')`)
	testkit.Until(t, 20*time.Second, "the engine to answer again", func() bool {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return err == nil
	})
	if !e.cloudBuckets()["after-kill"] {
		t.Error("the bucket was not created after the engine recovered")
	}
}
