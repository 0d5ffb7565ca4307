package bridge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// The engine's state between runs, and the audit trail's retention.
//
// The intent watermark (below it every user change is enacted or was
// decided otherwise) is persisted at the end of each successful cycle, so a
// restarted engine reads the audit trail from there and not from its start.
// Audit rows older than the retention and below the watermark (so never a
// change still pending) are deleted, at most once an hour, in batches, at
// the end of a successful cycle (which holds the cycle lock the audit
// trail's guard asks for).

// DefaultAuditRetention is how long the audit trail keeps history when
// nothing else is configured: 30 days.
const DefaultAuditRetention = 30 * 24 * time.Hour

// pruneEvery is how often the audit trail is pruned at most (or every
// retention, when that is shorter).
const pruneEvery = time.Hour

// pruneBatch is how many audit rows one statement deletes.
const pruneBatch = 10000

// engineState is iasql_engine_state as this leadership last read or wrote
// it (the loop goroutine's): cycles write it only when it changes.
type engineState struct {
	low      pglogrepl.LSN
	prunedAt time.Time
}

// loadLow reads the persisted intent watermark and the last pruning.
func (e *Engine) loadLow(ctx context.Context, c *pgx.Conn) error {
	e.kept = engineState{}
	err := c.QueryRow(ctx, `SELECT intent_low::text, coalesce(pruned_at, 'epoch') FROM public.iasql_engine_state`).
		Scan(&e.kept.low, &e.kept.prunedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the engine's state: %w", err)
	}
	e.setLow(e.kept.low)
	return nil
}

// saveLow persists the intent watermark when it moved, and prunes the
// audit trail when its time has come. conn holds the cycle lock.
func (c *cycle) saveLow(ctx context.Context, low pglogrepl.LSN) error {
	kept := &c.e.kept
	if low > kept.low {
		err := c.withConn(func() error {
			_, err := c.conn.Exec(ctx, `
				INSERT INTO public.iasql_engine_state AS s (intent_low) VALUES ($1::text::pg_lsn)
				ON CONFLICT (singleton) DO UPDATE SET intent_low = greatest(s.intent_low, excluded.intent_low), updated_at = pg_catalog.clock_timestamp()`,
				low.String())
			return err
		})
		if err != nil {
			return fmt.Errorf("persist the intent watermark: %w", err)
		}
		kept.low = low
	}
	if c.e.retention <= 0 || time.Since(kept.prunedAt) < min(pruneEvery, c.e.retention) {
		return nil
	}
	if err := c.prune(ctx, low); err != nil {
		return err
	}
	kept.prunedAt = time.Now()
	return nil
}

// prune deletes audit rows older than the retention and below low.
func (c *cycle) prune(ctx context.Context, low pglogrepl.LSN) error {
	cutoff := time.Now().Add(-c.e.retention)
	total := int64(0)
	for {
		var n int64
		err := c.withConn(func() error {
			tag, err := c.conn.Exec(ctx, `DELETE FROM public.iasql_audit_log WHERE id IN (
				SELECT id FROM public.iasql_audit_log WHERE ts < $1 AND (lsn IS NULL OR lsn < $2::text::pg_lsn) LIMIT $3)`,
				cutoff, low.String(), pruneBatch)
			n = tag.RowsAffected()
			return err
		})
		if err != nil {
			return fmt.Errorf("prune the audit trail: %w", err)
		}
		total += n
		if n < pruneBatch {
			break
		}
	}
	err := c.withConn(func() error {
		_, err := c.conn.Exec(ctx, `UPDATE public.iasql_engine_state SET pruned_at = pg_catalog.clock_timestamp()`)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the audit trail's pruning: %w", err)
	}
	if total > 0 {
		c.e.log.Info("pruned the audit trail", "rows", total, "older_than", cutoff.Format(time.RFC3339))
	}
	return nil
}
