package reconcile

// Applying one action: the cloud call, then a short conditional
// write-back (execute.go runs many of these concurrently).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// execute performs one action; writes to the database are conditional on
// the row being as read, and carry the engine marker.
func (c *cycle) execute(ctx context.Context, a *plan.Action) error {
	ts := a.Tab
	switch a.Kind {
	case plan.CloudCreate:
		want := a.Row.Cloud
		got, err := c.create(ctx, a, want)
		if err != nil {
			return err
		}
		if a.StandIn {
			return c.writeFeedback(ctx, a, got) // the stand-in, not the record
		}
		// Asked before the write-back, which is then the create's last
		// step unless the create needs finishing.
		want, unfinished := ts.Unfinished(want, got)
		if err := c.writeBack(ctx, a, got); err != nil {
			return err
		}
		a.Identified = snapshot.Generated(ts.Spec)
		if !unfinished {
			return nil
		}
		// The resource exists but is not as the row says: a retried create
		// found the one an earlier attempt half made (its later steps,
		// attach or tag, failed), or the cloud chose otherwise. Finish it
		// with an update; the next read says whether the cloud took it.
		if snapshot.Generated(ts.Spec) {
			want = snapshot.WithIdentity(ts.Spec, want, module.CloudIDOf(ts.Spec, got))
		}
		fixed, err := ts.Update(ctx, c.snap.Call, want, got)
		if errors.Is(err, module.ErrReplace) {
			return nil // the next read reports the difference
		} else if err != nil {
			return fmt.Errorf("the resource was created, but finishing it failed: %w", err)
		}
		return c.writeBack(ctx, a, fixed)
	case plan.CloudUpdate:
		got, err := ts.Update(ctx, c.snap.Call, a.Row.Cloud, a.Cloud)
		if errors.Is(err, module.ErrReplace) {
			a.Action = "replace"
			return c.replace(ctx, a)
		} else if err != nil {
			return err
		}
		return c.writeBack(ctx, a, got)
	case plan.CloudDelete:
		if a.Retire != nil {
			if err := ts.Delete(ctx, c.snap.Call, a.Cloud); err != nil {
				return err
			}
			return c.dbTx(ctx, func(tx pgx.Tx) error {
				if err := store.ForgetOps(ctx, tx, snapshot.RowKey(ts.Spec.Name, a.OpKey)); err != nil {
					return err
				}
				// The old resource gone, the record's own new resource comes next.
				if next, moved := a.Retire.Deleted(a.CloudID); moved {
					return store.SetPhase(ctx, tx, a.Retire, next)
				}
				return nil
			})
		}
		if s := a.Stray; s != nil {
			c.log().Warn("deleting a resource made twice by one create: its client token was not honoured", "cycle", c.id, "table", a.Table,
				"token", s.Token, "row", s.Row, "kept", strings.Join(s.Kept, ","), "deleting", a.CloudID, "duplicates", strings.Join(s.All, ","))
		}
		if err := ts.Delete(ctx, c.snap.Call, a.Cloud); errors.Is(err, module.ErrKeep) && (plan.ParentRetired(c.snap, ts.Spec, a.Cloud) || plan.ParentLeaving(c.snap, ts.Spec, a.Cloud)) {
			// It goes with its parent (the old resource of a replacement, or
			// a resource whose row was deleted): AWS deletes a VPC's default
			// security group with the VPC. As good as deleted: forgotten
			// below like one.
		} else if errors.Is(err, module.ErrKeep) {
			// The cloud keeps it: the row comes back instead.
			a.Action, a.Direction, a.Kind, a.IsCloud = "create", "database", plan.DBInsert, false
			a.Description = "import " + plan.Describe(ts.Spec, a.Cloud) + " back: " + err.Error()
			return c.execute(ctx, a)
		} else if err != nil {
			return err
		}
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			// The row may still exist under another identity: it keeps its
			// record, detached from the resource deleted.
			if err := c.forgetResource(ctx, tx, ts, a.Record, a.CloudID); err != nil {
				return err
			}
			return store.ForgetOps(ctx, tx, snapshot.RowKey(ts.Spec.Name, a.OpKey))
		})
	case plan.DBDelete:
		return c.pullTx(ctx, a, func(tx pgx.Tx) error {
			if err := store.DeleteRow(ctx, tx, ts.Spec.Name, a.ID, a.Row.Xmin); err != nil {
				return err
			}
			return store.ForgetOps(ctx, tx, snapshot.RowKey(ts.Spec.Name, a.ID))
		})
	case plan.DBInsert:
		rec, err := snapshot.ToDB(ts.Spec, a.Cloud, c.snap)
		if err != nil {
			return err
		}
		for _, col := range ts.Spec.Initial {
			rec[col] = a.Cloud[col]
		}
		if a.Record != "" && ts.Rows[a.Record] == nil {
			// Restore the record under the id it had, if it is still free.
			rec["id"] = json.Number(a.Record)
		}
		return c.pullTx(ctx, a, func(tx pgx.Tx) error {
			id, err := store.InsertRow(ctx, tx, ts.Spec.Name, rec)
			if err != nil {
				return err
			}
			a.ID = id
			// Enacted up to the read: the row did not exist in it, so any
			// user change to this id the read saw is older than the row
			// (another incarnation of the id: before an uninstall, or a
			// delete this import undoes); later changes come after it.
			return store.Enact(ctx, tx, store.Enacted{Record: snapshot.RowKey(ts.Spec.Name, id), CloudID: a.CloudID, LSN: max(ts.Seen[id], c.snap.LSN)})
		})
	case plan.DBUpdate, plan.DBFeedback:
		from := a.Cloud
		var cols []string
		if a.Kind == plan.DBFeedback {
			// The feedback columns, and those the row left to the cloud's
			// choice (only their references are translated).
			cols = append(slices.Clone(ts.Spec.Feedback), a.Row.Fill...)
			from = store.Only(a.Cloud, cols)
		}
		rec, err := snapshot.ToDB(ts.Spec, from, c.snap)
		if err != nil {
			return err
		}
		if cols != nil {
			rec = store.Only(rec, cols) // ToDB puts back every declarative column
		}
		return c.updateRow(ctx, a, rec)
	}
	return fmt.Errorf("unknown step %d", a.Kind)
}

