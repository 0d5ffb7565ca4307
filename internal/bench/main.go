// Command bench measures, in one run against a throwaway PostgreSQL, what
// capturing changes costs the writers of a registered table and how well the
// sidecar keeps up:
//
//   - capture_tps_none, capture_tps_trigger, capture_tps_sidecar: pgbench
//     transactions per second of one write-heavy workload (one change per
//     transaction, 2 clients; see singleWorkload) on the same table with no
//     capture, with a plain JSONB audit trigger, and with the sidecar
//     capturing;
//   - capture_overhead_ratio and trigger_overhead_ratio: those rates over the
//     rate without capture;
//   - capture_rate_ratio: how fast the sidecar turns a backlog of changes into
//     audit rows, relative to how fast pg_recvlogical alone consumes the same
//     changes from an equivalent pgoutput slot;
//   - capture_lag_p50_ms, capture_lag_p99_ms: captured_at - ts of the audit
//     rows at a steady 1,000 changes per second;
//   - capture_tps_decoding, decoding_overhead_ratio: the writers' rate, and
//     its ratio to the rate without capture, with the table registered as
//     for the sidecar but streamed by pg_recvlogical (pgoutput, to
//     /dev/null) instead: the cost of PostgreSQL's logical decoding alone,
//     which any consumer pays, measured in the same interleaved slices as
//     the first three; stderr says what share of the sidecar's writer cost
//     it accounts for;
//   - the same writer-cost figures and capture_rate_ratio, suffixed _5change,
//     on transactions of five changes (pgbench's standard shape; see
//     transactionWorkload for why both are measured);
//   - the engine's figures: scheduled no-diff cycles over 1,000 and 10,000
//     buckets and 5,000 security groups, and commit_overhead_ms (see
//     cycles and securityGroups); commit_overhead_ms_10k_scoped: CALL
//     iasql_commit() creating one bucket beside 10,000 in sync (goal: under
//     3x commit_overhead_ms; see scopedCommit); commit_ms_usual and
//     commit_ms_under_flood: INSERT + CALL iasql_commit() alone, and while
//     a role without grants floods the sidecar with requests it refuses
//     (goal: within 1 s of usual; see commitUnderFlood);
//   - beside 100,000 buckets in sync, with the sidecar a child process:
//     cycle_nodiff_ms_100k (goal: under 3 s, list pages only),
//     commit_overhead_ms_100k_scoped (goal: under 3x commit_overhead_ms),
//     preview_ms_100k (one change; goal: under 100 ms) and
//     sidecar_rss_kb_per_resource_100k (goal: at most 1 KB; see
//     scalePart);
//   - slow_creates_s_100: the wall time of one commit creating 100 buckets
//     with 2 s of emulator latency per CreateBucket (goal: under 25 s), and
//     user_write_wait_ms_p99: a user's UPDATE + COMMIT latency on other rows
//     of the table meanwhile (goal: under 50 ms; see slowCreatesPart);
//   - cc_cycle_nodiff_ms_1k and cc_creates_s_100: a Cloud Control resource
//     type as a table (AWS::Logs::LogGroup): scheduled no-diff cycles over
//     1,000 log groups (goal: list pages only), and one commit creating 100
//     with 1 s per request in the emulator (goal: under 15 s; see
//     cloudControlPart);
//   - event_to_row_ms_p50, event_to_row_ms_p99 and calls_per_event: 100
//     changes another access key makes to a bucket (its versioning), each
//     brought into its row by the events queue (the emulator delivers
//     CloudTrail's events 1 s after the call): from the change to the row,
//     and the sidecar's cloud calls per change beyond the queue's (goal:
//     p99 under 5 s, at most 2 calls; see eventsPart);
//   - crash_duplicates and crash_orphans: over 50 SIGKILLs of a sidecar
//     (a child process) while its commit creates buckets, VPCs, subnets,
//     security groups, IAM roles, instances, a load balancer with a target
//     group and a listener, and Cloud Control log groups (in half the
//     trials against an endpoint that does not honour RunInstances'
//     ClientToken), the copies beyond one per row and the cloud resources
//     no row stands for once a new sidecar has committed (goal: both 0;
//     see crashPart);
//   - history_ms_1m: iasql_history of one record among 1,000,000 audit
//     rows (goal: under 50 ms), and as_of_ms_1m: iasql_as_of of one of
//     their tables (see historyPart).
//
// It prints one "name: value" line per figure on stdout, progress on stderr,
// and exits 1 with a one-line error when something fails. The goals are
// printed on stderr as comments; missing one is not a failure.
//
// Run it with make bench, or: PATH=/usr/lib/postgresql/15/bin:$PATH
// IASQL_BIN=$PWD/bin/iasql go run ./internal/bench
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgcluster"
)

