// Package aws_account is the aws_account module: the account's regions
// (table aws_regions), which of them iasql manages, and the default region
// that other modules' region columns default to. Every other AWS module
// depends on it; it gives the enabled regions to every mapper call of a
// cycle (module.Call's Scope). Credentials come from the SDK's chain and
// are never stored in a table.
package aws_account

import (
	"context"
	"embed"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_account.sql
var installSQL string

// tagsSQL is 0.2.0's step (aws_tags_check()), also run at install: one
// source for both.
//
//go:embed upgrades/0.1.0--0.2.0.sql
var tagsSQL string

//go:embed aws_account_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// Region is a row of the aws_regions table: a region of the account as EC2
// lists it (API Reference, Region:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Region.html),
// with the two columns that are the database's own. Its fields declare the
// table's columns (module.Typed).
type Region struct {
	Name      string `iasql:"region,id,notnull" comment:"Region code, e.g. us-east-1."`
	IsDefault bool   `iasql:"is_default,initial,notnull,default=false" comment:"Whether this is the default region (exactly one is; making another the default unsets the previous one). Imported as the SDK configuration's region."`
	IsEnabled bool   `iasql:"is_enabled,initial,notnull,default=true" comment:"Whether iasql manages resources in this region (imported as whether the account has it enabled). Disabling a region drops its resources from the tables; nothing is deleted in the cloud."`
}

// regions is the aws_regions table, declared by Region.
var regions = module.Declare[Region](module.Table{
	Name: "aws_regions",
	Comment: "The regions of the AWS account, as EC2 DescribeRegions lists them with AllRegions (read-only: rows follow the cloud). " +
		"is_default and is_enabled are yours: the default region is what region columns of other modules default to, and only enabled regions are read and written. " +
		"A region the account has not enabled (an opt-in region not opted in) is imported disabled; enabled here anyway, its reads fail and it shows as unverified in iasql_status, its rows left as they are.",
	ReadOnly: true,
})

// RegionsTable is the aws_regions table's declaration.
func RegionsTable() module.Table { return regions.Table() }

// Module returns the aws_account module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_account",
		Version:   "0.3.0",
		SQL:       installSQL + "\n" + tagsSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{RegionsTable()},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"aws_regions": regions.Mapper(newRegionMapper(cfg))}, nil
		},
		Prepare: scope,
	}
}

// scope is the module's Prepare hook: the enabled regions and the default
// one, as the cycle read aws_regions. With no region enabled yet (before
// the first sync), the scope stays the SDK configuration's region. (A
// Prepare takes the rows as records: each is read as a Region, which a
// row of the table always is; one that were not would be left out.)
func scope(rows map[string][]module.Record, call *module.Call) {
	var s module.Scope
	for _, row := range rows["aws_regions"] {
		r, err := regions.Value(row)
		if err != nil || !r.IsEnabled {
			continue
		}
		s.Regions = append(s.Regions, r.Name)
		if r.IsDefault {
			s.Default = r.Name
		}
	}
	if len(s.Regions) == 0 {
		return
	}
	slices.Sort(s.Regions)
	if s.Default == "" {
		s.Default = s.Regions[0]
	}
	call.Scope = s
}
