package main

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/logical"
)

const (
	// rateChanges is the backlog both consumers work through.
	rateChanges = 150000
	// The pgoutput slots pg_recvlogical consumes, once before and once
	// after the sidecar, so that drift over time cancels out.
	rawSlotBefore = "bench_raw"
	rawSlotAfter  = "bench_raw_after"
)

// rateRatio measures how fast the sidecar turns a backlog into audit rows,
// relative to pg_recvlogical consuming the same changes.
//
// The backlog: with the sidecar stopped (its slot then holds everything
// from here on), two more pgoutput slots are created at the same point,
// and pgbench makes rateChanges changes in transactions of the workload (with
// synchronous_commit off, only so the generator is quick: the WAL is the
// same), followed by a marker row. All three slots then carry the same
// changes.
//
// The method, fair to both: each consumer is timed from the moment its slot
// turns active (a walsender has accepted START_REPLICATION, polled every
// 5ms) to the moment the last change is consumed: pg_recvlogical's exit at
// --endpos (the WAL position just after the marker's commit), and the
// sidecar's commit of the marker's audit row (polled every 10ms). So the
// process start, connection, the sidecar's install check and slot checks
// are left out for both (start-up is not throughput), while decoding,
// transfer and, for the sidecar, writing and committing the audit rows are
// in. Each runs alone: pg_recvlogical, the sidecar, pg_recvlogical again
// on the other slot (its time is the mean of the two); the WAL they read is
// in the page cache for all.
func (b *bench) rateRatio(ctx context.Context, w *workload) (float64, error) {
	db := "bench_rate" + w.suffix()
	var ratio float64
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		sc, err := b.startCapturing(ctx, conn, db)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		d := &variantDB{v: variantSidecar, w: w, name: db, conn: conn, sc: sc, slot: sc.slot, marker: markerReady}
		defer func() {
			if d.sc != nil {
				d.sc.kill()
			}
		}()
		if err := d.stopSidecar(ctx); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		for _, raw := range []string{rawSlotBefore, rawSlotAfter} {
			if _, err := conn.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, raw); err != nil {
				return fmt.Errorf("rate: create slot %s: %w", raw, err)
			}
		}
		before, err := d.maxAuditID(ctx)
		if err != nil {
			return err
		}

		b.logf("rate: sidecar stopped; generating %d changes (%s)", rateChanges, w.summary)
		genStart := time.Now()
		r, err := b.runPgbench(ctx, w, db, baseRate, []string{"PGOPTIONS=-c synchronous_commit=off"}, "-t", fmt.Sprint(rateChanges/clients/w.changes))
		if err != nil {
			return fmt.Errorf("rate: generate the backlog: %w", err)
		}
		d.marker++
		end := d.marker
		if err := mark(ctx, conn, end); err != nil {
			return err
		}
		changes := r.changes + 1 // and the marker
		var endpos string
		if err := conn.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&endpos); err != nil {
			return fmt.Errorf("rate: read the WAL position: %w", err)
		}
		b.logf("rate: generated %d changes in %s; backlog ends at %s", changes, time.Since(genStart).Round(time.Millisecond), endpos)

		recv1, err := b.timeRecvlogical(ctx, conn, db, rawSlotBefore, endpos, changes)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}

		sc2, err := b.startSidecar(ctx, db)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		d.sc = sc2
		active, err := waitActive(ctx, conn, d.slot, 5*time.Millisecond, time.Minute, sc2)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		procs, err := sc2.procs(ctx, conn)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		done, err := waitMarked(ctx, conn, end, 10*time.Millisecond, 3*time.Minute, sc2)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		side := done.Sub(active)
		b.logf("rate: the sidecar captured %d changes in %s: %.0f changes/s (%s from process start, %s of it before streaming); CPU per change: %s",
			changes, side.Round(time.Millisecond), float64(changes)/side.Seconds(),
			done.Sub(sc2.started).Round(time.Millisecond), active.Sub(sc2.started).Round(time.Millisecond), procs.perTx(changes))
		if err := b.checkAudit(ctx, d, r.changes, before, "backlog"); err != nil {
			return err
		}
		if err := d.stopSidecar(ctx); err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		recv2, err := b.timeRecvlogical(ctx, conn, db, rawSlotAfter, endpos, changes)
		if err != nil {
			return fmt.Errorf("rate: %w", err)
		}
		recv := (recv1 + recv2) / 2
		ratio = recv.Seconds() / side.Seconds()
		b.logf("rate: pg_recvlogical %.0f changes/s (mean), the sidecar %.0f changes/s", float64(changes)/recv.Seconds(), float64(changes)/side.Seconds())
		return nil
	})
	return ratio, err
}

// timeRecvlogical runs pg_recvlogical on slot up to endpos and returns the
// time from its slot turning active to its exit.
func (b *bench) timeRecvlogical(ctx context.Context, conn *pgx.Conn, db, slot, endpos string, changes int64) (time.Duration, error) {
	args := []string{"-d", b.cluster.DSN(db), "--slot", slot, "--start",
		"-o", "proto_version=1", "-o", "publication_names=" + logical.Publication,
		"-f", "/dev/null", "--endpos", endpos, "--no-loop", "--verbose"}
	cmd := exec.CommandContext(ctx, b.recvlogical, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	type exit struct {
		err error
		at  time.Time
	}
	done := make(chan exit, 1)
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start pg_recvlogical: %w", err)
	}
	go func() {
		err := cmd.Wait()
		done <- exit{err, time.Now()}
	}()
	var (
		active time.Time
		res    *exit
	)
	for res == nil && active.IsZero() {
		select {
		case e := <-done:
			res = &e
			continue
		default:
		}
		ok, err := slotActive(ctx, conn, slot)
		if err != nil {
			return 0, err
		}
		if ok {
			active = time.Now()
			break
		}
		if err := sleep(ctx, 5*time.Millisecond); err != nil {
			return 0, err
		}
	}
	if res == nil {
		t := time.NewTimer(3 * time.Minute)
		defer t.Stop()
		select {
		case e := <-done:
			res = &e
		case <-t.C:
			_ = cmd.Process.Kill()
			return 0, fmt.Errorf("pg_recvlogical did not reach %s within 3 minutes", endpos)
		}
	}
	if res.err != nil {
		return 0, fmt.Errorf("pg_recvlogical: %w: %s", res.err, strings.TrimSpace(out.String()))
	}
	if active.IsZero() {
		// It finished before a poll saw it streaming: count from its start.
		active = start
	}
	d := res.at.Sub(active)
	b.logf("rate: pg_recvlogical (slot %s) consumed %d changes in %s: %.0f changes/s (%s)", slot, changes,
		d.Round(time.Millisecond), float64(changes)/d.Seconds(), lastLine(out.String()))
	return d, nil
}

// lastLine is the last non-empty line of s, trimmed.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}
