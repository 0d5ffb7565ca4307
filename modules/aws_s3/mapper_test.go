package aws_s3_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// cloud is an emulator with the module's mappers for it and an
// out-of-band S3 client per region.
type cloud struct {
	em      *emulator.Emulator
	url     string
	bucket  module.Parts
	object  module.Parts
	clients map[string]*s3.Client
	tables  map[module.Reader]module.Table // each mapper's table
}

// equal compares a database and a cloud record as the engine does
// (module.Equal).
func (c *cloud) equal(m module.Reader, db, cloud module.Record) bool {
	return module.Equal(c.tables[m], m, db, cloud)
}

func newCloud(t *testing.T, opts emulator.Options) *cloud {
	t.Helper()
	cl := testkit.StartCloud(t, opts)
	cfg := aws.Config{
		Region: "us-east-1",
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "test", SecretAccessKey: "test"}, nil
		}),
		BaseEndpoint:     aws.String(cl.URL),
		RetryMaxAttempts: 1,
	}
	mod := aws_s3.Module()
	ms := testkit.Mappers(t, mod, cfg)
	tables := map[module.Reader]module.Table{}
	for _, tbl := range mod.Tables {
		tables[ms[tbl.Name]] = tbl
	}
	return &cloud{em: cl.Emu, url: cl.URL, bucket: module.PartsOf(ms["bucket"]), object: module.PartsOf(ms["bucket_object"]), clients: map[string]*s3.Client{}, tables: tables}
}

// s3 is an out-of-band client, as another tool would use.
func (c *cloud) s3(region string) *s3.Client {
	if cl, ok := c.clients[region]; ok {
		return cl
	}
	cl := s3.New(s3.Options{
		Region: region, UsePathStyle: true, BaseEndpoint: aws.String(c.url),
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "other", SecretAccessKey: "other"}, nil
		}),
	})
	c.clients[region] = cl
	return cl
}

