// Package aws_s3 is the aws_s3 module: S3 buckets (name, region,
// versioning) and the keys of their objects, as the tables bucket and
// bucket_object.
package aws_s3

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_s3.sql
var installSQL string

// Module returns the aws_s3 module.
func Module() module.Module {
	return module.Module{
		Name:    "aws_s3",
		Version: "0.1.0",
		SQL:     installSQL,
		Tables: []module.Table{
			{
				Name:        "bucket",
				CloudID:     []string{"name"},
				Declarative: []string{"name", "region", "versioning"},
				CreateOnly:  []string{"region"},
				Feedback:    []string{"created_at"},
				Region:      "region",
			},
			{
				Name:        "bucket_object",
				CloudID:     []string{"bucket_id", "key"},
				Declarative: []string{"bucket_id", "key"},
				Feedback:    []string{"size", "etag", "last_modified"},
				Refs:        map[string]string{"bucket_id": "bucket"},
				// Rows are in their bucket's region; cloud records say it.
				Region: "region",
			},
		},
		Mappers: Mappers,
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
