package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jackc/pgx/v5"
)

// The id bases of the pgbench runs in one database (see idsPerClient): the
// warm-up, the measured slices (baseSlices + i*clients*idsPerClient for
// slice i), the lag run and the backlog.
const (
	baseWarm   = 100000000
	baseSlices = 200000000
	baseLag    = 600000000
	baseRate   = 900000000
)

// markerReady is the first marker id, written by startCapturing; later
// markers of a database count up from it (variantDB.catchUp).
const markerReady = 0

type variant int

const (
	variantNone     variant = iota // no slot, no trigger
	variantTrigger                 // the JSONB audit trigger
	variantSidecar                 // the sidecar capturing
	variantDecoding                // registered as for the sidecar, streamed by pg_recvlogical (decoding.go)
	numVariants
)

func (v variant) String() string {
	return [...]string{"none", "trigger", "sidecar", "decoding"}[v]
}

// streams reports whether a process streams v's slot during its slices.
func (v variant) streams() bool { return v == variantSidecar || v == variantDecoding }

// variantDB is the database of one variant in the writer-cost phase and
// what its measured slices added up to.
type variantDB struct {
	v      variant
	w      *workload
	name   string
	conn   *pgx.Conn
	sc     *sidecar // while running (sidecar: the sidecar; decoding: pg_recvlogical)
	slot   string
	marker int // last marker id used

	slices       int
	tps          float64   // sum over slices
	sliceTPS     []float64 // each slice's, in order
	transactions int64
	busyTicks    uint64   // whole machine, over the slices
	captureTicks []uint64 // per capture process (sidecar or pg_recvlogical, walsender, backend)
	captureNames []string
}

