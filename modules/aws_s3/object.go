package aws_s3

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// objectMapper maps the bucket_object table: the current objects of every
// bucket, by key. Objects name their bucket in Bucket.
type objectMapper struct {
	c *clients
	// listings: each bucket's objects as last listed, by bucket name, of
	// the bucket made at a creation time (createdVersion); reused within
	// IASQL_S3_DETAIL_TTL.
	listings *detail.Cache[[]Object]
}

func newObjectMapper(c *clients) *objectMapper {
	return &objectMapper{c: c, listings: detail.NewCache[[]Object](detailTTL())}
}

// Read lists the objects of every bucket (ListObjectsV2, paginated),
// buckets concurrently; a bucket listed within the TTL is not listed again
// unless the read must be fresh for it.
func (m *objectMapper) Read(ctx context.Context, call module.Call) ([]Object, error) {
	infos, err := m.c.listBuckets(ctx, "")
	if err != nil {
		return nil, err
	}
	infos = inScope(call.Scope, infos)
	due := m.listings.Due()
	return regional.GatherRegions(ctx, concurrency, len(infos), func(i int) string { return infos[i].region },
		func(ctx context.Context, i int) ([]Object, error) {
			if objs, ok := m.listings.Get(call.Fresh, infos[i].name, createdVersion(infos[i].created), due); ok {
				return objs, nil
			}
			objs, err := m.list(ctx, infos[i])
			if module.IsCode(err, "NoSuchBucket") {
				return nil, nil // deleted since it was listed
			}
			if err == nil {
				m.listings.Put(infos[i].name, createdVersion(infos[i].created), objs)
			}
			return objs, err
		})
}

func (m *objectMapper) list(ctx context.Context, b bucketInfo) ([]Object, error) {
	objs, err := regional.Pages(ctx, s3.NewListObjectsV2Paginator(m.c.client(b.region), &s3.ListObjectsV2Input{Bucket: aws.String(b.name)}),
		func(page *s3.ListObjectsV2Output) []types.Object { return page.Contents })
	if err != nil {
		return nil, terminal.Classify(err, "list objects of bucket %s", b.name)
	}
	out := make([]Object, len(objs))
	for i, o := range objs {
		out[i] = object(b.name, aws.ToString(o.Key), aws.ToInt64(o.Size), aws.ToString(o.ETag), aws.ToTime(o.LastModified))
		out[i].Region = b.region // the bucket's: the table has no region column (Table.Region)
	}
	return out, nil
}

// object is an object S3 listed or described as a row: the entity tag
// without the quotes S3 gives it.
func object(bucket, key string, size int64, etag string, modified time.Time) Object {
	return Object{Bucket: bucket, Key: key, Size: size, ETag: strings.Trim(etag, `"`), LastModified: modified}
}

// Create puts an empty object under the key and reads it back
// (HeadObject).
func (m *objectMapper) Create(ctx context.Context, call module.Call, want Object) (Object, error) {
	bucket, key := want.Bucket, want.Key
	defer m.listings.Forget(bucket) // this mapper changed its objects
	if bucket == "" || key == "" {
		return Object{}, &module.TerminalError{Err: errors.New("create object: bucket and key are required")}
	}
	var got Object
	err := m.c.withBucket(ctx, bucket, func(cl *s3.Client) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{
			Bucket: aws.String(bucket), Key: aws.String(key),
			Body: bytes.NewReader(nil), ContentLength: aws.Int64(0),
		})
		if err != nil {
			return err
		}
		head, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		if err != nil {
			return err
		}
		got = object(bucket, key, aws.ToInt64(head.ContentLength), aws.ToString(head.ETag), aws.ToTime(head.LastModified))
		return nil
	})
	if err != nil {
		return Object{}, terminal.Classify(err, "create object %s in bucket %s", key, bucket)
	}
	return got, nil
}

// Update cannot change anything: bucket and key are the object's identity.
func (m *objectMapper) Update(ctx context.Context, call module.Call, want, have Object) (Object, error) {
	return Object{}, module.ErrReplace
}

// Delete deletes the object (its current version, in a versioned
// bucket). An object or bucket already gone is no error: DeleteObject of a
// key that does not exist succeeds (204), and a bucket that does not
// exist answers NoSuchBucket. (API Reference, DeleteObject:
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteObject.html)
func (m *objectMapper) Delete(ctx context.Context, call module.Call, have Object) error {
	bucket, key := have.Bucket, have.Key
	defer m.listings.Forget(bucket) // this mapper changed its objects
	err := m.c.withBucket(ctx, bucket, func(cl *s3.Client) error {
		_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
		return err
	})
	return terminal.Classify(module.Deleted(err, "NoSuchBucket"), "delete object %s in bucket %s", key, bucket)
}

var _ module.MapperOf[Object] = (*objectMapper)(nil)
