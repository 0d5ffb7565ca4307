package logical

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/store"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Publication is the publication that carries the registered tables (the
// SQL function iasql_publication() names the same).
const Publication = "iasql"

// FatalError is a capture failure that retrying cannot fix: the operator
// must act (the message says how).
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

func fatalf(format string, args ...any) error {
	return &FatalError{Err: fmt.Errorf(format, args...)}
}

// ErrSlotLost means PostgreSQL removed WAL the slot still needed
// (wal_status = lost): changes since its position can no longer be captured.
var ErrSlotLost = errors.New("replication slot lost required WAL")

var slotUnsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// SlotName is the default slot name for a database: slots are cluster-wide,
// so the name carries the database's.
func SlotName(database string) string {
	s := "iasql_" + strings.Trim(slotUnsafe.ReplaceAllString(strings.ToLower(database), "_"), "_")
	if len(s) > 63 {
		s = s[:63]
	}
	return s
}

// SlotInfo is what pg_replication_slots and the capture progress say.
type SlotInfo struct {
	Name         string
	Exists       bool
	Plugin       string
	Database     string
	Active       bool
	ActivePID    *int32
	WALStatus    string // reserved, extended, unreserved, lost
	ConfirmedLSN *pglogrepl.LSN
	LagBytes     *int64 // current WAL position minus confirmed flush
	// From iasql_capture_progress:
	CapturedLSN *pglogrepl.LSN
	CommitTime  *time.Time
	Changes     int64
}

// ReadSlot reads the state of slot and of capture through it.
func ReadSlot(ctx context.Context, conn *pgx.Conn, slot string) (SlotInfo, error) {
	info := SlotInfo{Name: slot}
	err := conn.QueryRow(ctx, `
		SELECT plugin, database, active, active_pid, coalesce(wal_status, ''), confirmed_flush_lsn::text,
		       (pg_catalog.pg_current_wal_lsn() - confirmed_flush_lsn)::bigint
		  FROM pg_catalog.pg_replication_slots WHERE slot_name = $1`, slot).
		Scan(&info.Plugin, &info.Database, &info.Active, &info.ActivePID, &info.WALStatus, &info.ConfirmedLSN, &info.LagBytes)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		return info, fmt.Errorf("read slot %s: %w", slot, err)
	default:
		info.Exists = true
	}
	var has bool
	if err := conn.QueryRow(ctx, `SELECT pg_catalog.to_regclass('public.iasql_capture_progress') IS NOT NULL`).Scan(&has); err != nil {
		return info, fmt.Errorf("read capture progress: %w", err)
	}
	if has {
		p, err := store.ReadProgress(ctx, conn, slot)
		if err != nil {
			return info, err
		}
		// Progress of another origin (a restored database, before the
		// sidecar adopts it) says nothing about this server's slot.
		if p != nil && p.Here {
			info.CapturedLSN, info.CommitTime, info.Changes = &p.End, p.CommitTime, p.Changes
		}
	}
	return info, nil
}

// position is where capture resumes: after the last recorded transaction
// (its progress), and at least the slot's confirmed position, which an idle
// acknowledgement may have moved past it.
type position struct {
	recorded  pglogrepl.LSN
	confirmed pglogrepl.LSN
}

// prepareSlot makes sure the slot exists and is usable and returns the
// position to resume from. installed is where WAL was when iasql was
// installed in the database (iasql_engine_key.installed_lsn).
func prepareSlot(ctx context.Context, conn *pgx.Conn, slot string, installed pglogrepl.LSN, log *slog.Logger) (position, error) {
	var pos position
	info, err := ReadSlot(ctx, conn, slot)
	if err != nil {
		return pos, err
	}
	if err := info.usable(conn.Config().Database); err != nil {
		return pos, err
	}
	if info.predates(installed) {
		// An earlier install of iasql here made it, and was removed
		// (DROP EXTENSION with no sidecar running to drop the slot): it
		// would replay, as intent, changes made while iasql was not
		// installed. Nothing was captured through it since the install
		// (no progress), so capture starts at a new slot, as after any
		// install.
		if info.Active {
			return pos, fatalf("replication slot %s was left by an earlier install of iasql, and a process streams from it (pg_replication_slots.active_pid): stop it, or drop the slot (SELECT pg_drop_replication_slot('%s')), then start again", slot, slot)
		}
		if _, err := conn.Exec(ctx, `SELECT pg_catalog.pg_drop_replication_slot($1)`, slot); err != nil {
			return pos, fmt.Errorf("drop replication slot %s left by an earlier install of iasql: %w", slot, err)
		}
		log.Warn("dropped a replication slot left by an earlier install of iasql; capture starts at a new one", "slot", slot, "slot_position", info.ConfirmedLSN.String(), "installed_at", installed.String())
		info.Exists = false
	}
	if !info.Exists {
		if info.CapturedLSN != nil {
			return pos, &FatalError{Err: fmt.Errorf("%w: slot %s is gone but capture had reached %s; changes since then cannot be captured. To accept the gap and capture from now, delete its progress (DELETE FROM iasql_capture_progress WHERE slot_name = '%s', as a superuser with the table's guard trigger disabled) and restart", ErrSlotLost, slot, *info.CapturedLSN, slot)}
		}
		return pos, CreateSlot(ctx, conn, slot)
	}
	if info.CapturedLSN != nil {
		pos.recorded = *info.CapturedLSN
	}
	if info.ConfirmedLSN != nil {
		pos.confirmed = *info.ConfirmedLSN
	}
	return pos, nil
}

