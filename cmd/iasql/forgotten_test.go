package main_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestFailedRecordGoesWithItsRow: a create the cloud refuses leaves its
// record failed in iasql_status and iasql_operations (and iasql status
// exits 2); once the user deletes the row and commits, nothing of it is
// left: the record is no longer shown, and iasql status exits 0. Each case
// is one way a create fails: a denied call, and an IAM role whose managed
// policy does not exist (AttachRolePolicy answers NoSuchEntity:
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_AttachRolePolicy.html),
// which leaves the role half made in the cloud.
func TestFailedRecordGoesWithItsRow(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, module, table string
		fault               *emulator.Fault
		insert              string
	}{
		{name: "denied bucket", module: "aws_s3", table: "bucket", fault: &emulator.Fault{Op: "s3:CreateBucket", Kind: emulator.Denied},
			insert: `INSERT INTO bucket (name) VALUES ('forgotten-refused')`},
		{name: "role with a policy that does not exist", module: "aws_iam", table: "iam_role",
			insert: `INSERT INTO iam_role (role_name, assume_role_policy_document, attached_policy_arns)
			         VALUES ('forgotten-role', '{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"ec2.amazonaws.com"},"Action":"sts:AssumeRole"}]}',
			                 ARRAY['arn:aws:iam::aws:policy/NoSuchPolicyAnywhere'])`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			dsn := srv.NewDB(t)
			es := testkit.StartCloud(t, emulator.Options{})
			emu := es.Emu
			sc := startSidecar(t, es.URL, "--dsn", dsn, "--log-format", "json")
			sc.WaitLog(time.Minute, regexp.MustCompile(`"msg":"(engine running)"`))
			conn := pgtest.Connect(t, dsn)
			exec := func(q string) error {
				_, err := conn.Exec(ctx, q)
				return err
			}
			count := func(q string) int {
				var n int
				if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				return n
			}
			if err := exec(`SELECT * FROM iasql_install('` + tc.module + `')`); err != nil {
				t.Fatalf("install %s: %v\n%s", tc.module, err, sc.Log.String())
			}
			if tc.fault != nil {
				emu.Inject(*tc.fault)
			}
			if err := exec(tc.insert); err != nil {
				t.Fatal(err)
			}
			if err := exec(`CALL iasql_commit()`); err == nil {
				t.Fatal("a commit the cloud refuses succeeded")
			}
			if n := count(`SELECT count(*) FROM iasql_status WHERE table_name = '` + tc.table + `' AND state = 'failed'`); n != 1 {
				t.Fatalf("%d failed records in iasql_status after the refused create, want 1", n)
			}
			if r := testkit.Run(t, 30*time.Second, "status", "--dsn", dsn); r.Code != 2 {
				t.Fatalf("status with a failing record: exit %d, want 2\n%s%s", r.Code, r.Stdout, r.Stderr)
			}

			// The user gives up on it: the row goes, and its failure with it.
			if err := exec(`DELETE FROM ` + tc.table); err != nil {
				t.Fatal(err)
			}
			if err := exec(`CALL iasql_commit()`); err != nil {
				t.Fatalf("commit after deleting the failed row: %v\n%s", err, sc.Log.String())
			}
			if err := exec(`CALL iasql_refresh()`); err != nil {
				t.Fatalf("refresh: %v", err)
			}
			if n := count(`SELECT count(*) FROM ` + tc.table); n != 0 {
				t.Errorf("%d %s rows after the user deleted the row and committed, want 0", n, tc.table)
			}
			if n := count(`SELECT count(*) FROM iasql_status`); n != 0 {
				var rows []string
				rs, _ := conn.Query(ctx, `SELECT format('%s %s %s %s', table_name, record_id, state, last_error) FROM iasql_status`)
				for rs.Next() {
					var s string
					_ = rs.Scan(&s)
					rows = append(rows, s)
				}
				rs.Close()
				t.Errorf("iasql_status after the row was deleted: %s", strings.Join(rows, "; "))
			}
			if n := count(`SELECT count(*) FROM iasql_operations`); n != 0 {
				t.Errorf("%d rows in iasql_operations after the row was deleted, want 0", n)
			}
			if r := testkit.Run(t, 30*time.Second, "status", "--dsn", dsn); r.Code != 0 {
				t.Errorf("status after the failed row was deleted: exit %d, want 0\n%s%s", r.Code, r.Stdout, r.Stderr)
			}
		})
	}
}
