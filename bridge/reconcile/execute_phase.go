package reconcile

// The cycle's side of execution (package execute decides what runs when):
// what one action does, through the cycle's session, and the transactions
// its writes go through (dbTx, a batch for database-only actions), which
// carry the engine's marker.

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/execute"
	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// executeAll runs a pass's actions (package execute) with the cycle as
// their doer, then records how they ended (ran).
func (c *cycle) executeAll(ctx context.Context, actions []*plan.Action) []string {
	index := map[string]int{}
	for i, t := range c.req.Tables {
		index[t.Spec.Name] = i
	}
	failures, results := c.r.Exec.Run(ctx, plan.Scheduled(actions, index), doer{c})
	c.ran(results)
	return failures
}

// doer is the cycle as an execute.Doer.
type doer struct{ c *cycle }

func (d doer) Begin(ctx context.Context) error { return d.c.openBatch(ctx) }

func (d doer) Database(ctx context.Context, a *plan.Action) error { return d.c.execute(ctx, a) }

func (d doer) Commit(ctx context.Context) error { return d.c.commitBatch(ctx) }

// Cloud records the operation (a create's token first), makes the call and
// writes back; a long operation's handle is persisted, a failure recorded.
func (d doer) Cloud(ctx context.Context, a *plan.Action) error {
	c := d.c
	var err error
	if a.Retried, err = c.beginOp(ctx, a); err == nil {
		err = c.execute(ctx, a)
	}
	if p := (*module.Pending)(nil); errors.As(err, &p) {
		if err = c.startOp(ctx, a, p); err == nil {
			err = execute.ErrInFlight
		}
	}
	if err != nil && !errors.Is(err, store.ErrConflict) && !errors.Is(err, execute.ErrInFlight) && ctx.Err() == nil {
		c.endOp(ctx, a, snapshot.OpFailed, err.Error())
	}
	return err
}

func (d doer) Held(ctx context.Context, a *plan.Action, why string) {
	d.c.endOp(ctx, a, snapshot.OpWaiting, why)
}

// dbTx runs fn in a transaction marked as the engine's (a savepoint of
// the open batch, when there is one).
func (c *cycle) dbTx(ctx context.Context, fn func(pgx.Tx) error) error {
	return c.markedTx(ctx, c.label(), fn)
}

// pullTx runs fn, which writes into a row what the cycle read in the
// cloud, in a transaction marked so (origin cloud in the audit trail, with
// who made the change in AWS when the cycle knows).
func (c *cycle) pullTx(ctx context.Context, a *plan.Action, fn func(pgx.Tx) error) error {
	return c.markedTx(ctx, store.CloudMarker(c.label(), a.Tab.Causes[a.CloudID]), fn)
}

func (c *cycle) label() string { return "cycle " + c.id }

// markedTx runs fn in a transaction (a savepoint of the open batch, when
// there is one) whose changes capture records as marker says. In a batch a
// marker is emitted only when it differs from the one before: a marker
// applies to the changes after it in its transaction, and one emitted in a
// savepoint rolled back is gone with it.
func (c *cycle) markedTx(ctx context.Context, marker string, fn func(pgx.Tx) error) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	if c.batch != nil {
		err := pgx.BeginFunc(ctx, c.batch, func(tx pgx.Tx) error { // a savepoint: a failure undoes this action only
			if marker != c.batchMark {
				if err := store.MarkEngine(ctx, tx, marker); err != nil {
					return err
				}
			}
			return fn(tx)
		})
		if err == nil {
			c.batchMark = marker
		}
		return err
	}
	return pgx.BeginFunc(ctx, c.conn, func(tx pgx.Tx) error {
		if err := store.MarkEngine(ctx, tx, marker); err != nil {
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
	if err := store.MarkEngine(ctx, tx, c.label()); err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	c.batch, c.batchMark = tx, c.label()
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

// ran notes, from how the actions ended, the records whose declarative
// state the cycle pushed (the cloud said yes): only a later read that
// shows it enacts the intent; and the records it acted on in the cloud
// (leaveNewer).
func (c *cycle) ran(results []execute.Result) {
	for _, r := range results {
		a, err := r.Action, r.Err
		if err == nil && a.IsCloud && a.ID != "" {
			c.acted[a.RecordKey] = true
		}
		switch {
		case err == nil && (a.Kind == plan.CloudCreate || (a.Kind == plan.CloudUpdate && a.Action == "update")):
			c.pushed[a.Push] = a.Tab.Seen[a.ID]
		case errors.Is(err, store.ErrConflict):
			c.log().Info("row changed while the cycle worked on it; planning it again", "table", a.Table, "id", a.ID)
		}
	}
}
