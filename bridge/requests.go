package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/reconcile"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/modules/module"
)

// handle answers one request from the SQL API.
// Requests that would run (or read for) a cycle are refused while the
// database's account binding does not match this sidecar's (account.go).
func (e *Engine) handle(ctx context.Context, r request) {
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
		result, err = e.begin(ctx, r)
	case "commit":
		result, err = e.commit(ctx, r)
	case "rollback":
		result, err = e.rollback(ctx, r)
	case "preview":
		result, err = e.preview(ctx)
	case "install":
		result, err = e.install(ctx, r.ID, r.Args)
	case "uninstall":
		result, err = e.uninstall(ctx, r.Args)
	case "refresh", "cycle":
		trigger := reconcile.Asked
		if r.Kind == "refresh" {
			trigger = reconcile.Refresh // a full read
		}
		var out *reconcile.Outcome
		out, err = e.cycle(ctx, reconcile.Request{Trigger: trigger, RequestID: r.ID}, true)
		result = out
	default:
		err = fmt.Errorf("unknown request %q: this sidecar is older than the SQL objects; upgrade it", r.Kind)
	}
	e.finish(ctx, r, result, err)
}

// DefaultTransactionTimeout: an iasql transaction whose owning session
// has been idle this long is rolled back.
const DefaultTransactionTimeout = 30 * time.Minute

// An iasql transaction belongs to the session that opened it (owner_pid,
// owner_started): only that session writes module tables while it is open
// (iasql_transaction_write_guard), and only it, or an iasql_admin, commits
// or rolls it back. It is rolled back when its session ends or stays idle
// longer than the transaction timeout: like a PostgreSQL transaction whose
// session is gone, what it did not commit does not reach the cloud.

func (e *Engine) openTransaction(ctx context.Context) (*store.Transaction, error) {
	var t *store.Transaction
	err := e.service(ctx, func(c *pgx.Conn) (err error) {
		t, err = store.ReadTransaction(ctx, c)
		return err
	})
	return t, err
}

// begin waits for a running cycle to end, then opens the transaction,
// owned by the requesting session.
func (e *Engine) begin(ctx context.Context, r request) (any, error) {
	if t, err := e.openTransaction(ctx); err != nil {
		return nil, err
	} else if t != nil {
		return nil, fmt.Errorf("an iasql transaction is already open: %s; its session ends it with CALL iasql_commit() or CALL iasql_rollback()", t)
	}
	// Waiting for the cycle lock waits for a running cycle to end.
	conn, err := e.lockCycles(ctx, true)
	if err != nil {
		return nil, err
	}
	e.releaseWork(conn)
	// The owner's session start comes from the session itself (it can
	// always see its own; the sidecar may not see others' without
	// pg_read_all_stats); the pid is the request's sender.
	var args struct {
		BackendStart time.Time `json:"backend_start"`
	}
	if err := json.Unmarshal(r.Args, &args); err != nil || args.BackendStart.IsZero() || r.PID == 0 {
		return nil, errors.New("iasql_begin did not say which session it runs in: the SQL objects are older than this sidecar; upgrade them (iasql install)")
	}
	var t store.Transaction
	err = e.service(ctx, func(c *pgx.Conn) (err error) {
		t, err = store.OpenTransaction(ctx, c, r.Role, r.PID, args.BackendStart)
		return err
	})
	if err != nil {
		return nil, err
	}
	return map[string]any{"summary": "iasql transaction open; automatic cycles are paused", "transaction": t}, nil
}

// mayEnd refuses a commit or rollback of an open transaction from anyone but
// its owning session or an iasql_admin.
func (e *Engine) mayEnd(ctx context.Context, t *store.Transaction, r request, what string) error {
	if t == nil {
		return nil
	}
	var owner, admin bool
	err := e.service(ctx, func(c *pgx.Conn) (err error) {
		owner, admin, err = store.OwnerOrAdmin(ctx, c, r.PID, t.OwnerStarted, r.Role)
		return err
	})
	if err != nil {
		return fmt.Errorf("check who may %s the iasql transaction: %w", what, err)
	}
	if (owner && r.PID == t.OwnerPID) || admin {
		return nil
	}
	return fmt.Errorf("the iasql transaction is not yours to %s: it was %s; only that session (or an iasql_admin) ends it", what, t)
}

func (e *Engine) closeTransaction(ctx context.Context) error {
	return e.service(ctx, func(c *pgx.Conn) error { return store.CloseTransaction(ctx, c) })
}

