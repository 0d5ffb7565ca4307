package main

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
)

// scopedPart measures only commit_overhead_ms and
// commit_overhead_ms_10k_scoped (IASQL_BENCH_ONLY=scoped): the same setups
// as in cycles, without the scheduled no-diff cycles.
func (b *bench) scopedPart(ctx context.Context) error {
	alone, err := b.nodiff(ctx, 0, nodiffCommit)
	if err != nil {
		return err
	}
	large, err := b.nodiff(ctx, 10000, nodiffScoped)
	if err != nil {
		return err
	}
	b.figure("commit_overhead_ms", "%.1f", alone.commitOverhead)
	b.scopedFigure(alone, large)
	return nil
}

// scopedFigure prints commit_overhead_ms_10k_scoped and its goal: under
// three times commit_overhead_ms.
func (b *bench) scopedFigure(alone, large nodiffResult) {
	b.figure("commit_overhead_ms_10k_scoped", "%.1f", large.scopedCommit)
	ratio := large.scopedCommit / alone.commitOverhead
	fmt.Fprintf(b.log, "# goal: commit_overhead_ms_10k_scoped = %.1f < 3 x commit_overhead_ms = %.1f: ratio %.2f: %s\n",
		large.scopedCommit, 3*alone.commitOverhead, ratio, met(ratio < 3))
}

// scopedCommit is the median, over rounds, of the wall time of CALL
// iasql_commit() after one new bucket was inserted beside the n buckets in
// sync (the commit alone; the INSERT is not timed). A round that a cycle
// other than the commit's overlapped (a scheduled or intent cycle that the
// commit had to wait for) is not counted and is done again, up to twice as
// many attempts as rounds; each commit's cloud calls go to stderr. With
// inTx, each round opens an iasql transaction (CALL iasql_begin()) before
// the INSERT, which holds automatic cycles back until the commit: where
// they last longer than the interval between them, few rounds would find
// a gap otherwise.
func (b *bench) scopedCommit(ctx context.Context, conn *pgx.Conn, emu *emulator.Emulator, n, rounds int, inTx bool) (float64, error) {
	var times []float64
	discarded := 0
	for i := 0; len(times) < rounds; i++ {
		if i >= 2*rounds {
			return 0, fmt.Errorf("scoped commit: %d of %d rounds overlapped other cycles", discarded, i)
		}
		if err := waitNoCycle(ctx, conn); err != nil {
			return 0, fmt.Errorf("scoped commit: %w", err)
		}
		var last int64
		if err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM iasql_audit_log`).Scan(&last); err != nil {
			return 0, err
		}
		if inTx {
			if _, err := conn.Exec(ctx, `CALL iasql_begin()`); err != nil {
				return 0, fmt.Errorf("scoped commit: %w", err)
			}
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO bucket (name) VALUES ('scoped-%02d')`, i)); err != nil {
			return 0, err
		}
		emu.Reset()
		t0 := time.Now()
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return 0, fmt.Errorf("scoped commit: %w", err)
		}
		ms := float64(time.Since(t0)) / float64(time.Millisecond)
		_, _, _, calls := classifyCalls(emu.Calls())
		var others int
		if err := conn.QueryRow(ctx, `
			SELECT count(*) FROM iasql_audit_log
			 WHERE id > $1 AND change_type = 'CYCLE_END' AND message::jsonb->>'reason' <> 'commit'`, last).Scan(&others); err != nil {
			return 0, err
		}
		var created bool
		if err := conn.QueryRow(ctx, `SELECT created_at IS NOT NULL FROM bucket WHERE name = $1`, fmt.Sprintf("scoped-%02d", i)).Scan(&created); err != nil || !created {
			return 0, fmt.Errorf("scoped commit: bucket scoped-%02d has no created_at after the commit (%v)", i, err)
		}
		if others > 0 {
			discarded++
			b.logf("scoped commit beside %d buckets: %.0f ms, not counted: %d other cycle(s) ended during it", n, ms, others)
			continue
		}
		b.logf("scoped commit beside %d buckets: %.0f ms; calls: %s", n, ms, calls)
		times = append(times, ms)
	}
	sort.Float64s(times)
	return times[len(times)/2], nil
}

// waitNoCycle waits until no cycle started in the last ten minutes is
// without its end record.
func waitNoCycle(ctx context.Context, conn *pgx.Conn) error {
	return waitFor(ctx, 5*time.Minute, func() (bool, error) {
		var running bool
		err := conn.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM iasql_audit_log s
			                WHERE s.change_type = 'CYCLE_START' AND s.ts > now() - interval '10 minutes'
			                  AND NOT EXISTS (SELECT 1 FROM iasql_audit_log e
			                                   WHERE e.change_type = 'CYCLE_END'
			                                     AND e.message::jsonb->>'cycle' = s.message::jsonb->>'cycle'))`).Scan(&running)
		return !running, err
	})
}
