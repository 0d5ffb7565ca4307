package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// sgGroups is the size of the security-group benchmark: groups with 4
// rules each (3 ingress rules and AWS's default egress rule).
const sgGroups = 5000

// sgInterval is the automatic-cycle interval while security-group cycles
// are measured.
const sgInterval = 10 * time.Second

// securityGroups measures a scheduled cycle over 5,000 security groups
// with 4 rules each (20,000 rules) in sync, in the default region of an
// account whose other regions hold only their defaults:
//
//   - cycle_nodiff_ms_sg_5k: the median duration of such cycles;
//   - cycle_cloud_calls_nodiff_sg_5k: the emulator's requests during one
//     (goal: describe pages only), the calls printed on stderr.
func (b *bench) securityGroups(ctx context.Context) error {
	return b.describeOnly(ctx, describePart{
		db: "bench_cycle_sg", name: "sg_5k", what: fmt.Sprintf("%d security groups", sgGroups),
		make: func(ctx context.Context, cfg aws.Config) error {
			b.logf("security groups: creating %d groups with 4 rules each in the emulator", sgGroups)
			return createGroups(ctx, ec2.NewFromConfig(cfg), sgGroups)
		},
		modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module()},
		install: "aws_security_group",
		check: func(ctx context.Context, conn *pgx.Conn) (string, error) {
			var groups int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM security_group WHERE region = 'us-east-1'`).Scan(&groups); err != nil || groups == sgGroups+1 {
				return "", err
			}
			return fmt.Sprintf("%d groups in us-east-1, want %d and the default one", groups, sgGroups), nil
		},
	})
}

// createGroups creates n groups in us-east-1's default VPC, each with three
// ingress rules (AWS adds the fourth, the default egress rule).
func createGroups(ctx context.Context, cl *ec2.Client, n int) error {
	err := parallel(n, func(i int) error {
		out, err := cl.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
			GroupName: aws.String(fmt.Sprintf("bench-%05d", i)), Description: aws.String("benchmark group")})
		if err != nil {
			return err
		}
		var perms []types.IpPermission
		for _, port := range []int32{22, 80, 443} {
			perms = append(perms, types.IpPermission{IpProtocol: aws.String("tcp"), FromPort: aws.Int32(port), ToPort: aws.Int32(port),
				IpRanges: []types.IpRange{{CidrIp: aws.String("10.0.0.0/8")}}})
		}
		_, err = cl.AuthorizeSecurityGroupIngress(ctx, &ec2.AuthorizeSecurityGroupIngressInput{GroupId: out.GroupId, IpPermissions: perms})
		return err
	})
	if err != nil {
		return fmt.Errorf("create security groups: %w", err)
	}
	return nil
}
