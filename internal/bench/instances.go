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
	var res nodiffResult
	const db = "bench_cycle_instances"
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulator(ctx)
		if err != nil {
			return err
		}
		defer stopEmu()
		b.logf("instances: launching %d instances in the emulator", benchInstances)
		if err := launchInstances(ctx, ec2.NewFromConfig(cfg), benchInstances); err != nil {
			return err
		}
		stop, err := b.runEngine(ctx, conn, db, cfg, sgInterval,
			aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module())
		if err != nil {
			return err
		}
		defer stop()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('aws_ec2')`); err != nil {
			return fmt.Errorf("install aws_ec2 (importing %d instances): %w", benchInstances, err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM instance WHERE observed_state = 'running'`).Scan(&n); err != nil {
			return err
		}
		if n != benchInstances {
			return fmt.Errorf("after install %d running instances, want %d", n, benchInstances)
		}
		if err := scheduledNoDiff(ctx, conn, emu, &res); err != nil {
			return fmt.Errorf("%d instances: %w", benchInstances, err)
		}
		b.logf("instances: scheduled no-diff cycles took %.1f ms (median); calls: %s", res.ms, res.callSummary)
		return nil
	})
	if err != nil {
		return err
	}
	b.figure("cycle_nodiff_ms_instances_5k", "%.1f", res.ms)
	b.figure("cycle_cloud_calls_nodiff_instances_5k", "%.0f", float64(res.calls))
	fmt.Fprintf(b.log, "# goal: no-diff cycle over 5k instances makes describe pages only (%s): %s\n",
		res.callSummary, met(res.nonList == 0 && res.mutations == 0))
	return nil
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
