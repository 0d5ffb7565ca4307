// Package aws_ecr is the aws_ecr module: ECR private repositories (name,
// region, tag mutability, scan on push) as the table repository.
package aws_ecr

import (
	"context"
	"embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_ecr.sql
var installSQL string

//go:embed upgrades
var upgrades embed.FS

// RepositoryTable is the repository table's declaration.
func RepositoryTable() module.Table {
	return module.Table{
		Name: "repository",
		Comment: "ECR private repositories of the account, in every enabled region. Insert a row to create a repository, update image_tag_mutability or scan_on_push to change them, " +
			"delete the row to delete the repository (only an empty one: a repository that still holds images is not deleted, and the failure says so). " +
			"Changing repository_name or region replaces the repository.",
		Columns: []module.Column{
			{Name: "repository_name", Type: "text", NotNull: true, CloudID: true,
				Comment: "Repository name, unique per region: 2 to 256 characters, lowercase letters and digits in components separated by single dots, underscores or hyphens, " +
					"optionally namespaced with slashes (team/app). Changing it replaces the repository."},
			{Name: "region", Type: "text", NotNull: true, Default: "public.default_aws_region()", CloudID: true,
				Comment: "AWS region of the repository, e.g. eu-west-1; defaults to the default region of aws_account. Changing it replaces the repository."},
			{Name: "image_tag_mutability", Type: "text", NotNull: true, Default: "'MUTABLE'",
				Comment: "MUTABLE lets a push overwrite an image tag; IMMUTABLE refuses it."},
			{Name: "scan_on_push", Type: "boolean", NotNull: true, Default: "false",
				Comment: "Whether each image is scanned for vulnerabilities after it is pushed."},
			{Name: "repository_arn", Type: "text", Kind: module.Feedback,
				Comment: "ARN of the repository, arn:aws:ecr:<region>:<account>:repository/<name> (from the cloud; not written to it)."},
			{Name: "repository_uri", Type: "text", Kind: module.Feedback,
				Comment: "URI to push and pull images, <account>.dkr.ecr.<region>.amazonaws.com/<name> (from the cloud; not written to it)."},
			{Name: "registry_id", Type: "text", Kind: module.Feedback,
				Comment: "Account id of the registry that holds the repository (from the cloud; not written to it)."},
			{Name: "created_at", Type: "timestamp with time zone", Kind: module.Feedback,
				Comment: "When ECR created the repository (from the cloud; not written to it)."},
		},
		Region: "region",
	}.Declare()
}

// Module returns the aws_ecr module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_ecr",
		Version:   "0.2.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{RepositoryTable()},
		Mappers:   Mappers,
	}
}

// Mappers builds the repository mapper for a cloud configuration.
func Mappers(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
	return map[string]module.Reader{"repository": newRepositoryMapper(cfg)}, nil
}
