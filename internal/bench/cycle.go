package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	iasqlsidecar "github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// cycleInterval is the automatic-cycle interval while cycles are measured:
// short, so that several scheduled cycles run, long enough that one ends
// well before the next starts.
const cycleInterval = 3 * time.Second

// cycles measures the engine: the duration and the cloud calls of an
// automatic cycle over 1,000 and 10,000 buckets that are in sync, and what
// CALL iasql_commit() adds to creating one bucket.
//
//   - cycle_nodiff_ms_1k, cycle_nodiff_ms_10k: the median duration of
//     scheduled cycles (CYCLE_START to CYCLE_END in the audit trail) with
//     nothing to do; cycle_scaling_ratio = 10k / 1k (goal <= 12);
//   - cycle_cloud_calls_nodiff_10k: the emulator's requests during one such
//     cycle (goal: list pages only), with the non-list calls printed on
//     stderr; cycle_cloud_mutations_nodiff_10k: how many of them mutate;
//   - commit_overhead_ms: INSERT + CALL iasql_commit() for one new bucket,
//     minus the same CreateBucket made directly with the SDK against the
//     same emulator (median of 15; goal under 100 ms), in an account with
//     nothing else; commit_overhead_ms_10k: the same beside 10,000 buckets
//     (a commit reads the whole cloud fresh);
//   - commit_overhead_ms_10k_scoped: CALL iasql_commit() alone for one new
//     bucket beside the same 10,000 (median of 5 rounds that no other
//     cycle overlapped; see scopedCommit), goal under 3x
//     commit_overhead_ms: a commit should read fresh only what has intent;
//   - commit_ms_usual, commit_ms_under_flood: INSERT + CALL iasql_commit()
//     for one new bucket (median of 5), alone and while a role without
//     grants floods the sidecar with install requests it proves, all
//     refused (see commitUnderFlood); goal: within 1 s of usual.
//
// The sidecar runs in-process against an in-process emulator, so the
// figures are the engine's and the database's, not a network's.
func (b *bench) cycles(ctx context.Context) error {
	alone, err := b.nodiff(ctx, 0, nodiffCommit)
	if err != nil {
		return err
	}
	small, err := b.nodiff(ctx, 1000, nodiffScheduled)
	if err != nil {
		return err
	}
	large, err := b.nodiff(ctx, 10000, nodiffScheduled|nodiffCommit|nodiffScoped)
	if err != nil {
		return err
	}
	b.figure("cycle_nodiff_ms_1k", "%.1f", small.ms)
	b.figure("cycle_nodiff_ms_10k", "%.1f", large.ms)
	b.figure("cycle_scaling_ratio", "%.2f", large.ms/small.ms)
	b.figure("cycle_cloud_calls_nodiff_10k", "%.0f", float64(large.calls))
	b.figure("cycle_cloud_mutations_nodiff_10k", "%.0f", float64(large.mutations))
	b.figure("commit_overhead_ms", "%.1f", alone.commitOverhead)
	b.commitOverhead = alone.commitOverhead
	b.figure("commit_overhead_ms_10k", "%.1f", large.commitOverhead)
	fmt.Fprintf(b.log, "# goal: cycle_scaling_ratio = %.2f <= 12: %s\n", large.ms/small.ms, met(large.ms/small.ms <= 12))
	fmt.Fprintf(b.log, "# goal: no-diff cycle over 10k buckets makes list calls only (%s) and no mutating call (%d): %s\n",
		large.callSummary, large.mutations, met(large.mutations == 0 && large.nonList == 0))
	fmt.Fprintf(b.log, "# goal: commit_overhead_ms = %.1f < 100: %s (with 10,000 other buckets a commit's fresh full read makes it %.0f ms)\n",
		alone.commitOverhead, met(alone.commitOverhead < 100), large.commitOverhead)
	b.figure("commit_ms_usual", "%.1f", alone.commitUsual)
	b.figure("commit_ms_under_flood", "%.1f", alone.commitFlood)
	fmt.Fprintf(b.log, "# goal: commit_ms_under_flood = %.1f within 1 s of commit_ms_usual = %.1f while a role without grants floods the sidecar with refused requests: %s\n",
		alone.commitFlood, alone.commitUsual, met(alone.commitFlood-alone.commitUsual < 1000))
	b.scopedFigure(alone, large)
	return nil
}

type nodiffResult struct {
	ms             float64
	calls          int
	nonList        int
	mutations      int
	callSummary    string
	commitOverhead float64
	scopedCommit   float64 // ms, see scopedCommit
	commitUsual    float64 // ms, see commitUnderFlood
	commitFlood    float64 // ms, see commitUnderFlood
}

// What nodiff measures besides the import (with no buckets, only the
// commit overhead is measured, whatever is asked).
type nodiffParts int

