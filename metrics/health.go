// Package metrics tells how a sidecar and its database are doing: it reads
// capture, slot, cycle and record health from the database (ReadHealth, for
// `iasql status`), and serves them with the sidecar's cloud calls as
// Prometheus metrics (New, Serve).
package metrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge/store"
)

// Querier is what ReadHealth reads through: a *pgx.Conn or a *pgxpool.Pool.
type Querier = store.Reader

// Slot is the state of a logical replication slot.
type Slot struct {
	Name     string `json:"name"`
	Database string `json:"database,omitempty"`
	Exists   bool   `json:"exists"`
	Active   bool   `json:"active"`
	// ActivePID is the walsender streaming from the slot; Consumer the
	// application_name of that connection.
	ActivePID *int32  `json:"active_pid"`
	Consumer  *string `json:"consumer"`
	// WALStatus is pg_replication_slots.wal_status: reserved, extended,
	// unreserved or lost.
	WALStatus    string  `json:"wal_status"`
	ConfirmedLSN *string `json:"confirmed_flush_lsn"`
	// LagBytes is the current WAL position minus the confirmed position:
	// what capture has not acknowledged yet.
	LagBytes *int64 `json:"lag_bytes"`
	// RetainedBytes is the current WAL position minus restart_lsn: the WAL
	// the server keeps for this slot.
	RetainedBytes *int64 `json:"retained_wal_bytes"`
	// SafeWALSize is how much more WAL can be written before the slot is
	// in danger of losing WAL (NULL when max_slot_wal_keep_size is -1).
	SafeWALSize *int64 `json:"safe_wal_size"`
}

// Cycle is the last cycle's end record.
type Cycle struct {
	Cycle    string        `json:"cycle"`
	Reason   string        `json:"reason"`
	Ended    time.Time     `json:"ended"`
	Duration time.Duration `json:"-"`
	Outcome  string        `json:"outcome"` // done, failed, timeout, interrupted (the sidecar stopped)
	Summary  string        `json:"summary"`
	Error    string        `json:"error,omitempty"`
	// Events: how the sidecar that ran it read the events queue (absent
	// without one).
	Events string `json:"events,omitempty"`
}

// EventsProblem is the cycle's events queue that cannot be read, as
// its sidecar said, or "".
func (c *Cycle) EventsProblem() string {
	if c == nil || !strings.HasPrefix(c.Events, store.QueueUnreadable) {
		return ""
	}
	return c.Events
}

// Failed reports whether the cycle failed or timed out (a cycle cut short
// because its sidecar stopped did neither: the next one takes up its work).
func (c *Cycle) Failed() bool { return c != nil && c.Outcome != "done" && c.Outcome != "interrupted" }

// Health is what ReadHealth found.
type Health struct {
	Version string `json:"sql_version"` // iasql_version(); "" when not installed
	Slot    Slot   `json:"slot"`
	// MaxSlotWALKeepSize is the server's max_slot_wal_keep_size as it
	// shows it ("-1" is unlimited); MaxSlotWALKeepBytes the same in bytes
	// (-1 unlimited).
	MaxSlotWALKeepSize  string `json:"max_slot_wal_keep_size"`
	MaxSlotWALKeepBytes int64  `json:"max_slot_wal_keep_size_bytes"`
	// OtherSlots are the server's other iasql_* slots (slots are
	// cluster-wide: other databases' sidecars, or leftovers that pin WAL).
	OtherSlots []Slot `json:"other_iasql_slots"`
	// From iasql_capture_progress.
	CapturedLSN *string    `json:"last_captured_lsn"`
	CommitTime  *time.Time `json:"last_commit_time"`
	CapturedAt  *time.Time `json:"last_captured_at"`
	Changes     int64      `json:"changes_captured"`
	LastCycle   *Cycle     `json:"last_cycle"`
	// Records counts iasql_status rows by state (pending, in progress,
	// failed, waiting, unverified); nil when RecordsError says why they
	// could not be read.
	Records map[string]int64 `json:"records_not_in_sync"`
	// RecordsError is why iasql_status could not be read by this role
	// (it reads the module tables with the caller's privileges).
	RecordsError string `json:"records_error,omitempty"`
	// CycleError is why the last cycle could not be read by this role
	// (the audit trail is for iasql_reader); LastCycle is nil then.
	CycleError string `json:"cycle_error,omitempty"`
	// Uncaptured is what the slot holds that capture has not recorded
	// (CountUncaptured; nil when not read, and while a sidecar streams);
	// its changes are counted in Records["pending"] too. UncapturedError
	// is why it could not be read.
	Uncaptured      *Uncaptured `json:"uncaptured,omitempty"`
	UncapturedError string      `json:"uncaptured_error,omitempty"`
	// ProgressError is why capture progress could not be read by this
	// role (iasql's tables are for iasql_reader); the captured position,
	// commit time and count are unknown then.
	ProgressError string `json:"progress_error,omitempty"`
	// captured is CapturedLSN as an LSN (zero when none).
	captured pglogrepl.LSN
}

