package emulator_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecr"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// TestDisabledRegions: a region the account has not enabled is left out
// of DescribeRegions but for AllRegions or by name (not-opted-in), and
// every request signed for it fails as AWS fails it (EC2 AuthFailure 401,
// ECR UnrecognizedClientException), while the other regions work.
func TestDisabledRegions(t *testing.T) {
	base := testkit.StartCloud(t, emulator.Options{DisabledRegions: []string{"eu-central-1"}}).AWS
	cfg := func(region string) aws.Config {
		c := base
		c.Region, c.RetryMaxAttempts = region, 1
		return c
	}
	ctx := t.Context()
	home := ec2.NewFromConfig(cfg("us-east-1"))

	names := func(in *ec2.DescribeRegionsInput) map[string]string {
		t.Helper()
		out, err := home.DescribeRegions(ctx, in)
		if err != nil {
			t.Fatalf("describe regions: %v", err)
		}
		got := map[string]string{}
		for _, r := range out.Regions {
			got[aws.ToString(r.RegionName)] = aws.ToString(r.OptInStatus)
		}
		return got
	}
	for _, tc := range []struct {
		name   string
		in     *ec2.DescribeRegionsInput
		listed bool // eu-central-1 is listed (as not-opted-in)
		n      int
	}{
		{"enabled regions only", &ec2.DescribeRegionsInput{}, false, len(emulator.Regions()) - 1},
		{"all regions", &ec2.DescribeRegionsInput{AllRegions: aws.Bool(true)}, true, len(emulator.Regions())},
		{"by name", &ec2.DescribeRegionsInput{RegionNames: []string{"eu-central-1", "us-east-1"}}, true, 2},
		{"by opt-in status", &ec2.DescribeRegionsInput{AllRegions: aws.Bool(true),
			Filters: []ec2types.Filter{{Name: aws.String("opt-in-status"), Values: []string{"not-opted-in"}}}}, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := names(tc.in)
			status, listed := got["eu-central-1"]
			if listed != tc.listed || listed && status != "not-opted-in" || len(got) != tc.n {
				t.Errorf("regions %v: want eu-central-1 listed %v (not-opted-in) among %d", got, tc.listed, tc.n)
			}
			for name, st := range got {
				if name != "eu-central-1" && st != "opt-in-not-required" {
					t.Errorf("region %s: opt-in status %s", name, st)
				}
			}
		})
	}

	status := func(err error) int {
		var re *awshttp.ResponseError
		if errors.As(err, &re) {
			return re.HTTPStatusCode()
		}
		return 0
	}
	for _, tc := range []struct {
		name, region string
		call         func(region string) error
		code         string
		status       int
	}{
		{"EC2 in the disabled region", "eu-central-1", func(r string) error {
			_, err := ec2.NewFromConfig(cfg(r)).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			return err
		}, "AuthFailure", http.StatusUnauthorized},
		{"ECR in the disabled region", "eu-central-1", func(r string) error {
			_, err := ecr.NewFromConfig(cfg(r)).DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{})
			return err
		}, "UnrecognizedClientException", http.StatusBadRequest},
		{"S3 in the disabled region", "eu-central-1", func(r string) error {
			_, err := s3.NewFromConfig(cfg(r), testkit.PathStyle).ListBuckets(ctx, &s3.ListBucketsInput{})
			return err
		}, "InvalidAccessKeyId", http.StatusForbidden},
		{"EC2 in an enabled region", "eu-west-1", func(r string) error {
			_, err := ec2.NewFromConfig(cfg(r)).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			return err
		}, "", 0},
		{"ECR in an enabled region", "eu-west-1", func(r string) error {
			_, err := ecr.NewFromConfig(cfg(r)).DescribeRepositories(ctx, &ecr.DescribeRepositoriesInput{})
			return err
		}, "", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call(tc.region)
			if tc.code == "" {
				if err != nil {
					t.Fatalf("%v", err)
				}
				return
			}
			if c, st := errCode(err), status(err); c != tc.code || st != tc.status {
				t.Errorf("%v: code %q status %d, want %q %d", err, c, st, tc.code, tc.status)
			}
		})
	}
}

// TestRegionFaults: a fault with a region affects only requests signed for
// it; Denied answers with the service's authentication error, which the SDK
// does not retry.
func TestRegionFaults(t *testing.T) {
	em, client, _ := sdkEnv(t, ec2.NewFromConfig)
	ctx := t.Context()
	em.Inject(emulator.Fault{Op: "ec2:DescribeVpcs", Region: "us-west-2", Kind: emulator.Denied})
	describe := func(region string) error {
		_, err := client(region).DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
		return err
	}
	for range 2 {
		if err := describe("us-west-2"); errCode(err) != "AuthFailure" || !strings.Contains(err.Error(), "injected") {
			t.Errorf("us-west-2 under the fault: %v, want an injected AuthFailure", err)
		}
		if err := describe("us-east-1"); err != nil {
			t.Errorf("us-east-1 is not under the fault: %v", err)
		}
	}
	em.ClearFaults()
	if err := describe("us-west-2"); err != nil {
		t.Errorf("us-west-2 after clearing: %v", err)
	}
	calls := em.Calls()["ec2:DescribeVpcs"]
	if calls != 5 {
		t.Errorf("%d DescribeVpcs calls, want 5 (no retry of a denied call)", calls)
	}
}