// create makes the resource for a create action, carrying the action's
// client token. When an earlier attempt may have made it (a failed call,
// or a crash before the write-back) and the mapper can look a token up,
// the resource that attempt made is adopted instead of making another.
func (c *cycle) create(ctx context.Context, a *plan.Action, want module.Record) (module.Record, error) {
	call := c.snap.Call
	call.Token = a.Token
	// A long create (module.Poller) is asked again with its token: the
	// cloud answers for the resource the first call made, still on its way
	// or not; Find would take it as done.
	if a.Retried && module.PartsOf(a.Tab.Mapper).Poller == nil {
		got, err := a.Tab.Find(ctx, call, want)
		if err != nil {
			return nil, fmt.Errorf("look for what an earlier attempt made: %w", err)
		}
		if got != nil {
			c.log().Info("adopting the resource an earlier create made", "table", a.Table, "id", a.ID, "cloud_id", module.CloudIDOf(a.Tab.Spec, got))
			return got, nil
		}
	}
	return a.Tab.Create(ctx, call, want)
}

// writeBack stores what the cloud returned after a create or update: the
// feedback columns into the row, and the resource's identity in the
// record's state. It does not enact the intent: only a later read that
// shows the user's values does (the cloud may have said yes and not taken
// the change).
func (c *cycle) writeBack(ctx context.Context, a *plan.Action, got module.Record) error {
	ts := a.Tab
	cid := a.Row.CloudID
	if cid == "" || snapshot.Generated(ts.Spec) {
		cid = module.CloudIDOf(ts.Spec, got) // the identity the cloud gave it
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		return store.WriteBack(ctx, tx, ts.Spec, a.RecordKey, a.Row.DB, got, cid)
	})
}

// writeFeedback stores the feedback columns only.
func (c *cycle) writeFeedback(ctx context.Context, a *plan.Action, got module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		return store.FeedbackTx(ctx, tx, a.Tab.Spec, a.ID, a.Row.DB, got)
	})
}

// updateRow writes into the row what the cycle read in the cloud.
func (c *cycle) updateRow(ctx context.Context, a *plan.Action, rec module.Record) error {
	return c.pullTx(ctx, a, func(tx pgx.Tx) error {
		if err := store.UpdateRowTx(ctx, tx, a.Tab.Spec.Name, a.ID, a.Row.Xmin, rec); err != nil {
			return err
		}
		return store.Enact(ctx, tx, store.Enacted{Record: snapshot.RowKey(a.Tab.Spec.Name, a.ID), CloudID: a.CloudID, LSN: a.Tab.Seen[a.ID]})
	})
}
