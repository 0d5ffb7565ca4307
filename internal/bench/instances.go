package main

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// benchInstances is the size of the instance benchmark.
const benchInstances = 5000

// instancesPart measures a scheduled cycle over 5,000 running EC2
// instances in sync (in us-east-1's default subnets, with the default
// group), beside the VPCs, subnets and groups they reference:
//
//   - cycle_nodiff_ms_instances_5k: the median duration of such cycles;
//   - cycle_cloud_calls_nodiff_instances_5k: the emulator's requests during
//     one (goal: describe pages only), printed on stderr.
func (b *bench) instancesPart(ctx context.Context) error {
	return b.describeOnly(ctx, describePart{
		db: "bench_cycle_instances", name: "instances_5k", what: fmt.Sprintf("%d instances", benchInstances),
		make: func(ctx context.Context, cfg aws.Config) error {
			b.logf("instances: launching %d instances in the emulator", benchInstances)
			return launchInstances(ctx, ec2.NewFromConfig(cfg), benchInstances)
		},
		modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		install: "aws_ec2",
		check: func(ctx context.Context, conn *pgx.Conn) (string, error) {
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM instance WHERE observed_state = 'running'`).Scan(&n); err != nil || n == benchInstances {
				return "", err
			}
			return fmt.Sprintf("%d running instances, want %d", n, benchInstances), nil
		},
	})
}

// launchInstances runs n instances in us-east-1's default subnets, 100
// per RunInstances call.
func launchInstances(ctx context.Context, cl *ec2.Client, n int) error {
	// Spread over the default subnets: one /20 holds 4,091 addresses.
	subnets, err := cl.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{
		Filters: []types.Filter{{Name: aws.String("default-for-az"), Values: []string{"true"}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		return fmt.Errorf("find the default subnets: %v", err)
	}
	const per = 100
	err = parallel((n+per-1)/per, func(i int) error {
		count := int32(min(per, n-i*per))
		_, err := cl.RunInstances(ctx, &ec2.RunInstancesInput{
			ImageId: aws.String("ami-0123456789abcdef0"), InstanceType: types.InstanceTypeT3Micro,
			SubnetId: subnets.Subnets[i%len(subnets.Subnets)].SubnetId,
			MinCount: aws.Int32(count), MaxCount: aws.Int32(count)})
		return err
	})
	if err != nil {
		return fmt.Errorf("launch instances: %w", err)
	}
	return nil
}