// predates says whether the slot stopped before iasql was installed at
// installed, with no progress recorded through it since: the slot of an
// earlier install. A slot made after the install starts at or after it.
func (info SlotInfo) predates(installed pglogrepl.LSN) bool {
	return info.Exists && info.CapturedLSN == nil && info.ConfirmedLSN != nil && *info.ConfirmedLSN < installed
}

// usable says why an existing slot cannot be used, if it cannot.
func (info SlotInfo) usable(database string) error {
	if !info.Exists {
		return nil
	}
	if info.WALStatus == "lost" {
		at := "its last position"
		if info.CapturedLSN != nil {
			at = info.CapturedLSN.String()
		}
		return &FatalError{Err: fmt.Errorf("%w: slot %s (wal_status = lost) cannot deliver changes after %s, so they cannot be captured. Raise max_slot_wal_keep_size to avoid it; to accept the gap, drop the slot (SELECT pg_drop_replication_slot('%s')) and delete its row from iasql_capture_progress, then restart", ErrSlotLost, info.Name, at, info.Name)}
	}
	if info.Plugin != "pgoutput" {
		return fatalf("replication slot %s uses plugin %q, not pgoutput: drop it or pass another --slot", info.Name, info.Plugin)
	}
	if info.Database != database {
		return fatalf("replication slot %s belongs to database %s, not %s: pass another --slot", info.Name, info.Database, database)
	}
	return nil
}

// CreateSlot creates the logical slot, with a clear message for the usual
// reasons it cannot be.
func CreateSlot(ctx context.Context, conn *pgx.Conn, slot string) error {
	_, err := conn.Exec(ctx, `SELECT pg_catalog.pg_create_logical_replication_slot($1, 'pgoutput')`, slot)
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "53400": // configuration_limit_exceeded
			var max string
			_ = conn.QueryRow(ctx, `SHOW max_replication_slots`).Scan(&max)
			return fatalf("cannot create replication slot %s: all max_replication_slots (%s) are in use; drop an unused slot (SELECT pg_drop_replication_slot(name)) or raise max_replication_slots and restart PostgreSQL", slot, max)
		case "42501": // insufficient_privilege
			return fatalf("cannot create replication slot %s: role %s lacks REPLICATION; run ALTER ROLE %s REPLICATION as a superuser (on RDS: GRANT rds_replication TO %s)", slot, conn.Config().User, conn.Config().User, conn.Config().User)
		case "55000": // object_not_in_prerequisite_state: wal_level
			return fatalf("cannot create replication slot %s: %s; set wal_level = logical and restart PostgreSQL", slot, pgErr.Message)
		}
	}
	return fmt.Errorf("create replication slot %s: %w", slot, err)
}

// adoptRestore adopts a database restored from a dump (iasql_adopt_restore:
// the recorded LSNs are renumbered below this server's, the old slots'
// progress goes). A slot of this name on this database that exists already
// was made before the database was adopted: it may hold the restore's own
// writes, which are not intent, so it is dropped and capture starts at a new
// one.
func (c *Capture) adoptRestore(ctx context.Context, conn *pgx.Conn, slot string) error {
	var did *string
	if err := conn.QueryRow(ctx, `SELECT public.iasql_adopt_restore()`).Scan(&did); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "54000" { // program_limit_exceeded
			return fatalf("%s: %s", pgErr.Message, pgErr.Hint)
		}
		return fmt.Errorf("adopt the restored database: %w", err)
	}
	if did == nil {
		return nil
	}
	c.log.Warn("adopted a database restored from a dump", "slot", slot, "did", *did)
	var dropped int
	err := conn.QueryRow(ctx, `SELECT count(*) FROM (SELECT pg_catalog.pg_drop_replication_slot(slot_name) FROM pg_catalog.pg_replication_slots
		WHERE slot_name = $1 AND database = pg_catalog.current_database() AND NOT active) d`, slot).Scan(&dropped)
	if err != nil {
		return fmt.Errorf("drop slot %s made before the restored database was adopted: %w", slot, err)
	}
	if dropped > 0 {
		c.log.Warn("dropped a slot made before the restored database was adopted", "slot", slot)
	}
	return nil
}
