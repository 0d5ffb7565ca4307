package aws_s3

import (
	"context"
	"errors"
	"os"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// bucketMapper maps the bucket table: general purpose buckets in every
// region.
type bucketMapper struct {
	c *clients
	// versioning: what a bucket's listing does not say, by bucket name,
	// of the bucket made at a creation time (createdVersion).
	versioning *detail.Cache[bool]
}

// createdVersion tells a bucket from a recreated one of the same name (""
// when the creation time is not known).
func createdVersion(created time.Time) string {
	if created.IsZero() {
		return ""
	}
	return created.UTC().Format(time.RFC3339Nano)
}

// detailTTL is IASQL_S3_DETAIL_TTL (a duration; 0 turns reuse off),
// default 5 minutes: an automatic cycle over unchanged buckets then makes
// list calls only, and versioning changed outside iasql is seen within the
// TTL (at once by iasql_commit, which reads fresh).
func detailTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IASQL_S3_DETAIL_TTL")); err == nil && d >= 0 {
		return d
	}
	return 5 * time.Minute
}

// Read lists the buckets (ListBuckets, paginated) and reads each one's
// versioning, concurrently, in the bucket's region. A listing that fails
// fails the Read; a bucket whose versioning cannot be read leaves its
// region's buckets out, with a *module.PartialError naming the region.
func (m *bucketMapper) Read(ctx context.Context, call module.Call) ([]Bucket, error) {
	infos, err := m.c.listBuckets(ctx, "")
	if err != nil {
		return nil, err
	}
	infos = inScope(call.Scope, infos)
	due := m.versioning.Due()
	return regional.GatherRegions(ctx, concurrency, len(infos), func(i int) string { return infos[i].region },
		func(ctx context.Context, i int) ([]Bucket, error) {
			b, err := m.bucket(ctx, call.Fresh, infos[i], due)
			if module.IsCode(err, "NoSuchBucket") {
				return nil, nil // deleted since it was listed
			} else if err != nil {
				return nil, err
			}
			return []Bucket{b}, nil
		})
}

// bucket completes a listed bucket with its versioning (reused from an
// earlier read when fresh and due allow it; nil due: within the TTL).
func (m *bucketMapper) bucket(ctx context.Context, fresh module.Fresh, b bucketInfo, due map[string]bool) (Bucket, error) {
	versioning, ok := m.versioning.Get(fresh, b.name, createdVersion(b.created), due)
	if !ok {
		out, err := m.c.client(b.region).GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(b.name)})
		if err != nil {
			return Bucket{}, terminal.Classify(err, "get versioning of bucket %s", b.name)
		}
		versioning = out.Status == types.BucketVersioningStatusEnabled
		m.versioning.Put(b.name, createdVersion(b.created), versioning)
	}
	return Bucket{Name: b.name, Region: b.region, Versioning: versioning, CreatedAt: b.created}, nil
}

// Get reads the named buckets, fresh, as Read would: each by a ListBuckets
// with its name as prefix (AWS lists buckets in name order, so the bucket
// itself comes first; a server that ignores the prefix lists all, and the
// name is still found), then its versioning. A bucket not listed is absent,
// as it is from Read (S3's listing may lag a create by a moment: the next
// read sees it, and a create meanwhile answers BucketAlreadyOwnedByYou).
// ListBuckets' Prefix and MaxBuckets:
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_ListBuckets.html
func (m *bucketMapper) Get(ctx context.Context, call module.Call, names []string) ([]Bucket, error) {
	return regional.Gather(ctx, concurrency, len(names), func(ctx context.Context, i int) ([]Bucket, error) {
		name := names[i]
		infos, err := m.c.listBuckets(ctx, name)
		if err != nil {
			return nil, err
		}
		for _, b := range inScope(call.Scope, infos) {
			if b.name != name {
				continue
			}
			got, err := m.bucket(ctx, module.Fresh{All: true}, b, nil)
			if module.IsCode(err, "NoSuchBucket") {
				return nil, nil // deleted since it was listed
			} else if err != nil {
				return nil, err
			}
			return []Bucket{got}, nil
		}
		return nil, nil
	})
}

// readOne reads one bucket back.
func (m *bucketMapper) readOne(ctx context.Context, name string) (Bucket, error) {
	infos, err := m.c.listBuckets(ctx, name)
	if err != nil {
		return Bucket{}, err
	}
	for _, b := range infos {
		if b.name == name {
			return m.bucket(ctx, module.Fresh{All: true}, b, nil)
		}
	}
	// Not listed yet: S3's listing may lag a create. The creation time
	// comes with a later Read.
	region, err := m.c.regionOf(ctx, name)
	if err != nil {
		return Bucket{}, err
	}
	return m.bucket(ctx, module.Fresh{All: true}, bucketInfo{name: name, region: region}, nil)
}