// budget bounds the whole run; a normal run takes fifteen to twenty
// minutes.
const budget = 40 * time.Minute

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s\n", strings.Join(strings.Fields(err.Error()), " "))
		os.Exit(1)
	}
}

// bench is one run: the cluster, the tools and where figures go.
type bench struct {
	cluster     *pgcluster.Cluster
	admin       *pgx.Conn // the maintenance database
	iasqlBin    string
	emuURL      string // the emulator the capture-only sidecars are pointed at
	pgbench     string
	recvlogical string
	work        *workload // the workload of the figures: one change per transaction
	tx5         *workload // five changes per transaction (figures suffixed _5change)
	out         io.Writer // figures
	log         io.Writer // progress
	// commitOverhead is commit_overhead_ms once cycles has measured it (the
	// goal of commit_overhead_ms_100k_scoped is relative to it).
	commitOverhead float64
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}

func (b *bench) figure(name, format string, v float64) {
	fmt.Fprintf(b.out, "%s: "+format+"\n", name, v)
}

func run(ctx context.Context, stdout, stderr io.Writer) error {
	ctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()

	iasqlBin := os.Getenv("IASQL_BIN")
	if iasqlBin == "" {
		return errors.New("IASQL_BIN is not set: build the sidecar (go build -o bin/iasql ./cmd/iasql) and set IASQL_BIN to its path, or run make bench")
	}
	if _, err := os.Stat(iasqlBin); err != nil {
		return fmt.Errorf("sidecar binary IASQL_BIN: %w", err)
	}
	tmp, err := os.MkdirTemp("", "iasql-bench-")
	if err != nil {
		return fmt.Errorf("create work directory: %w", err)
	}
	defer os.RemoveAll(tmp)
	b := &bench{iasqlBin: iasqlBin, work: singleWorkload(), tx5: transactionWorkload(), out: stdout, log: stderr}
	for _, w := range []*workload{b.work, b.tx5} {
		if err := w.write(tmp); err != nil {
			return err
		}
	}
	b.logf("starting a throwaway PostgreSQL (fsync on)")
	c, err := pgcluster.Start(ctx, pgcluster.Options{Durable: true, Settings: map[string]string{
		// Keep background work from landing in one variant and not another:
		// no autovacuum, and checkpoints only where the bench asks for them.
		"autovacuum":         "off",
		"checkpoint_timeout": "30min",
		"max_wal_size":       "16GB",
		"shared_buffers":     "256MB",
	}})
	if err != nil {
		return fmt.Errorf("start PostgreSQL: %w", err)
	}
	defer c.Destroy()
	b.cluster = c
	if b.pgbench, err = tool(c, "pgbench"); err != nil {
		return err
	}
	if b.recvlogical, err = tool(c, "pg_recvlogical"); err != nil {
		return err
	}
	if b.admin, err = pgx.Connect(ctx, c.DSN("postgres")); err != nil {
		return fmt.Errorf("connect to the maintenance database: %w", err)
	}
	defer b.admin.Close(context.Background())
	// The capture-only sidecars install no module, but whatever AWS calls
	// they make go to an emulator of their own, never to AWS.
	_, emuCfg, stopEmu, err := startEmulatorWith(ctx, emulator.Options{})
	if err != nil {
		return err
	}
	defer stopEmu()
	b.emuURL = *emuCfg.BaseEndpoint

	if err := b.run(ctx); err != nil {
		if log := c.Log(); strings.Contains(log, "ERROR") || strings.Contains(log, "FATAL") || strings.Contains(log, "PANIC") {
			fmt.Fprintf(stderr, "server log (tail):\n%s\n", tail(log, 3000))
		}
		return err
	}
	return nil
}

