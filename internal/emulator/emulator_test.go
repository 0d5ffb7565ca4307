package emulator_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// env is an emulator behind an httptest server and S3 clients for it.
type env struct {
	em  *emulator.Emulator
	url string
}

func newEnv(t *testing.T, opts emulator.Options) *env {
	t.Helper()
	cl := testkit.StartCloud(t, opts)
	return &env{em: cl.Emu, url: cl.URL}
}

// sdkEnv is an emulator, a constructor of one service's clients for it
// (newClient is the service's NewFromConfig), one per signing region and
// without retries (testkit.Clients), and the emulator's URL.
func sdkEnv[C, O any](t testing.TB, newClient func(aws.Config, ...func(*O)) C) (*emulator.Emulator, func(region string) C, string) {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{})
	return cl.Emu, testkit.Clients(cl.AWS, newClient), cl.URL
}

// client is a current aws-sdk-go-v2 S3 client with its default checksum
// behaviour, signing for region.
func (e *env) client(region string) *s3.Client {
	cfg := aws.Config{
		Region: region,
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
		BaseEndpoint:     aws.String(e.url),
		RetryMaxAttempts: 1,
	}
	return s3.NewFromConfig(cfg, testkit.PathStyle)
}

func errCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if err != nil {
		return "non-API error: " + err.Error()
	}
	return ""
}

// pages returns every page of a listing, read with its paginator's
// HasMorePages and NextPage; an error fails the test.
func pages[O, Opt any](t testing.TB, more func() bool, next func(context.Context, ...func(*Opt)) (O, error)) []O {
	t.Helper()
	var all []O
	for more() {
		page, err := next(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page)
	}
	return all
}

// errCase is a call and the error code it must fail with ("" for
// success).
type errCase struct {
	name string
	call func() error
	code string
}

// wantCodes runs each case as a subtest.
func wantCodes(t *testing.T, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); errCode(err) != tc.code {
				t.Errorf("error code %q (%v), want %q", errCode(err), err, tc.code)
			}
		})
	}
}

func createBucket(ctx context.Context, c *s3.Client, name, region string) error {
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	_, err := c.CreateBucket(ctx, in)
	return err
}

func mustCreate(t *testing.T, e *env, name, region string) {
	t.Helper()
	if err := createBucket(t.Context(), e.client(region), name, region); err != nil {
		t.Fatalf("create bucket %s in %s: %v", name, region, err)
	}
}