// Create creates the bucket in its region, turns versioning on when
// wanted, and reads it back. A bucket the account already owns is
// adopted.
func (m *bucketMapper) Create(ctx context.Context, call module.Call, want Bucket) (Bucket, error) {
	name, region := want.Name, normRegion(want.Region)
	in := &s3.CreateBucketInput{Bucket: aws.String(name)}
	if region != defaultRegion {
		in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(region)}
	}
	_, err := m.c.client(region).CreateBucket(ctx, in)
	switch {
	case err == nil:
		m.c.rememberRegion(name, region)
	case module.IsCode(err, "BucketAlreadyOwnedByYou"):
	default:
		return Bucket{}, terminal.Classify(err, "create bucket %s in %s", name, region)
	}
	if want.Versioning {
		if err := m.putVersioning(ctx, name, true); err != nil {
			return Bucket{}, err
		}
	}
	return m.readOne(ctx, name)
}

// Update changes versioning (Enabled or Suspended); another region needs
// a new bucket.
func (m *bucketMapper) Update(ctx context.Context, call module.Call, want, have Bucket) (Bucket, error) {
	name := have.Name
	if want.Name != name || normRegion(want.Region) != normRegion(have.Region) {
		return Bucket{}, module.ErrReplace
	}
	if want.Versioning != have.Versioning {
		if err := m.putVersioning(ctx, name, want.Versioning); err != nil {
			return Bucket{}, err
		}
	}
	return m.readOne(ctx, name)
}

func (m *bucketMapper) putVersioning(ctx context.Context, name string, enabled bool) error {
	status := types.BucketVersioningStatusSuspended
	if enabled {
		status = types.BucketVersioningStatusEnabled
	}
	err := m.c.withBucket(ctx, name, func(cl *s3.Client) error {
		_, err := cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
			Bucket:                  aws.String(name),
			VersioningConfiguration: &types.VersioningConfiguration{Status: status},
		})
		return err
	})
	return terminal.Classify(err, "set versioning of bucket %s to %s", name, status)
}

// Delete deletes the bucket. A bucket with objects fails with
// BucketNotEmpty (the engine deletes the objects first and retries); a
// bucket left with only old versions and delete markers of deleted
// objects has them deleted first. A bucket already gone (NoSuchBucket) is
// no error. (API Reference, DeleteBucket:
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_DeleteBucket.html)
func (m *bucketMapper) Delete(ctx context.Context, call module.Call, have Bucket) error {
	name := have.Name
	if r := have.Region; r != "" {
		m.c.rememberRegion(name, normRegion(r))
	}
	del := func(cl *s3.Client) error {
		_, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
		return err
	}
	err := m.c.withBucket(ctx, name, del)
	if notEmpty := err; module.IsCode(notEmpty, "BucketNotEmpty") {
		err = m.c.withBucket(ctx, name, func(cl *s3.Client) error {
			if err := purgeHistory(ctx, cl, name); err != nil {
				if errors.Is(err, errHasObjects) {
					return notEmpty
				}
				return err
			}
			return del(cl)
		})
	}
	if err := module.Deleted(err, "NoSuchBucket"); err != nil {
		return terminal.Classify(err, "delete bucket %s", name)
	}
	m.c.forgetRegion(name)
	return nil
}

var errHasObjects = errors.New("bucket has objects")

// purgeHistory deletes the noncurrent versions and delete markers of a
// bucket that has no current objects; errHasObjects when it has some.
func purgeHistory(ctx context.Context, cl *s3.Client, name string) error {
	cur, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name), MaxKeys: aws.Int32(1)})
	if err != nil {
		return err
	}
	if len(cur.Contents) > 0 {
		return errHasObjects
	}
	p := s3.NewListObjectVersionsPaginator(cl, &s3.ListObjectVersionsInput{Bucket: aws.String(name)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		var ids []types.ObjectIdentifier
		for _, v := range page.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, d := range page.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: d.Key, VersionId: d.VersionId})
		}
		for chunk := range slices.Chunk(ids, 1000) {
			out, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{
				Bucket: aws.String(name),
				Delete: &types.Delete{Objects: chunk, Quiet: aws.Bool(true)},
			})
			if err != nil {
				return err
			}
			if len(out.Errors) > 0 {
				e := out.Errors[0]
				return errors.New("delete version " + aws.ToString(e.VersionId) + " of " + aws.ToString(e.Key) + ": " + aws.ToString(e.Code) + ": " + aws.ToString(e.Message))
			}
		}
	}
	return nil
}

// Equal compares name, region (S3's "" and EU spellings normalised) and
// versioning (NULL is off): by meaning, which module.Same per column would
// not.
func (m *bucketMapper) Equal(db, cloud Bucket) bool {
	return db.Name == cloud.Name && normRegion(db.Region) == normRegion(cloud.Region) && db.Versioning == cloud.Versioning
}

var (
	_ module.MapperOf[Bucket]  = (*bucketMapper)(nil)
	_ module.GetterOf[Bucket]  = (*bucketMapper)(nil)
	_ module.EqualerOf[Bucket] = (*bucketMapper)(nil)
)
