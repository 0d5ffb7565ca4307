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
	ts := a.ts
	tm, unique := ts.mapper.(module.Temporary)
	if !unique && !generated(ts.spec) {
		if err := ts.mapper.Delete(ctx, a.cloud); err != nil {
			return fmt.Errorf("replace: delete the old resource: %w", err)
		}
		got, err := ts.mapper.Create(ctx, a.row.cloud)
		if err != nil {
			return fmt.Errorf("replace: create the new resource: %w", err)
		}
		return c.writeBack(ctx, a, got)
	}
	rp := &replacement{table: ts.spec.Name, record: a.ID, old: a.CloudID, phase: phaseFinal}
	want := a.row.cloud
	if unique {
		want = tm.Temporary(a.row.cloud, a.CloudID)
		rp.temp, rp.phase = module.CloudIDOf(ts.spec, want), phaseTemporary
	} else {
		want = maps.Clone(want)
		want[ts.spec.CloudID[0]] = nil
	}
	if err := c.e.service(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `
			INSERT INTO public.iasql_replacements (table_name, record_id, old_cloud_id, temp_cloud_id, phase)
			VALUES ($1, $2, $3, nullif($4, ''), $5)
			ON CONFLICT (table_name, record_id) DO UPDATE SET old_cloud_id = excluded.old_cloud_id,
			  temp_cloud_id = excluded.temp_cloud_id, phase = excluded.phase, started_at = pg_catalog.clock_timestamp()`,
			rp.table, rp.record, rp.old, rp.temp, rp.phase)
		return err
	}); err != nil {
		return fmt.Errorf("replace: record the replacement: %w", err)
	}
	var got module.Record
	var err error
	if unique {
		// A retried create finds the stand-in by its derived name.
		got, err = ts.mapper.Create(ctx, want)
	} else {
		// The cloud generates the new identity: the create carries a client
		// token, persisted first (adoptReplacement finds what it made).
		if a.token == "" {
			if a.retried, err = c.beginOp(ctx, a); err != nil {
				return err
			}
		}
		got, err = c.create(ctx, a, want)
	}
	if err != nil {
		return fmt.Errorf("replace: create the new resource: %w", err)
	}
	if unique {
		a.Description += " (through a temporary " + rp.temp + ")"
		return c.writeFeedback(ctx, a, got)
	}
	return c.writeBack(ctx, a, got)
}

func setPhase(ctx context.Context, tx pgx.Tx, rp *replacement, phase string) error {
	_, err := tx.Exec(ctx, `UPDATE public.iasql_replacements SET phase = $3 WHERE table_name = $1 AND record_id = $2`, rp.table, rp.record, phase)
	if err != nil {
		return fmt.Errorf("record the replacement of %s %s as %s: %w", rp.table, rp.record, phase, err)
	}
	return nil
}

// settle records what the read found of replacements in progress: old
// resources gone (the final phase begins) and replacements finished.
func (c *cycle) settle(ctx context.Context, p *plan) error {
	if len(p.promote) == 0 && len(p.finished) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		for _, rp := range p.promote {
			if err := setPhase(ctx, tx, rp, phaseFinal); err != nil {
				return err
			}
		}
		for _, rp := range p.finished {
			if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_replacements WHERE table_name = $1 AND record_id = $2`, rp.table, rp.record); err != nil {
				return fmt.Errorf("finish the replacement of %s %s: %w", rp.table, rp.record, err)
			}
			c.e.log.Info("replacement finished", "table", rp.table, "id", rp.record)
		}
		return nil
	})
}

// replacement is a row of iasql_replacements.
type replacement struct {
	table, record string
	old, temp     string // cloud ids; temp "" when there is none
	phase         string // phaseTemporary or phaseFinal
	promote       bool   // the read found the old resource gone: record phase final
}

const (
	phaseTemporary = "temporary"
	phaseFinal     = "final"
)

// standingIn reports whether the row stands for the temporary stand-in of
// its replacement (cloudForms keeps the phase temporary only while it does).
func (ts *tableState) standingIn(id string) bool {
	rp := ts.repl[id]
	return rp != nil && rp.phase == phaseTemporary
}

// readReplacements reads iasql_replacements for the tables.
func readReplacements(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]*replacement, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_id, old_cloud_id, coalesce(temp_cloud_id, ''), phase FROM public.iasql_replacements WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read replacements in progress: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]*replacement{}
	for rows.Next() {
		rp := &replacement{}
		if err := rows.Scan(&rp.table, &rp.record, &rp.old, &rp.temp, &rp.phase); err != nil {
			return nil, fmt.Errorf("read replacements in progress: %w", err)
		}
		if out[rp.table] == nil {
			out[rp.table] = map[string]*replacement{}
		}
		out[rp.table][rp.record] = rp
	}
	return out, rows.Err()
}
