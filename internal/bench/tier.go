package main

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

// Delays of the tier benchmark: how long an instance stays pending, and a
// load balancer provisioning.
const (
	tierInstanceDelay = 5 * time.Second
	tierBalancerDelay = 30 * time.Second
	tierInstances     = 10
)

// tierPart measures tier_commit_s: the web tier (a VPC, two subnets, a
// security group and its rule, 10 instances behind an application load
// balancer with a target group, targets and a listener) written in one
// transaction, and CALL iasql_commit() timed until it returns with the
// tier whole in the cloud, with 5 s of emulator delay per instance to
// reach running and 30 s for the load balancer to become active. Goal:
// under 45 s, close to the slowest single resource (the load balancer):
// what does not depend on each other runs at once.
func (b *bench) tierPart(ctx context.Context) error {
	const db = "bench_tier"
	var took time.Duration
	tier := webtier.Default()
	tier.Instances = tierInstances
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		_, cfg, stopEmu, err := startEmulatorWith(ctx, emulator.Options{
			InstanceStartDelay: tierInstanceDelay, InstanceStopDelay: tierInstanceDelay, LoadBalancerActiveDelay: tierBalancerDelay})
		if err != nil {
			return err
		}
		defer stopEmu()
		stop, err := b.runEngine(ctx, conn, db, cfg, time.Hour, modules.All()...)
		if err != nil {
			return err
		}
		defer stop()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('aws_elb')`); err != nil {
			return fmt.Errorf("install aws_elb: %w", err)
		}
		if _, err := conn.Exec(ctx, `CALL iasql_begin()`); err != nil {
			return err
		}
		for _, q := range tier.Statements() {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		start := time.Now()
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return fmt.Errorf("commit the tier: %w", err)
		}
		took = time.Since(start)
		c, err := tier.Observe(ctx, cfg)
		if err != nil {
			return err
		}
		if bad := c.Complete(tier.Instances); bad != "" {
			return fmt.Errorf("the tier after its commit: %s", bad)
		}
		b.logf("tier: %d instances and a load balancer committed in %s", tier.Instances, took.Round(time.Millisecond))
		return nil
	})
	if err != nil {
		return err
	}
	b.figure("tier_commit_s", "%.1f", took.Seconds())
	fmt.Fprintf(b.log, "# goal: tier_commit_s = %.1f < 45 (the load balancer alone takes %.0f s): %s\n",
		took.Seconds(), tierBalancerDelay.Seconds(), met(took < 45*time.Second))
	return nil
}
