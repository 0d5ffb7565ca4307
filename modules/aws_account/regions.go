package aws_account

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/iasql/iasql/modules/module"
)

// regionMapper reads the account's regions. The table is read-only: the
// engine never asks it to write.
type regionMapper struct {
	client *ec2.Client
	home   string // the SDK configuration's region: the default on import
}

func newRegionMapper(cfg aws.Config) *regionMapper {
	home := cfg.Region
	if home == "" {
		home = "us-east-1"
	}
	return &regionMapper{client: ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = home }), home: home}
}

// Read lists the regions enabled for the account (opted in, or needing no
// opt-in).
func (m *regionMapper) Read(ctx context.Context) ([]module.Record, error) {
	out, err := m.client.DescribeRegions(ctx, &ec2.DescribeRegionsInput{})
	if err != nil {
		return nil, fmt.Errorf("describe regions: %w", err)
	}
	recs := make([]module.Record, 0, len(out.Regions))
	for _, r := range out.Regions {
		name := aws.ToString(r.RegionName)
		recs = append(recs, module.Record{"region": name, "is_default": name == m.home, "is_enabled": true})
	}
	return recs, nil
}

var errReadOnly = &module.TerminalError{Err: errors.New("regions cannot be created, changed or deleted: aws_regions follows the account (set is_enabled and is_default instead)")}

func (m *regionMapper) Create(context.Context, module.Record) (module.Record, error) {
	return nil, errReadOnly
}

func (m *regionMapper) Update(context.Context, module.Record, module.Record) (module.Record, error) {
	return nil, errReadOnly
}

func (m *regionMapper) Delete(context.Context, module.Record) error { return errReadOnly }

// Equal compares the region code, the only column the cloud has.
func (m *regionMapper) Equal(db, cloud module.Record) bool {
	return db.String("region") == cloud.String("region")
}
