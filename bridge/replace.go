package bridge

// The replacement dance: a change that needs a new resource. Its phases
// (iasql_replacements.phase) are named: temporary (a stand-in holds the
// identity while the old resource exists) and final (the record's own new
// resource). cloudForms derives the phase from the cloud on each read;
// settle records promotions and ends.

import (
	"context"
	"fmt"
	"maps"

	"github.com/jackc/pgx/v5"

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
func (c *cycle) replace(ctx context.Context, a *Action) error {
	ts := a.Tab
	tm, unique := ts.Mapper.(module.Temporary)
	if !unique && !Generated(ts.Spec) {
		if err := ts.Mapper.Delete(ctx, a.Cloud); err != nil {
			return fmt.Errorf("replace: delete the old resource: %w", err)
		}
		got, err := ts.Mapper.Create(ctx, a.Row.Cloud)
		if err != nil {
			return fmt.Errorf("replace: create the new resource: %w", err)
		}
		return c.writeBack(ctx, a, got)
	}
	rp := &Replacement{Table: ts.Spec.Name, Record: a.ID, Old: a.CloudID, Phase: PhaseFinal}
	want := a.Row.Cloud
	if unique {
		want = tm.Temporary(a.Row.Cloud, a.CloudID)
		rp.Temp, rp.Phase = module.CloudIDOf(ts.Spec, want), PhaseTemporary
	} else {
		want = maps.Clone(want)
		want[ts.Spec.CloudID[0]] = nil
	}
	if err := c.e.service(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `
			INSERT INTO public.iasql_replacements (table_name, record_id, old_cloud_id, temp_cloud_id, phase)
			VALUES ($1, $2, $3, nullif($4, ''), $5)
			ON CONFLICT (table_name, record_id) DO UPDATE SET old_cloud_id = excluded.old_cloud_id,
			  temp_cloud_id = excluded.temp_cloud_id, phase = excluded.phase, started_at = pg_catalog.clock_timestamp()`,
			rp.Table, rp.Record, rp.Old, rp.Temp, rp.Phase)
		return err
	}); err != nil {
		return fmt.Errorf("replace: record the replacement: %w", err)
	}
	var got module.Record
	var err error
	if unique {
		// A retried create finds the stand-in by its derived name.
		got, err = ts.Mapper.Create(ctx, want)
	} else {
		// The cloud generates the new identity: the create carries a client
		// token, persisted first (adoptReplacement finds what it made).
		if a.Token == "" {
			if a.Retried, err = c.beginOp(ctx, a); err != nil {
				return err
			}
		}
		got, err = c.create(ctx, a, want)
	}
	if err != nil {
		return fmt.Errorf("replace: create the new resource: %w", err)
	}
	if unique {
		a.Description += " (through a temporary " + rp.Temp + ")"
		return c.writeFeedback(ctx, a, got)
	}
	return c.writeBack(ctx, a, got)
}

func SetPhase(ctx context.Context, tx pgx.Tx, rp *Replacement, phase string) error {
	_, err := tx.Exec(ctx, `UPDATE public.iasql_replacements SET phase = $3 WHERE table_name = $1 AND record_id = $2`, rp.Table, rp.Record, phase)
	if err != nil {
		return fmt.Errorf("record the replacement of %s %s as %s: %w", rp.Table, rp.Record, phase, err)
	}
	return nil
}

// settle records what the read found of replacements in progress: old
// resources gone (the final phase begins) and replacements finished.
func (c *cycle) settle(ctx context.Context, p *Plan) error {
	if len(p.Promote) == 0 && len(p.Finished) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		for _, rp := range p.Promote {
			if err := SetPhase(ctx, tx, rp, PhaseFinal); err != nil {
				return err
			}
		}
		for _, rp := range p.Finished {
			if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_replacements WHERE table_name = $1 AND record_id = $2`, rp.Table, rp.Record); err != nil {
				return fmt.Errorf("finish the replacement of %s %s: %w", rp.Table, rp.Record, err)
			}
			c.e.log.Info("replacement finished", "table", rp.Table, "id", rp.Record)
		}
		return nil
	})
}

// replacement is a row of iasql_replacements.
type Replacement struct {
	Table, Record string
	Old, Temp     string // cloud ids; temp "" when there is none
	Phase         string // phaseTemporary or phaseFinal
	Promote       bool   // the read found the old resource gone: record phase final
}

const (
	PhaseTemporary = "temporary"
	PhaseFinal     = "final"
)

// standingIn reports whether the row stands for the temporary stand-in of
// its replacement (cloudForms keeps the phase temporary only while it does).
func (ts *Table) StandingIn(id string) bool {
	rp := ts.Repl[id]
	return rp != nil && rp.Phase == PhaseTemporary
}

// readReplacements reads iasql_replacements for the tables.
func ReadReplacements(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]*Replacement, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_id, old_cloud_id, coalesce(temp_cloud_id, ''), phase FROM public.iasql_replacements WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read replacements in progress: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]*Replacement{}
	for rows.Next() {
		rp := &Replacement{}
		if err := rows.Scan(&rp.Table, &rp.Record, &rp.Old, &rp.Temp, &rp.Phase); err != nil {
			return nil, fmt.Errorf("read replacements in progress: %w", err)
		}
		if out[rp.Table] == nil {
			out[rp.Table] = map[string]*Replacement{}
		}
		out[rp.Table][rp.Record] = rp
	}
	return out, rows.Err()
}
