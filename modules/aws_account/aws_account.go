// Package aws_account is the aws_account module: the account's regions
// (table aws_regions), which of them iasql manages, and the default region
// that other modules' region columns default to. Every other AWS module
// depends on it; it puts the enabled regions in each cycle's context
// (module.Scope). Credentials come from the SDK's chain and are never
// stored in a table.
package aws_account

import (
	"context"
	_ "embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_account.sql
var installSQL string

// Module returns the aws_account module.
func Module() module.Module {
	return module.Module{
		Name:    "aws_account",
		Version: "0.1.0",
		SQL:     installSQL,
		Tables: []module.Table{{
			Name:        "aws_regions",
			CloudID:     []string{"region"},
			Declarative: []string{"region"},
			Initial:     []string{"is_default", "is_enabled"},
			ReadOnly:    true,
		}},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"aws_regions": newRegionMapper(cfg)}, nil
		},
		Context: scope,
	}
}

// scope is the module's Context hook: the enabled regions and the default
// one, as the cycle read aws_regions. With no region enabled yet (before
// the first sync), the scope stays the SDK configuration's region.
func scope(ctx context.Context, rows map[string][]module.Record) context.Context {
	var s module.Scope
	for _, r := range rows["aws_regions"] {
		if !r.Bool("is_enabled") {
			continue
		}
		s.Regions = append(s.Regions, r.String("region"))
		if r.Bool("is_default") {
			s.Default = r.String("region")
		}
	}
	if len(s.Regions) == 0 {
		return ctx
	}
	if s.Default == "" {
		s.Default = s.Regions[0]
	}
	return module.WithScope(ctx, s)
}
