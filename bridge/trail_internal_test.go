package bridge

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// TestLookupNamesNobodyBeforeSyncOrAfterOwn: a cycle looks up who made a
// change it found with no event, from when the resource was last seen in
// sync. When the newest call CloudTrail has about the resource is the
// sidecar's own, the change found came after it and is not in CloudTrail
// (yet: CloudTrail takes minutes; or not a logged call): nobody is named,
// not whoever called before the sidecar (alice, whose change it already
// reverted). A call before the window (bob's, before the resource was last
// seen in sync) is never named, and a call that failed is no change.
// https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html
func TestLookupNamesNobodyBeforeSyncOrAfterOwn(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(emulator.New(emulator.Options{}))
	t.Cleanup(srv.Close)
	as := func(key string) aws.Config {
		cfg := emulator.ClientConfig(srv.URL)
		cfg.Credentials = credentials.NewStaticCredentialsProvider(key, "secret", "")
		return cfg
	}
	ctx := t.Context()
	sidecar := s3.NewFromConfig(as("SIDECARKEY"), testkit.PathStyle)
	alice, bob := s3.NewFromConfig(as("ALICEKEY"), testkit.PathStyle), s3.NewFromConfig(as("BOBKEY"), testkit.PathStyle)
	if _, err := sidecar.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("looked-up")}); err != nil {
		t.Fatal(err)
	}
	version := func(c *s3.Client, s s3types.BucketVersioningStatus) {
		t.Helper()
		if _, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("looked-up"),
			VersioningConfiguration: &s3types.VersioningConfiguration{Status: s}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := sidecar.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("looked-up"), Key: aws.String("kept"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	version(bob, s3types.BucketVersioningStatusEnabled) // bob's change, before the bucket was last seen in sync
	// The emulator's event times are in seconds (RFC 3339): the window
	// starts at the next second.
	inSync := time.Now().Truncate(time.Second).Add(time.Second)
	testkit.Until(t, 3*time.Second, "the clock to pass the time the bucket was seen in sync", func() bool { return time.Now().After(inSync) })
	tr := &trail{e: &Engine{aws: as("SIDECARKEY")}}
	lookup := func() string {
		t.Helper()
		who, err := tr.Lookup(ctx, "us-east-1", "looked-up", inSync, time.Now().Add(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if who == nil {
			return ""
		}
		return who.Actor + " " + who.Event
	}
	if who := lookup(); who != "" {
		t.Errorf("no call since the bucket was seen in sync, yet Lookup names %s", who)
	}
	version(alice, s3types.BucketVersioningStatusSuspended) // alice's change ...
	if who := lookup(); who != "arn:aws:iam::123456789012:user/ALICEKEY PutBucketVersioning" {
		t.Errorf("alice changed the bucket since it was seen in sync; Lookup names %q", who)
	}
	// A call that failed (BucketNotEmpty; AccessDenied alike) is no
	// change: alice stays the newest.
	if _, err := bob.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("looked-up")}); err == nil {
		t.Fatal("deleting a bucket that holds an object worked")
	}
	if who := lookup(); who != "arn:aws:iam::123456789012:user/ALICEKEY PutBucketVersioning" {
		t.Errorf("bob's DeleteBucket failed; Lookup names %q, want alice still", who)
	}
	version(sidecar, s3types.BucketVersioningStatusEnabled) // ... reverted by the sidecar (ENFORCE)
	if who := lookup(); who != "" {
		t.Errorf("the newest call about the bucket is the sidecar's own, yet Lookup names %s as who made a change found after it", who)
	}
}
