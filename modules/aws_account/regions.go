package aws_account

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/iasql/iasql/modules/module"
)

// regionMapper reads the account's regions. The table is read-only: its
// mapper is a module.ReaderOf, never asked to write.
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

// Read lists every region of the account, the opt-in regions it has not
// enabled included (DescribeRegions with AllRegions; OptInStatus is
// opt-in-not-required, opted-in or not-opted-in):
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_DescribeRegions.html
// A region not opted in is imported with is_enabled false, so it is not in
// the scope of cycles. A user who enables it in the table anyway (or an
// account that opts out of a region the table has enabled) gets reads there
// that fail: AWS answers requests for a region the account has not enabled
// with AuthFailure (EC2, HTTP 401, "AWS was not able to validate the
// provided access credentials"; JSON services such as ECR answer
// UnrecognizedClientException). Those regions are reported unverified and
// left as they are (module.PartialError), never read as empty; see
// https://docs.aws.amazon.com/accounts/latest/reference/manage-acct-regions.html
// and the AuthFailure and OptInRequired codes of
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
// Keeping the row (rather than the table listing enabled regions only)
// keeps the region's resources in their tables while it is disabled.
func (m *regionMapper) Read(ctx context.Context, _ module.Call) ([]Region, error) {
	out, err := m.client.DescribeRegions(ctx, &ec2.DescribeRegionsInput{AllRegions: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("describe regions: %w", err)
	}
	found := make([]Region, 0, len(out.Regions))
	for _, r := range out.Regions {
		name := aws.ToString(r.RegionName)
		enabled := aws.ToString(r.OptInStatus) != "not-opted-in"
		found = append(found, Region{Name: name, IsDefault: name == m.home && enabled, IsEnabled: enabled})
	}
	return found, nil
}

var _ module.ReaderOf[Region] = (*regionMapper)(nil)
