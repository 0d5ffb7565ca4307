package bridge

import (
	"context"
	"time"

	"github.com/iasql/iasql/bridge/store"
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

// loadLow reads the persisted intent watermark and the last pruning, on
// the service session.
func (e *Engine) loadLow(ctx context.Context) error {
	var kept store.EngineState
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		kept, err = store.LoadEngineState(ctx, c)
		return err
	}); err != nil {
		return err
	}
	e.kept = kept
	if kept.Low != 0 {
		e.setLow(kept.Low)
	}
	return nil
}

// saveLow persists the intent watermark when it moved, and prunes the
// audit trail when its time has come. conn holds the cycle lock.
func (c *cycle) saveLow(ctx context.Context, low pglogrepl.LSN) error {
	kept := &c.e.kept
	if low > kept.Low {
		if err := c.withConn(func() error { return store.SaveLow(ctx, c.conn, low) }); err != nil {
			return err
		}
		kept.Low = low
	}
	if c.e.retention <= 0 || time.Since(kept.PrunedAt) < min(pruneEvery, c.e.retention) {
		return nil
	}
	if err := c.prune(ctx, low); err != nil {
		return err
	}
	kept.PrunedAt = time.Now()
	return nil
}

// prune deletes audit rows older than the retention and below low.
func (c *cycle) prune(ctx context.Context, low pglogrepl.LSN) error {
	cutoff := time.Now().Add(-c.e.retention)
	total := int64(0)
	for {
		var n int64
		err := c.withConn(func() (err error) {
			n, err = store.PruneAudit(ctx, c.conn, cutoff, low, pruneBatch)
			return err
		})
		if err != nil {
			return err
		}
		total += n
		if n < pruneBatch {
			break
		}
	}
	if err := c.withConn(func() error { return store.MarkPruned(ctx, c.conn) }); err != nil {
		return err
	}
	if total > 0 {
		c.e.log.Info("pruned the audit trail", "rows", total, "older_than", cutoff.Format(time.RFC3339))
	}
	return nil
}