func TestBucketErrors(t *testing.T) {
	e := newEnv(t, emulator.Options{ForeignBuckets: []string{"someone-elses"}})
	mustCreate(t, e, "east", "us-east-1")
	mustCreate(t, e, "west", "eu-west-1")
	ctx := t.Context()
	us, eu := e.client("us-east-1"), e.client("eu-west-1")
	wantCodes(t, []errCase{
		{"re-create in us-east-1 is OK (legacy)", func() error { return createBucket(ctx, us, "east", "us-east-1") }, ""},
		{"re-create elsewhere", func() error { return createBucket(ctx, eu, "west", "eu-west-1") }, "BucketAlreadyOwnedByYou"},
		{"re-create in another region", func() error { return createBucket(ctx, eu, "east", "eu-west-1") }, "BucketAlreadyOwnedByYou"},
		{"foreign name", func() error { return createBucket(ctx, us, "someone-elses", "us-east-1") }, "BucketAlreadyExists"},
		{"foreign bucket access", func() error {
			_, err := us.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("someone-elses")})
			return err
		}, "AccessDenied"},
		{"uppercase name", func() error { return createBucket(ctx, us, "Logs", "us-east-1") }, "InvalidBucketName"},
		{"short name", func() error { return createBucket(ctx, us, "ab", "us-east-1") }, "InvalidBucketName"},
		{"adjacent dots", func() error { return createBucket(ctx, us, "a..b", "us-east-1") }, "InvalidBucketName"},
		{"ip address", func() error { return createBucket(ctx, us, "192.168.1.1", "us-east-1") }, "InvalidBucketName"},
		{"explicit us-east-1 constraint", func() error {
			_, err := us.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("x-explicit"),
				CreateBucketConfiguration: &types.CreateBucketConfiguration{LocationConstraint: "us-east-1"}})
			return err
		}, "InvalidLocationConstraint"},
		{"no constraint on a regional endpoint", func() error {
			_, err := eu.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("x-unspecified")})
			return err
		}, "IllegalLocationConstraintException"},
		{"constraint for another regional endpoint", func() error { return createBucket(ctx, eu, "x-other", "ap-south-1") }, "IllegalLocationConstraintException"},
		{"us-east-1 endpoint accepts any constraint", func() error { return createBucket(ctx, us, "x-from-global", "ap-south-1") }, ""},
		{"delete missing", func() error {
			_, err := us.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("missing")})
			return err
		}, "NoSuchBucket"},
		{"versioning of missing", func() error {
			_, err := us.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("missing")})
			return err
		}, "NoSuchBucket"},
		{"location of missing", func() error {
			_, err := us.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("missing")})
			return err
		}, "NoSuchBucket"},
		{"list objects of missing", func() error {
			_, err := us.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("missing")})
			return err
		}, "NoSuchBucket"},
		{"head missing", func() error {
			_, err := us.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("missing")})
			return err
		}, "NotFound"},
		{"wrong region", func() error {
			_, err := us.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("west")})
			return err
		}, "AuthorizationHeaderMalformed"},
		{"wrong region for objects", func() error {
			_, err := eu.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("east")})
			return err
		}, "AuthorizationHeaderMalformed"},
		{"location from any region", func() error {
			_, err := us.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String("west")})
			return err
		}, ""},
		{"invalid max-buckets", func() error {
			_, err := us.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(20000)})
			return err
		}, "InvalidArgument"},
		{"unimplemented subresource", func() error {
			_, err := us.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("east")})
			return err
		}, "NotImplemented"},
		{"suspend versioning of a new bucket", func() error {
			_, err := us.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("east"),
				VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
			return err
		}, ""},
	})
}

func TestBucketLifecycle(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := t.Context()
	c := e.client("us-east-1")
	before := time.Now().Add(-time.Second)
	mustCreate(t, e, "logs", "us-east-1")
	mustCreate(t, e, "eu-logs", "eu-central-1")

	out, err := c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if got := bucketNames(out.Buckets); !slices.Equal(got, []string{"eu-logs", "logs"}) {
		t.Fatalf("buckets %v", got)
	}
	for _, b := range out.Buckets {
		if b.BucketRegion != nil {
			t.Errorf("%s: BucketRegion %q without a request parameter (AWS leaves it out)", *b.Name, *b.BucketRegion)
		}
		if b.CreationDate == nil || b.CreationDate.Before(before) || b.CreationDate.After(time.Now().Add(time.Second)) {
			t.Errorf("%s: creation date %v", *b.Name, b.CreationDate)
		}
	}
	out, err = c.ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(100)})
	if err != nil {
		t.Fatal(err)
	}
	regions := map[string]string{}
	for _, b := range out.Buckets {
		regions[*b.Name] = aws.ToString(b.BucketRegion)
	}
	if want := map[string]string{"logs": "us-east-1", "eu-logs": "eu-central-1"}; !maps.Equal(regions, want) {
		t.Errorf("regions %v, want %v", regions, want)
	}

	for name, want := range map[string]types.BucketLocationConstraint{"logs": "", "eu-logs": "eu-central-1"} {
		loc, err := c.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if loc.LocationConstraint != want {
			t.Errorf("%s: location %q, want %q", name, loc.LocationConstraint, want)
		}
	}
	head, err := e.client("eu-central-1").HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("eu-logs")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(head.BucketRegion) != "eu-central-1" {
		t.Errorf("HeadBucket region %q", aws.ToString(head.BucketRegion))
	}

	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("logs")}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.client("eu-central-1").DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("eu-logs")}); err != nil {
		t.Fatal(err)
	}
	out, err = c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Buckets) != 0 {
		t.Errorf("buckets after delete: %v", bucketNames(out.Buckets))
	}
}

func bucketNames(bs []types.Bucket) []string {
	var out []string
	for _, b := range bs {
		out = append(out, aws.ToString(b.Name))
	}
	return out
}