// run measures every figure: writer cost, lag, the backlog rate, then the
// engine's cycles, slow creates and crashes. IASQL_BENCH_ONLY=capture,
// =cycles, =sg, =instances (cycle_nodiff_ms_instances_5k), =tier (tier_commit_s), =scoped (commit_overhead_ms and
// commit_overhead_ms_10k_scoped), =scale (the 100,000-bucket figures:
// cycle_nodiff_ms_100k, commit_overhead_ms_100k_scoped,
// sidecar_rss_kb_per_resource_100k, preview_ms_100k), =slow (slow_creates_s_100 and
// user_write_wait_ms_p99), =cc (cc_cycle_nodiff_ms_1k, cc_creates_s_100,
// cc_cycle_calls_200_types and cc_stack_commit_s), =history (history_ms_1m and as_of_ms_1m),
// =events (event_to_row_ms_p50, event_to_row_ms_p99, calls_per_event)
// or =crash (crash_duplicates and crash_orphans)
// runs one part; =writers only the writer cost on the main workload, =rate
// only the backlog rate (to try a change).
func (b *bench) run(ctx context.Context) error {
	only := os.Getenv("IASQL_BENCH_ONLY")
	switch only {
	case "cycles":
		if err := b.cycles(ctx); err != nil {
			return err
		}
		return b.securityGroups(ctx)
	case "sg":
		return b.securityGroups(ctx)
	case "instances":
		return b.instancesPart(ctx)
	case "tier":
		return b.tierPart(ctx)
	case "scoped":
		return b.scopedPart(ctx)
	case "scale":
		return b.scalePart(ctx, 0)
	case "slow":
		return b.slowCreatesPart(ctx)
	case "crash":
		return b.crashPart(ctx)
	case "cc":
		if err := b.cloudControlPart(ctx); err != nil {
			return err
		}
		return b.cloudControlStackPart(ctx)
	case "events":
		return b.eventsPart(ctx)
	case "rate":
		return b.rate(ctx, b.work)
	case "history":
		return b.historyPart(ctx)
	}
	// A fresh cluster first creates its WAL segments and the OS caches are
	// cold: run the workload once on a scratch database so the first
	// variant measured does not pay for that.
	if err := b.withDB(ctx, "bench_scratch", func(*pgx.Conn) error {
		_, err := b.runPgbench(ctx, b.work, "bench_scratch", baseWarm, nil, "-T", seconds(clusterWarmup))
		return err
	}); err != nil {
		return fmt.Errorf("warm the cluster up: %w", err)
	}
	for _, w := range []*workload{b.work, b.tx5} {
		if err := b.capture(ctx, w, only == "writers"); err != nil {
			return err
		}
		if only == "writers" {
			return nil
		}
	}
	if only == "capture" {
		return nil
	}
	if err := b.cycles(ctx); err != nil {
		return err
	}
	if err := b.securityGroups(ctx); err != nil {
		return err
	}
	if err := b.scalePart(ctx, b.commitOverhead); err != nil {
		return err
	}
	if err := b.instancesPart(ctx); err != nil {
		return err
	}
	if err := b.tierPart(ctx); err != nil {
		return err
	}
	if err := b.slowCreatesPart(ctx); err != nil {
		return err
	}
	if err := b.cloudControlPart(ctx); err != nil {
		return err
	}
	if err := b.cloudControlStackPart(ctx); err != nil {
		return err
	}
	if err := b.historyPart(ctx); err != nil {
		return err
	}
	if err := b.eventsPart(ctx); err != nil {
		return err
	}
	return b.crashPart(ctx)
}

