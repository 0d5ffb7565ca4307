package bridge

import (
	"context"
	"time"

	"github.com/iasql/iasql/bridge/store"
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
	e.state.Kept = kept
	if kept.Low != 0 {
		e.setLow(kept.Low)
	}
	return nil
}