func TestListBucketsPagination(t *testing.T) {
	cases := []struct {
		name       string
		opts       emulator.Options
		in         s3.ListBucketsInput
		wantPages  int
		wantNames  int
		wantRegion bool
	}{
		{"pages of 10", emulator.Options{}, s3.ListBucketsInput{MaxBuckets: aws.Int32(10)}, 3, 25, true},
		{"one page", emulator.Options{}, s3.ListBucketsInput{MaxBuckets: aws.Int32(1000)}, 1, 25, true},
		{"exact pages", emulator.Options{}, s3.ListBucketsInput{MaxBuckets: aws.Int32(5)}, 5, 25, true},
		{"prefix", emulator.Options{}, s3.ListBucketsInput{MaxBuckets: aws.Int32(10), Prefix: aws.String("bucket-1")}, 1, 10, true},
		{"region filter", emulator.Options{}, s3.ListBucketsInput{BucketRegion: aws.String("eu-west-1")}, 1, 3, true},
		{"legacy server ignores parameters", emulator.Options{LegacyListBuckets: true}, s3.ListBucketsInput{MaxBuckets: aws.Int32(10)}, 1, 25, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.opts)
			for i := range 25 {
				region := "us-east-1"
				if i%10 == 3 {
					region = "eu-west-1"
				}
				mustCreate(t, e, fmt.Sprintf("bucket-%02d", i), region)
			}
			e.em.Reset()
			p := s3.NewListBucketsPaginator(e.client("us-east-1"), &tc.in)
			var names []string
			for _, out := range pages(t, p.HasMorePages, p.NextPage) {
				for _, b := range out.Buckets {
					names = append(names, *b.Name)
					if (b.BucketRegion != nil) != tc.wantRegion {
						t.Errorf("%s: BucketRegion %v", *b.Name, b.BucketRegion)
					}
				}
			}
			if len(names) != tc.wantNames || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
				t.Errorf("names %v: want %d sorted, distinct", names, tc.wantNames)
			}
			if got := e.em.Calls()["s3:ListBuckets"]; got != tc.wantPages {
				t.Errorf("%d ListBuckets calls, want %d", got, tc.wantPages)
			}
		})
	}
}

// TestAddBuckets checks that buckets added without requests are what
// CreateBucket would have made: listed in their region, with a creation
// date, owned (CreateBucket again in us-east-1 is 200 OK), versioning
// never set; that they page with the buckets CreateBucket made; and that
// a bad name or an existing bucket adds none.
func TestAddBuckets(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := t.Context()
	created := time.Date(2024, 5, 6, 7, 8, 9, 123_000_000, time.UTC)
	if err := e.em.AddBuckets("eu-west-1", created, "added-2", "added-1"); err != nil {
		t.Fatal(err)
	}
	if err := e.em.AddBuckets("us-east-1", created, "added-3"); err != nil {
		t.Fatal(err)
	}
	out, err := e.client("us-east-1").ListBuckets(ctx, &s3.ListBucketsInput{MaxBuckets: aws.Int32(10)})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range out.Buckets {
		if b.CreationDate == nil || !b.CreationDate.Equal(created) {
			t.Errorf("%s: creation date %v, want %v", *b.Name, b.CreationDate, created)
		}
		got = append(got, *b.Name+"@"+aws.ToString(b.BucketRegion))
	}
	if want := []string{"added-1@eu-west-1", "added-2@eu-west-1", "added-3@us-east-1"}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
	v, err := e.client("eu-west-1").GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("added-1")})
	if err != nil || v.Status != "" {
		t.Errorf("versioning of added-1: %q (%v), want never set", v.Status, err)
	}
	if err := createBucket(ctx, e.client("us-east-1"), "added-3", "us-east-1"); err != nil {
		t.Errorf("CreateBucket of an added bucket in us-east-1: %v, want 200 OK (owned)", err)
	}
	mustCreate(t, e, "added-0", "us-east-1")
	mustCreate(t, e, "added-15", "us-east-1")
	if _, err := e.client("eu-west-1").DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("added-2")}); err != nil {
		t.Fatal(err)
	}
	p := s3.NewListBucketsPaginator(e.client("us-east-1"), &s3.ListBucketsInput{MaxBuckets: aws.Int32(2), Prefix: aws.String("added-")})
	got = nil
	for _, out := range pages(t, p.HasMorePages, p.NextPage) {
		for _, b := range out.Buckets {
			got = append(got, *b.Name)
		}
	}
	if want := []string{"added-0", "added-1", "added-15", "added-3"}; !slices.Equal(got, want) {
		t.Errorf("listed by pages of 2 after creates and a delete: %v, want %v", got, want)
	}
	for _, tc := range []struct {
		name, region string
		names        []string
	}{
		{"existing", "us-east-1", []string{"added-4", "added-1"}},
		{"named twice", "us-east-1", []string{"added-4", "added-4"}},
		{"bad name", "us-east-1", []string{"added-4", "Added_5"}},
		{"bad region", "moon", []string{"added-4"}},
	} {
		if err := e.em.AddBuckets(tc.region, created, tc.names...); err == nil {
			t.Errorf("%s: AddBuckets(%s, %v) succeeded", tc.name, tc.region, tc.names)
		}
	}
	if _, err := e.client("us-east-1").HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("added-4")}); err == nil {
		t.Errorf("added-4 exists after failed AddBuckets")
	}
}

