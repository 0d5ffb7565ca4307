package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// scaleBuckets is the size of the scale benchmark.
const scaleBuckets = 100_000

// scalePart measures the engine beside 100,000 buckets in sync
// (IASQL_BENCH_ONLY=scale):
//
//   - cycle_nodiff_ms_100k: the median duration of scheduled cycles with
//     nothing to do (goal: under 3 s, list pages only; see
//     scheduledNoDiff);
//   - commit_overhead_ms_100k_scoped: CALL iasql_commit() creating one
//     bucket beside them (goal: under 3x commit_overhead_ms; see
//     scopedCommit);
//   - preview_ms_100k: SELECT * FROM iasql_preview() inside an iasql
//     transaction that inserted one bucket (median of 5; goal: under
//     100 ms);
//   - sidecar_rss_kb_per_resource_100k: the sidecar's resident set after
//     those cycles, commits and previews, minus its resident set before
//     aws_s3 was installed, in KB per bucket (goal: at most 1).
//
// The buckets are put straight into the emulator and the table (see
// seedBuckets); the sidecar is a child process (iasql run, IASQL_BIN)
// pointed at the in-process emulator with the environment launch.Command
// gives it (loopback endpoint, static credentials, no instance metadata),
// so that its resident set is its own. commitOverhead is
// commit_overhead_ms as cycles measured it (0: measured here first, the
// same way).
func (b *bench) scalePart(ctx context.Context, commitOverhead float64) error {
	if commitOverhead == 0 {
		alone, err := b.nodiff(ctx, 0, nodiffCommit)
		if err != nil {
			return err
		}
		commitOverhead = alone.commitOverhead
		b.figure("commit_overhead_ms", "%.1f", commitOverhead)
	}
	const db = "bench_scale"
	var res nodiffResult
	var previewMS, rssPer float64
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulator(ctx)
		if err != nil {
			return err
		}
		defer stopEmu()
		level := "warn"
		if os.Getenv("IASQL_BENCH_LOG") != "" {
			level = "debug" // the sidecar's debug log, for finding where a figure's time goes
		}
		sc, err := b.startSidecarAt(ctx, *cfg.BaseEndpoint, db, "--interval", cycleInterval.String(), "--log-level", level)
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		defer sc.kill()
		// The sidecar installs the SQL objects, then streams its slot, then
		// registers the modules.
		if _, err := waitActive(ctx, conn, sc.slot, 50*time.Millisecond, time.Minute, sc); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		if err := poll(ctx, 100*time.Millisecond, time.Minute, "the sidecar's engine", sc, func(ctx context.Context) (bool, error) {
			return store.EngineRunning(ctx, conn, module.Versions([]module.Module{aws_s3.Module()}))
		}); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		before, err := rssKB(sc.cmd.Process.Pid)
		if err != nil {
			return err
		}
		start := time.Now()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('aws_s3')`); err != nil {
			return fmt.Errorf("scale: install aws_s3: %w", err)
		}
		if err := seedBuckets(ctx, conn, emu); err != nil {
			return err
		}
		b.logf("scale: installed aws_s3 and committed %d buckets already in the cloud in %s; sidecar RSS before install %d KB, now %d KB",
			scaleBuckets, time.Since(start).Round(time.Millisecond), before, must(rssKB(sc.cmd.Process.Pid)))
		t0, _ := procTicks(sc.cmd.Process.Pid)
		if err := scheduledNoDiff(ctx, conn, emu, &res); err != nil {
			return fmt.Errorf("scale: %d buckets: %w", scaleBuckets, err)
		}
		t1, _ := procTicks(sc.cmd.Process.Pid)
		b.logf("scale: %d buckets, scheduled no-diff cycles took %.1f ms (median); calls: %s; the sidecar used %.1f s of CPU meanwhile (4 cycles, the first of which lists every bucket's objects); sidecar RSS %d KB",
			scaleBuckets, res.ms, res.callSummary, float64(t1-t0)/clockTicks, must(rssKB(sc.cmd.Process.Pid)))
		if res.scopedCommit, err = b.scopedCommit(ctx, conn, emu, scaleBuckets, 5, true); err != nil {
			return err
		}
		if previewMS, err = previewOne(ctx, conn, 5); err != nil {
			return err
		}
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM bucket`).Scan(&rows); err != nil {
			return err
		}
		after, err := rssKB(sc.cmd.Process.Pid)
		if err != nil {
			return err
		}
		b.logf("scale: sidecar RSS %d KB after the cycles, commits and previews (%d before install, %d buckets)", after, before, rows)
		rssPer = float64(after-before) / float64(rows)
		return sc.stop()
	})
	if err != nil {
		return err
	}
	b.figure("cycle_nodiff_ms_100k", "%.1f", res.ms)
	b.figure("commit_overhead_ms_100k_scoped", "%.1f", res.scopedCommit)
	b.figure("sidecar_rss_kb_per_resource_100k", "%.3f", rssPer)
	b.figure("preview_ms_100k", "%.1f", previewMS)
	fmt.Fprintf(b.log, "# goal: cycle_nodiff_ms_100k = %.1f < 3000 with list pages only (%s; %d other, %d mutating): %s\n",
		res.ms, res.callSummary, res.nonList, res.mutations, met(res.ms < 3000 && res.nonList == 0 && res.mutations == 0))
	fmt.Fprintf(b.log, "# goal: commit_overhead_ms_100k_scoped = %.1f < 3 x commit_overhead_ms = %.1f: ratio %.2f: %s\n",
		res.scopedCommit, 3*commitOverhead, res.scopedCommit/commitOverhead, met(res.scopedCommit < 3*commitOverhead))
	fmt.Fprintf(b.log, "# goal: sidecar_rss_kb_per_resource_100k = %.3f <= 1: %s\n", rssPer, met(rssPer <= 1))
	fmt.Fprintf(b.log, "# goal: preview_ms_100k = %.1f < 100: %s\n", previewMS, met(previewMS < 100))
	return nil
}