// CountUncaptured reads what the slot holds that capture has not recorded
// (ReadUncaptured) and counts its changes as pending records: committed,
// not enacted. A role that may not read the slot learns the rest, with a
// warning.
func (h *Health) CountUncaptured(ctx context.Context, conn *pgx.Conn) {
	u, err := ReadUncaptured(ctx, conn, h)
	if err != nil {
		h.UncapturedError = err.Error()
		return
	}
	h.Uncaptured = u
	if u != nil && h.Records != nil {
		h.Records["pending"] += u.Changes
	}
}

// CaptureProblem says what makes capture unhealthy, or "".
func (h *Health) CaptureProblem() string {
	switch {
	case !h.Slot.Exists && h.CapturedLSN != nil:
		return "replication slot " + h.Slot.Name + " is gone but capture had reached " + *h.CapturedLSN + ": changes since then cannot be captured; see 'iasql run' for how to recover"
	case !h.Slot.Exists:
		return "replication slot " + h.Slot.Name + " does not exist: start 'iasql run', which creates it"
	case h.Slot.WALStatus == "lost":
		lsn := "-"
		if h.CapturedLSN != nil {
			lsn = *h.CapturedLSN
		}
		return "replication slot " + h.Slot.Name + " is lost (wal_status = lost): changes after " + lsn + " cannot be captured; see 'iasql run' for how to recover"
	case !h.Slot.Active:
		return "no sidecar is consuming slot " + h.Slot.Name + ": start 'iasql run'"
	}
	return ""
}

// Warnings are conditions an operator should act on before capture breaks.
func (h *Health) Warnings() []string {
	var out []string
	switch h.Slot.WALStatus {
	case "extended":
		limit := "max_slot_wal_keep_size is -1: the WAL grows until capture catches up or the disk is full"
		if h.MaxSlotWALKeepBytes >= 0 {
			limit = "past max_slot_wal_keep_size (" + h.MaxSlotWALKeepSize + ") the slot loses WAL"
		}
		out = append(out, fmt.Sprintf("slot %s retains more WAL than max_wal_size (wal_status = extended): capture is behind or stopped; %s", h.Slot.Name, limit))
	case "unreserved":
		out = append(out, fmt.Sprintf("slot %s is about to lose WAL (wal_status = unreserved, max_slot_wal_keep_size %s): the next checkpoint may remove WAL it needs, and the slot becomes lost", h.Slot.Name, h.MaxSlotWALKeepSize))
	}
	if h.ProgressError != "" {
		out = append(out, "cannot read what capture recorded (iasql_capture_progress: "+h.ProgressError+"): the role running status needs iasql_reader (GRANT iasql_reader TO it)")
	}
	if h.RecordsError != "" {
		out = append(out, "cannot count the records not in sync (iasql_status: "+h.RecordsError+"): the role running status needs iasql_reader (GRANT iasql_reader TO it)")
	}
	if h.UncapturedError != "" {
		out = append(out, "cannot count the changes the slot holds that are not captured yet ("+h.UncapturedError+"): pending leaves them out; run status as the sidecar's role (it needs REPLICATION)")
	}
	if p := h.LastCycle.EventsProblem(); p != "" {
		out = append(out, p+": changes made in AWS reach the rows at the next full read only; check the queue and the sidecar's rights on it (sqs:ReceiveMessage, sqs:DeleteMessage)")
	}
	if h.CycleError != "" {
		out = append(out, "cannot read the last cycle (iasql_audit_log: "+h.CycleError+"): the role running status needs iasql_reader (GRANT iasql_reader TO it)")
	}
	for _, s := range h.OtherSlots {
		if !s.Active && s.RetainedBytes != nil {
			out = append(out, fmt.Sprintf("slot %s (database %s) has no consumer and retains %s of WAL: drop it if nothing uses it (SELECT pg_drop_replication_slot('%s'))", s.Name, s.Database, Bytes(*s.RetainedBytes), s.Name))
		}
	}
	return out
}

// SyncProblem says what makes the sync with the cloud unhealthy (the last
// cycle failed, or records are failing), or "".
func (h *Health) SyncProblem() string {
	var p string
	if h.LastCycle.Failed() {
		p = fmt.Sprintf("the last cycle (%s) ended %s", h.LastCycle.Cycle, h.LastCycle.Outcome)
		if h.LastCycle.Error != "" {
			p += ": " + h.LastCycle.Error
		}
	}
	if n := h.Records["failed"]; n > 0 {
		if p != "" {
			p += "; "
		}
		p += fmt.Sprintf("%d records are failing: SELECT * FROM iasql_status WHERE state = 'failed'", n)
	}
	return p
}

