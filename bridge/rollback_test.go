package bridge_test

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
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