// seedBuckets makes scaleBuckets buckets in the emulator without requests
// (Emulator.AddBuckets) and the same rows in the bucket table with one
// INSERT ... SELECT, in one iasql transaction (no automatic cycle sees the
// buckets without their rows), then commits them: the commit finds each
// row's bucket as the row says (name, region, versioning, creation time)
// and records it in sync. What an import would make, without 100,000
// creates and inserts.
func seedBuckets(ctx context.Context, conn *pgx.Conn, emu *emulator.Emulator) error {
	if _, err := conn.Exec(ctx, `CALL iasql_begin()`); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	created := time.Now().UTC().Truncate(time.Millisecond) // S3 lists creation dates in milliseconds
	names := make([]string, scaleBuckets)
	for i := range names {
		names[i] = scaleBucket(i)
	}
	if err := emu.AddBuckets("us-east-1", created, names...); err != nil {
		return fmt.Errorf("scale: %w", err)
	}
	if _, err := conn.Exec(ctx, `
		INSERT INTO bucket (name, region, versioning, created_at)
		SELECT name, 'us-east-1', false, $2 FROM unnest($1::text[]) AS name`, names, created); err != nil {
		return fmt.Errorf("scale: insert %d buckets: %w", scaleBuckets, err)
	}
	if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
		return fmt.Errorf("scale: commit %d buckets in the cloud already: %w", scaleBuckets, err)
	}
	var acted int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_audit_log WHERE table_name = 'bucket' AND change_type <> 'INSERT'`).Scan(&acted); err != nil {
		return err
	}
	if acted > 0 {
		return fmt.Errorf("scale: committing %d buckets that are in the cloud already changed %d rows, want none", scaleBuckets, acted)
	}
	// The bench runs without autovacuum (main.go); where it runs, it
	// analyses tables this size after such an insert, and the planner then
	// finds a cycle's recent audit rows and records by index.
	if _, err := conn.Exec(ctx, `ANALYZE public.bucket, public.iasql_audit_log, public.iasql_records`); err != nil {
		return fmt.Errorf("scale: analyze: %w", err)
	}
	return nil
}

// scaleBucket names the scale benchmark's bucket i.
func scaleBucket(i int) string { return fmt.Sprintf("scale-%06d", i) }

// previewOne is the median, over rounds, of SELECT * FROM iasql_preview()
// inside an iasql transaction that inserted one bucket (so that no cycle
// runs in between); the preview must show that bucket's create alone. The
// transaction is rolled back.
func previewOne(ctx context.Context, conn *pgx.Conn, rounds int) (float64, error) {
	if _, err := conn.Exec(ctx, `CALL iasql_begin()`); err != nil {
		return 0, fmt.Errorf("preview: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO bucket (name) VALUES ('preview-00')`); err != nil {
		return 0, fmt.Errorf("preview: %w", err)
	}
	var times []float64
	for range rounds {
		t0 := time.Now()
		var plan string
		if err := conn.QueryRow(ctx, `SELECT coalesce(string_agg(action || ' ' || direction || ' ' || table_name || ' ' || coalesce(cloud_id, ''), '; '), '')
		                                FROM iasql_preview()`).Scan(&plan); err != nil {
			return 0, fmt.Errorf("preview: %w", err)
		}
		times = append(times, float64(time.Since(t0))/float64(time.Millisecond))
		if !strings.HasPrefix(plan, "create ") || strings.Contains(plan, ";") {
			return 0, fmt.Errorf("preview of one new bucket shows %q, want its create alone", plan)
		}
	}
	if _, err := conn.Exec(ctx, `CALL iasql_rollback()`); err != nil {
		return 0, fmt.Errorf("preview: rollback: %w", err)
	}
	sort.Float64s(times)
	return times[len(times)/2], nil
}

// rssKB is a process's resident set size (VmRSS in /proc/<pid>/status), in
// KB.
func rssKB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("read the resident set of process %d: %w", pid, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read the resident set of process %d: %q: %w", pid, v, err)
			}
			return n, nil
		}
	}
	return 0, fmt.Errorf("read the resident set of process %d: no VmRSS in /proc/%d/status (%v)", pid, pid, s.Err())
}

// must is v, or -1 when err is set (for figures logged in passing).
func must(v int64, err error) int64 {
	if err != nil {
		return -1
	}
	return v
}
