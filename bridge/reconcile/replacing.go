package reconcile

// Executing the replacement dance (its states and transitions: package
// replace): the first step of a replacement, and recording what reads
// found of those in progress.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// replace makes a change that needs a new resource. The new resource is
// created before the old one is deleted, so that what depends on the old
// one can move over (the walkthrough's dance): where the identity must stay
// unique (module.Temporary), a temporary stand-in is created first and the
// record's own new resource once the old one is gone; where the cloud
// generates identities, the new resource is created at once. The
// replacement is recorded (iasql_replacements) before anything is created,
// so that a restart finishes it. Other resources are deleted, then created.
func (c *cycle) replace(ctx context.Context, a *plan.Action) error {
	ts := a.Tab
	// What the row leaves to the cloud, the cloud chooses again for the new
	// resource (a generated name: the old one's is taken).
	want := a.Row.Own()
	strategy := replace.StrategyFor(ts.Mapper, snapshot.Generated(ts.Spec))
	if strategy == replace.DeleteFirst {
		c.markRecreated(a.Table, a.ID)
		if err := ts.Delete(ctx, c.snap.Call, a.Cloud); err != nil {
			return fmt.Errorf("replace: delete the old resource: %w", err)
		}
		got, err := ts.Create(ctx, c.snap.Call, want)
		if err != nil {
			return fmt.Errorf("replace: create the new resource: %w", err)
		}
		return c.writeBack(ctx, a, got)
	}
	rp, first := replace.Start(ts.Spec, ts.Mapper, a.ID, a.CloudID, want)
	if err := c.r.Manager.Service(ctx, func(conn *pgx.Conn) error { return store.StartReplacement(ctx, conn, rp) }); err != nil {
		return fmt.Errorf("replace: %w", err)
	}
	var got module.Record
	var err error
	if strategy == replace.StandIn {
		// A retried create finds the stand-in by its derived name.
		got, err = ts.Create(ctx, c.snap.Call, first)
	} else {
		// The cloud generates the new identity: the create carries a client
		// token, persisted first (adoptReplacement finds what it made).
		if a.Token == "" {
			if a.Retried, err = c.beginOp(ctx, a); err != nil {
				return err
			}
		}
		got, err = c.create(ctx, a, first)
	}
	if err != nil {
		return fmt.Errorf("replace: create the new resource: %w", err)
	}
	if strategy == replace.StandIn {
		a.Description += " (through a temporary " + rp.Temp + ")"
		return c.writeFeedback(ctx, a, got)
	}
	return c.writeBack(ctx, a, got)
}

// markRecreated records that the record's resource is made anew in this
// cycle, its old one gone (cycle.recreated): what references it moves to
// the new one.
func (c *cycle) markRecreated(table, id string) {
	c.recreatedMu.Lock()
	defer c.recreatedMu.Unlock()
	if c.recreated == nil {
		c.recreated = map[string]map[string]bool{}
	}
	if c.recreated[table] == nil {
		c.recreated[table] = map[string]bool{}
	}
	c.recreated[table][id] = true
}

// settle records what the read found of replacements in progress: old
// resources gone (the final phase begins) and replacements finished.
func (c *cycle) settle(ctx context.Context, p *plan.Plan) error {
	if len(p.Promote) == 0 && len(p.Finished) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		for _, rp := range p.Promote {
			if err := store.SetPhase(ctx, tx, rp, replace.PhaseFinal); err != nil {
				return err
			}
		}
		for _, rp := range p.Finished {
			if err := store.FinishReplacement(ctx, tx, rp); err != nil {
				return err
			}
			c.log().Info("replacement finished", "table", rp.Table, "id", rp.Record)
		}
		return nil
	})
}
