package bridge

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// TestReviewLookupSkipsOwnNewest: a cycle looks up who made a change it
// found with no event. When the newest call CloudTrail has about the
// resource is the sidecar's own, the change found came after it and is
// not in CloudTrail (yet: CloudTrail takes minutes; or not a logged call),
// so nobody can be named; Lookup skips the sidecar's call and names
// whoever called before it (here alice, whose change the sidecar already
// reverted), and it has no StartTime, so that may be weeks old.
// https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html
func TestReviewLookupSkipsOwnNewest(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(emulator.New(emulator.Options{}))
	t.Cleanup(srv.Close)
	as := func(key string) aws.Config {
		cfg := emulator.ClientConfig(srv.URL)
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, "secret", "")
		return cfg
	}
	ctx := t.Context()
	sidecar, alice := s3.NewFromConfig(as("SIDECARKEY"), testkit.PathStyle), s3.NewFromConfig(as("ALICEKEY"), testkit.PathStyle)
	if _, err := sidecar.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("looked-up")}); err != nil {
		t.Fatal(err)
	}
	version := func(c *s3.Client, s s3types.BucketVersioningStatus) {
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("looked-up"),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s}}); err != nil {
			t.Fatal(err)
		}
	}
	version(alice, s3types.BucketVersioningStatusEnabled)     // alice's change ...
	version(sidecar, s3types.BucketVersioningStatusSuspended) // ... reverted by the sidecar (ENFORCE)
	tr := &trail{e: &Engine{aws: as("SIDECARKEY")}}
	who, err := tr.Lookup(ctx, "us-east-1", "looked-up", time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if who != nil {
		t.Errorf("the newest call about the bucket is the sidecar's own, yet Lookup names %s (%s at %s) as who made a change found after it", who.Actor, who.Event, who.At)
	}
}
