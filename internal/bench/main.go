// Command bench measures, in one run against a throwaway PostgreSQL, what
// capturing changes costs the writers of a registered table and how well the
// sidecar keeps up:
//
//   - capture_tps_none, capture_tps_trigger, capture_tps_sidecar: pgbench
//     transactions per second of one write-heavy workload (one change per
//     transaction, 2 clients) on the same table with no capture, with a plain
//     JSONB audit trigger, and with the sidecar capturing;
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
//     it accounts for.
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

	"github.com/iasql/iasql/internal/pgcluster"
)

// budget bounds the whole run; a normal run takes about eight
// minutes.
const budget = 20 * time.Minute

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
	pgbench     string
	recvlogical string
	scripts     workloadScripts
	out         io.Writer // figures
	log         io.Writer // progress
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
	scripts, err := writeScripts(tmp)
	if err != nil {
		return err
	}

	b := &bench{iasqlBin: iasqlBin, scripts: scripts, out: stdout, log: stderr}
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

	if err := b.run(ctx); err != nil {
		if log := c.Log(); strings.Contains(log, "ERROR") || strings.Contains(log, "FATAL") || strings.Contains(log, "PANIC") {
			fmt.Fprintf(stderr, "server log (tail):\n%s\n", tail(log, 3000))
		}
		return err
	}
	return nil
}

// run measures every figure: writer cost, lag, the backlog rate, then the
// engine's cycles. IASQL_BENCH_ONLY=capture, =cycles or =sg runs one part.
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
	}
	b.logf("workload: %s; %d clients; each variant on a database of its own, warmed up for %s, then measured in %d slices of %s in alternating order",
		workloadSummary, clients, warmup, slices, sliceDuration)
	// A fresh cluster first creates its WAL segments and the OS caches are
	// cold: run the workload once on a scratch database so the first
	// variant measured does not pay for that.
	if err := b.withDB(ctx, "bench_scratch", func(*pgx.Conn) error {
		_, err := b.runPgbench(ctx, "bench_scratch", baseWarm, nil, "-T", seconds(clusterWarmup))
		return err
	}); err != nil {
		return fmt.Errorf("warm the cluster up: %w", err)
	}
	tps, cpu, lag, err := b.writerCost(ctx)
	if err != nil {
		return err
	}
	none, trig, side := tps[variantNone], tps[variantTrigger], tps[variantSidecar]
	b.figure("capture_tps_none", "%.1f", none)
	b.figure("capture_tps_trigger", "%.1f", trig)
	b.figure("capture_tps_sidecar", "%.1f", side)
	captureRatio, triggerRatio := side/none, trig/none
	b.figure("capture_overhead_ratio", "%.3f", captureRatio)
	b.figure("trigger_overhead_ratio", "%.3f", triggerRatio)
	b.figure("capture_lag_p50_ms", "%.2f", lag.p50)
	b.figure("capture_lag_p99_ms", "%.2f", lag.p99)

	rate, err := b.rateRatio(ctx)
	if err != nil {
		return err
	}
	b.figure("capture_rate_ratio", "%.3f", rate)
	dec := tps[variantDecoding]
	decodingRatio := dec / none
	b.figure("capture_tps_decoding", "%.1f", dec)
	b.figure("decoding_overhead_ratio", "%.3f", decodingRatio)

	fmt.Fprintf(b.log, "# goal: the sidecar costs writers at most half what the trigger costs them: 1-capture_overhead_ratio = %.3f <= 0.5*(1-trigger_overhead_ratio) = %.3f: %s\n",
		1-captureRatio, 0.5*(1-triggerRatio), met(1-captureRatio <= 0.5*(1-triggerRatio)))
	fmt.Fprintf(b.log, "# goal: capture_rate_ratio = %.3f >= 0.7: %s\n", rate, met(rate >= 0.7))
	fmt.Fprintf(b.log, "# goal: capture_lag_p99_ms = %.2f < 250: %s\n", lag.p99, met(lag.p99 < 250))
	fmt.Fprintf(b.log, "# decoding floor: %s\n", floorShare(1-captureRatio, 1-decodingRatio,
		cpu[variantSidecar]-cpu[variantNone], cpu[variantDecoding]-cpu[variantNone]))
	if only == "capture" {
		return nil
	}
	if err := b.cycles(ctx); err != nil {
		return err
	}
	return b.securityGroups(ctx)
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
