package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/logical"
	iasqlsql "github.com/iasql/iasql/sql"
)

// decodingSlot is the pgoutput slot pg_recvlogical streams from in the
// decoding variant's database.
const decodingSlot = "bench_decoding"

// The decoding variant measures the floor under the sidecar's writer cost:
// what PostgreSQL's logical decoding (the walsender decoding the WAL and
// pgoutput sending the changes) costs writers, which any consumer of the
// changes pays. Its database is registered as the sidecar's is (the iasql
// objects installed as `iasql run` installs them, bench_item and
// bench_marker inserted into iasql_tables: REPLICA IDENTITY FULL, in
// publication iasql), but nothing captures: pg_recvlogical streams the
// changes from a slot of its own, with the options the sidecar asks
// pgoutput for, to /dev/null, and acknowledges once a second.
//
// Catching up (catchUpDecoding) waits for the walsender to have decoded and
// sent everything, not for pg_recvlogical's acknowledgement: with nothing
// to receive, pg_recvlogical 15 reports at best every two seconds, and a
// SIGINT makes it exit without acknowledging what it received last (its
// next walsender decodes that again, while catching up, before the next
// slice is measured).

// registerForDecoding installs the iasql objects on db, registers the bench
// tables and creates decodingSlot (after the publication, as the sidecar
// does).
func (b *bench) registerForDecoding(ctx context.Context, conn *pgx.Conn) error {
	if _, err := iasqlsql.Ensure(ctx, conn, true); err != nil {
		return fmt.Errorf("install the iasql objects: %w", err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO iasql_tables (table_name) VALUES ('bench_item'), ('bench_marker')`); err != nil {
		return fmt.Errorf("register the bench tables: %w", err)
	}
	var full bool
	var published int
	err := conn.QueryRow(ctx, `
		SELECT (SELECT relreplident = 'f' FROM pg_class WHERE oid = 'bench_item'::regclass),
		       (SELECT count(*) FROM pg_publication_tables WHERE pubname = $1 AND tablename IN ('bench_item', 'bench_marker'))`,
		logical.Publication).Scan(&full, &published)
	if err != nil {
		return fmt.Errorf("check the registration: %w", err)
	}
	if !full || published != 2 {
		return fmt.Errorf("registering the bench tables left bench_item with REPLICA IDENTITY FULL %t and %d of the 2 tables in publication %s", full, published, logical.Publication)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_create_logical_replication_slot($1, 'pgoutput')`, decodingSlot); err != nil {
		return fmt.Errorf("create slot %s: %w", decodingSlot, err)
	}
	return nil
}

// startRecvlogical starts pg_recvlogical streaming slot on db: pgoutput with
// the sidecar's options (proto_version 1, publication iasql, messages), the
// changes to /dev/null, progress reported once a second (--status-interval
// 1, its shortest) and every report acknowledging all it has received
// (--fsync-interval 0: nothing to fsync). Its errors go to the bench's
// stderr, prefixed. SIGINT stops it with status 0 (SIGTERM kills
// pg_recvlogical 15).
func (b *bench) startRecvlogical(ctx context.Context, db, slot string) (*sidecar, error) {
	cmd := exec.CommandContext(ctx, b.recvlogical, "-d", b.cluster.DSN(db), "--slot", slot, "--start",
		"-o", "proto_version=1", "-o", "publication_names="+logical.Publication, "-o", "messages=true",
		"-f", "/dev/null", "--fsync-interval=0", "--status-interval=1", "--no-loop")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGINT) }
	cmd.WaitDelay = 15 * time.Second
	s := &sidecar{cmd: cmd, name: "pg_recvlogical", what: "pg_recvlogical", stopSig: syscall.SIGINT, slot: slot}
	w := &linePrefixer{w: b.log, prefix: "  pg_recvlogical | ", skip: func(line []byte) bool {
		// What pg_recvlogical 15 says when SIGINT stops it, before it exits
		// with status 0.
		return s.stopped.Load() && strings.TrimSpace(string(line)) == "pg_recvlogical: error: unexpected termination of replication stream:"
	}}
	cmd.Stdout, cmd.Stderr = w, w
	if err := s.start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", b.recvlogical, err)
	}
	return s, nil
}

// catchUpDecoding writes marker d.marker and waits for the walsender that
// streams d.slot to have decoded and sent everything up to it. The marker
// makes sure WAL goes on past the insert position read just before it: once
// the walsender has sent past that position, it has decoded and sent every
// transaction committed before.
func (d *variantDB) catchUpDecoding(ctx context.Context, timeout time.Duration) (time.Time, error) {
	var lsn string
	if err := d.conn.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
		return time.Time{}, fmt.Errorf("read the WAL position: %w", err)
	}
	if err := mark(ctx, d.conn, d.marker); err != nil {
		return time.Time{}, err
	}
	var at time.Time
	err := poll(ctx, 10*time.Millisecond, timeout, fmt.Sprintf("the walsender of slot %s to send past %s (marker %d)", d.slot, lsn, d.marker), d.sc,
		func(ctx context.Context) (bool, error) {
			var ok bool
			err := d.conn.QueryRow(ctx, `
				SELECT coalesce((SELECT r.sent_lsn >= $2::pg_lsn FROM pg_replication_slots s JOIN pg_stat_replication r ON r.pid = s.active_pid
				                  WHERE s.slot_name = $1), false)`, d.slot, lsn).Scan(&ok)
			if err != nil {
				return false, fmt.Errorf("read slot %s: %w", d.slot, err)
			}
			if ok {
				at = time.Now()
			}
			return ok, nil
		})
	return at, err
}
