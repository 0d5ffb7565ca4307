// Package aws_iam is the aws_iam module: the account's own managed
// policies as the table iam_policy, and IAM roles, with their trust
// policies, attached managed policies and inline policies, as the table
// iam_role.
package aws_iam

import (
	"context"
	"embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_iam.sql
var installSQL string

//go:embed aws_iam_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// Module returns the aws_iam module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_iam",
		Version:   "0.3.0",
		DependsOn: []string{"aws_account"},
		SQL:       installSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{PolicyTable(), RoleTable()},
		Mappers:   Mappers,
	}
}

// Mappers builds the iam_policy and iam_role mappers for a cloud
// configuration.
func Mappers(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
	pm := &policyMapper{iamClients: newClients(cfg), details: detail.NewCache[policyDetail](detailTTL())}
	return map[string]module.Reader{
		"iam_policy": policies.Mapper(pm),
		"iam_role":   roles.Mapper(newRoleMapper(cfg)),
	}, nil
}