func (c *cloud) mkBucket(t *testing.T, name, region string, versioned bool) {
	t.Helper()
	ctx := t.Context()
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if region != "us-east-1" {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	if _, err := c.s3(region).CreateBucket(ctx, in); err != nil {
		t.Fatalf("create bucket %s: %v", name, err)
	}
	if versioned {
		_, err := c.s3(region).PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(name),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
		if err != nil {
			t.Fatal(err)
		}
	}
}

func (c *cloud) put(t *testing.T, bucket, region, key, body string) {
	t.Helper()
	_, err := c.s3(region).PutObject(t.Context(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(body)})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

func (c *cloud) versioning(t *testing.T, bucket, region string) types.BucketVersioningStatus {
	t.Helper()
	out, err := c.s3(region).GetBucketVersioning(t.Context(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status
}

func (c *cloud) bucketNames(t *testing.T) []string {
	t.Helper()
	out, err := c.s3("us-east-1").ListBuckets(t.Context(), &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, *b.Name)
	}
	return names
}

// byKey indexes records by their cloud id columns.
func byKey(recs []module.Record, cols ...string) map[string]module.Record {
	out := map[string]module.Record{}
	for _, r := range recs {
		var k []string
		for _, c := range cols {
			k = append(k, r.String(c))
		}
		out[strings.Join(k, "/")] = r
	}
	return out
}

func checkTime(t *testing.T, what string, v any) {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Errorf("%s: %v (%T), want an RFC 3339 string", what, v, v)
		return
	}
	ts, err := time.Parse(time.RFC3339Nano, s)
	if err != nil || time.Since(ts) > time.Minute || time.Until(ts) > time.Minute {
		t.Errorf("%s: %q (%v)", what, s, err)
	}
}

func TestBucketRead(t *testing.T) {
	cases := []struct {
		name      string
		opts      emulator.Options
		wantCalls map[string]int
	}{
		{"ListBuckets with BucketRegion", emulator.Options{},
			map[string]int{"s3:ListBuckets": 1, "s3:GetBucketVersioning": 3}},
		{"legacy ListBuckets: GetBucketLocation", emulator.Options{LegacyListBuckets: true},
			map[string]int{"s3:ListBuckets": 1, "s3:GetBucketLocation": 3, "s3:GetBucketVersioning": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := newCloud(t, tc.opts)
			c.mkBucket(t, "plain", "us-east-1", false)
			c.mkBucket(t, "versioned.eu", "eu-west-1", true)
			c.mkBucket(t, "mumbai-1", "ap-south-1", false)
			c.em.Reset()
			recs, err := c.bucket.Read(t.Context(), module.Call{})
			if err != nil {
				t.Fatal(err)
			}
			if got := c.em.Calls(); !maps.Equal(got, tc.wantCalls) {
				t.Errorf("calls %v, want %v", got, tc.wantCalls)
			}
			got := byKey(recs, "name")
			want := map[string]module.Record{
				"plain":        {"name": "plain", "region": "us-east-1", "versioning": false},
				"versioned.eu": {"name": "versioned.eu", "region": "eu-west-1", "versioning": true},
				"mumbai-1":     {"name": "mumbai-1", "region": "ap-south-1", "versioning": false},
			}
			if len(got) != len(want) {
				t.Fatalf("records %v", recs)
			}
			for name, w := range want {
				g := got[name]
				for col, v := range w {
					if g[col] != v {
						t.Errorf("%s.%s = %v, want %v", name, col, g[col], v)
					}
				}
				checkTime(t, name+".created_at", g["created_at"])
			}
		})
	}
}

func TestBucketReadMany(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	const n = 1234 // more than one ListBuckets page of 1000
	for i := range n {
		region := "us-east-1"
		if i%3 == 0 {
			region = "eu-central-1"
		}
		c.mkBucket(t, fmt.Sprintf("many-%04d", i), region, i%7 == 0)
	}
	c.em.Reset()
	recs, err := c.bucket.Read(t.Context(), module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	for _, r := range recs {
		var i int
		fmt.Sscanf(r.String("name"), "many-%d", &i)
		if r.Bool("versioning") != (i%7 == 0) || (r.String("region") == "eu-central-1") != (i%3 == 0) {
			t.Errorf("record %v", r)
		}
	}
	if got, want := c.em.Calls(), map[string]int{"s3:ListBuckets": 2, "s3:GetBucketVersioning": n}; !maps.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

func TestBucketCreate(t *testing.T) {
	c := newCloud(t, emulator.Options{ForeignBuckets: []string{"taken"}})
	c.mkBucket(t, "mine-already", "us-east-1", false)
	cases := []struct {
		name         string
		want         module.Record
		wantErr      string // substring; "" for success
		terminal     bool
		wantVersions types.BucketVersioningStatus
	}{
		{"us-east-1", module.Record{"name": "logs", "region": "us-east-1", "versioning": false}, "", false, ""},
		{"eu-west-1 versioned", module.Record{"name": "logs.eu", "region": "eu-west-1", "versioning": true}, "", false, "Enabled"},
		{"region NULL is us-east-1", module.Record{"name": "logs-default", "versioning": false}, "", false, ""},
		{"adopts a bucket it owns", module.Record{"name": "mine-already", "region": "us-east-1", "versioning": true}, "", false, "Enabled"},
		{"invalid name", module.Record{"name": "Bad_Name", "region": "us-east-1", "versioning": false}, "InvalidBucketName", true, ""},
		{"name another account owns", module.Record{"name": "taken", "region": "us-east-1", "versioning": false}, "BucketAlreadyExists", true, ""},
		{"invalid region", module.Record{"name": "nowhere", "region": "moon", "versioning": false}, "InvalidLocationConstraint", true, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.bucket.Mapper.Create(t.Context(), module.Call{}, tc.want)
			if tc.wantErr != "" {
				var te *module.TerminalError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &te) != tc.terminal {
					t.Fatalf("error %v, want %q (terminal %v)", err, tc.wantErr, tc.terminal)
				}
				if !strings.Contains(err.Error(), tc.want.String("name")) {
					t.Errorf("error %q does not name the bucket", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.bucket.Equaler.Equal(tc.want, got) {
				t.Errorf("created %v, not equal to %v", got, tc.want)
			}
			checkTime(t, "created_at", got["created_at"])
			region := tc.want.String("region")
			if region == "" {
				region = "us-east-1"
			}
			if got["region"] != region {
				t.Errorf("region %v, want %s", got["region"], region)
			}
			if v := c.versioning(t, tc.want.String("name"), region); v != tc.wantVersions {
				t.Errorf("cloud versioning %q, want %q", v, tc.wantVersions)
			}
		})
	}
}

func TestBucketUpdate(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	ctx := t.Context()
	have, err := c.bucket.Mapper.Create(ctx, module.Call{}, module.Record{"name": "toggle", "region": "sa-east-1", "versioning": false})
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		versioning bool
		cloud      types.BucketVersioningStatus
	}{
		{true, "Enabled"},
		{false, "Suspended"},
		{true, "Enabled"},
	}
	for _, s := range steps {
		want := maps.Clone(have)
		want["versioning"] = s.versioning
		got, err := c.bucket.Mapper.Update(ctx, module.Call{}, want, have)
		if err != nil {
			t.Fatalf("update versioning to %v: %v", s.versioning, err)
		}
		if got["versioning"] != s.versioning || got["created_at"] != have["created_at"] || !c.bucket.Equaler.Equal(want, got) {
			t.Errorf("update to %v returned %v", s.versioning, got)
		}
		if v := c.versioning(t, "toggle", "sa-east-1"); v != s.cloud {
			t.Errorf("cloud versioning %q, want %q", v, s.cloud)
		}
		have = got
	}

	want := maps.Clone(have)
	want["region"] = "eu-west-2"
	c.em.Reset()
	if _, err := c.bucket.Mapper.Update(ctx, module.Call{}, want, have); !errors.Is(err, module.ErrReplace) {
		t.Errorf("region change: %v, want ErrReplace", err)
	}
	if calls := c.em.Calls(); len(calls) != 0 {
		t.Errorf("region change made calls %v", calls)
	}
}

func TestBucketDelete(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	ctx := t.Context()
	c.mkBucket(t, "empty", "us-east-1", false)
	c.mkBucket(t, "full", "eu-north-1", false)
	c.put(t, "full", "eu-north-1", "k", "data")
	c.mkBucket(t, "history", "us-west-1", true)
	c.put(t, "history", "us-west-1", "k", "v1")
	c.put(t, "history", "us-west-1", "k", "v2")
	if _, err := c.s3("us-west-1").DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("history"), Key: aws.String("k")}); err != nil {
		t.Fatal(err)
	}
	recs, err := c.bucket.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	have := byKey(recs, "name")
	cases := []struct {
		name    string
		have    module.Record
		wantErr string
	}{
		{"empty bucket", have["empty"], ""},
		{"bucket with objects", have["full"], "BucketNotEmpty"},
		{"versioned bucket with only history", have["history"], ""},
		{"bucket already gone", module.Record{"name": "gone", "region": "us-east-1"}, ""},
		{"bucket already gone, region unknown", module.Record{"name": "gone-too"}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := c.bucket.Mapper.Delete(ctx, module.Call{}, tc.have)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if slices.Contains(c.bucketNames(t), tc.have.String("name")) {
					t.Errorf("bucket %s still exists", tc.have.String("name"))
				}
				return
			}
			var te *module.TerminalError
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &te) {
				t.Errorf("error %v, want a retryable %s", err, tc.wantErr)
			}
		})
	}
	// Once the engine deleted the objects, the retry succeeds.
	objs, err := c.object.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := c.object.Mapper.Delete(ctx, module.Call{}, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.bucket.Mapper.Delete(ctx, module.Call{}, have["full"]); err != nil {
		t.Fatalf("delete emptied bucket: %v", err)
	}
	if names := c.bucketNames(t); len(names) != 0 {
		t.Errorf("buckets left: %v", names)
	}
}

