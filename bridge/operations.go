package bridge

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// op is a row of iasql_operations: cloud work under way or failed for one
// record.
type op struct {
	action, state, token string
	attempts             int
	nextRetry            time.Time
}

// Operation states, as iasql_operations spells them.
const (
	opInProgress = "in progress"
	opFailed     = "failed"
	opWaiting    = "waiting"
)

// readOps reads iasql_operations for the tables: table -> record key -> op.
func readOps(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]op, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_key, action, state, coalesce(token, ''), attempts,
		coalesce(next_retry, 'epoch') FROM public.iasql_operations WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read operations: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]op{}
	for rows.Next() {
		var t, k string
		var o op
		if err := rows.Scan(&t, &k, &o.action, &o.state, &o.token, &o.attempts, &o.nextRetry); err != nil {
			return nil, fmt.Errorf("read operations: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]op{}
		}
		out[t][k] = o
	}
	return out, rows.Err()
}

// opKey is the record_key of what an action is about: a row by its id, a
// resource with no row (deleted by the user, a replacement's old resource,
// a stray) by its cloud id.
func opKey(a *Action) string {
	if a.row != nil {
		return a.ID
	}
	return "cloud " + a.CloudID
}

func newToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// beginOp persists, before a's cloud call, that the call is being made.
// For a create it settles the idempotency token first: the one an earlier
// attempt persisted (this cycle's or a crashed one's), else a new one. It
// reports whether an earlier attempt may have made the resource.
func (c *cycle) beginOp(ctx context.Context, a *Action) (retried bool, err error) {
	prev, had := a.ts.ops[opKey(a)]
	if a.kind == cloudCreate && a.token == "" {
		if had && prev.action == "create" && prev.token != "" {
			a.token, a.attempts = prev.token, prev.attempts
		} else {
			a.token = newToken()
		}
	}
	retried = a.token != "" && a.attempts > 0
	a.attempts++
	err = c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8)
			ON CONFLICT (table_name, record_key) DO UPDATE SET record_id = excluded.record_id, cloud_id = excluded.cloud_id,
			  action = excluded.action, state = excluded.state, token = excluded.token, attempts = excluded.attempts,
			  since = CASE WHEN o.action = excluded.action THEN o.since ELSE pg_catalog.clock_timestamp() END,
			  last_error = CASE WHEN o.action = excluded.action THEN o.last_error END,
			  next_retry = NULL, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, opKey(a), a.ID, a.CloudID, a.Action, opInProgress, a.token, a.attempts)
		return err
	})
	if err != nil {
		return false, fmt.Errorf("record the %s of %s %s before the cloud call: %w", a.Action, a.Table, opKey(a), err)
	}
	return retried, nil
}

// retryAfter is how long an automatic cycle leaves a failed action alone
// after its nth attempt: 10 s, doubling, at most 15 minutes (iasql_commit
// tries at once).
func retryAfter(attempts int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < attempts && d < 15*time.Minute; i++ {
		d *= 2
	}
	return min(d, 15*time.Minute)
}

// endOp records that a's cloud work failed, or waits for another record.
func (c *cycle) endOp(ctx context.Context, a *Action, state, why string) {
	var next any
	if state == opFailed {
		next = time.Now().Add(retryAfter(a.attempts))
	}
	err := c.dbTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_operations AS o (table_name, record_key, record_id, cloud_id, action, state, token, attempts, last_error, next_retry)
			VALUES ($1, $2, nullif($3, ''), nullif($4, ''), $5, $6, nullif($7, ''), $8, $9, $10)
			ON CONFLICT (table_name, record_key) DO UPDATE SET state = excluded.state, action = excluded.action,
			  token = coalesce(excluded.token, o.token), attempts = greatest(o.attempts, excluded.attempts),
			  last_error = excluded.last_error, next_retry = excluded.next_retry, updated_at = pg_catalog.clock_timestamp()`,
			a.Table, opKey(a), a.ID, a.CloudID, a.Action, state, a.token, a.attempts, oneLine(why), next)
		return err
	})
	if err != nil {
		c.e.log.Warn("cannot record the state of an action", "table", a.Table, "record", opKey(a), "state", state, "err", err)
	}
}

// forgetOps removes the operations of records now in sync, in tx.
func forgetOps(ctx context.Context, tx pgx.Tx, tables, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	_, err := tx.Exec(ctx, `DELETE FROM public.iasql_operations o USING unnest($1::text[], $2::text[]) AS u(t, k)
		WHERE o.table_name = u.t AND o.record_key = u.k`, tables, keys)
	if err != nil {
		return fmt.Errorf("forget the operations of %d records: %w", len(keys), err)
	}
	return nil
}

// adoptByToken matches rows yet to be created, whose create has a persisted
// client token, with the resources that token made (module.TokenTag): a
// crash after the cloud acted and before the write-back leaves the row
// without its identity, and the resource is its own, not one to import. A
// second resource with the same token (a create repeated by something that
// ignored the token) is a stray of the row, deleted from the cloud.
func (ts *tableState) adoptByToken(id string, cf module.Record) (module.Record, string) {
	o, ok := ts.ops[id]
	if !ok || o.token == "" {
		return cf, ""
	}
	cids := ts.byToken[o.token]
	if len(cids) == 0 {
		return cf, ""
	}
	sort.Strings(cids)
	for _, stray := range cids[1:] {
		ts.strays[stray] = id
	}
	return withIdentity(ts.spec, cf, cids[0]), cids[0]
}

// dueOnly drops, from an automatic cycle's actions, the cloud actions that
// failed before and whose retry is not due yet: each record backs off on
// its own. They stay failed in iasql_status.
func (c *cycle) dueOnly(actions []*Action) []*Action {
	if c.reason != "schedule" && c.reason != "intent" {
		return actions
	}
	now := time.Now()
	kept := actions[:0]
	for _, a := range actions {
		if o, ok := a.ts.ops[opKey(a)]; ok && isCloud(a) && o.state == opFailed && o.nextRetry.After(now) {
			continue
		}
		kept = append(kept, a)
	}
	return kept
}