const (
	nodiffScheduled nodiffParts = 1 << iota // scheduled no-diff cycles
	nodiffCommit                            // commitOverhead
	nodiffScoped                            // scopedCommit
)

func (b *bench) nodiff(ctx context.Context, n int, parts nodiffParts) (nodiffResult, error) {
	var res nodiffResult
	db := fmt.Sprintf("bench_cycle_%d", n)
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		emu, cfg, stopEmu, err := startEmulator(ctx)
		if err != nil {
			return err
		}
		defer stopEmu()
		cloud := s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
		b.logf("cycles: creating %d buckets in the emulator", n)
		if err := createBuckets(ctx, cloud, "nodiff", n); err != nil {
			return err
		}
		stop, err := b.runEngine(ctx, conn, db, cfg, cycleInterval, aws_s3.Module())
		if err != nil {
			return err
		}
		defer stop()
		start := time.Now()
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('aws_s3')`); err != nil {
			return fmt.Errorf("install aws_s3 (importing %d buckets): %w", n, err)
		}
		b.logf("cycles: imported %d buckets in %s", n, time.Since(start).Round(time.Millisecond))
		var rows int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM bucket`).Scan(&rows); err != nil || rows != n {
			return fmt.Errorf("after install %d rows, want %d (%v)", rows, n, err)
		}
		if n == 0 {
			if res.commitOverhead, err = commitOverhead(ctx, conn, cloud, 15); err != nil {
				return err
			}
			res.commitUsual, res.commitFlood, err = commitUnderFlood(ctx, conn, b.cluster.DSN(db), 5)
			return err
		}
		if parts&nodiffScheduled != 0 {
			if err := scheduledNoDiff(ctx, conn, emu, &res); err != nil {
				return fmt.Errorf("%d buckets: %w", n, err)
			}
			b.logf("cycles: %d buckets, scheduled no-diff cycles took %.1f ms (median); calls: %s", n, res.ms, res.callSummary)
		}
		if parts&nodiffCommit != 0 {
			if res.commitOverhead, err = commitOverhead(ctx, conn, cloud, 3); err != nil {
				return err
			}
		}
		if parts&nodiffScoped != 0 {
			if res.scopedCommit, err = b.scopedCommit(ctx, conn, emu, n, 5, false); err != nil {
				return err
			}
		}
		return nil
	})
	return res, err
}

// runEngine runs an in-process sidecar on db with the modules until stop, and waits
// until it has registered them.
func (b *bench) runEngine(ctx context.Context, conn *pgx.Conn, db string, cfg aws.Config, interval time.Duration, mods ...module.Module) (stop func(), err error) {
	return b.runEngineWith(ctx, conn, db, cfg, interval, mods, nil)
}

// runEngineWith is runEngine with catalogs of modules made on demand too.
func (b *bench) runEngineWith(ctx context.Context, conn *pgx.Conn, db string, cfg aws.Config, interval time.Duration, mods []module.Module, cats []module.Catalog) (stop func(), err error) {
	return b.runEngineConfig(ctx, conn, db, cfg, interval, mods, cats, nil)
}

