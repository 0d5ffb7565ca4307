package bridge

// Applying one action: the cloud call, then a short conditional
// write-back (execute.go runs many of these concurrently).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// errConflict means a conditional write found the row changed since the
// cycle read it: the user's change wins and the record is planned again.
var errConflict = errors.New("row changed since it was read")

// execute performs one action; writes to the database are conditional on
// the row being as read, and carry the engine marker.
func (c *cycle) execute(ctx context.Context, a *Action) error {
	ts := a.ts
	switch a.kind {
	case cloudCreate:
		want := a.row.cloud
		got, err := c.create(ctx, a, want)
		if err != nil {
			return err
		}
		if ts.standingIn(a.ID) {
			return c.writeFeedback(ctx, a, got) // the stand-in, not the record
		}
		if err := c.writeBack(ctx, a, got); err != nil {
			return err
		}
		a.identified = generated(ts.spec)
		if ts.mapper.Equal(want, got) {
			return nil
		}
		// The resource exists but is not as the row says: a retried create
		// found the one an earlier attempt half made (its later steps,
		// attach or tag, failed), or the cloud chose otherwise. Finish it
		// with an update; the next read says whether the cloud took it.
		if generated(ts.spec) {
			want = withIdentity(ts.spec, want, module.CloudIDOf(ts.spec, got))
		}
		fixed, err := ts.mapper.Update(ctx, want, got)
		if errors.Is(err, module.ErrReplace) {
			return nil // the next read reports the difference
		} else if err != nil {
			return fmt.Errorf("the resource was created, but finishing it failed: %w", err)
		}
		return c.writeBack(ctx, a, fixed)
	case cloudUpdate:
		got, err := ts.mapper.Update(ctx, a.row.cloud, a.cloud)
		if errors.Is(err, module.ErrReplace) {
			a.Action = "replace"
			return c.replace(ctx, a)
		} else if err != nil {
			return err
		}
		return c.writeBack(ctx, a, got)
	case cloudDelete:
		if a.retire != nil {
			if err := ts.mapper.Delete(ctx, a.cloud); err != nil {
				return err
			}
			return c.dbTx(ctx, func(tx pgx.Tx) error {
				if err := forgetOps(ctx, tx, []string{ts.spec.Name}, []string{opKey(a)}); err != nil {
					return err
				}
				if a.CloudID != a.retire.old || a.retire.phase != phaseTemporary {
					return nil
				}
				// The old resource is gone: the record's own new resource comes next.
				return setPhase(ctx, tx, a.retire, phaseFinal)
			})
		}
		if err := ts.mapper.Delete(ctx, a.cloud); errors.Is(err, module.ErrKeep) && (parentRetired(c.snap, ts.spec, a.cloud) || parentLeaving(c.snap, ts.spec, a.cloud)) {
			// It goes with its parent (the old resource of a replacement, or
			// a resource whose row was deleted): AWS deletes a VPC's default
			// security group with the VPC.
			return nil
		} else if errors.Is(err, module.ErrKeep) {
			// The cloud keeps it: the row comes back instead.
			a.Action, a.Direction, a.kind = "create", "database", dbInsert
			a.Description = "import " + describe(ts.spec, a.cloud) + " back: " + err.Error()
			return c.execute(ctx, a)
		} else if err != nil {
			return err
		}
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2 AND cloud_id = $3`, ts.spec.Name, a.record, a.CloudID)
			if err != nil {
				return err
			}
			// The row may still exist under another identity: its intent
			// is enacted only once its own resource is created.
			return forgetOps(ctx, tx, []string{ts.spec.Name}, []string{opKey(a)})
		})
	case dbDelete:
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{"public", ts.spec.Name}.Sanitize()+` WHERE id = $1 AND xmin = $2::text::xid`, a.ID, a.row.xmin)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errConflict
			}
			_, err = tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2`, ts.spec.Name, a.ID)
			if err != nil {
				return err
			}
			return forgetOps(ctx, tx, []string{ts.spec.Name}, []string{a.ID})
		})
	case dbInsert:
		rec, err := toDB(ts.spec, a.cloud, c.snap)
		if err != nil {
			return err
		}
		for _, col := range ts.spec.Initial {
			rec[col] = a.cloud[col]
		}
		onConflict := ""
		if a.record != "" && ts.rows[a.record] == nil {
			// Restore the record under the id it had, if it is still free.
			rec["id"] = json.Number(a.record)
			onConflict = " ON CONFLICT (id) DO NOTHING"
		}
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			cols, t := columnList(rec), pgx.Identifier{"public", ts.spec.Name}.Sanitize()
			q := `INSERT INTO ` + t + ` (` + cols + `) SELECT ` + cols + ` FROM pg_catalog.jsonb_populate_record(NULL::` + t + `, $1::jsonb)` +
				onConflict + ` RETURNING id::text`
			var id string
			if err := tx.QueryRow(ctx, q, string(encodeRecord(rec))).Scan(&id); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return errConflict
				}
				return err
			}
			a.ID = id
			// Enacted up to the read: the row did not exist in it, so any
			// user change to this id the read saw is older than the row
			// (another incarnation of the id: before an uninstall, or a
			// delete this import undoes); later changes come after it.
			return upsertRecord(ctx, tx, ts.spec.Name, id, a.CloudID, max(ts.seen[id], c.snap.lsn))
		})
	case dbUpdate, dbFeedback:
		rec, err := toDB(ts.spec, a.cloud, c.snap)
		if err != nil {
			return err
		}
		if a.kind == dbFeedback {
			rec = only(rec, ts.spec.Feedback)
		}
		return c.updateRow(ctx, a, rec)
	}
	return fmt.Errorf("unknown step %d", a.kind)
}