func TestVersioning(t *testing.T) {
	cases := []struct {
		name  string
		steps []types.BucketVersioningStatus // statuses to put, in order
		want  types.BucketVersioningStatus
	}{
		{"never set", nil, ""},
		{"enabled", []types.BucketVersioningStatus{"Enabled"}, "Enabled"},
		{"enabled then suspended", []types.BucketVersioningStatus{"Enabled", "Suspended"}, "Suspended"},
		{"suspended then enabled", []types.BucketVersioningStatus{"Suspended", "Enabled"}, "Enabled"},
		{"suspended only", []types.BucketVersioningStatus{"Suspended"}, "Suspended"},
	}
	e := newEnv(t, emulator.Options{})
	ctx := t.Context()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name, region := fmt.Sprintf("versioned-%d", i), "us-west-2"
			mustCreate(t, e, name, region)
			c := e.client(region)
			for _, s := range tc.steps {
				_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
					VersioningConfiguration: &types.VersioningConfiguration{Status: s}})
				if err != nil {
					t.Fatal(err)
				}
			}
			out, err := c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(name)})
			if err != nil {
				t.Fatal(err)
			}
			if out.Status != tc.want {
				t.Errorf("status %q, want %q", out.Status, tc.want)
			}
		})
	}

	t.Run("never set has no Status element", func(t *testing.T) {
		mustCreate(t, e, "raw", "us-east-1")
		resp, err := http.Get(e.url + "/raw?versioning")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 || strings.Contains(string(body), "Status") || !strings.Contains(string(body), "<VersioningConfiguration") {
			t.Errorf("%d %s", resp.StatusCode, body)
		}
	})

	t.Run("versions keep a deleted versioned bucket non-empty", func(t *testing.T) {
		c := e.client("us-east-1")
		mustCreate(t, e, "history", "us-east-1")
		_, err := c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("history"),
			VersioningConfiguration: &types.VersioningConfiguration{Status: "Enabled"}})
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("history"), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("history"), Key: aws.String("k")}); err != nil {
			t.Fatal(err)
		}
		list, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("history")})
		if err != nil || len(list.Contents) != 0 {
			t.Fatalf("list after delete: %v %v", list, err)
		}
		_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("history")})
		if errCode(err) != "BucketNotEmpty" {
			t.Fatalf("delete bucket with versions: %v", err)
		}
		vs, err := c.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String("history")})
		if err != nil {
			t.Fatal(err)
		}
		var ids []types.ObjectIdentifier
		for _, v := range vs.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range vs.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		if len(ids) != 3 {
			t.Fatalf("versions and markers: %d, want 3", len(ids))
		}
		if _, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("history"), Delete: &types.Delete{Objects: ids}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("history")}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestObjects(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := t.Context()
	mustCreate(t, e, "data", "ap-southeast-2")
	c := e.client("ap-southeast-2")
	bodies := map[string]string{"a.txt": "hello", "dir/b.txt": "", "dir/c d+e.txt": strings.Repeat("x", 100000)}
	for k, v := range bodies {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("data"), Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatalf("put %s: %v", k, err)
		}
	}
	var got []string
	p := s3.NewListObjectsV2Paginator(c, &s3.ListObjectsV2Input{Bucket: aws.String("data"), MaxKeys: aws.Int32(2)})
	for _, out := range pages(t, p.HasMorePages, p.NextPage) {
		for _, o := range out.Contents {
			got = append(got, *o.Key)
			if want := int64(len(bodies[*o.Key])); aws.ToInt64(o.Size) != want {
				t.Errorf("%s: size %d, want %d", *o.Key, aws.ToInt64(o.Size), want)
			}
			if etag := aws.ToString(o.ETag); len(etag) != 34 || etag[0] != '"' {
				t.Errorf("%s: etag %q", *o.Key, etag)
			}
			if o.LastModified == nil || time.Since(*o.LastModified) > time.Minute {
				t.Errorf("%s: last modified %v", *o.Key, o.LastModified)
			}
		}
	}
	if !slices.Equal(got, []string{"a.txt", "dir/b.txt", "dir/c d+e.txt"}) {
		t.Errorf("keys %v", got)
	}
	obj, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("a.txt")})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(obj.Body)
	obj.Body.Close()
	if string(b) != "hello" {
		t.Errorf("body %q", b)
	}
	_, err = c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("data")})
	if errCode(err) != "BucketNotEmpty" {
		t.Errorf("delete non-empty bucket: %v", err)
	}
	for k := range bodies {
		if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("data"), Key: aws.String(k)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("data"), Key: aws.String("a.txt")})
	if errCode(err) != "NoSuchKey" {
		t.Errorf("get deleted: %v", err)
	}
	if _, err := c.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("data")}); err != nil {
		t.Errorf("delete emptied bucket: %v", err)
	}
}

