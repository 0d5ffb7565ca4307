package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/logical"
)

// handle answers one request from the SQL API.
// Requests that would run (or read for) a cycle are refused while the
// database's account binding does not match this sidecar's (account.go).
func (e *Engine) handle(ctx context.Context, r request) {
	ctx = withRequest(ctx, r.ID)
	var (
		result any
		err    error
	)
	if runsCycle(r.Kind) {
		if err := e.checkAccount(ctx); err != nil {
			e.finish(ctx, r, nil, err)
			return
		}
	}
	switch r.Kind {
	case "rebind_account":
		result, err = e.rebindAccount(ctx, r.Role)
	case "begin":
		result, err = e.begin(ctx, r.Role)
	case "commit":
		result, err = e.commit(ctx)
	case "rollback":
		result, err = e.rollback(ctx)
	case "preview":
		result, err = e.preview(ctx)
	case "install":
		result, err = e.install(ctx, r.Args)
	case "uninstall":
		result, err = e.uninstall(ctx, r.Args)
	case "refresh", "cycle":
		reason := "request"
		if r.Kind == "refresh" {
			reason = "refresh" // a full read (cycle.fullRead)
		}
		var out *Outcome
		out, err = e.cycle(ctx, reason, options{}, true)
		result = out
	default:
		err = fmt.Errorf("unknown request %q: this sidecar is older than the SQL objects; upgrade it", r.Kind)
	}
	e.finish(ctx, r, result, err)
}

type txInfo struct {
	OpenedBy string    `json:"opened_by"`
	OpenedAt time.Time `json:"opened_at"`
	BeginLSN string    `json:"begin_lsn"`
}

func (e *Engine) openTransaction(ctx context.Context) (*txInfo, error) {
	var t txInfo
	err := e.service(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT opened_by, opened_at, begin_lsn::text FROM public.iasql_transaction`).Scan(&t.OpenedBy, &t.OpenedAt, &t.BeginLSN)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the iasql transaction: %w", err)
	}
	return &t, nil
}

// begin waits for a running cycle to end, then opens the transaction.
func (e *Engine) begin(ctx context.Context, role string) (any, error) {
	if t, err := e.openTransaction(ctx); err != nil {
		return nil, err
	} else if t != nil {
		return nil, fmt.Errorf("an iasql transaction is already open: opened by %s at %s; CALL iasql_commit() or CALL iasql_rollback() to end it", t.OpenedBy, t.OpenedAt.UTC().Format(time.RFC3339))
	}
	// Waiting for the cycle lock waits for a running cycle to end.
	conn, err := e.lockCycles(ctx, true)
	if err != nil {
		return nil, err
	}
	e.releaseWork(conn)
	var t txInfo
	err = e.service(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `INSERT INTO public.iasql_transaction (opened_by, opened_at, begin_lsn)
			VALUES ($1, pg_catalog.clock_timestamp(), pg_catalog.pg_current_wal_insert_lsn()) RETURNING opened_by, opened_at, begin_lsn::text`, role).
			Scan(&t.OpenedBy, &t.OpenedAt, &t.BeginLSN)
	})
	if err != nil {
		return nil, fmt.Errorf("open the iasql transaction: %w", err)
	}
	return map[string]any{"summary": "iasql transaction open; automatic cycles are paused", "transaction": t}, nil
}

func (e *Engine) closeTransaction(ctx context.Context) error {
	return e.service(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `DELETE FROM public.iasql_transaction`)
		return err
	})
}

// commit runs a cycle now and returns when it has ended.
func (e *Engine) commit(ctx context.Context) (any, error) {
	out, err := e.cycle(ctx, "commit", options{}, true)
	if cerr := e.closeTransaction(ctx); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		return out, err
	}
	return out, nil
}

// rollback restores the records changed since begin from the cloud.
func (e *Engine) rollback(ctx context.Context) (any, error) {
	t, err := e.openTransaction(ctx)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("no iasql transaction is open: there is nothing to roll back (CALL iasql_begin() opens one)")
	}
	out, err := e.cycle(ctx, "rollback", options{discard: true, discardAfter: lsnOf(t.BeginLSN)}, true)
	if err != nil {
		return out, err
	}
	return out, e.closeTransaction(ctx)
}

// preview returns the plan a cycle would execute now. It runs beside a
// cycle (Lead does not queue it behind one), on a session of its own, and
// only reads.
func (e *Engine) preview(ctx context.Context) (any, error) {
	installed, err := e.installedTables(ctx)
	if err != nil {
		return nil, err
	}
	conn, err := logical.Connect(ctx, e.dsn, "iasql preview", e.bound())
	if err != nil {
		return nil, fmt.Errorf("connect for a preview: %w", err)
	}
	defer conn.Close(context.Background())
	c := &cycle{e: e, conn: conn, dbMu: &sync.Mutex{}, id: "preview", reason: "preview", tables: installed} // reads as a commit does
	if err := c.read(ctx); err != nil {
		return nil, err
	}
	p, err := diff(c.snap, options{})
	if err != nil {
		return nil, err
	}
	withStatus(p.actions)
	actions := make([]Action, 0, len(p.actions))
	for _, a := range p.actions {
		actions = append(actions, *a)
	}
	return map[string]any{"actions": actions}, nil
}

type moduleResult struct {
	Module    string `json:"module"`
	Installed bool   `json:"installed"`
	Note      string `json:"note"`
}

func moduleArgs(raw json.RawMessage) ([]string, error) {
	var a struct {
		Modules []string `json:"modules"`
	}
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, fmt.Errorf("bad arguments: %w", err)
	}
	if len(a.Modules) == 0 {
		return nil, errors.New("name at least one module; SELECT * FROM iasql_modules_list() lists them")
	}
	return a.Modules, nil
}

// install creates the modules' tables (dependencies first), registers them
// for capture, then imports what exists in the cloud.
func (e *Engine) install(ctx context.Context, raw json.RawMessage) (any, error) {
	names, err := moduleArgs(raw)
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := e.modules[n]; !ok {
			return nil, fmt.Errorf("unknown module %q; SELECT * FROM iasql_modules_list() lists the modules", n)
		}
	}
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
	}
	var results []moduleResult
	err = e.service(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			for _, n := range e.dependencyOrder(names) {
				m := e.modules[n]
				var installed bool
				if err := tx.QueryRow(ctx, `SELECT installed_at IS NOT NULL FROM public.iasql_modules WHERE name = $1`, n).Scan(&installed); err != nil {
					return fmt.Errorf("read module %s: %w", n, err)
				}
				if installed {
					results = append(results, moduleResult{n, true, "already installed"})
					continue
				}
				if _, err := tx.Exec(ctx, m.SQL); err != nil {
					return fmt.Errorf("create the tables of %s: %w", n, err)
				}
				for _, t := range m.Tables {
					if _, err := tx.Exec(ctx, `INSERT INTO public.iasql_tables (table_name, module) VALUES ($1, $2)`, t.Name, n); err != nil {
						return fmt.Errorf("register table %s: %w", t.Name, err)
					}
				}
				if _, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET installed_at = pg_catalog.clock_timestamp() WHERE name = $1`, n); err != nil {
					return fmt.Errorf("mark %s installed: %w", n, err)
				}
				note := "installed"
				if !asked[n] {
					note = "installed first: a module you asked for depends on it"
				}
				results = append(results, moduleResult{n, true, note})
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	// Import what already exists in the cloud.
	if _, err := e.cycle(ctx, "install", options{}, true); err != nil {
		return nil, fmt.Errorf("installed %s, but importing from the cloud failed: %w", strings.Join(names, ", "), err)
	}
	return map[string]any{"modules": results}, nil
}

