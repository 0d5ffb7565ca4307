package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

// TestRollbackKeepsPrimaryKeys: begin, rename a bucket (a change of its
// cloud identity), rollback. The row comes back under the id it had, and
// its object row (which references it) keeps its id and reference: an
// application holding those ids still finds them. Nothing changes in the
// cloud.
func TestRollbackKeepsPrimaryKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) VALUES ('rb-old')`)
	e.Commit()
	if _, err := e.s3.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("rb-old"), Key: aws.String("keep.txt"),
		Body: strings.NewReader("kept")}); err != nil {
		t.Fatal(err)
	}
	e.Refresh() // imports the object as a row
	bucketID := e.String(`SELECT id::text FROM bucket WHERE name = 'rb-old'`)
	objectID := e.String(`SELECT id::text FROM bucket_object WHERE key = 'keep.txt' AND bucket_id = $1`, bucketID)

	e.Exec(`CALL iasql_begin()`)
	e.Exec(`UPDATE bucket SET name = 'rb-new' WHERE name = 'rb-old'`)
	e.Exec(`CALL iasql_rollback()`)

	if got := e.String(`SELECT coalesce(string_agg(id::text || ' ' || name, ', '), '') FROM bucket WHERE name LIKE 'rb-%'`); got != bucketID+" rb-old" {
		t.Errorf("after the rollback the buckets are %q, want %q (the same id)", got, bucketID+" rb-old")
	}
	if got := e.String(`SELECT coalesce(string_agg(id::text || ' ' || bucket_id, ', '), '') FROM bucket_object WHERE key = 'keep.txt'`); got != objectID+" "+bucketID {
		t.Errorf("after the rollback the object rows are %q, want %q (the same id, the same bucket)", got, objectID+" "+bucketID)
	}
	if b := e.cloudBuckets(); !b["rb-old"] || b["rb-new"] {
		t.Errorf("the rollback changed the cloud: %v", b)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records out of sync after the rollback", n)
	}
}

// rollbackCase is a set of rows written after iasql_begin and rolled back.
type rollbackCase struct {
	name string
	// before: rows committed before the transaction (they stay).
	before []string
	// writes: what the transaction writes.
	writes []string
	// expire: the owner's session ends instead of rolling back (the
	// engine's expiry rolls it back).
	expire bool
}

// moduleTables are the tables a rollback case may touch, parents first.
var moduleTables = []string{"vpc", "subnet", "security_group", "security_group_rule", "instance", "load_balancer", "target_group", "target", "listener"}

// rows lists every row of the module tables (table and id), as a user
// would check what the database holds.
func rows(t *testing.T, e *enginetest.Env) string {
	t.Helper()
	var parts []string
	for _, table := range moduleTables {
		what := "id::text"
		if table == "instance" {
			what = "id || ' in ' || subnet_id" // its references are the rows' too
		}
		parts = append(parts, table+": "+e.String(`SELECT coalesce(string_agg(`+what+`, ',' ORDER BY id), '') FROM `+table))
	}
	return strings.Join(parts, "; ")
}

// stack is a VPC, a subnet in it, a security group in it and an instance
// using both, named prefix.
func stack(prefix string, octet int) []string {
	vpc := fmt.Sprintf(`(SELECT id FROM vpc WHERE tags->>'Name' = '%s')`, prefix)
	return []string{
		fmt.Sprintf(`INSERT INTO vpc (cidr_block, region, tags) VALUES ('10.%d.0.0/16', 'us-east-1', '{"Name": "%s"}')`, octet, prefix),
		fmt.Sprintf(`INSERT INTO subnet (vpc_id, region, cidr_block, availability_zone, tags) VALUES (%s, 'us-east-1', '10.%d.1.0/24', 'us-east-1a', '{"Name": "%s"}')`, vpc, octet, prefix),
		fmt.Sprintf(`INSERT INTO security_group (group_name, description, vpc_id, region) VALUES ('%s-sg', 'rollback test', %s, 'us-east-1')`, prefix, vpc),
		fmt.Sprintf(`INSERT INTO instance (ami, instance_type, subnet_id, security_group_ids, region, tags)
		 VALUES ('ami-0123456789abcdef0', 't3.micro', (SELECT id FROM subnet WHERE tags->>'Name' = '%s'),
		         ARRAY(SELECT id FROM security_group WHERE group_name = '%s-sg'), 'us-east-1', '{"Name": "%s"}')`, prefix, prefix, prefix),
	}
}

// TestRollbackOfAStack: rows written after iasql_begin that reference one
// another (a VPC, a subnet and a security group in it, an instance using
// both; the web tier of the README) are all gone after the rollback,
// whether its owner rolls back or its session ends and the transaction
// expires; nothing is made in the cloud, and other sessions write again.
// An instance inserted in an existing subnet goes, the subnet stays; an
// instance moved to a new subnet goes back to its own; a stack deleted
// comes back, under the same ids, and nothing of it is deleted in the
// cloud.
func TestRollbackOfAStack(t *testing.T) {
	t.Parallel()
	for _, tc := range []rollbackCase{
		{name: "stack", writes: stack("rb", 31)},
		{name: "stack, session ended", writes: stack("rb", 32), expire: true},
		{name: "web tier", writes: webtier.Default().Statements()},
		{name: "instance in an existing subnet", before: stack("rb", 33)[:3], writes: stack("rb", 33)[3:]},
		{name: "instance moved to a new subnet", before: stack("rb", 35), writes: []string{
			`INSERT INTO subnet (vpc_id, region, cidr_block, availability_zone) SELECT id, region, '10.35.2.0/24', 'us-east-1b' FROM vpc WHERE tags->>'Name' = 'rb'`,
			`UPDATE instance SET subnet_id = (SELECT id FROM subnet WHERE cidr_block = '10.35.2.0/24')`}},
		{name: "stack deleted", before: stack("rb", 34), writes: []string{`DELETE FROM instance`, `DELETE FROM vpc WHERE tags->>'Name' = 'rb'`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := enginetest.New(t, srv, enginetest.Options{Modules: modules.All(), Install: []string{"aws_elb"}, TransactionTimeout: 2 * time.Second})
			if len(tc.before) > 0 {
				e.Exec(tc.before...)
				e.Commit()
			}
			want := rows(t, e)
			e.Emu.Reset()
			owner := session(t, e, "")
			for _, q := range append([]string{`CALL iasql_begin()`}, tc.writes...) {
				if err := execErr(owner, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if tc.expire {
				owner.Close(context.Background())
				testkit.Until(t, 30*time.Second, "the expired transaction rolled back", func() bool {
					return e.Count(`SELECT count(*) FROM iasql_transaction`) == 0
				})
			} else if err := execErr(owner, `CALL iasql_rollback()`); err != nil {
				t.Fatalf("the rollback: %v", err)
			}
			if got := rows(t, e); got != want {
				t.Errorf("after the rollback the rows are\n %s\nwant\n %s", got, want)
			}
			if m := e.Mutations(); len(m) != 0 {
				t.Errorf("the rollback changed the cloud: %v", m)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_transaction`); n != 0 {
				t.Error("the iasql transaction is still open after the rollback")
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
				t.Errorf("%d records out of sync after the rollback: %s", n,
					e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, state, action, last_error), '; ') FROM iasql_status`))
			}
			other := session(t, e, "")
			if err := execErr(other, `INSERT INTO vpc (cidr_block, region) VALUES ('10.99.0.0/16', 'us-east-1')`); err != nil {
				t.Errorf("another session's write after the rollback: %v", err)
			}
		})
	}
}

// TestRollbackThatCannotFinish: the rollback of the stack cannot delete
// the instance row (the cloud's instances cannot be read, so nothing is
// done to instance rows), and so neither the group, subnet and VPC rows it
// uses. The rollback says what blocks it, and the transaction is rolled
// back all the same: it is closed, other sessions write, nothing of it
// reaches the cloud; once the instances can be read again, the next
// cycle finishes restoring.
func TestRollbackThatCannotFinish(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{Modules: modules.All(), Install: []string{"aws_elb"}})
	want := rows(t, e)
	e.Emu.Reset()
	e.Exec(append([]string{`CALL iasql_begin()`}, stack("rb", 36)...)...)
	e.Emu.Inject(emulator.Fault{Op: "ec2:DescribeInstances", Kind: emulator.Denied})
	_, err := e.DB.Exec(context.Background(), `CALL iasql_rollback()`)
	if err == nil || !strings.Contains(err.Error(), "is still used by instance row(s)") || !strings.Contains(err.Error(), "the iasql transaction is rolled back") {
		t.Fatalf("the rollback that cannot finish: %v; want it to say the transaction is rolled back, and what blocks the rest", err)
	}
	if !strings.Contains(err.Error(), "could not be read: instance") {
		t.Errorf("the rollback's error does not say the instances could not be read: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_transaction`); n != 0 {
		t.Error("the iasql transaction is still open after the rollback")
	}
	other := session(t, e, "")
	if err := execErr(other, `INSERT INTO vpc (cidr_block, region, tags) VALUES ('10.99.0.0/16', 'us-east-1', '{"Name": "rb-after"}')`); err != nil {
		t.Errorf("another session's write after the rollback: %v", err)
	}
	if err := execErr(other, `DELETE FROM vpc WHERE tags->>'Name' = 'rb-after'`); err != nil {
		t.Fatal(err)
	}
	e.Emu.ClearFaults()
	e.Refresh()
	if got := rows(t, e); got != want {
		t.Errorf("after the rollback and a refresh the rows are\n %s\nwant\n %s", got, want)
	}
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the rollback changed the cloud: %v", m)
	}
}