// runEngineConfig is runEngineWith with set, when not nil, completing the
// sidecar's configuration (the events queue).
func (b *bench) runEngineConfig(ctx context.Context, conn *pgx.Conn, db string, cfg aws.Config, interval time.Duration, mods []module.Module, cats []module.Catalog, set func(*iasqlsidecar.Config)) (stop func(), err error) {
	sctx, cancel := context.WithCancel(ctx)
	ready := make(chan struct{})
	done := make(chan error, 1)
	var once sync.Once
	go func() {
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("IASQL_BENCH_LOG") != "" {
			// The in-process sidecar's debug log, for finding where a figure's time goes.
			log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
		sc := iasqlsidecar.Config{DSN: b.cluster.DSN(db), Logger: log,
			Interval: interval, AWS: &cfg, Modules: mods, Catalogs: cats,
			OnReady: func() { once.Do(func() { close(ready) }) }}
		if set != nil {
			set(&sc)
		}
		done <- iasqlsidecar.Run(sctx, sc)
	}()
	stop = func() { cancel(); <-done }
	select {
	case <-ready:
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("sidecar: %w", err)
	case <-time.After(60 * time.Second):
		stop()
		return nil, fmt.Errorf("the sidecar did not start")
	}
	if err := waitFor(ctx, 30*time.Second, func() (bool, error) {
		return store.EngineRunning(ctx, conn, module.Versions(mods))
	}); err != nil {
		stop()
		return nil, fmt.Errorf("modules never registered: %w", err)
	}
	return stop, nil
}

// scheduledNoDiff measures scheduled cycles with nothing to do: the median
// duration of three, after a first one that may fill detail caches, and the
// cloud calls of the last.
func scheduledNoDiff(ctx context.Context, conn *pgx.Conn, emu *emulator.Emulator, res *nodiffResult) error {
	var last int64
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM iasql_audit_log`).Scan(&last); err != nil {
		return err
	}
	var durations []float64
	for len(durations) < 4 {
		emu.Reset()
		var id int64
		var ms float64
		var summary string
		err := waitFor(ctx, 3*time.Minute, func() (bool, error) {
			err := conn.QueryRow(ctx, `
				SELECT e.id, extract(epoch FROM e.ts - s.ts) * 1000, e.message::jsonb->>'summary'
				  FROM iasql_audit_log e JOIN iasql_audit_log s ON s.change_type = 'CYCLE_START'
				   AND s.message::jsonb->>'cycle' = e.message::jsonb->>'cycle'
				 WHERE e.change_type = 'CYCLE_END' AND e.id > $1 AND e.message::jsonb->>'reason' = 'schedule'
				 ORDER BY e.id LIMIT 1`, last).Scan(&id, &ms, &summary)
			if err == pgx.ErrNoRows {
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("wait for a scheduled cycle: %w", err)
		}
		last = id
		if summary != "in sync, nothing to do" {
			return fmt.Errorf("a no-diff cycle did work: %s", summary)
		}
		calls := emu.Calls()
		if len(durations) == 0 {
			// The first scheduled cycle reads every resource's details
			// (nothing is remembered yet); steady state starts after.
			durations = append(durations, -1)
			continue
		}
		durations = append(durations, ms)
		res.calls, res.nonList, res.mutations, res.callSummary = classifyCalls(calls)
	}
	durations = durations[1:]
	sort.Float64s(durations)
	res.ms = durations[len(durations)/2]
	return nil
}

// classifyCalls counts calls: all, those that are not list or describe
// pages, and those that change the cloud.
func classifyCalls(calls map[string]int) (total, nonList, mutations int, summary string) {
	var parts []string
	for op, k := range calls {
		total += k
		if !emulator.IsPage(op) {
			nonList += k
		}
		if !emulator.IsRead(op) {
			mutations += k
		}
		parts = append(parts, fmt.Sprintf("%s %d", op, k))
	}
	sort.Strings(parts)
	return total, nonList, mutations, strings.Join(parts, ", ")
}

func createBuckets(ctx context.Context, cloud *s3.Client, prefix string, n int) error {
	err := parallel(n, func(i int) error {
		_, err := cloud.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(fmt.Sprintf("%s-%05d", prefix, i))})
		return err
	})
	if err != nil {
		return fmt.Errorf("create buckets: %w", err)
	}
	return nil
}

// parallel runs fn(0) .. fn(n-1), 16 at a time, and returns one of their
// errors.
func parallel(n int, fn func(i int) error) error {
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// commitOverhead is the median, over rounds, of (INSERT + CALL
// iasql_commit() creating one bucket) minus (one direct CreateBucket).
func commitOverhead(ctx context.Context, conn *pgx.Conn, cloud *s3.Client, rounds int) (float64, error) {
	var diffs []float64
	for i := 0; i < rounds; i++ {
		t0 := time.Now()
		if _, err := cloud.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(fmt.Sprintf("direct-%02d", i))}); err != nil {
			return 0, fmt.Errorf("direct CreateBucket: %w", err)
		}
		direct := time.Since(t0)
		t1 := time.Now()
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO bucket (name) VALUES ('committed-%02d')`, i)); err != nil {
			return 0, err
		}
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return 0, fmt.Errorf("commit: %w", err)
		}
		viaSQL := time.Since(t1)
		diffs = append(diffs, float64(viaSQL-direct)/float64(time.Millisecond))
	}
	sort.Float64s(diffs)
	return diffs[len(diffs)/2], nil
}

func waitFor(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startEmulator serves a fresh AWS emulator on a free local port until
// stop is called (or ctx ends), and returns the SDK configuration for it.
func startEmulator(ctx context.Context) (emu *emulator.Emulator, cfg aws.Config, stop func(), err error) {
	return startEmulatorWith(ctx, emulator.Options{})
}

// startEmulatorWith starts an in-process emulator with opts.
func startEmulatorWith(ctx context.Context, opts emulator.Options) (emu *emulator.Emulator, cfg aws.Config, stop func(), err error) {
	emu = emulator.New(opts)
	ectx, cancel := context.WithCancel(ctx)
	es, err := emu.Start(ectx, "127.0.0.1:0")
	if err != nil {
		cancel()
		return nil, aws.Config{}, nil, fmt.Errorf("start the emulator: %w", err)
	}
	return emu, emulator.ClientConfig(es.URL), cancel, nil
}
