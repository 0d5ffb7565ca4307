package reconcile

// The engine's SQL on a cycle's session: reading rows, record state and
// intent in one snapshot, and the conditional writes that carry the
// engine's marker.

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/iasql/iasql/bridge/store"
	"github.com/jackc/pgx/v5"
)

// withConn runs fn while holding the cycle's connection.
func (c *cycle) withConn(fn func() error) error { return locked(c.dbMu, fn) }

// dbTx runs fn in a transaction marked as the engine's (a savepoint of
// the open batch, when there is one).
func (c *cycle) dbTx(ctx context.Context, fn func(pgx.Tx) error) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	if c.batch != nil {
		return pgx.BeginFunc(ctx, c.batch, fn) // a savepoint: a failure undoes this action only
	}
	return pgx.BeginFunc(ctx, c.conn, func(tx pgx.Tx) error {
		if err := store.MarkEngine(ctx, tx, "cycle "+c.id); err != nil {
			return err
		}
		return fn(tx)
	})
}

func (c *cycle) openBatch(ctx context.Context) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin a batch of writes: %w", err)
	}
	if err := store.MarkEngine(ctx, tx, "cycle "+c.id); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	c.batch = tx
	return nil
}

// commitBatch commits the open batch.
func (c *cycle) commitBatch(ctx context.Context) error {
	if c.batch == nil {
		return nil
	}
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	err := c.batch.Commit(ctx)
	c.batch = nil
	return err
}

// startRecord and endRecord write the cycle's lifecycle rows.
func (c *cycle) record(ctx context.Context, kind string, msg map[string]any) error {
	js, _ := json.Marshal(msg)
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	return store.CycleRecord(ctx, c.conn, kind, js)
}
