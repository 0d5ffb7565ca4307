// Package aws_ecr is the aws_ecr module: ECR private repositories (name,
// region, tag mutability, scan on push) as the table repository.
package aws_ecr

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_ecr.sql
var installSQL string

// Module returns the aws_ecr module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_ecr",
		Version:   "0.1.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL,
		Tables: []module.Table{
			{
				Name:        "repository",
				CloudID:     []string{"region", "repository_name"},
				Declarative: []string{"repository_name", "region", "image_tag_mutability", "scan_on_push"},
				Feedback:    []string{"repository_arn", "repository_uri", "registry_id", "created_at"},
				Region:      "region",
			},
		},
		Mappers: Mappers,
	}
}

// Mappers builds the repository mapper for a cloud configuration.
func Mappers(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
	return map[string]module.Reader{"repository": newRepositoryMapper(cfg)}, nil
}