// ReadHealth reads the state of slot and of what the sidecar recorded in
// the database. Objects not installed yet read as absent.
func ReadHealth(ctx context.Context, q Querier, slot string) (*Health, error) {
	h := &Health{Slot: Slot{Name: slot}, Records: map[string]int64{}}
	err := q.QueryRow(ctx, `
		SELECT pg_catalog.current_setting('max_slot_wal_keep_size'),
		       CASE WHEN s.setting::bigint < 0 THEN -1 ELSE pg_catalog.pg_size_bytes(s.setting || coalesce(s.unit, '')) END
		  FROM pg_catalog.pg_settings s WHERE s.name = 'max_slot_wal_keep_size'`).Scan(&h.MaxSlotWALKeepSize, &h.MaxSlotWALKeepBytes)
	if err != nil {
		return nil, fmt.Errorf("read max_slot_wal_keep_size: %w", err)
	}
	rows, err := q.Query(ctx, `
		SELECT s.slot_name::text, coalesce(s.database::text, ''), s.active, s.active_pid, a.application_name,
		       coalesce(s.wal_status, ''), s.confirmed_flush_lsn::text,
		       (pg_catalog.pg_current_wal_lsn() - s.confirmed_flush_lsn)::bigint,
		       (pg_catalog.pg_current_wal_lsn() - s.restart_lsn)::bigint,
		       s.safe_wal_size
		  FROM pg_catalog.pg_replication_slots s
		  LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = s.active_pid
		 WHERE s.slot_name = $1 OR s.slot_name LIKE 'iasql\_%'
		 ORDER BY s.slot_name`, slot)
	if err != nil {
		return nil, fmt.Errorf("read replication slots: %w", err)
	}
	for rows.Next() {
		s := Slot{Exists: true}
		if err := rows.Scan(&s.Name, &s.Database, &s.Active, &s.ActivePID, &s.Consumer, &s.WALStatus, &s.ConfirmedLSN, &s.LagBytes, &s.RetainedBytes, &s.SafeWALSize); err != nil {
			rows.Close()
			return nil, fmt.Errorf("read replication slots: %w", err)
		}
		if s.Name == slot {
			h.Slot = s
		} else {
			h.OtherSlots = append(h.OtherSlots, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read replication slots: %w", err)
	}
	var installed bool
	if err := q.QueryRow(ctx, `SELECT pg_catalog.to_regprocedure('public.iasql_version()') IS NOT NULL`).Scan(&installed); err != nil {
		return nil, fmt.Errorf("read iasql version: %w", err)
	}
	if !installed {
		return h, nil
	}
	if err := q.QueryRow(ctx, `SELECT public.iasql_version()`).Scan(&h.Version); err != nil {
		return nil, fmt.Errorf("read iasql version: %w", err)
	}
	p, err := store.ReadProgress(ctx, q, slot)
	var pe *pgconn.PgError
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		// iasql's tables are iasql_reader's: a role without it learns the
		// slot's state (pg_replication_slots) and that it lacks the grant.
		h.ProgressError = pe.Message
	case err != nil:
		return nil, err
	case p != nil:
		lsn := p.End.String()
		h.captured, h.CapturedLSN, h.CommitTime, h.CapturedAt, h.Changes = p.End, &lsn, p.CommitTime, &p.UpdatedAt, p.Changes
	}
	c, err := store.LastCycle(ctx, q)
	switch {
	case errors.As(err, &pe) && pe.Code == "42501":
		// The audit trail is iasql_reader's: a role without it learns the rest.
		h.CycleError = pe.Message
	case err != nil:
		return nil, err
	case c != nil:
		h.LastCycle = &Cycle{Cycle: c.Cycle, Reason: c.Reason, Ended: c.Ended, Duration: c.Duration, Outcome: c.Outcome, Summary: c.Summary, Error: c.Error, Events: c.Events}
	}
	if h.Records, err = store.RecordStates(ctx, q); err != nil {
		if !errors.As(err, &pe) || pe.Code != "42501" {
			return nil, err
		}
		// iasql_status reads the module tables with the caller's
		// privileges: a role that may not read them learns the rest.
		h.Records, h.RecordsError = nil, pe.Message
	}
	return h, nil
}

// Bytes renders n bytes in binary units: 512 B, 1.5 KiB, 16.0 MiB.
func Bytes(n int64) string {
	const unit = 1024
	if n < unit && n > -unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n), 0
	for f >= unit*unit || f <= -unit*unit {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f/unit, "KMGTPE"[i])
}