// writerCost measures the workload's rate for each variant (and the
// machine's CPU time per transaction, 0 where unknown), then the lag.
//
// Each variant has a database of its own, created and seeded for it (the
// sidecar's registered, with its own slot; the decoding variant's
// registered alike, with a pgoutput slot of its own; the trigger's with the
// trigger), warmed up with the workload after a checkpoint (the first
// seconds on a freshly seeded table run much slower, and they pay the
// full-page writes). Then the variants are measured in short slices, in
// alternating order (none, trigger, sidecar, decoding, then decoding,
// sidecar, trigger, none, ...), so that drift in the machine's speed (its
// disk's fsync latency varies by tens of percent over tens of seconds)
// falls on all alike. Only one variant runs at a time: the sidecar (and
// pg_recvlogical for the decoding variant) runs only for its own slices (it
// starts, catches up with the WAL written meanwhile, is measured, catches up
// with its slice, and stops), so it costs the other variants nothing; a slot
// nobody streams from costs nothing either.
func (b *bench) writerCost(ctx context.Context, w *workload, withLag bool) (tps, cpu [numVariants]float64, lag lagResult, err error) {
	b.logf("writers: %s; %d clients; each variant on a database of its own, warmed up for %s, then measured in %d slices of %s in alternating order",
		w.summary, clients, warmup, slices, sliceDuration)
	var dbs [numVariants]*variantDB
	defer func() {
		for _, d := range dbs {
			if d == nil {
				continue
			}
			if d.sc != nil {
				d.sc.kill()
			}
			d.conn.Close(context.Background())
			if ctx.Err() == nil {
				if derr := b.dropDB(ctx, d.name); err == nil {
					err = derr
				}
			}
		}
	}()
	for _, v := range []variant{variantNone, variantTrigger, variantSidecar, variantDecoding} {
		d := &variantDB{v: v, w: w, name: "bench_" + v.String() + w.suffix()}
		if d.conn, err = b.newDB(ctx, d.name); err != nil {
			return tps, cpu, lag, err
		}
		dbs[v] = d
		switch v {
		case variantTrigger:
			if err := execAll(ctx, d.conn, triggerSchema()); err != nil {
				return tps, cpu, lag, fmt.Errorf("create the audit trigger: %w", err)
			}
		case variantSidecar:
			if d.sc, err = b.startCapturing(ctx, d.conn, d.name); err != nil {
				return tps, cpu, lag, fmt.Errorf("sidecar: %w", err)
			}
			d.slot = d.sc.slot
		case variantDecoding:
			if err := b.registerForDecoding(ctx, d.conn); err != nil {
				return tps, cpu, lag, fmt.Errorf("decoding: %w", err)
			}
			d.slot = decodingSlot
			if err := d.startSidecar(ctx, b); err != nil {
				return tps, cpu, lag, fmt.Errorf("decoding: %w", err)
			}
		}
	}
	if err := b.checkpoint(ctx); err != nil {
		return tps, cpu, lag, err
	}
	for _, d := range dbs {
		r, err := b.runPgbench(ctx, w, d.name, baseWarm, nil, "-T", seconds(warmup))
		if err != nil {
			return tps, cpu, lag, fmt.Errorf("%s: warm-up: %w", d.v, err)
		}
		if err := b.checkAudit(ctx, d, r.changes, 0, "warm-up"); err != nil {
			return tps, cpu, lag, err
		}
		if d.sc != nil {
			if d.v == variantDecoding {
				// (checkAudit caught the sidecar up.)
				if _, err := d.catchUp(ctx, 2*time.Minute); err != nil {
					return tps, cpu, lag, fmt.Errorf("%s: warm-up: %w", d.v, err)
				}
			}
			if err := d.stopSidecar(ctx); err != nil {
				return tps, cpu, lag, err
			}
		}
	}

	for i := 0; i < slices; i++ {
		order := []variant{variantNone, variantTrigger, variantSidecar, variantDecoding}
		if i%2 == 1 {
			order = []variant{variantDecoding, variantSidecar, variantTrigger, variantNone}
		}
		for _, v := range order {
			if err := b.slice(ctx, dbs[v], i); err != nil {
				return tps, cpu, lag, err
			}
		}
	}

	for _, d := range dbs {
		tps[d.v] = d.tps / float64(d.slices)
		if d.busyTicks > 0 {
			cpu[d.v] = float64(d.busyTicks) * 1e6 / clockTicks / float64(d.transactions)
		}
	}
	b.logf("writers, mean of %d slices: none %.1f tps, trigger %.1f tps, sidecar %.1f tps, decoding %.1f tps",
		slices, tps[variantNone], tps[variantTrigger], tps[variantSidecar], tps[variantDecoding])
	none := dbs[variantNone].sliceTPS
	for _, v := range []variant{variantTrigger, variantSidecar, variantDecoding} {
		mean, se := pairedRatio(dbs[v].sliceTPS, none)
		b.logf("writers, %s over none slice by slice (each beside the none slice of its round): %.3f ± %.3f (standard error): a cost of %.1f%% ± %.1f%%",
			v, mean, se, 100*(1-mean), 100*se)
	}
	if cpu[variantNone] > 0 {
		b.logf("writers, CPU per transaction (whole machine): none %.0f µs, trigger %.0f µs (%+.0f%%), sidecar %.0f µs (%+.0f%%), decoding %.0f µs (%+.0f%%)",
			cpu[variantNone], cpu[variantTrigger], 100*(cpu[variantTrigger]/cpu[variantNone]-1),
			cpu[variantSidecar], 100*(cpu[variantSidecar]/cpu[variantNone]-1),
			cpu[variantDecoding], 100*(cpu[variantDecoding]/cpu[variantNone]-1))
	}
	for _, d := range []*variantDB{dbs[variantSidecar], dbs[variantDecoding]} {
		if len(d.captureNames) == 0 {
			continue
		}
		s := ""
		for i, n := range d.captureNames {
			s += fmt.Sprintf(", %s %.0f µs", n, float64(d.captureTicks[i])*1e6/clockTicks/float64(d.transactions))
		}
		b.logf("writers, CPU per transaction of the %s variant's capture processes:%s", d.v, s[1:])
	}

	if !withLag {
		return tps, cpu, lag, nil
	}
	d := dbs[variantSidecar]
	if err := d.startSidecar(ctx, b); err != nil {
		return tps, cpu, lag, err
	}
	if lag, err = b.measureLag(ctx, d); err != nil {
		return tps, cpu, lag, err
	}
	if err := d.stopSidecar(ctx); err != nil {
		return tps, cpu, lag, err
	}
	return tps, cpu, lag, nil
}

// pairedRatio is the mean of a[i]/b[i] and its standard error: each round
// measures every variant once, close in time, so the ratio within a round
// is spared most of the drift in the machine's speed between rounds.
func pairedRatio(a, b []float64) (mean, se float64) {
	n := min(len(a), len(b))
	if n == 0 {
		return 0, 0
	}
	r := make([]float64, n)
	for i := range r {
		r[i] = a[i] / b[i]
		mean += r[i]
	}
	mean /= float64(n)
	if n < 2 {
		return mean, 0
	}
	var ss float64
	for _, x := range r {
		ss += (x - mean) * (x - mean)
	}
	return mean, math.Sqrt(ss/float64(n-1)) / math.Sqrt(float64(n))
}