// create makes the resource for a create action, carrying the action's
// client token. When an earlier attempt may have made it (a failed call,
// or a crash before the write-back) and the mapper can look a token up,
// the resource that attempt made is adopted instead of making another.
func (c *cycle) create(ctx context.Context, a *Action, want module.Record) (module.Record, error) {
	mapper := a.ts.mapper
	if f, ok := mapper.(module.Finder); ok && a.retried {
		got, err := f.Find(ctx, want, a.token)
		if err != nil {
			return nil, fmt.Errorf("look for what an earlier attempt made: %w", err)
		}
		if got != nil {
			c.e.log.Info("adopting the resource an earlier create made", "table", a.Table, "id", a.ID, "cloud_id", module.CloudIDOf(a.ts.spec, got))
			return got, nil
		}
	}
	return mapper.Create(module.WithClientToken(ctx, a.token), want)
}

// writeBack stores what the cloud returned after a create or update: the
// feedback columns into the row, and the resource's identity in the
// record's state. It does not enact the intent: only a later read that
// shows the user's values does (the cloud may have said yes and not taken
// the change).
func (c *cycle) writeBack(ctx context.Context, a *Action, got module.Record) error {
	ts := a.ts
	cid := a.row.cloudID
	if cid == "" || generated(ts.spec) {
		cid = module.CloudIDOf(ts.spec, got) // the identity the cloud gave it
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if err := feedbackTx(ctx, tx, ts.spec, a.ID, a.row.db, got); err != nil {
			return err
		}
		return upsertRecord(ctx, tx, ts.spec.Name, a.ID, cid, 0)
	})
}

// writeFeedback stores the feedback columns only.
func (c *cycle) writeFeedback(ctx context.Context, a *Action, got module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		return feedbackTx(ctx, tx, a.ts.spec, a.ID, a.row.db, got)
	})
}

func (c *cycle) updateRow(ctx context.Context, a *Action, rec module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if err := updateRowTx(ctx, tx, a.ts.spec.Name, a.ID, a.row.xmin, rec); err != nil {
			return err
		}
		return upsertRecord(ctx, tx, a.ts.spec.Name, a.ID, a.CloudID, a.ts.seen[a.ID])
	})
}