// uninstall drops the modules' tables; the cloud is not touched.
func (e *Engine) uninstall(ctx context.Context, raw json.RawMessage) (any, error) {
	names, err := moduleArgs(raw)
	if err != nil {
		return nil, err
	}
	leaving := map[string]bool{}
	for _, n := range names {
		if _, ok := e.modules[n]; !ok {
			return nil, fmt.Errorf("unknown module %q", n)
		}
		leaving[n] = true
	}
	// No cycle may run on tables that are going away.
	conn, err := e.lockCycles(ctx, true)
	if err != nil {
		return nil, err
	}
	defer e.releaseWork(conn)
	var results []moduleResult
	e.workMu.Lock()
	defer e.workMu.Unlock()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT name, depends_on FROM public.iasql_modules WHERE installed_at IS NOT NULL`)
		if err != nil {
			return err
		}
		type inst struct {
			name string
			deps []string
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (inst, error) {
			var i inst
			return i, r.Scan(&i.name, &i.deps)
		})
		if err != nil {
			return fmt.Errorf("read installed modules: %w", err)
		}
		installed := map[string]bool{}
		for _, i := range all {
			installed[i.name] = true
			if leaving[i.name] {
				continue
			}
			for _, d := range i.deps {
				if leaving[d] {
					return fmt.Errorf("cannot uninstall %s: the installed module %s depends on it; uninstall %s first (or both together)", d, i.name, i.name)
				}
			}
		}
		order := e.dependencyOrder(names)
		for i := len(order) - 1; i >= 0; i-- {
			n := order[i]
			if !leaving[n] {
				continue
			}
			if !installed[n] {
				results = append(results, moduleResult{n, false, "was not installed"})
				continue
			}
			m := e.modules[n]
			for j := len(m.Tables) - 1; j >= 0; j-- {
				t := m.Tables[j].Name
				if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_tables WHERE table_name = $1`, t); err != nil {
					return fmt.Errorf("unregister %s: %w", t, err)
				}
				if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+pgx.Identifier{"public", t}.Sanitize()); err != nil {
					return fmt.Errorf("drop %s: %w", t, err)
				}
				if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1`, t); err != nil {
					return fmt.Errorf("forget records of %s: %w", t, err)
				}
				if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_replacements WHERE table_name = $1`, t); err != nil {
					return fmt.Errorf("forget replacements of %s: %w", t, err)
				}
				if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_operations WHERE table_name = $1`, t); err != nil {
					return fmt.Errorf("forget operations of %s: %w", t, err)
				}
			}
			if _, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET installed_at = NULL WHERE name = $1`, n); err != nil {
				return err
			}
			results = append(results, moduleResult{n, false, "uninstalled; nothing in the cloud was touched"})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"modules": results}, nil
}

type requestKey struct{}

// withRequest marks a context as serving a request from the SQL API.
func withRequest(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestKey{}, id)
}

// progress tells the caller of the request this cycle serves what it waits
// for (iasql_request shows it as a NOTICE).
func (c *cycle) progress(ctx context.Context, what string) {
	id, _ := ctx.Value(requestKey{}).(string)
	if id == "" {
		return
	}
	if err := c.e.service(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `UPDATE public.iasql_requests SET progress = $2 WHERE id = $1`, id, what)
		return err
	}); err != nil {
		c.e.log.Warn("cannot report a request's progress", "id", id, "err", err)
	}
}