func TestAWSChunkedUpload(t *testing.T) {
	e := newEnv(t, emulator.Options{AnyRegion: true})
	mustCreate(t, e, "chunks", "us-east-1")
	cases := []struct {
		name, sha, body, want string
	}{
		{"unsigned with trailer", "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
			"5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n", "hello world"},
		{"signed chunks", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
			"3;chunk-signature=" + strings.Repeat("a", 64) + "\r\nabc\r\n0;chunk-signature=" + strings.Repeat("b", 64) + "\r\n\r\n", "abc"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			key := fmt.Sprintf("k%d", i)
			req, _ := http.NewRequest(http.MethodPut, e.url+"/chunks/"+key, strings.NewReader(tc.body))
			req.Header.Set("Content-Encoding", "aws-chunked")
			req.Header.Set("X-Amz-Content-Sha256", tc.sha)
			req.Header.Set("X-Amz-Decoded-Content-Length", fmt.Sprint(len(tc.want)))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			out, err := e.client("us-east-1").GetObject(t.Context(), &s3.GetObjectInput{Bucket: aws.String("chunks"), Key: aws.String(key)})
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(out.Body)
			out.Body.Close()
			if string(got) != tc.want {
				t.Errorf("stored %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCalls(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	ctx := t.Context()
	c := e.client("us-east-1")
	mustCreate(t, e, "counted", "us-east-1")
	_, _ = c.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("counted"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: "Enabled"}})
	_, _ = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("counted")})
	_, _ = c.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String("missing")})
	_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("counted"), Key: aws.String("k"), Body: bytes.NewReader(nil)})
	_, _ = c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("counted")})
	_, _ = c.ListBuckets(ctx, &s3.ListBucketsInput{})
	want := map[string]int{
		"s3:CreateBucket": 1, "s3:PutBucketVersioning": 1, "s3:GetBucketVersioning": 2,
		"s3:PutObject": 1, "s3:ListObjectsV2": 1, "s3:ListBuckets": 1,
	}
	if got := e.em.Calls(); !maps.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	e.em.Reset()
	if got := e.em.Calls(); len(got) != 0 {
		t.Errorf("calls after Reset: %v", got)
	}
	_, _ = c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if got := e.em.Calls(); !maps.Equal(got, map[string]int{"s3:ListBuckets": 1}) {
		t.Errorf("calls after Reset and one call: %v", got)
	}
}

