// Package aws_ecr is the aws_ecr module: ECR private repositories (name,
// region, tag mutability, scan on push) as the table repository.
package aws_ecr

import (
	"context"
	"embed"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr/types"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_ecr.sql
var installSQL string

//go:embed upgrades
var upgrades embed.FS

// Repository is a row of the repository table: an ECR private repository
// (API Reference, Repository:
// https://docs.aws.amazon.com/AmazonECR/latest/APIReference/API_Repository.html).
// Its fields declare the table's columns (module.Typed).
type Repository struct {
	Name       string                   `iasql:"repository_name,id,notnull" comment:"Repository name, unique per region: 2 to 256 characters, lowercase letters and digits in components separated by single dots, underscores or hyphens, optionally namespaced with slashes (team/app). Changing it replaces the repository."`
	Region     string                   `iasql:"region,id,notnull,default=public.default_aws_region()" comment:"AWS region of the repository, e.g. eu-west-1; defaults to the default region of aws_account. Changing it replaces the repository."`
	Mutability types.ImageTagMutability `iasql:"image_tag_mutability,notnull,default='MUTABLE'" comment:"MUTABLE lets a push overwrite an image tag; IMMUTABLE refuses it."`
	ScanOnPush bool                     `iasql:"scan_on_push,notnull,default=false" comment:"Whether each image is scanned for vulnerabilities after it is pushed."`
	ARN        string                   `iasql:"repository_arn,feedback" comment:"ARN of the repository, arn:aws:ecr:<region>:<account>:repository/<name> (from the cloud; not written to it)."`
	URI        string                   `iasql:"repository_uri,feedback" comment:"URI to push and pull images, <account>.dkr.ecr.<region>.amazonaws.com/<name> (from the cloud; not written to it)."`
	RegistryID string                   `iasql:"registry_id,feedback" comment:"Account id of the registry that holds the repository (from the cloud; not written to it)."`
	CreatedAt  time.Time                `iasql:"created_at,feedback" comment:"When ECR created the repository (from the cloud; not written to it)."`
}

// repositories is the repository table, declared by Repository.
var repositories = module.Declare[Repository](module.Table{
	Name: "repository",
	Comment: "ECR private repositories of the account, in every enabled region. Insert a row to create a repository, update image_tag_mutability or scan_on_push to change them, " +
		"delete the row to delete the repository (only an empty one: a repository that still holds images is not deleted, and the failure says so). " +
		"Changing repository_name or region replaces the repository.",
	Region: "region",
})

// RepositoryTable is the repository table's declaration.
func RepositoryTable() module.Table { return repositories.Table() }

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
	return map[string]module.Reader{"repository": repositories.Mapper(newRepositoryMapper(cfg))}, nil
}