// slice measures one slice of variant d.
func (b *bench) slice(ctx context.Context, d *variantDB, i int) error {
	name := fmt.Sprintf("slice %d %s", i+1, d.v)
	var (
		procs *procSet
		err   error
	)
	if d.v.streams() {
		if err := d.startSidecar(ctx, b); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if procs, err = d.sc.procs(ctx, d.conn); err != nil {
			return err
		}
	}
	before, err := d.maxAuditID(ctx)
	if err != nil {
		return err
	}
	cpu0, cpuOK := readCPU()
	r, err := b.runPgbench(ctx, d.w, d.name, baseSlices+i*clients*idsPerClient, nil, "-T", seconds(sliceDuration))
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	ended := time.Now()
	cpu := "CPU n/a"
	if cpu1, ok := readCPU(); ok && cpuOK {
		busy, perTx := cpuUse(cpu0, cpu1, r.transactions)
		d.busyTicks += cpu1.busy - cpu0.busy
		cpu = fmt.Sprintf("CPU %.0f%% busy, %.0f µs per transaction", 100*busy, perTx)
	}
	d.slices++
	d.tps += r.tps
	d.sliceTPS = append(d.sliceTPS, r.tps)
	d.transactions += r.transactions
	b.logf("%s: %.1f tps (%d transactions, %s; %s)", name, r.tps, r.transactions, pgbenchLine(r.output, "latency average"), cpu)

	if d.sc != nil {
		at, err := d.catchUp(ctx, 2*time.Minute)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		names, ticks := procs.used()
		if d.captureTicks == nil {
			d.captureNames, d.captureTicks = names, make([]uint64, len(ticks))
		}
		for j := range ticks {
			if j < len(d.captureTicks) {
				d.captureTicks[j] += ticks[j]
			}
		}
		what := "capture"
		if d.v == variantDecoding {
			what = "decoding (the walsender)"
		}
		b.logf("%s: %s caught up %s after pgbench ended", name, what, at.Sub(ended).Round(time.Millisecond))
	}
	if err := b.checkAudit(ctx, d, r.changes, before, name); err != nil {
		return err
	}
	if d.sc != nil {
		if err := d.stopSidecar(ctx); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// startSidecar starts d's sidecar (pg_recvlogical for the decoding
// variant) and returns once it has caught up.
func (d *variantDB) startSidecar(ctx context.Context, b *bench) error {
	var (
		sc  *sidecar
		err error
	)
	if d.v == variantDecoding {
		sc, err = b.startRecvlogical(ctx, d.name, d.slot)
	} else {
		sc, err = b.startSidecar(ctx, d.name)
	}
	if err != nil {
		return err
	}
	d.sc = sc
	if _, err := waitActive(ctx, d.conn, d.slot, 20*time.Millisecond, time.Minute, sc); err != nil {
		return err
	}
	_, err = d.catchUp(ctx, time.Minute)
	return err
}

// stopSidecar stops d's sidecar (or pg_recvlogical) and waits for its slot
// to be released.
func (d *variantDB) stopSidecar(ctx context.Context) error {
	sc := d.sc
	d.sc = nil
	if err := sc.stop(); err != nil {
		return err
	}
	return waitInactive(ctx, d.conn, d.slot)
}

// catchUp writes the next marker and waits for the sidecar to capture it
// (for pg_recvlogical to acknowledge it, in the decoding variant).
func (d *variantDB) catchUp(ctx context.Context, timeout time.Duration) (time.Time, error) {
	d.marker++
	if d.v == variantDecoding {
		return d.catchUpDecoding(ctx, timeout)
	}
	if err := mark(ctx, d.conn, d.marker); err != nil {
		return time.Time{}, err
	}
	return waitMarked(ctx, d.conn, d.marker, 10*time.Millisecond, timeout, d.sc)
}

// maxAuditID is where d's audit trail ends (0 without one).
func (d *variantDB) maxAuditID(ctx context.Context) (int64, error) {
	var q string
	switch d.v {
	case variantTrigger:
		q = `SELECT coalesce(max(id), 0) FROM bench_trigger_audit`
	case variantSidecar:
		q = `SELECT coalesce(max(id), 0) FROM iasql_audit_log`
	default:
		return 0, nil
	}
	var id int64
	if err := d.conn.QueryRow(ctx, q).Scan(&id); err != nil {
		return 0, fmt.Errorf("read the audit trail of %s: %w", d.name, err)
	}
	return id, nil
}

// checkAudit warns when d's audit trail holds other than want rows for
// bench_item after id before: every transaction of the workload makes the
// same number of changes, so a difference means lost or doubled changes.
func (b *bench) checkAudit(ctx context.Context, d *variantDB, want, before int64, what string) error {
	var q string
	switch d.v {
	case variantTrigger:
		q = `SELECT count(*) FROM bench_trigger_audit WHERE id > $1 AND table_name = 'bench_item'`
	case variantSidecar:
		if d.sc == nil {
			return nil
		}
		if _, err := d.catchUp(ctx, 2*time.Minute); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		q = `SELECT count(*) FROM iasql_audit_log WHERE id > $1 AND table_name = 'bench_item'`
	default:
		return nil
	}
	var n int64
	if err := d.conn.QueryRow(ctx, q, before).Scan(&n); err != nil {
		return fmt.Errorf("%s: count audit rows: %w", what, err)
	}
	if n != want {
		b.logf("WARNING: %s %s: %d audit rows for %d changes", d.v, what, n, want)
	}
	return nil
}

// withDB runs fn on a new seeded database and drops it after.
func (b *bench) withDB(ctx context.Context, name string, fn func(conn *pgx.Conn) error) error {
	conn, err := b.newDB(ctx, name)
	if err != nil {
		return err
	}
	err = fn(conn)
	conn.Close(context.Background())
	if ctx.Err() != nil {
		return errors.Join(err, ctx.Err())
	}
	if derr := b.dropDB(ctx, name); err == nil {
		err = derr
	}
	return err
}

func seconds(d time.Duration) string { return fmt.Sprint(int(d.Seconds())) }

// startCapturing starts the sidecar on db, registers bench_item and
// bench_marker, and returns once a change to them (marker markerReady) has
// been captured.
func (b *bench) startCapturing(ctx context.Context, conn *pgx.Conn, db string) (*sidecar, error) {
	sc, err := b.startSidecar(ctx, db)
	if err != nil {
		return nil, err
	}
	if _, err := waitActive(ctx, conn, sc.slot, 20*time.Millisecond, time.Minute, sc); err != nil {
		sc.kill()
		return nil, err
	}
	if _, err := conn.Exec(ctx, `INSERT INTO iasql_tables (table_name) VALUES ('bench_item'), ('bench_marker')`); err != nil {
		sc.kill()
		return nil, fmt.Errorf("register the bench tables: %w", err)
	}
	if err := mark(ctx, conn, markerReady); err != nil {
		sc.kill()
		return nil, err
	}
	if _, err := waitMarked(ctx, conn, markerReady, 20*time.Millisecond, 30*time.Second, sc); err != nil {
		sc.kill()
		return nil, err
	}
	return sc, nil
}

type lagResult struct {
	p50, p99, max float64 // milliseconds
	rows          int64
}

// measureLag runs the workload at a steady lagRate changes per second with d's sidecar capturing, and takes the percentiles of
// captured_at - ts over the audit rows it made.
func (b *bench) measureLag(ctx context.Context, d *variantDB) (lagResult, error) {
	var lag lagResult
	b.logf("lag: pgbench at %d changes/s (%d transactions/s) for %s with the sidecar capturing", lagRate, lagRate/d.w.changes, lagDuration)
	before, err := d.maxAuditID(ctx)
	if err != nil {
		return lag, err
	}
	r, err := b.runPgbench(ctx, d.w, d.name, baseLag, nil, "--rate", fmt.Sprint(lagRate/d.w.changes), "-T", seconds(lagDuration))
	if err != nil {
		return lag, fmt.Errorf("lag: %w", err)
	}
	b.logf("lag: %.1f tps (%d transactions, %s, %s)", r.tps, r.transactions,
		pgbenchLine(r.output, "latency average"), pgbenchLine(r.output, "rate limit schedule lag"))
	if err := b.checkAudit(ctx, d, r.changes, before, "lag"); err != nil {
		return lag, err
	}
	err = d.conn.QueryRow(ctx, `
		SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY ms), percentile_cont(0.99) WITHIN GROUP (ORDER BY ms), max(ms), count(*)
		  FROM (SELECT extract(epoch FROM captured_at - ts)::float8 * 1000 AS ms
		          FROM iasql_audit_log WHERE id > $1 AND table_name = 'bench_item') s`, before).
		Scan(&lag.p50, &lag.p99, &lag.max, &lag.rows)
	if err != nil {
		return lag, fmt.Errorf("lag: compute percentiles: %w", err)
	}
	b.logf("lag: %d audit rows: p50 %.2f ms, p99 %.2f ms, max %.2f ms", lag.rows, lag.p50, lag.p99, lag.max)
	return lag, nil
}
