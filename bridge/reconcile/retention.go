package reconcile

import (
	"context"
	"time"

	"github.com/iasql/iasql/bridge/store"
	"github.com/jackc/pglogrepl"
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

// pruneEvery is how often the audit trail is pruned at most (or every
// retention, when that is shorter).
const pruneEvery = time.Hour

// pruneBatch is how many audit rows one statement deletes.
const pruneBatch = 10000

// saveLow persists the intent watermark when it moved, and prunes the
// audit trail when its time has come. conn holds the cycle lock.
func (c *cycle) saveLow(ctx context.Context, low pglogrepl.LSN) error {
	kept := &c.st.Kept
	if low > kept.Low {
		if err := c.withConn(func() error { return store.SaveLow(ctx, c.conn, low) }); err != nil {
			return err
		}
		kept.Low = low
	}
	if c.r.Retention <= 0 || time.Since(kept.PrunedAt) < min(pruneEvery, c.r.Retention) {
		return nil
	}
	if err := c.prune(ctx, low); err != nil {
		return err
	}
	kept.PrunedAt = time.Now()
	return nil
}

// prune deletes audit rows older than the retention and below low,
// keeping each live record's newest older version (store.PruneAudit).
func (c *cycle) prune(ctx context.Context, low pglogrepl.LSN) error {
	cutoff := time.Now().Add(-c.r.Retention)
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
	if err := c.withConn(func() error { return store.MarkPruned(ctx, c.conn, cutoff) }); err != nil {
		return err
	}
	if total > 0 {
		c.log().Info("pruned the audit trail", "rows", total, "older_than", cutoff.Format(time.RFC3339))
	}
	return nil
}
