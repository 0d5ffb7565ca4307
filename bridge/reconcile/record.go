package reconcile

// The cycle's own records on its session (CYCLE_START, CYCLE_END). The
// transactions the cycle's writes go through (dbTx, batches) are the
// execute phase's: execute_phase.go.

import (
	"context"
	"encoding/json"

	"github.com/iasql/iasql/bridge/store"
)

// withConn runs fn while holding the cycle's connection.
func (c *cycle) withConn(fn func() error) error { return locked(c.dbMu, fn) }

// startRecord and endRecord write the cycle's lifecycle rows.
func (c *cycle) record(ctx context.Context, kind string, msg map[string]any) error {
	js, _ := json.Marshal(msg)
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	return store.CycleRecord(ctx, c.conn, kind, js)
}
