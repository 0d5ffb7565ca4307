// Package reconcile runs one cycle: it reads both sides, plans, executes
// and records, in that order, pass after pass until a pass finds nothing to
// do (cycle.go). Each phase has its file and its room:
//
//   - read (read.go, scope.go): what the database wants and what the cloud
//     has, into a snapshot (package snapshot);
//   - plan (package plan): the actions that make them agree;
//   - execute (execute_phase.go, act.go, replacing.go, operations.go): the
//     executor (package execute) runs the actions, cloud calls first, then
//     the write-back of what the cloud answered; replacements
//     (package replace) and long operations live on across cycles;
//   - record (record.go, unverified.go, retention.go): what the cycle did,
//     enacted and left unverified goes to the engine's tables (package
//     store).
//
// The engine service (package bridge: leadership, requests, privileges,
// the account binding, retention's schedule and the cycles' schedule)
// decides when a cycle runs and with what (a Request with its Trigger), and
// learns from the Outcome when to come back (RequeueAfter). It is the
// cycle's Manager.
package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/execute"
	"github.com/iasql/iasql/bridge/plan"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// Trigger is what started a cycle. It decides how much the cycle reads
// (Waited, FullRead); its name is the reason the audit trail's cycle
// records give.
type Trigger int

const (
	// Schedule: the interval passed (the sidecar's timer, or pg_cron).
	Schedule Trigger = iota + 1
	// Intent: user changes were captured.
	Intent
	// Asked: a caller of the SQL API asked for it and waits (iasql_apply,
	// iasql_sync, ...).
	Asked
	// Refresh: iasql_refresh, which reads every table whole.
	Refresh
	// Commit: iasql_commit.
	Commit
	// Rollback: iasql_rollback.
	Rollback
	// Expiry: an iasql transaction expired (its owner ended, or sat idle
	// past the transaction timeout); Request.Why says which.
	Expiry
	// Install: a module was installed; its tables are read whole.
	Install
	// Preview: iasql_preview, which reads as a commit does and executes
	// nothing.
	Preview
	// Event: AWS reported changes (CloudTrail events from the events
	// queue): the cycle reads the resources they name (Request.Noticed)
	// by record, beside what a commit would act on, and plans them by the
	// same rules.
	Event
)

var triggerNames = [...]string{Schedule: "schedule", Intent: "intent", Asked: "request", Refresh: "refresh",
	Commit: "commit", Rollback: "rollback", Expiry: "transaction expired", Install: "install", Preview: "preview", Event: "event"}

func (t Trigger) String() string {
	if t > 0 && int(t) < len(triggerNames) {
		return triggerNames[t]
	}
	return "unknown"
}

// Waited reports whether someone waits for the cycle (iasql_commit,
// iasql_rollback, install, ...): it then returns only once the operations
// it started have settled, and retries failed operations at once.
func (t Trigger) Waited() bool { return t != Schedule && t != Intent && t != Event }

// FullRead reports whether the cycle reads the whole cloud as it is now:
// install (importing what exists) and iasql_refresh.
func (t Trigger) FullRead() bool { return t == Install || t == Refresh }

// Scoped reports whether the cycle's reads are fresh for the records it
// acts on (pending intent, work in progress, replacements, and their
// parents: FreshNames) and may reuse recent reads of the rest: the cycles
// someone waits for (commit, rollback, preview) but full reads.
func (t Trigger) Scoped() bool { return t.Waited() && !t.FullRead() }

// byRecord reports whether the cycle reads by record what it acts on
// (scope.go): the scoped cycles, and those AWS's events start (what they
// name, beside what a commit would act on).
func (t Trigger) byRecord() bool { return t.Scoped() || t == Event }

// attributes reports whether the changes a cycle pulls from the cloud
// without an event are looked up in CloudTrail (Reconciler.Trail): not at
// install (every resource is imported, none changed), nor by a rollback
// (it restores the database's own state), nor by an event's cycle (the
// event says who).
func (t Trigger) attributes() bool {
	return t != Install && t != Rollback && t != Preview && t != Event
}

// Table is an installed table as a cycle sees it: its declaration, its
// mapper and its module.
type Table struct {
	Spec   module.Table
	Mapper module.Reader
	Module *module.Module
}