// capture measures and prints workload w's capture figures: what capture
// costs writers, the lag (on the main workload), and the backlog rate;
// with writersOnly, only the first.
func (b *bench) capture(ctx context.Context, w *workload, writersOnly bool) error {
	withLag := !writersOnly && w == b.work
	tps, cpu, lag, err := b.writerCost(ctx, w, withLag)
	if err != nil {
		return err
	}
	sfx, none := w.suffix(), tps[variantNone]
	b.figure("capture_tps_none"+sfx, "%.1f", none)
	b.figure("capture_tps_trigger"+sfx, "%.1f", tps[variantTrigger])
	b.figure("capture_tps_sidecar"+sfx, "%.1f", tps[variantSidecar])
	b.figure("capture_overhead_ratio"+sfx, "%.3f", tps[variantSidecar]/none)
	b.figure("trigger_overhead_ratio"+sfx, "%.3f", tps[variantTrigger]/none)
	b.figure("capture_tps_decoding"+sfx, "%.1f", tps[variantDecoding])
	b.figure("decoding_overhead_ratio"+sfx, "%.3f", tps[variantDecoding]/none)
	b.writerGoal(w, tps, cpu)
	if writersOnly {
		return nil
	}
	if withLag {
		b.figure("capture_lag_p50_ms", "%.2f", lag.p50)
		b.figure("capture_lag_p99_ms", "%.2f", lag.p99)
		fmt.Fprintf(b.log, "# goal: capture_lag_p99_ms = %.2f < 250: %s\n", lag.p99, met(lag.p99 < 250))
	}
	return b.rate(ctx, w)
}

// rate measures and prints w's backlog rate (capture_rate_ratio).
func (b *bench) rate(ctx context.Context, w *workload) error {
	rate, err := b.rateRatio(ctx, w)
	if err != nil {
		return err
	}
	b.figure("capture_rate_ratio"+w.suffix(), "%.3f", rate)
	fmt.Fprintf(b.log, "# goal (%s): capture_rate_ratio = %.3f >= 0.7: %s\n", w.summary, rate, met(rate >= 0.7))
	return nil
}

// writerGoal says on stderr whether the sidecar cost w's writers at most
// half what the trigger cost them, and what share of its cost the decoding
// floor accounts for.
func (b *bench) writerGoal(w *workload, tps, cpu [numVariants]float64) {
	none := tps[variantNone]
	side, trig, dec := 1-tps[variantSidecar]/none, 1-tps[variantTrigger]/none, 1-tps[variantDecoding]/none
	fmt.Fprintf(b.log, "# goal (%s): the sidecar costs writers at most half what the trigger costs them: 1-capture_overhead_ratio = %.3f <= 0.5*(1-trigger_overhead_ratio) = %.3f: %s\n",
		w.summary, side, 0.5*trig, met(side <= 0.5*trig))
	fmt.Fprintf(b.log, "# decoding floor (%s): %s\n", w.summary, floorShare(side, dec,
		cpu[variantSidecar]-cpu[variantNone], cpu[variantDecoding]-cpu[variantNone]))
}

// floorShare says what share of the sidecar's writer cost (1 -
// capture_overhead_ratio) the decoding floor (1 - decoding_overhead_ratio)
// accounts for, and the same by CPU time per transaction over the variant
// without capture (the whole machine's; 0 where unknown).
func floorShare(sideCost, decCost, sideCPU, decCPU float64) string {
	s := fmt.Sprintf("logical decoding alone (pg_recvlogical) costs writers 1-decoding_overhead_ratio = %.3f, the sidecar 1-capture_overhead_ratio = %.3f: ",
		decCost, sideCost)
	if sideCost > 0 {
		s += fmt.Sprintf("decoding accounts for %.0f%% of the sidecar's writer cost", 100*decCost/sideCost)
	} else {
		s += "the sidecar cost writers nothing measurable, so there is no share to give"
	}
	if sideCPU > 0 {
		s += fmt.Sprintf("; by CPU per transaction over none, decoding +%.0f µs of the sidecar's +%.0f µs (%.0f%%)", decCPU, sideCPU, 100*decCPU/sideCPU)
	}
	return s
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// tool finds a PostgreSQL client program on PATH, else beside the server.
func tool(c *pgcluster.Cluster, name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := c.Bin(name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is neither on PATH nor in %s: install the PostgreSQL client programs (make deps)", name, filepath.Dir(p))
	}
	return p, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