func TestOperationNames(t *testing.T) {
	e := newEnv(t, emulator.Options{})
	mustCreate(t, e, "bkt", "us-east-1")
	const scope = "Credential=test/20250101/%s/%s/aws4_request, SignedHeaders=host, Signature=0"
	cases := []struct {
		method, path string
		header       map[string]string
		want         string
	}{
		{"GET", "/", nil, "s3:ListBuckets"},
		{"PUT", "/bkt2", nil, "s3:CreateBucket"},
		{"HEAD", "/bkt", nil, "s3:HeadBucket"},
		{"DELETE", "/bkt3", nil, "s3:DeleteBucket"},
		{"GET", "/bkt?location", nil, "s3:GetBucketLocation"},
		{"GET", "/bkt?versioning", nil, "s3:GetBucketVersioning"},
		{"PUT", "/bkt?versioning", nil, "s3:PutBucketVersioning"},
		{"DELETE", "/bkt?versioning", nil, "s3:Unknown"},
		{"GET", "/bkt?list-type=2&prefix=x", nil, "s3:ListObjectsV2"},
		{"GET", "/bkt", nil, "s3:ListObjects"},
		{"GET", "/bkt?versions", nil, "s3:ListObjectVersions"},
		{"POST", "/bkt?delete", nil, "s3:DeleteObjects"},
		{"GET", "/bkt?tagging", nil, "s3:GetBucketTagging"},
		{"PUT", "/bkt?policy", nil, "s3:PutBucketPolicy"},
		{"PUT", "/bkt/k", nil, "s3:PutObject"},
		{"PUT", "/bkt/k2", map[string]string{"x-amz-copy-source": "/bkt/k"}, "s3:CopyObject"},
		{"GET", "/bkt/k", nil, "s3:GetObject"},
		{"HEAD", "/bkt/k", nil, "s3:HeadObject"},
		{"GET", "/bkt/k?tagging", nil, "s3:GetObjectTagging"},
		{"POST", "/bkt/k?uploads", nil, "s3:CreateMultipartUpload"},
		{"PUT", "/bkt/k?uploadId=1&partNumber=1", nil, "s3:UploadPart"},
		{"DELETE", "/bkt/k", nil, "s3:DeleteObject"},
		{"POST", "/", map[string]string{"Authorization": "AWS4-HMAC-SHA256 " + fmt.Sprintf(scope, "us-east-1", "ec2"),
			"Content-Type": "application/x-www-form-urlencoded"}, "ec2:DescribeAddresses"},
		{"POST", "/", map[string]string{"Authorization": "AWS4-HMAC-SHA256 " + fmt.Sprintf(scope, "us-east-1", "ecr"),
			"X-Amz-Target": "AmazonEC2ContainerRegistry_V20150921.DescribeRepositories"}, "ecr:DescribeRepositories"},
	}
	for _, tc := range cases {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			e.em.Reset()
			var body io.Reader
			if strings.HasPrefix(tc.want, "ec2:") {
				body = strings.NewReader("Action=DescribeAddresses&Version=2016-11-15")
			}
			req, _ := http.NewRequest(tc.method, e.url+tc.path, body)
			for k, v := range tc.header {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := e.em.Calls(); !maps.Equal(got, map[string]int{tc.want: 1}) {
				t.Errorf("calls %v, want %s", got, tc.want)
			}
			if strings.Contains(tc.want, "Tagging") || strings.Contains(tc.want, "Policy") || strings.HasPrefix(tc.want, "ec2:") || tc.want == "s3:Unknown" {
				if resp.StatusCode != http.StatusNotImplemented {
					t.Errorf("status %d, want 501", resp.StatusCode)
				}
			}
		})
	}
}

func TestStart(t *testing.T) {
	em := emulator.New(emulator.Options{})
	ctx, cancel := context.WithCancel(t.Context())
	srv, err := em.Start(ctx, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(srv.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("ListBuckets status %d", resp.StatusCode)
	}
	cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("server did not stop")
	}
	if _, err := em.Start(t.Context(), "256.0.0.1:1"); err == nil {
		t.Error("Start on a bad address succeeded")
	}
}