// Request is one cycle to run.
type Request struct {
	Trigger Trigger
	// Why completes the reason recorded with the trigger (Expiry: which
	// transaction, and why it expired).
	Why     string
	Options plan.Options
	// Tables: every installed table, in dependency order (parents first).
	Tables []Table
	// RequestID: the SQL API request the cycle serves, told what the cycle
	// waits for (Progress); "" for none.
	RequestID string
	// Noticed: an Event cycle's resources, by table and cloud id, with
	// who changed each in AWS (the event's CloudTrail record; nil where it
	// does not say).
	Noticed map[string]map[string]*snapshot.Attribution
	// Regions: an Event cycle's, by table: the regions of the events that
	// named its resources (getCall).
	Regions map[string]map[string]bool
	// Events: how the events queue is read, recorded with the cycle's end
	// ("" without a queue): iasql status shows it.
	Events string
}

// reason is what the audit trail's cycle records say started it.
func (r Request) reason() string {
	if r.Why == "" {
		return r.Trigger.String()
	}
	return r.Trigger.String() + ": " + r.Why
}

// Manager is what a cycle asks of the engine service that runs it.
type Manager interface {
	// WaitCovered returns once capture has recorded every change committed
	// before lsn.
	WaitCovered(ctx context.Context, lsn pglogrepl.LSN) error
	// IntentLow: every user change below it is enacted or decided.
	IntentLow() pglogrepl.LSN
	// LeadSince: when this leadership began, by the database's clock.
	LeadSince() time.Time
	// Service runs fn on the engine's service session (the one that
	// answers requests), which a cycle uses to report progress and to
	// start replacements outside its own transactions.
	Service(ctx context.Context, fn func(*pgx.Conn) error) error
}

// State is what the cycles of one leadership keep between them. The
// engine makes one per leadership; cycles run one at a time.
type State struct {
	// Kept is iasql_engine_state as this leadership knows it.
	Kept store.EngineState
	// UnverifiedClear: this leadership left iasql_unverified empty, so a
	// cycle with nothing unverified need not write it (unverified.go).
	UnverifiedClear bool

	mu           sync.Mutex
	sizes        map[string]int      // resources the last whole read of each table found (scope.go)
	reads        map[string]lastRead // budgeted tables' last reads (budget.go)
	budgetCycles int                 // scheduled cycles the list budget applied to
	// readOnly: the last whole read of each read-only table, for Event
	// cycles (events.go: readOnlyKept).
	readOnly map[string]map[string]module.Record
	// readAt: when the last whole read of each table that verified all of
	// it began (events.go: lookupSince).
	readAt map[string]time.Time
}

// Reconciler runs cycles for one engine.
type Reconciler struct {
	Log     *slog.Logger
	Manager Manager
	Exec    *execute.Executor // runs plans; bounds the cloud calls in flight per module and region
	// Retention: audit rows older than this are pruned (0 keeps them all).
	Retention time.Duration
	// Timeout bounds a cycle.
	Timeout time.Duration
	// Trail finds who made a change a cycle pulls from the cloud with no
	// event to say (CloudTrail's LookupEvents); nil: nobody is looked up.
	// At most LookupBudget lookups a cycle (default 10).
	Trail        Trail
	LookupBudget int
}

// Trail finds, in CloudTrail, who made a change in AWS.
type Trail interface {
	// Lookup returns what the newest mutating event about the resource
	// named name (its cloud id) in region, between after and before,
	// says; nil when CloudTrail has none, or when that event is the
	// sidecar's own (the change found came after it: not in CloudTrail
	// yet, or not a call CloudTrail logs).
	Lookup(ctx context.Context, region, name string, after, before time.Time) (*snapshot.Attribution, error)
}

