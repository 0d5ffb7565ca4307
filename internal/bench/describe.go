package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// describePart is one benchmark of scheduled no-diff cycles over many
// resources of one kind made in the emulator beforehand: what the
// security-group and instance parts share.
type describePart struct {
	db, name string // the database; the figures' suffix
	what     string // the resources, for log lines ("5000 instances")
	// make creates the resources in the emulator.
	make func(ctx context.Context, cfg aws.Config) error
	// modules the sidecar offers; install, the one installed (importing
	// what make made).
	modules []module.Module
	install string
	// check says what is wrong with the import ("" when it is right).
	check func(ctx context.Context, conn *pgx.Conn) (string, error)
}

// describeOnly makes the resources, installs the module, measures scheduled no-diff
// cycles (scheduledNoDiff) and prints cycle_nodiff_ms_<name> and
// cycle_cloud_calls_nodiff_<name>, with the goal of describe calls only.
func (b *bench) describeOnly(ctx context.Context, p describePart) error {
	var res nodiffResult
	err := b.withDB(ctx, p.db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulator(ctx)
		if err != nil {
			return err
		}
		defer stopEmu()
		if err := p.make(ctx, cfg); err != nil {
			return err
		}
		stop, err := b.runEngine(ctx, conn, p.db, cfg, sgInterval, p.modules...)
		if err != nil {
			return err
		}
		defer stop()
		start := time.Now()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install($1)`, p.install); err != nil {
			return fmt.Errorf("install %s (importing %s): %w", p.install, p.what, err)
		}
		b.logf("%s: installed %s, importing them, in %s", p.what, p.install, time.Since(start).Round(time.Millisecond))
		if bad, err := p.check(ctx, conn); err != nil || bad != "" {
			return fmt.Errorf("after install: %s%v", bad, err)
		}
		if err := scheduledNoDiff(ctx, conn, emu, &res); err != nil {
			return fmt.Errorf("%s: %w", p.what, err)
		}
		b.logf("%s: scheduled no-diff cycles took %.1f ms (median); calls: %s", p.what, res.ms, res.callSummary)
		return nil
	})
	if err != nil {
		return err
	}
	b.figure("cycle_nodiff_ms_"+p.name, "%.1f", res.ms)
	b.figure("cycle_cloud_calls_nodiff_"+p.name, "%.0f", float64(res.calls))
	fmt.Fprintf(b.log, "# goal: no-diff cycle over %s makes describe pages only (%s): %s\n",
		p.what, res.callSummary, met(res.nonList == 0 && res.mutations == 0))
	return nil
}
