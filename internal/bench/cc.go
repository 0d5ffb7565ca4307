package main

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

const (
	// ccInSync log groups exist in the cloud (made through Cloud Control)
	// when the type is installed.
	ccInSync = 1000
	// ccCreates log groups are created by one commit, each Cloud Control
	// request taking ccDelay in the emulator.
	ccCreates = 100
	ccDelay   = time.Second
)

// cloudControlPart measures a Cloud Control resource type as a table:
//
//   - cc_cycle_nodiff_ms_1k: the median duration of scheduled cycles with
//     nothing to do over 1,000 in-sync log groups (AWS::Logs::LogGroup);
//     goal: list pages only (ListResources, 25 a page), no per-item call,
//     since the list carries every property;
//   - cc_creates_s_100: the wall time of one CALL iasql_commit() creating
//     100 log groups when each request stays IN_PROGRESS for 1 s in the
//     emulator; goal: under 15 s, bounded by the rate limit (25 requests a
//     second), not by one at a time (100 s).
//
// The sidecar runs in-process against an in-process emulator.
func (b *bench) cloudControlPart(ctx context.Context) error {
	const db = "bench_cc"
	var nodiff nodiffResult
	var commit time.Duration
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulatorWith(ctx, emulator.Options{})
		if err != nil {
			return err
		}
		defer stopEmu()
		client := cloudcontrol.NewFromConfig(cfg)
		if err := parallel(ccInSync, func(i int) error {
			_, err := client.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"),
				DesiredState: aws.String(fmt.Sprintf(`{"LogGroupName": "insync-%05d", "RetentionInDays": 7}`, i))})
			return err
		}); err != nil {
			return fmt.Errorf("create %d log groups: %w", ccInSync, err)
		}
		stop, err := b.runEngineWith(ctx, conn, db, cfg, 5*time.Second, nil, []module.Catalog{aws_cloudcontrol.Catalog()})
		if err != nil {
			return err
		}
		defer stop()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('AWS::Logs::LogGroup')`); err != nil {
			return fmt.Errorf("install AWS::Logs::LogGroup: %w", err)
		}
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM aws_logs_log_group`).Scan(&n); err != nil || n != ccInSync {
			return fmt.Errorf("after install %d log groups (%v), want %d", n, err, ccInSync)
		}
		b.logf("cloud control: %d log groups imported; measuring scheduled no-diff cycles", n)
		if err := scheduledNoDiff(ctx, conn, emu, &nodiff); err != nil {
			return err
		}

		// The engine's automatic cycles would run beside the commit: pause
		// them (an iasql transaction), then time the commit alone.
		emu.SetCloudControlDelay(ccDelay)
		if _, err := conn.Exec(ctx, `CALL iasql_begin()`); err != nil {
			return err
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO aws_logs_log_group (log_group_name, retention_in_days)
			SELECT format('created-%%s', lpad(i::text, 5, '0')), 14 FROM generate_series(1, %d) i`, ccCreates)); err != nil {
			return fmt.Errorf("insert %d log groups: %w", ccCreates, err)
		}
		emu.Reset()
		start := time.Now()
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return fmt.Errorf("commit %d log groups: %w", ccCreates, err)
		}
		commit = time.Since(start)
		b.logf("cloud control: the commit took %.1f s: %v", commit.Seconds(), emu.Calls())
		if got := emu.Calls()["cloudcontrolapi:CreateResource"]; got != ccCreates {
			return fmt.Errorf("the commit made %d CreateResource calls, want %d", got, ccCreates)
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.figure("cc_cycle_nodiff_ms_1k", "%.1f", nodiff.ms)
	fmt.Fprintf(b.log, "# goal: a no-diff cycle over %d log groups makes list pages only (%s): %s\n",
		ccInSync, nodiff.callSummary, met(nodiff.nonList == 0 && nodiff.mutations == 0))
	s := commit.Seconds()
	b.figure("cc_creates_s_100", "%.1f", s)
	fmt.Fprintf(b.log, "# goal: cc_creates_s_100 = %.1f < 15 (%d creates of %s each, %.0f s one at a time): %s\n",
		s, ccCreates, ccDelay, ccCreates*ccDelay.Seconds(), met(s < 15))
	return nil
}
