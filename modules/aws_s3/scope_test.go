package aws_s3_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// TestDisabledRegionIsNotSynced: with aws_account installed, a region the
// user disables in aws_regions is not synced: its buckets' rows go
// (nothing is deleted in the cloud), a bucket made there is not imported,
// and commits and refreshes go on working (the region check of the bucket
// table would refuse the import: it must never be tried).
func TestDisabledRegionIsNotSynced(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{aws_account.Module(), aws_s3.Module()},
		Install: []string{"aws_s3", "aws_account"}})
	cl := s3.NewFromConfig(e.AWS, func(o *s3.Options) { o.UsePathStyle = true; o.Region = "eu-west-1" })
	ctx := context.Background()
	mk := func(name string) {
		t.Helper()
		if _, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name),
			CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraintEuWest1}}); err != nil {
			t.Fatal(err)
		}
	}
	mk("scope-before")
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name = 'scope-before' AND region = 'eu-west-1'`); n != 1 {
		t.Fatalf("the bucket in an enabled region was not imported (%d rows)", n)
	}
	e.Exec(`UPDATE aws_regions SET is_enabled = false WHERE region = 'eu-west-1'`)
	e.Commit()
	mk("scope-after")
	e.Refresh()
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM bucket WHERE region = 'eu-west-1'`); n != 0 {
		t.Errorf("%d bucket rows in the disabled region", n)
	}
	for _, name := range []string{"scope-before", "scope-after"} {
		if _, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Errorf("bucket %s in the disabled region is gone from the cloud: %v", name, err)
		}
	}
}
