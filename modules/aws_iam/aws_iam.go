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

// RoleTable is the iam_role table's declaration. IAM is global: the table
// has no region.
func RoleTable() module.Table {
	return module.Table{
		Name: "iam_role",
		Comment: "IAM roles of the account (IAM is global: one set of roles whatever the region). " +
			"Only roles with the path / are managed here; roles under other paths (service-role/, aws-service-role/ and the like) are neither listed nor touched. " +
			"Insert a row to create a role, update it to change its trust policy, description, maximum session, attached managed policies (policy_ids, attached_policy_arns) or inline policies, " +
			"delete it to delete the role (its policies are detached and deleted first). Changing role_name replaces the role.",
		Columns: []module.Column{
			{Name: "role_name", Type: "text", NotNull: true, CloudID: true,
				Comment: "Role name: 1 to 64 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the role."},
			{Name: "assume_role_policy_document", Type: "jsonb", NotNull: true,
				Comment: "Trust policy: who may assume the role, as a JSON policy document (an object). " +
					"Compared by meaning: key order and whitespace do not matter, values do (a string and a list of one string differ)."},
			{Name: "description", Type: "text",
				Comment: "Description of the role, up to 1000 characters; NULL and the empty string both mean none."},
			{Name: "max_session_duration", Type: "integer", NotNull: true, Default: "3600",
				Comment: "Maximum session duration in seconds for sessions that assume the role: 3600 (one hour, the default) to 43200 (12 hours)."},
			{Name: "attached_policy_arns", Type: "text[]", NotNull: true, Default: "'{}'",
				Comment: "ARNs of the AWS managed policies attached to the role, e.g. arn:aws:iam::aws:policy/ReadOnlyAccess (the account's own policies are in policy_ids; " +
					"an ARN of one of them here is attached too). A set: order and repetition do not matter."},
			{Name: "inline_policies", Type: "jsonb", NotNull: true, Default: "'{}'",
				Comment: "Inline policies embedded in the role, as a JSON object from policy name (1 to 128 letters, digits and _+=,.@- characters) to policy document (an object). " +
					"Documents are compared by meaning."},
			{Name: "arn", Type: "text", Kind: module.Feedback,
				Comment: "ARN of the role, arn:aws:iam::<account>:role/<name> (from the cloud; not written to it)."},
			{Name: "role_id", Type: "text", Kind: module.Feedback,
				Comment: "Stable unique id IAM gave the role, beginning with AROA (from the cloud; not written to it)."},
			{Name: "created_at", Type: "timestamp with time zone", Kind: module.Feedback,
				Comment: "When IAM created the role (from the cloud; not written to it)."},
			{Name: "policy_ids", Type: "bigint[]", NotNull: true, Default: "'{}'", Ref: "iam_policy",
				Comment: "The account's own managed policies (iam_policy.id) attached to the role, in any order; AWS managed policies are in attached_policy_arns."},
		},
	}.Declare()
}

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
		"iam_policy": module.WithTemporary(policies.Mapper(pm), pm),
		"iam_role":   newRoleMapper(cfg),
	}, nil
}
