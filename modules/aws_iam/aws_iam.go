// Package aws_iam is the aws_iam module: IAM roles, with their trust
// policies, attached managed policies and inline policies, as the table
// iam_role.
package aws_iam

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_iam.sql
var installSQL string

// Module returns the aws_iam module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_iam",
		Version:   "0.1.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL,
		Tables: []module.Table{
			{
				Name:    "iam_role",
				CloudID: []string{"role_name"},
				Declarative: []string{"role_name", "assume_role_policy_document", "description",
					"max_session_duration", "attached_policy_arns", "inline_policies"},
				Feedback: []string{"arn", "role_id", "created_at"},
			},
		},
		Mappers: Mappers,
	}
}

// Mappers builds the iam_role mapper for a cloud configuration.
func Mappers(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
	return map[string]module.Reader{"iam_role": newRoleMapper(cfg)}, nil
}
