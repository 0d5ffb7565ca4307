package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/testkit"
)

// trackedWrite checks that a user write to a tracked record is refused
// when it is written, naming the rule (the RFC's blocking mutation), then
// makes it the way that bypasses the check (triggers off, as a restore or a
// hand-registered table would): the next cycle undoes it, the backstop.
func (e *env) trackedWrite(stmt, rule string) {
	e.T.Helper()
	ctx := context.Background()
	_, err := e.DB.Exec(ctx, stmt)
	if err == nil || !strings.Contains(err.Error(), "is refused") || !strings.Contains(err.Error(), rule) || !strings.Contains(err.Error(), "TRACK") {
		e.T.Fatalf("%s on a tracked record: %v; want it refused naming the %s", stmt, err, rule)
	}
	tx, err := e.DB.Begin(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
		e.T.Fatal(err)
	}
	if _, err := tx.Exec(ctx, stmt); err != nil {
		e.T.Fatalf("%s, bypassing the check: %v", stmt, err)
	}
	if err := tx.Commit(ctx); err != nil {
		e.T.Fatal(err)
	}
}

// TestModes: ENFORCE and TRACK at database, table and record level, with
// the outcomes a user checks in the cloud and in the rows.
func TestModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules string                // INSERT INTO iasql_mode ... (run after the setup)
		act   func(e *env)          // the change
		check func(e *env) []string // problems
	}{
		{
			name:  "TRACK (database): a user delete is undone, the bucket survives",
			rules: `INSERT INTO iasql_mode (mode) VALUES ('TRACK')`,
			act:   func(e *env) { e.trackedWrite(`DELETE FROM bucket WHERE name = 'mode-a'`, "database rule") },
			check: func(e *env) (p []string) {
				if !e.cloudBuckets()["mode-a"] {
					p = append(p, "the tracked bucket was deleted in the cloud")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-a'`) != 1 {
					p = append(p, "the row did not come back")
				}
				if e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message LIKE '%WARNING: TRACK by database rule%'`) == 0 {
					p = append(p, "no WARNING in the trail naming the rule")
				}
				return p
			},
		},
		{
			name:  "TRACK (table): a user insert is undone, nothing is created",
			rules: `INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'TRACK')`,
			// With triggers off (the bypass) nothing fills in the columns
			// with a default (module.Column.Filled): the write gives them.
			act: func(e *env) {
				e.trackedWrite(`INSERT INTO bucket (name, region, versioning) VALUES ('mode-new', public.bucket_default_region(), false)`, "table rule")
			},
			check: func(e *env) (p []string) {
				if e.cloudBuckets()["mode-new"] {
					p = append(p, "a tracked table created a bucket")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-new'`) != 0 {
					p = append(p, "the inserted row was not removed")
				}
				return p
			},
		},
		{
			name:  "ENFORCE (database): a bucket created out of band is deleted",
			rules: `INSERT INTO iasql_mode (mode) VALUES ('ENFORCE')`,
			act: func(e *env) {
				if _, err := e.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("mode-rogue")}); err != nil {
					e.T.Fatal(err)
				}
			},
			check: func(e *env) (p []string) {
				if e.cloudBuckets()["mode-rogue"] {
					p = append(p, "the out-of-band bucket survived ENFORCE")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-rogue'`) != 0 {
					p = append(p, "the out-of-band bucket was imported")
				}
				if e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message LIKE '%ENFORCE by database rule%'`) == 0 {
					p = append(p, "the trail does not say what was reverted and why")
				}
				return p
			},
		},
		{
			name:  "ENFORCE (table): a bucket deleted out of band is recreated",
			rules: `INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'ENFORCE')`,
			act: func(e *env) {
				if _, err := e.s3.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String("mode-a")}); err != nil {
					e.T.Fatal(err)
				}
			},
			check: func(e *env) (p []string) {
				if !e.cloudBuckets()["mode-a"] {
					p = append(p, "the deleted bucket was not recreated")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-a'`) != 1 {
					p = append(p, "the row was deleted")
				}
				return p
			},
		},
		{
			name:  "ENFORCE (record): drift in one bucket's versioning is reverted",
			rules: `INSERT INTO iasql_mode (table_name, record_id, mode) SELECT 'bucket', id, 'ENFORCE' FROM bucket WHERE name = 'mode-a'`,
			act:   func(e *env) { e.setCloudVersioning("mode-a", true); e.setCloudVersioning("mode-b", true) },
			check: func(e *env) (p []string) {
				if e.cloudVersioning("mode-a") {
					p = append(p, "the enforced bucket kept the drift")
				}
				if e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-b' AND versioning`) != 1 {
					p = append(p, "the NORMAL bucket did not take the cloud's change")
				}
				return p
			},
		},
		{
			name:  "the RFC's example: ('ENFORCE', NULL), ('TRACK', 'bucket_object') enforces all but objects",
			rules: `INSERT INTO iasql_mode (mode, table_name) VALUES ('ENFORCE', NULL), ('TRACK', 'bucket_object')`,
			act: func(e *env) {
				ctx := context.Background()
				if _, err := e.s3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("mode-extra")}); err != nil {
					e.T.Fatal(err)
				}
				if _, err := e.s3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("mode-a"), Key: aws.String("user-data.txt"), Body: strings.NewReader("hello")}); err != nil {
					e.T.Fatal(err)
				}
			},
			check: func(e *env) (p []string) {
				if e.cloudBuckets()["mode-extra"] {
					p = append(p, "the extra bucket survived ENFORCE")
				}
				if e.Count(`SELECT count(*) FROM bucket_object o JOIN bucket b ON b.id = o.bucket_id WHERE b.name = 'mode-a' AND o.key = 'user-data.txt' AND o.size = 5`) != 1 {
					p = append(p, "the tracked object was not imported")
				}
				return p
			},
		},
		{
			name: "NORMAL (table) inside a TRACK database: the table syncs both ways",
			rules: `INSERT INTO iasql_mode (mode) VALUES ('TRACK');
			        INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'NORMAL')`,
			act: func(e *env) { e.Exec(`INSERT INTO bucket (name) VALUES ('mode-normal')`) },
			check: func(e *env) (p []string) {
				if !e.cloudBuckets()["mode-normal"] {
					p = append(p, "the NORMAL table rule did not win over the TRACK database rule")
				}
				return p
			},
		},
		{
			name: "the RFC's example: enforce everything, carve one record out as TRACK",
			rules: `INSERT INTO iasql_mode (table_name, record_id, mode) VALUES (NULL, NULL, 'ENFORCE');
			        INSERT INTO iasql_mode (table_name, record_id, mode) SELECT 'bucket', id, 'TRACK' FROM bucket WHERE name = 'mode-b'`,
			act: func(e *env) {
				e.setCloudVersioning("mode-a", true)
				e.setCloudVersioning("mode-b", true)
			},
			check: func(e *env) (p []string) {
				if e.cloudVersioning("mode-a") {
					p = append(p, "the database rule did not enforce mode-a")
				}
				if !e.cloudVersioning("mode-b") || e.Count(`SELECT count(*) FROM bucket WHERE name = 'mode-b' AND versioning`) != 1 {
					p = append(p, "the record rule did not track mode-b")
				}
				return p
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.Exec(`INSERT INTO bucket (name) VALUES ('mode-a'), ('mode-b')`)
			e.Commit()
			e.Exec(`CALL iasql_begin()`) // keep automatic cycles out of the way
			e.Exec(tc.rules)
			tc.act(e)
			e.Commit()
			for _, problem := range tc.check(e) {
				t.Error(problem)
			}
			e.Commit()
			if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE id = (SELECT max(id) FROM iasql_audit_log WHERE change_type = 'CYCLE_END') AND message LIKE '%in sync, nothing to do%'`); n != 1 {
				t.Error("a second cycle still found work")
			}
		})
	}
}

// TestPreviewShowsMode: each planned action names the mode and the rule
// that decided it.
func TestPreviewShowsMode(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) VALUES ('pm-a')`)
	e.Commit()
	// The delete comes first: once the table is tracked, it is refused.
	e.Exec(`CALL iasql_begin()`, `DELETE FROM bucket WHERE name = 'pm-a'`, `INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'TRACK')`)
	var mode, desc string
	if err := e.DB.QueryRow(context.Background(), `SELECT mode, description FROM iasql_preview() WHERE cloud_id = 'pm-a'`).Scan(&mode, &desc); err != nil {
		t.Fatal(err)
	}
	if mode != "TRACK by table rule 1 (bucket)" {
		t.Errorf("preview mode %q", mode)
	}
	e.Exec(`CALL iasql_rollback()`)
}

// TestModeChangesCaptured: a change to iasql_mode is a user change in the
// audit trail.
func TestModeChangesCaptured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO iasql_mode (mode) VALUES ('TRACK')`, `UPDATE iasql_mode SET mode = 'ENFORCE'`)
	testkit.Until(t, 10*time.Second, "mode changes in the audit trail", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_audit_log WHERE table_name = 'iasql_mode' AND origin = 'user'`) == 2
	})
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE table_name = 'iasql_mode' AND change_type = 'UPDATE' AND old_row->>'mode' = 'TRACK' AND new_row->>'mode' = 'ENFORCE'`); n != 1 {
		t.Error("the mode update is not in the trail with its old and new rows")
	}
}