// Reconcile runs the cycle req on conn, which holds the cycle lock for the
// whole cycle; dbMu is held by every use of conn (its keep-alive shares
// it). It records the cycle's start and end in the audit trail, runs it
// within the Timeout, discards a rollback's changes, and, when it
// succeeded, keeps the intent watermark (Outcome.Low).
func (r *Reconciler) Reconcile(ctx context.Context, st *State, conn *pgx.Conn, dbMu *sync.Mutex, req Request) (*Outcome, error) {
	c := &cycle{r: r, st: st, req: req, conn: conn, dbMu: dbMu, id: newID()}
	reason := req.reason()
	if err := c.record(ctx, "CYCLE_START", map[string]any{"cycle": c.id, "reason": reason}); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, r.Timeout)
	out, runErr := c.run(cctx)
	cancel()
	if c.req.Options.Discard {
		if err := c.discard(context.WithoutCancel(ctx)); err != nil {
			runErr = errors.Join(runErr, err)
		} else {
			out.Discarded = c.req.Options.DiscardUpTo != 0 // set by the cycle's first read
		}
	}
	outcome := "done"
	switch {
	case runErr != nil && ctx.Err() != nil:
		// The sidecar is stopping (or lost its session): the cycle did not
		// fail, it was cut short; what it left is taken up by the next.
		outcome = "interrupted"
		runErr = fmt.Errorf("cycle %s interrupted: %w", c.id, runErr)
	case errors.Is(runErr, context.DeadlineExceeded) || cctx.Err() == context.DeadlineExceeded:
		outcome = "timeout"
		runErr = fmt.Errorf("cycle %s cancelled after the cycle timeout (%s): %w", c.id, r.Timeout, runErr)
	case runErr != nil:
		outcome = "failed"
	}
	end := map[string]any{"cycle": c.id, "reason": reason, "outcome": outcome, "summary": out.Summary}
	if len(out.Actions) > 0 {
		done := make([]string, len(out.Actions))
		for i, a := range out.Actions {
			done[i] = fmt.Sprintf("%s %s %s %s: %s", a.Action, a.Direction, a.Table, cmp.Or(a.ID, a.CloudID), a.Description)
		}
		end["actions"] = done
	}
	if runErr != nil {
		end["error"] = snapshot.OneLine(runErr.Error())
	}
	if len(out.Unread) > 0 {
		end["unread"] = out.Unread // left for later cycles by their list budget
	}
	if req.Events != "" {
		end["events"] = req.Events
	}
	if err := c.record(context.WithoutCancel(ctx), "CYCLE_END", end); err != nil && ctx.Err() == nil {
		r.Log.Warn("cannot record the end of a cycle", "err", err)
	}
	if runErr == nil {
		out.Low = c.snap.Low
		if err := c.saveLow(context.WithoutCancel(ctx), c.snap.Low); err != nil {
			r.Log.Warn("cannot keep the engine's state", "err", err)
		}
	}
	r.Log.Info("cycle ended", "cycle", c.id, "reason", reason, "outcome", outcome, "summary", out.Summary)
	return out, runErr
}

// Plan reads as a commit's cycle does, on conn, and returns what the commit
// would do, every pass of it (plan.Whole), executing nothing
// (iasql_preview).
func (r *Reconciler) Plan(ctx context.Context, st *State, conn *pgx.Conn, tables []Table) ([]plan.Action, error) {
	c := &cycle{r: r, st: st, req: Request{Trigger: Preview, Tables: tables}, conn: conn, dbMu: &sync.Mutex{}, id: "preview"}
	if err := c.read(ctx); err != nil {
		return nil, err
	}
	planned, err := plan.Whole(c.snap, plan.Options{})
	if err != nil {
		return nil, err
	}
	plan.WithStatus(planned)
	actions := make([]plan.Action, 0, len(planned))
	for _, a := range planned {
		actions = append(actions, *a)
	}
	return actions, nil
}

// Progress tells the caller of the request a cycle serves what it waits
// for (iasql_request shows it as a NOTICE).
func (c *cycle) progress(ctx context.Context, what string) {
	id := c.req.RequestID
	if id == "" {
		return
	}
	if err := c.r.Manager.Service(ctx, func(conn *pgx.Conn) error {
		return store.SetProgress(ctx, conn, id, what)
	}); err != nil {
		c.log().Warn("cannot report a request's progress", "id", id, "err", err)
	}
}

// newID names a cycle.
func newID() string { return randomHex(6) }

// locked runs fn holding mu.
func locked(mu *sync.Mutex, fn func() error) error {
	mu.Lock()
	defer mu.Unlock()
	return fn()
}