// commit runs a cycle now and returns when it has ended.
func (e *Engine) commit(ctx context.Context, r request) (any, error) {
	t, err := e.openTransaction(ctx)
	if err != nil {
		return nil, err
	}
	if err := e.mayEnd(ctx, t, r, "commit"); err != nil {
		return nil, err
	}
	out, err := e.cycle(ctx, reconcile.Request{Trigger: reconcile.Commit, RequestID: r.ID}, true)
	if t != nil {
		if cerr := e.closeTransaction(ctx); cerr != nil && err == nil {
			err = cerr
		}
	}
	if err != nil {
		return out, err
	}
	return out, nil
}

// rollback restores the records changed since begin from the cloud.
func (e *Engine) rollback(ctx context.Context, r request) (any, error) {
	t, err := e.openTransaction(ctx)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, errors.New("no iasql transaction is open: there is nothing to roll back (CALL iasql_begin() opens one)")
	}
	if err := e.mayEnd(ctx, t, r, "roll back"); err != nil {
		return nil, err
	}
	return e.rollbackSince(ctx, t, reconcile.Request{Trigger: reconcile.Rollback, RequestID: r.ID})
}

// rollbackSince runs the rollback's cycle and closes the transaction once
// the cycle has recorded the changes since begin as discarded (Outcome.
// Discarded), whether or not it restored every record: from then on none
// of them can reach the cloud, so keeping the transaction open would only
// refuse everyone's writes. What it could not restore (the error names
// each record and what blocks it) is restored by the next cycles, as any
// record without intent is. A cycle that never got as far as reading
// (the cloud account refused, the database gone) discarded nothing: the
// transaction stays open, and the rollback is tried again.
func (e *Engine) rollbackSince(ctx context.Context, t *store.Transaction, req reconcile.Request) (any, error) {
	req.Options = plan.Options{Discard: true, DiscardAfter: t.Begin}
	out, err := e.cycle(ctx, req, true)
	if out == nil || !out.Discarded {
		if err == nil {
			err = errors.New("the rollback's cycle did not read the database")
		}
		return out, fmt.Errorf("the rollback did not happen; the iasql transaction stays open: %w", err)
	}
	if cerr := e.closeTransaction(ctx); cerr != nil {
		return out, errors.Join(err, cerr)
	}
	if err != nil {
		e.Intent() // an automatic cycle soon goes on restoring
		if len(out.Unverified) > 0 {
			err = fmt.Errorf("%w; nothing was done where the cloud could not be read: %s", err, strings.Join(out.Unverified, "; "))
		}
		return out, fmt.Errorf("the iasql transaction is rolled back (its changes are discarded and will not reach the cloud), but not every record is restored yet; "+
			"automatic cycles (or CALL iasql_refresh()) go on restoring them from the cloud: %w", err)
	}
	return out, nil
}

// expireTransaction rolls back an open transaction whose owning session
// has ended or has been idle (not running a statement) longer than the
// transaction timeout. The rollback's cycle records say why (reason
// "transaction expired: ..."), and automatic cycles resume.
func (e *Engine) expireTransaction(ctx context.Context) {
	t, why := e.expiredTransaction(ctx)
	if t == nil {
		return
	}
	if time.Now().Before(e.expiry.next) && e.expiry.begin == t.Begin {
		return // a rollback of it failed: tried again after a while
	}
	e.log.Warn("rolling back an expired iasql transaction", "why", why, "opened_by", t.OpenedBy, "owner_pid", t.OwnerPID, "opened_at", t.OpenedAt)
	_, err := e.rollbackSince(ctx, t, reconcile.Request{Trigger: reconcile.Expiry, Why: fmt.Sprintf("%s (%s)", why, t)})
	if err == nil {
		e.expiry = expiryRetry{}
		return
	}
	if still, rerr := e.openTransaction(ctx); rerr == nil && still == nil {
		// Rolled back, some records left to restore: cycles go on with them.
		e.expiry = expiryRetry{}
		e.log.Warn("an expired iasql transaction is rolled back; some records are not restored yet", "err", err)
		return
	}
	// Nothing was discarded (the cycle could not read): tried again, each
	// time after twice as long, up to maxExpiryWait.
	if e.expiry.begin != t.Begin {
		e.expiry = expiryRetry{begin: t.Begin}
	}
	e.expiry.wait = min(max(2*e.expiry.wait, 5*time.Second), maxExpiryWait)
	e.expiry.next = time.Now().Add(e.expiry.wait)
	e.log.Warn("the rollback of an expired iasql transaction failed; it is tried again later", "err", err, "after", e.expiry.wait)
}

// maxExpiryWait is the longest wait between attempts to roll back an
// expired transaction whose rollback could not read the database.
const maxExpiryWait = 5 * time.Minute

// expiryRetry is when the engine tries again to roll back the expired
// transaction that began at begin (only the engine's loop uses it).
type expiryRetry struct {
	begin pglogrepl.LSN
	wait  time.Duration
	next  time.Time
}