func TestObjects(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	ctx := t.Context()
	c.mkBucket(t, "photos", "us-east-1", false)
	c.mkBucket(t, "photos.tokyo", "ap-northeast-1", true)
	c.mkBucket(t, "nothing-here", "us-east-1", false)
	c.put(t, "photos", "us-east-1", "cat.jpg", "meow")
	c.put(t, "photos", "us-east-1", "dir/dog.jpg", "woof!")
	c.put(t, "photos.tokyo", "ap-northeast-1", "fuji.jpg", "")

	c.em.Reset()
	recs, err := c.object.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.em.Calls(), map[string]int{"s3:ListBuckets": 1, "s3:ListObjectsV2": 3}; !maps.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
	got := byKey(recs, "bucket_id", "key")
	want := map[string]struct {
		size   int64
		etag   string
		region string // the bucket's (the table's Region key: no column)
	}{
		"photos/cat.jpg":        {4, "4a4be40c96ac6314e91d93f38043a634", "us-east-1"},
		"photos/dir/dog.jpg":    {5, "dd1df414466b0d458e9dc859f0831853", "us-east-1"},
		"photos.tokyo/fuji.jpg": {0, "d41d8cd98f00b204e9800998ecf8427e", "ap-northeast-1"},
	}
	if len(got) != len(want) {
		t.Fatalf("records %v", recs)
	}
	for k, w := range want {
		g := got[k]
		if g.Int("size") != w.size || g["etag"] != w.etag || g["region"] != w.region {
			t.Errorf("%s: size %v etag %v region %v, want %d %s %s", k, g["size"], g["etag"], g["region"], w.size, w.etag, w.region)
		}
		checkTime(t, k+".last_modified", g["last_modified"])
	}

	cases := []struct {
		name     string
		want     module.Record
		wantErr  string
		terminal bool
	}{
		{"empty object", module.Record{"bucket_id": "photos", "key": "new/empty.txt"}, "", false},
		{"in another region", module.Record{"bucket_id": "photos.tokyo", "key": "osaka.jpg"}, "", false},
		{"over an existing object", module.Record{"bucket_id": "photos", "key": "cat.jpg"}, "", false},
		{"missing bucket", module.Record{"bucket_id": "no-such-bucket", "key": "k"}, "NoSuchBucket", false},
		{"no key", module.Record{"bucket_id": "photos", "key": ""}, "required", true},
	}
	for _, tc := range cases {
		t.Run("create "+tc.name, func(t *testing.T) {
			got, err := c.object.Mapper.Create(ctx, module.Call{}, tc.want)
			if tc.wantErr != "" {
				var te *module.TerminalError
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || errors.As(err, &te) != tc.terminal {
					t.Fatalf("error %v, want %q (terminal %v)", err, tc.wantErr, tc.terminal)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !c.equal(c.object, tc.want, got) || got.Int("size") != 0 || got["etag"] != "d41d8cd98f00b204e9800998ecf8427e" {
				t.Errorf("created %v", got)
			}
			checkTime(t, "last_modified", got["last_modified"])
		})
	}

	if _, err := c.object.Mapper.Update(ctx, module.Call{}, module.Record{"bucket_id": "photos", "key": "b"}, module.Record{"bucket_id": "photos", "key": "a"}); !errors.Is(err, module.ErrReplace) {
		t.Errorf("update: %v, want ErrReplace", err)
	}

	for _, k := range []module.Record{
		{"bucket_id": "photos", "key": "cat.jpg"},
		{"bucket_id": "photos.tokyo", "key": "fuji.jpg"},
		{"bucket_id": "photos", "key": "never-existed"},
		{"bucket_id": "no-such-bucket", "key": "k"},
	} {
		if err := c.object.Mapper.Delete(ctx, module.Call{}, k); err != nil {
			t.Errorf("delete %v: %v", k, err)
		}
	}
	recs, err = c.object.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	keys := slices.Sorted(maps.Keys(byKey(recs, "bucket_id", "key")))
	if want := []string{"photos.tokyo/osaka.jpg", "photos/dir/dog.jpg", "photos/new/empty.txt"}; !slices.Equal(keys, want) {
		t.Errorf("objects after deletes %v, want %v", keys, want)
	}
}

// TestNoChangeReadCalls pins what a Read of N buckets costs, for the
// engine's and benchmarks' accounting.
func TestNoChangeReadCalls(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	const n = 20
	for i := range n {
		c.mkBucket(t, fmt.Sprintf("b-%02d", i), []string{"us-east-1", "eu-west-1"}[i%2], false)
	}
	for _, tc := range []struct {
		table string
		m     module.Parts
		want  map[string]int
	}{
		{"bucket", c.bucket, map[string]int{"s3:ListBuckets": 1, "s3:GetBucketVersioning": n}},
		{"bucket_object", c.object, map[string]int{"s3:ListBuckets": 1, "s3:ListObjectsV2": n}},
	} {
		c.em.Reset()
		if _, err := tc.m.Read(t.Context(), module.Call{}); err != nil {
			t.Fatal(err)
		}
		if got := c.em.Calls(); !maps.Equal(got, tc.want) {
			t.Errorf("%s Read: calls %v, want %v", tc.table, got, tc.want)
		}
	}
}

func TestEqual(t *testing.T) {
	bucket := module.Record{"name": "logs", "region": "eu-west-1", "versioning": true, "created_at": "2024-01-01T00:00:00Z"}
	with := func(r module.Record, kv ...any) module.Record {
		r = maps.Clone(r)
		for i := 0; i < len(kv); i += 2 {
			r[kv[i].(string)] = kv[i+1]
		}
		return r
	}
	c := newCloud(t, emulator.Options{})
	cases := []struct {
		name      string
		m         module.Parts
		db, cloud module.Record
		want      bool
	}{
		{"same bucket", c.bucket, bucket, bucket, true},
		{"feedback ignored", c.bucket, with(bucket, "created_at", nil), bucket, true},
		{"other region", c.bucket, with(bucket, "region", "eu-west-2"), bucket, false},
		{"versioning differs", c.bucket, with(bucket, "versioning", false), bucket, false},
		{"versioning NULL is off", c.bucket, with(bucket, "versioning", nil), with(bucket, "versioning", false), true},
		{"versioning NULL is not on", c.bucket, with(bucket, "versioning", nil), bucket, false},
		{"region NULL is us-east-1", c.bucket, with(bucket, "region", nil), with(bucket, "region", "us-east-1"), true},
		{"region empty is us-east-1", c.bucket, with(bucket, "region", ""), with(bucket, "region", "us-east-1"), true},
		{"region EU is eu-west-1", c.bucket, bucket, with(bucket, "region", "EU"), true},
		{"other name", c.bucket, with(bucket, "name", "logs2"), bucket, false},
		{"same object", c.object, module.Record{"bucket_id": "logs", "key": "a", "size": module.Number(3)},
			module.Record{"bucket_id": "logs", "key": "a", "size": module.Number(0), "etag": "x"}, true},
		{"other key", c.object, module.Record{"bucket_id": "logs", "key": "a"}, module.Record{"bucket_id": "logs", "key": "b"}, false},
		{"key NULL vs empty", c.object, module.Record{"bucket_id": "logs", "key": nil}, module.Record{"bucket_id": "logs", "key": ""}, true},
		{"other bucket", c.object, module.Record{"bucket_id": "logs", "key": "a"}, module.Record{"bucket_id": "logs2", "key": "a"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.equal(tc.m, tc.db, tc.cloud); got != tc.want {
				t.Errorf("Equal = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestWriteCalls pins what each write costs, for the engine's and
// benchmarks' accounting.
func TestWriteCalls(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	ctx := t.Context()
	var bucket module.Record
	steps := []struct {
		name string
		do   func() error
		want map[string]int
	}{
		{"create bucket", func() (err error) {
			bucket, err = c.bucket.Mapper.Create(ctx, module.Call{}, module.Record{"name": "counted", "region": "eu-west-1", "versioning": false})
			return err
		}, map[string]int{"s3:CreateBucket": 1, "s3:ListBuckets": 1, "s3:GetBucketVersioning": 1}},
		{"create versioned bucket", func() error {
			_, err := c.bucket.Mapper.Create(ctx, module.Call{}, module.Record{"name": "counted-v", "region": "us-east-1", "versioning": true})
			return err
		}, map[string]int{"s3:CreateBucket": 1, "s3:PutBucketVersioning": 1, "s3:ListBuckets": 1, "s3:GetBucketVersioning": 1}},
		{"update versioning", func() (err error) {
			want := maps.Clone(bucket)
			want["versioning"] = true
			bucket, err = c.bucket.Mapper.Update(ctx, module.Call{}, want, bucket)
			return err
		}, map[string]int{"s3:PutBucketVersioning": 1, "s3:ListBuckets": 1, "s3:GetBucketVersioning": 1}},
		{"create object", func() error {
			_, err := c.object.Mapper.Create(ctx, module.Call{}, module.Record{"bucket_id": "counted", "key": "k"})
			return err
		}, map[string]int{"s3:PutObject": 1, "s3:HeadObject": 1}},
		{"delete object", func() error {
			return c.object.Mapper.Delete(ctx, module.Call{}, module.Record{"bucket_id": "counted", "key": "k"})
		}, map[string]int{"s3:DeleteObject": 1}},
		{"delete bucket (versioned: its history goes first)", func() error { return c.bucket.Mapper.Delete(ctx, module.Call{}, bucket) },
			map[string]int{"s3:DeleteBucket": 2, "s3:ListObjectsV2": 1, "s3:ListObjectVersions": 1, "s3:DeleteObjects": 1}},
		{"delete empty bucket", func() error {
			return c.bucket.Mapper.Delete(ctx, module.Call{}, module.Record{"name": "counted-v", "region": "us-east-1", "versioning": true})
		}, map[string]int{"s3:DeleteBucket": 1}},
	}
	for _, s := range steps {
		c.em.Reset()
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := c.em.Calls(); !maps.Equal(got, s.want) {
			t.Errorf("%s: calls %v, want %v", s.name, got, s.want)
		}
	}
}

// TestBucketMoved: a bucket deleted and recreated in another region out of
// band is found in its new region.
func TestBucketMoved(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	ctx := t.Context()
	c.mkBucket(t, "nomad", "us-east-1", false)
	if _, err := c.object.Read(ctx, module.Call{}); err != nil { // learns the region
		t.Fatal(err)
	}
	if _, err := c.s3("us-east-1").DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String("nomad")}); err != nil {
		t.Fatal(err)
	}
	c.mkBucket(t, "nomad", "ca-central-1", false)
	got, err := c.object.Mapper.Create(ctx, module.Call{}, module.Record{"bucket_id": "nomad", "key": "k"})
	if err != nil {
		t.Fatalf("create object in moved bucket: %v", err)
	}
	if got["key"] != "k" {
		t.Errorf("created %v", got)
	}
	recs, err := c.bucket.Read(ctx, module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0]["region"] != "ca-central-1" {
		t.Errorf("buckets %v", recs)
	}
}

// TestDetailReuse: an automatic cycle's Read of unchanged buckets makes
// list calls only; a fresh read (iasql_commit) sees a change made outside.
func TestDetailReuse(t *testing.T) {
	c := newCloud(t, emulator.Options{})
	for _, n := range []string{"reuse-a", "reuse-b", "reuse-c"} {
		c.mkBucket(t, n, "us-east-1", false)
	}
	if _, err := c.bucket.Read(t.Context(), module.Call{}); err != nil {
		t.Fatal(err)
	}
	_, err := c.s3("us-east-1").PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String("reuse-b"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}})
	if err != nil {
		t.Fatal(err)
	}
	c.em.Reset()
	recs, err := c.bucket.Read(t.Context(), module.Call{})
	if err != nil {
		t.Fatal(err)
	}
	calls := c.em.Calls()
	if calls["s3:GetBucketVersioning"] != 0 || calls["s3:ListBuckets"] != 1 {
		t.Errorf("an automatic read of unchanged buckets made %v; want one ListBuckets", calls)
	}
	if byKey(recs, "name")["reuse-b"]["versioning"] != false {
		t.Error("the automatic read did not reuse the remembered versioning")
	}
	recs, err = c.bucket.Read(t.Context(), module.Call{Fresh: module.Fresh{All: true}})
	if err != nil {
		t.Fatal(err)
	}
	if byKey(recs, "name")["reuse-b"]["versioning"] != true {
		t.Error("a fresh read did not see versioning enabled outside iasql")
	}
	if got := c.em.Calls()["s3:GetBucketVersioning"]; got != 3 {
		t.Errorf("a fresh read made %d GetBucketVersioning calls, want 3", got)
	}
}

// TestDetailBudget: past their TTL, details are refreshed a budget's worth
// per read, oldest first, the others reused until their turn: with a budget
// of one, each read of three stale buckets makes one versioning call and
// sees one more of the changes made outside, and three reads see all three.
// A fresh read still reads them all.
func TestDetailBudget(t *testing.T) {
	t.Setenv("IASQL_S3_DETAIL_TTL", "1ns") // every detail is stale at once
	t.Setenv("IASQL_DETAIL_BUDGET", "1")
	c := newCloud(t, emulator.Options{})
	names := []string{"budget-a", "budget-b", "budget-c"}
	for _, n := range names {
		c.mkBucket(t, n, "us-east-1", false)
	}
	if _, err := c.bucket.Read(t.Context(), module.Call{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range names {
		if _, err := c.s3("us-east-1").PutBucketVersioning(t.Context(), &s3.PutBucketVersioningInput{Bucket: aws.String(n),
			VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 1; i <= 3; i++ {
		c.em.Reset()
		recs, err := c.bucket.Read(t.Context(), module.Call{})
		if err != nil {
			t.Fatal(err)
		}
		if n := c.em.Calls()["s3:GetBucketVersioning"]; n != 1 {
			t.Fatalf("read %d of three stale buckets made %d versioning calls, want the budget's 1", i, n)
		}
		seen := 0
		for _, r := range recs {
			if r["versioning"] == true {
				seen++
			}
		}
		if seen != i {
			t.Errorf("after %d budgeted reads %d buckets show the change made outside, want %d", i, seen, i)
		}
	}
	c.em.Reset()
	if _, err := c.bucket.Read(t.Context(), module.Call{Fresh: module.Fresh{All: true}}); err != nil {
		t.Fatal(err)
	}
	if n := c.em.Calls()["s3:GetBucketVersioning"]; n != 3 {
		t.Errorf("a fresh read made %d versioning calls, want 3", n)
	}
}
