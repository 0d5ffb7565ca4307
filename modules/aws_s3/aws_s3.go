// Package aws_s3 is the aws_s3 module: S3 buckets (name, region,
// versioning) and the keys of their objects, as the tables bucket and
// bucket_object.
package aws_s3

import (
	"context"
	"embed"

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

// BucketTable is the bucket table's declaration.
func BucketTable() module.Table {
	return module.Table{
		Name: "bucket",
		Comment: "S3 general purpose buckets of the account, in every region. Insert a row to create a bucket, update versioning to turn versioning on or suspend it, " +
			"delete the row to delete the bucket (after its objects). Changing name or region replaces the bucket.",
		Columns: []module.Column{
			{Name: "name", Type: "text", NotNull: true, CloudID: true,
				Comment: "Bucket name, unique across all AWS accounts: 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit, " +
					"no two adjacent dots, not an IP address, no reserved prefix (xn--, sthree-, amzn-s3-demo-) or suffix (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3, -an). " +
					"A check constraint per rule refuses a name S3 would."},
			{Name: "region", Type: "text", NotNull: true, Default: "public.bucket_default_region()", CreateOnly: true,
				Comment: "AWS region the bucket lives in, e.g. eu-west-1 (default: bucket_default_region(), the default region of aws_regions when aws_account is installed, else us-east-1; " +
					"with aws_account, it must be enabled in aws_regions). Fixed at creation: changing it replaces the bucket."},
			{Name: "versioning", Type: "boolean", NotNull: true, Default: "false",
				Comment: "Whether object versioning is enabled. Setting it to false on a versioned bucket suspends versioning (S3 cannot turn it off)."},
			{Name: "created_at", Type: "timestamp with time zone", Kind: module.Feedback,
				Comment: "When S3 created the bucket (from the cloud; not written to it)."},
		},
		Region: "region",
	}.Declare()
}

// ObjectTable is the bucket_object table's declaration.
func ObjectTable() module.Table {
	return module.Table{
		Name: "bucket_object",
		Comment: "Objects in S3 buckets, by key. The object body is not stored here: inserting a row creates an empty object with that key, deleting the row deletes the object, " +
			"and objects written by other means (with any body) appear as rows.",
		Columns: []module.Column{
			{Name: "bucket_id", Type: "integer", NotNull: true, CloudID: true, Ref: "bucket",
				Comment: "The bucket the object is in (bucket.id). Changing it replaces the object."},
			{Name: "key", Type: "text", NotNull: true, CloudID: true,
				Comment: "Object key, 1 to 1024 bytes of UTF-8. Changing it replaces the object."},
			{Name: "size", Type: "bigint", Kind: module.Feedback,
				Comment: "Size of the object body in bytes (from the cloud; not written to it)."},
			{Name: "etag", Type: "text", Kind: module.Feedback,
				Comment: "Entity tag of the object body, without quotes (from the cloud; not written to it)."},
			{Name: "last_modified", Type: "timestamp with time zone", Kind: module.Feedback,
				Comment: "When the object was last written (from the cloud; not written to it)."},
		},
		// Rows are in their bucket's region; cloud records say it.
		Region: "region",
	}.Declare()
}

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
		"bucket":        &bucketMapper{c: c, versioning: detail.NewCache[bool](detailTTL())},
		"bucket_object": newObjectMapper(c),
	}, nil
}