// expiredTransaction is the open iasql transaction when it has expired,
// and why; nil when none is open, it has not expired, or that cannot be
// read.
func (e *Engine) expiredTransaction(ctx context.Context) (*store.Transaction, string) {
	t, err := e.openTransaction(ctx)
	if err != nil || t == nil {
		return nil, ""
	}
	var why string
	err = e.service(ctx, func(c *pgx.Conn) (err error) {
		why, err = store.TransactionExpired(ctx, c, t.OwnerPID, t.OwnerStarted, e.txTimeout)
		return err
	})
	if err != nil || why == "" {
		return nil, ""
	}
	return t, why
}

// preview returns the plan a cycle would execute now, every pass of it
// (plan.Whole), in order. It runs beside a cycle (Lead does not queue it
// behind one), on a session of its own, and only reads.
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
	actions, err := e.rec.Plan(ctx, e.state, conn, installed)
	if err != nil {
		return nil, err
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
func (e *Engine) install(ctx context.Context, requestID string, raw json.RawMessage) (any, error) {
	names, err := moduleArgs(raw)
	if err != nil {
		return nil, err
	}
	if refreshing(raw) {
		return e.refreshSchemas(ctx, requestID, names)
	}
	fresh, err := e.resolve(ctx, names)
	if err != nil {
		return nil, err
	}
	asked := map[string]bool{}
	for _, n := range names {
		asked[n] = true
	}
	// A module a catalog made is registered, its definition stored, in
	// the transaction that installs it, and offered once that committed:
	// a failed install leaves nothing a later one would reuse.
	modOf := func(n string) module.Module {
		if f, ok := fresh[n]; ok {
			return f.m
		}
		m, _ := e.module(n)
		return m
	}
	order := e.dependencyOrderOf(names, modOf)
	var results []moduleResult
	err = e.service(ctx, func(c *pgx.Conn) error {
		results = nil
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			for _, n := range order {
				m := modOf(n)
				if f, ok := fresh[n]; ok {
					if err := store.RegisterModule(ctx, tx, &m, f.def); err != nil {
						return err
					}
				}
				installed, err := store.ModuleInstalled(ctx, tx, n)
				if err != nil {
					return err
				}
				if installed {
					results = append(results, moduleResult{n, true, "already installed"})
					continue
				}
				tables := make([]string, len(m.Tables))
				for i, t := range m.Tables {
					tables[i] = t.Name
				}
				if err := store.InstallModule(ctx, tx, n, m.InstallSQL(), tables); err != nil {
					return err
				}
				note := "installed"
				if !asked[n] {
					note = "installed first: a module you asked for depends on it"
				}
				results = append(results, moduleResult{n, true, note})
			}
			// What an earlier install of a Cloud Control type references
			// may be installed now.
			var tables []module.Table
			for _, m := range e.offered() {
				tables = append(tables, m.Tables...)
			}
			for _, f := range fresh {
				tables = append(tables, f.m.Tables...)
			}
			return store.LinkReferences(ctx, tx, tables)
		})
	})
	if err != nil {
		return nil, err
	}
	for _, f := range fresh {
		e.offer(f.m)
	}
	// Import what already exists in the cloud.
	if _, err := e.cycle(ctx, reconcile.Request{Trigger: reconcile.Install, RequestID: requestID}, true); err != nil {
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
		if _, ok := e.module(n); !ok {
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
		all, err := store.InstalledWithDeps(ctx, tx)
		if err != nil {
			return err
		}
		installed := map[string]bool{}
		for _, i := range all {
			installed[i.Name] = true
			if leaving[i.Name] {
				continue
			}
			for _, d := range i.DependsOn {
				if leaving[d] {
					return fmt.Errorf("cannot uninstall %s: the installed module %s depends on it; uninstall %s first (or both together)", d, i.Name, i.Name)
				}
			}
		}
		// A Cloud Control type's reference to a table going away: refused
		// while rows point at it, its foreign key dropped otherwise.
		goingAway := map[string]bool{}
		for n := range leaving {
			m, _ := e.module(n)
			for _, t := range m.Tables {
				goingAway[t.Name] = true
			}
		}
		for n := range installed {
			m, ok := e.module(n)
			if !ok || leaving[n] {
				continue
			}
			for _, t := range m.Tables {
				for _, ref := range module.RefsOf(t) {
					if ref.Named.Column != "" && goingAway[ref.Table] {
						if err := store.UnlinkReference(ctx, tx, t.Name, ref.Column, ref.Table, ref.Many); err != nil {
							return err
						}
					}
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
			m, _ := e.module(n)
			tables := make([]string, 0, len(m.Tables))
			for j := len(m.Tables) - 1; j >= 0; j-- {
				tables = append(tables, m.Tables[j].Name)
			}
			if err := store.UninstallModule(ctx, tx, n, m.UninstallSQL(), tables); err != nil {
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
