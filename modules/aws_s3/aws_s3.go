// Package aws_s3 is the aws_s3 module: S3 buckets (name, region,
// versioning) and the keys of their objects, as the tables bucket and
// bucket_object.
package aws_s3

import (
	"context"
	"embed"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_s3.sql
var installSQL string

//go:embed aws_s3_prelude.sql
var preludeSQL string

//go:embed aws_s3_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// Bucket is a row of the bucket table: an S3 general purpose bucket (API
// Reference, Bucket:
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Bucket.html). Its
// fields declare the table's columns (module.Typed).
type Bucket struct {
	Name       string    `iasql:"name,id,notnull" comment:"Bucket name, unique across all AWS accounts: 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit, no two adjacent dots, not an IP address, no reserved prefix (xn--, sthree-, amzn-s3-demo-) or suffix (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3, -an). A check constraint per rule refuses a name S3 would."`
	Region     string    `iasql:"region,notnull,createonly,default=public.bucket_default_region()" comment:"AWS region the bucket lives in, e.g. eu-west-1 (default: bucket_default_region(), the default region of aws_regions when aws_account is installed, else us-east-1; with aws_account, it must be enabled in aws_regions). Fixed at creation: changing it replaces the bucket."`
	Versioning bool      `iasql:"versioning,notnull,default=false" comment:"Whether object versioning is enabled. Setting it to false on a versioned bucket suspends versioning (S3 cannot turn it off)."`
	CreatedAt  time.Time `iasql:"created_at,feedback" comment:"When S3 created the bucket (from the cloud; not written to it)."`
}

// buckets is the bucket table, declared by Bucket.
var buckets = module.Declare[Bucket](module.Table{
	Name: "bucket",
	Comment: "S3 general purpose buckets of the account, in every region. Insert a row to create a bucket, update versioning to turn versioning on or suspend it, " +
		"delete the row to delete the bucket (after its objects). Changing name or region replaces the bucket.",
	Region: "region",
})

// BucketTable is the bucket table's declaration.
func BucketTable() module.Table { return buckets.Table() }

// Object is a row of the bucket_object table: the current version of an
// object in a bucket, by key (API Reference, Object:
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_Object.html). Its
// fields declare the table's columns (module.Typed); Region is not one.
type Object struct {
	Bucket       string    `iasql:"bucket_id,id,notnull,ref=bucket" comment:"The bucket the object is in (bucket.id). Changing it replaces the object."`
	Key          string    `iasql:"key,id,notnull" comment:"Object key, 1 to 1024 bytes of UTF-8. Changing it replaces the object."`
	Size         int64     `iasql:"size,feedback" comment:"Size of the object body in bytes (from the cloud; not written to it)."`
	ETag         string    `iasql:"etag,feedback" comment:"Entity tag of the object body, without quotes (from the cloud; not written to it)."`
	LastModified time.Time `iasql:"last_modified,feedback" comment:"When the object was last written (from the cloud; not written to it)."`
	// Region is the bucket's: the table has no region column, its cloud
	// records say it (module.Typed.WithRegionKey).
	Region string `iasql:"-"`
}

// objects is the bucket_object table, declared by Object.
var objects = module.Declare[Object](module.Table{
	Name: "bucket_object",
	Comment: "Objects in S3 buckets, by key. The object body is not stored here: inserting a row creates an empty object with that key, deleting the row deletes the object, " +
		"and objects written by other means (with any body) appear as rows.",
	// Rows are in their bucket's region; cloud records say it.
	Region: "region",
}).WithRegionKey("Region")

// ObjectTable is the bucket_object table's declaration.
func ObjectTable() module.Table { return objects.Table() }

// Module returns the aws_s3 module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_s3",
		Version:   "0.3.0",
		Prelude:   preludeSQL,
		SQL:       installSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{BucketTable(), ObjectTable()},
		Mappers:   Mappers,
	}
}

// Mappers builds the bucket and bucket_object mappers for a cloud
// configuration. They share S3 clients (one per region) and what they
// learn of bucket regions.
func Mappers(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
	c := newClients(cfg)
	return map[string]module.Reader{
		"bucket":        buckets.Mapper(&bucketMapper{c: c, versioning: detail.NewCache[bool](detailTTL())}),
		"bucket_object": objects.Mapper(newObjectMapper(c)),
	}, nil
}
