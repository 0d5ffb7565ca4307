package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/debug"
	"sort"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/execute"
	"github.com/iasql/iasql/bridge/reconcile"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/modules/module"
)

// Engine runs cycles and answers the SQL API's requests. It works only
// while its sidecar holds capture leadership (Lead).
type Engine struct {
	// leadSince is when this engine's leadership began, by the database's
	// clock: an operation begun before it and never answered was cut
	// short by the previous leader (snapshot.Table.CreateCutShort).
	leadSince time.Time
	dsn       string
	log       *slog.Logger
	// cov is the capture of the current leadership (Lead): cycles wait
	// until it has recorded what they must see.
	cov Coverage
	// leaderTimeout bounds the engine's sessions as capture's are.
	leaderTimeout time.Duration
	modules       map[string]module.Module // offered modules (modules.go), under modMu
	modMu         sync.RWMutex
	catalogs      []module.Catalog // make modules on demand (modules.go)
	aws           aws.Config
	interval      time.Duration
	// rec runs the cycles (package reconcile), with state: what they keep
	// between them (reset at each leadership's start, but for table sizes).
	rec       *reconcile.Reconciler
	state     *reconcile.State
	txTimeout time.Duration // idle owner: the iasql transaction is rolled back (requests.go)
	expiry    expiryRetry   // a failed rollback of an expired transaction: when to try again (the loop's)

	requests chan request
	previews chan request // previews: answered beside cycles (queueOf)
	intent   chan struct{}
	tick     chan struct{}

	// work is the loop goroutine's connection (workConn); workMu is held
	// by every use of it (a cycle's concurrent write-backs, its
	// keep-alive), and workStop ends its keep-alive.
	work     *pgx.Conn
	workMu   sync.Mutex
	workStop func()

	mu      sync.Mutex
	svc     *pgx.Conn // holds the service lock; answers requests
	low     pglogrepl.LSN
	mappers map[string]map[string]module.Reader

	acct accountCheck // the database's account binding, checked once per leadership (account.go)

	queue *queue // the events queue (events.go); nil without one
	// unsettled: the last cycle left parts of the cloud unverified, its
	// reads failed (catchUp); guarded by mu.
	unsettled bool

	guard      requestGuard    // per-role request rates, expiry of answered requests (privileges.go)
	deprecated deprecatedCalls // calls of deprecated functions not written yet (flushDeprecated)
	inbox      inbox           // request messages not taken yet (takeRequests)
}

// EngineConfig configures an engine.
type EngineConfig struct {
	DSN     string
	Logger  *slog.Logger
	Modules []module.Module
	// Catalogs make modules on demand (a Cloud Control resource type).
	Catalogs     []module.Catalog
	AWS          aws.Config
	Interval     time.Duration // automatic cycles; default 2 minutes
	CycleTimeout time.Duration // default 45 minutes
	// CloudConcurrency bounds the cloud actions in flight per module and
	// region; default execute.DefaultCloudConcurrency.
	CloudConcurrency int
	// AuditRetention: audit rows older than this (and enacted) are
	// deleted; 0 keeps them all.
	AuditRetention time.Duration
	// TransactionTimeout: an iasql transaction whose owning session has
	// been idle this long is rolled back; default DefaultTransactionTimeout.
	TransactionTimeout time.Duration
	// LeaderTimeout bounds the engine's sessions as capture's are
	// (logical.Config.LeaderTimeout); default logical.DefaultLeaderTimeout.
	LeaderTimeout time.Duration
	// EventsQueue is the URL of the SQS queue EventBridge delivers
	// CloudTrail's events to ("" none: events.go); while it can be read,
	// scheduled full reads run every EventsInterval (default
	// DefaultEventsInterval) instead of every Interval, if that is longer.
	EventsQueue    string
	EventsInterval time.Duration
	EventsMeter    EventsMeter
	// TrailLookups: how many changes a cycle found with no event it looks
	// up in CloudTrail at most, to record who made them (0: none).
	TrailLookups int
}

// DefaultEventsInterval is how often scheduled full reads run while
// events flow.
const DefaultEventsInterval = 10 * time.Minute

// Coverage is capture as the engine needs it: how far it has recorded.
type Coverage interface {
	// WaitCovered returns once every transaction that committed before
	// lsn is in the audit trail.
	WaitCovered(ctx context.Context, lsn pglogrepl.LSN) error
}

// NewEngine returns an engine. It works while its sidecar leads capture
// (Lead), and hears what capture delivers (Message, Intent).
func NewEngine(cfg EngineConfig) *Engine {
	e := &Engine{dsn: cfg.DSN, log: cfg.Logger, leaderTimeout: cfg.LeaderTimeout, modules: map[string]module.Module{}, aws: cfg.AWS,
		interval: cfg.Interval, txTimeout: cfg.TransactionTimeout, state: &reconcile.State{},
		requests: make(chan request, 64), previews: make(chan request, 16), intent: make(chan struct{}, 1), tick: make(chan struct{}, 1), inbox: inbox{ready: make(chan struct{}, 1)}, mappers: map[string]map[string]module.Reader{}}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.interval <= 0 {
		e.interval = 2 * time.Minute
	}
	timeout := cfg.CycleTimeout
	if timeout <= 0 {
		timeout = 45 * time.Minute
	}
	e.rec = &reconcile.Reconciler{Log: e.log, Manager: manager{e}, Exec: execute.New(cfg.CloudConcurrency), Retention: cfg.AuditRetention, Timeout: timeout}
	if cfg.TrailLookups > 0 {
		e.rec.Trail, e.rec.LookupBudget = &trail{e: e}, cfg.TrailLookups
	}
	every := cfg.EventsInterval
	if every <= 0 {
		every = DefaultEventsInterval
	}
	e.queue = newQueue(cfg.EventsQueue, cfg.AWS, max(every, e.interval), cfg.EventsMeter)
	if e.txTimeout <= 0 {
		e.txTimeout = DefaultTransactionTimeout
	}
	for _, m := range cfg.Modules {
		e.modules[m.Name] = m.Declared()
	}
	e.catalogs = cfg.Catalogs
	return e
}

type request struct {
	ID   string          `json:"id"`
	Kind string          `json:"kind"`
	Args json.RawMessage `json:"args"`
	PID  int32           `json:"pid"` // the sender's session (privileges.go)
	Role string          `json:"-"`   // its role, as the sidecar found it (authorize)
	raw  []byte          // the message, as its sender hashed it
}

// Message receives the SQL API's messages from capture. It must not block.
func (e *Engine) Message(prefix string, content []byte, lsn pglogrepl.LSN) {
	switch prefix {
	case "iasql_request":
		if len(content) > MaxRequestBytes {
			e.log.Warn("ignoring a request larger than the limit", "bytes", len(content), "limit", MaxRequestBytes)
			return
		}
		var r request
		if err := json.Unmarshal(content, &r); err != nil {
			e.log.Warn("ignoring a request that is not JSON", "lsn", lsn, "bytes", len(content), "err", err)
			return
		}
		if r.ID == "" {
			e.log.Warn("ignoring a request without an id", "lsn", lsn, "kind", r.Kind)
			return
		}
		if !isUUID(r.ID) {
			e.log.Warn("ignoring a request whose id is not a UUID")
			return
		}
		r.raw = bytes.Clone(content) // content is capture's buffer, reused once this returns
		if r.Kind == "tick" {
			// pg_cron's schedule: nobody waits; ticks replayed after a
			// restart collapse into one. Any role can send one, so at most
			// one is taken per minTickGap (pg_cron ticks every minute).
			if !e.guard.tickDue(time.Now()) {
				return
			}
			select {
			case e.tick <- struct{}{}:
			default:
			}
			return
		}
		if !e.inbox.put(r) {
			e.log.Warn("ignoring a request: too many wait to be taken", "id", r.ID, "kind", r.Kind, "limit_bytes", maxInboxBytes)
		}
	case "iasql_deprecated":
		// Any role can send one: only the deprecated functions are counted.
		if deprecatedFunctions[string(content)] {
			e.deprecated.add(string(content))
		}
	}
}

// Intent tells the engine that new user changes are in the audit trail.
func (e *Engine) Intent() {
	select {
	case e.intent <- struct{}{}:
	default:
	}
}

func (e *Engine) service(ctx context.Context, fn func(*pgx.Conn) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.svc == nil {
		return errNotRunning
	}
	return fn(e.svc)
}

// errNotRunning: the engine has no service session (it is starting, or
// this sidecar does not lead).
var errNotRunning = errors.New("the engine is not running on this sidecar")

// takeRequests takes the request messages capture delivered (inbox), in
// batches, while this engine leads (Lead owns it): it verifies every
// sender of a batch in one query on the service session, counts the
// refused ones (refusals: flushed to iasql_request_refusals at most every
// refusalFlush, never a row per refusal), and records and queues the rest.
// A flood of messages that are forged or refused thus costs one query per
// batch, and a writer's request behind it waits for that, not for a
// statement per message.
func (e *Engine) takeRequests(ctx context.Context) {
	counted := refusals{}
	flush := time.NewTicker(refusalFlush)
	defer flush.Stop()
	defer func() { e.flushRefusals(counted); e.flushDeprecated() }()
	for {
		select {
		case <-ctx.Done():
			return
		case <-flush.C:
			e.flushRefusals(counted)
			e.flushDeprecated()
			continue
		case <-e.inbox.ready:
		}
		for {
			batch := e.inbox.take(maxRequestBatch)
			if len(batch) == 0 {
				break
			}
			if !e.takeBatch(ctx, batch, counted) {
				return
			}
		}
	}
}

// maxRequestBatch is the most request messages verified in one query.
const maxRequestBatch = 512

// refusalFlush is how often refusals counted in memory are written.
const refusalFlush = 200 * time.Millisecond

// takeBatch verifies, refuses or accepts a batch of request messages;
// false when ctx ended while a request waited for room in its queue.
func (e *Engine) takeBatch(ctx context.Context, batch []request, counted refusals) bool {
	var accepted []request
	forged, firstForged := 0, ""
	err := e.service(ctx, func(c *pgx.Conn) error {
		if e.guard.dueExpiry(time.Now()) {
			e.expireRequests(ctx, c)
		}
		senders := make([]store.Sender, len(batch))
		for i, r := range batch {
			classid, objid := senderLock(r.raw)
			senders[i] = store.Sender{PID: r.PID, Classid: classid, Objid: objid, Needs: neededRole(r.Kind)}
		}
		found, err := store.RequestSenders(ctx, c, senders)
		if err != nil {
			return err
		}
		now := time.Now()
		for i, r := range batch {
			if found[i] == nil || r.PID <= 0 {
				if forged == 0 {
					firstForged = r.ID
				}
				forged++
				continue
			}
			r.Role = found[i].Role
			if reason, msg := e.authorize(r, found[i].Member, now); reason != "" {
				counted.add(r, reason, msg)
				continue
			}
			args := r.Args
			if len(args) == 0 {
				args = json.RawMessage(`{}`)
			}
			// A replayed message after a restart is not run twice.
			fresh, err := store.AcceptRequest(ctx, c, r.ID, r.Kind, args, r.Role)
			if err != nil {
				e.log.Warn("cannot accept request", "id", r.ID, "kind", r.Kind, "err", err)
				continue
			}
			if fresh {
				accepted = append(accepted, r)
			}
		}
		return nil
	})
	if forged > 0 {
		e.log.Warn("ignoring a request whose sender cannot be verified (forged, or its caller is gone)", "id", firstForged, "count", forged)
	}
	if err != nil {
		e.log.Warn("cannot take requests", "count", len(batch), "err", err)
		return ctx.Err() == nil
	}
	// Queued outside the session: the loop answers on it.
	for _, r := range accepted {
		select {
		case e.queueOf(r) <- r:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// flushRefusals writes the refusals counted since the last flush.
func (e *Engine) flushRefusals(counted refusals) {
	if len(counted) == 0 {
		return
	}
	list := counted.drain()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.service(ctx, func(c *pgx.Conn) error { return store.CountRefusals(ctx, c, list) })
	for _, r := range list {
		e.log.Warn("refused requests", "role", r.Role, "reason", r.Reason, "count", r.Count, "why", r.Message)
	}
	if err != nil {
		e.log.Warn("cannot count refused requests", "err", err)
	}
}

// queueOf is the queue a request waits in: previews only read, on a
// session of their own, and are answered beside the loop that runs cycles
// (not queued behind a long one); everything else is the loop's.
func (e *Engine) queueOf(r request) chan request {
	if r.Kind == "preview" {
		return e.previews
	}
	return e.requests
}

// stoppedBeforeAnswering is the answer to a request the engine stopped
// working on (the sidecar is stopping or lost the leadership): one line
// that says what to do, as iasql_request says when the session that took a
// request ends without a word.
const stoppedBeforeAnswering = "the sidecar stopped (shutting down or losing the leadership) before answering; it may or may not have acted: check iasql status and the sidecar's logs, then call it again (a commit is idempotent: it does what is left to do)"

// finish records the answer to a request taken by this engine session. It
// answers even when ctx has ended (the sidecar is stopping): the session
// is still open, and the caller should hear at once rather than find out
// that the session is gone.
func (e *Engine) finish(ctx context.Context, r request, result any, failure error) {
	js, err := json.Marshal(result)
	if err != nil && failure == nil {
		failure = fmt.Errorf("encode the answer: %w", err)
	}
	status, msg := "done", ""
	if failure != nil {
		status, msg = "failed", snapshot.OneLine(failure.Error())
		if ctx.Err() != nil {
			msg = stoppedBeforeAnswering + " (" + msg + ")"
		}
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var answered bool
	err = e.service(wctx, func(c *pgx.Conn) error {
		// Only while this session holds the request: a request the last
		// session took was failed by this one's start-up (Lead).
		answered, err = store.AnswerRequest(wctx, c, r.ID, status, js, msg)
		return err
	})
	switch {
	case err != nil:
		e.log.Error("cannot record the answer to a request", "id", r.ID, "kind", r.Kind, "err", err)
	case !answered:
		e.log.Warn("request was taken by an earlier engine session and already answered; its answer is dropped", "id", r.ID, "kind", r.Kind, "status", status)
	}
}

// orphanedRequest is the error of a request whose engine session ended
// before answering, as the next engine to lead records it: a format()
// string of PostgreSQL, given the session's process id.
const orphanedRequest = "the sidecar that took this request (server process %s) ended before answering; it may or may not have acted: check iasql status and the sidecar's logs, then call it again (a commit is idempotent: it does what is left to do)"

// failOrphans runs at the start of leading, on the service session once it
// holds the service lock: it marks failed every request still accepted by
// an engine session that is gone, so that none stays accepted for ever.
// Holding the lock proves every other taker gone: a session takes requests
// only while it holds the lock, and gives it up only by ending (it may
// still show in pg_stat_activity for a moment while it exits, so that is
// not asked). It also drops the requests this sidecar's previous session
// queued and did not handle: they are among those just failed.
func (e *Engine) failOrphans(ctx context.Context, svc *pgx.Conn) error {
	failed, err := store.FailOrphans(ctx, svc, orphanedRequest)
	if err != nil {
		return err
	}
	for _, o := range failed {
		e.log.Warn("failed a request whose engine session ended before answering", "id", o.ID, "kind", o.Kind, "taken_by_pid", o.PID)
	}
	for {
		select {
		case r := <-e.requests:
			e.log.Info("dropping a request the previous engine session queued; it was failed", "id", r.ID, "kind", r.Kind)
		case r := <-e.previews:
			e.log.Info("dropping a request the previous engine session queued; it was failed", "id", r.ID, "kind", r.Kind)
		default:
			return nil
		}
	}
}

// deprecatedCalls counts calls of deprecated functions between two writes
// (takeRequests writes them with the refusals): Message must not block.
type deprecatedCalls struct {
	mu    sync.Mutex
	calls map[string]int
}

func (d *deprecatedCalls) add(name string) { d.addAll(map[string]int{name: 1}) }

func (d *deprecatedCalls) addAll(calls map[string]int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.calls == nil {
		d.calls = map[string]int{}
	}
	for name, n := range calls {
		d.calls[name] += n
	}
}

func (d *deprecatedCalls) drain() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	calls := d.calls
	d.calls = nil
	return calls
}

// flushDeprecated writes the calls of deprecated functions counted since
// the last time (iasql_deprecated_calls).
func (e *Engine) flushDeprecated() {
	calls := e.deprecated.drain()
	if len(calls) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := e.service(ctx, func(c *pgx.Conn) error {
		for name, n := range calls {
			if err := store.CountDeprecated(ctx, c, name, n); err != nil {
				return err
			}
			delete(calls, name)
		}
		return nil
	})
	if err != nil {
		// Counted again with the next flush (the next leadership's, if
		// this one is ending).
		e.deprecated.addAll(calls)
		e.log.Warn("cannot count calls of deprecated functions yet", "calls", calls, "err", err)
	}
}

// bound is the leader timeout: PostgreSQL ends the engine's sessions
// (and so releases its locks) once they are silent that long, so that a
// frozen or partitioned sidecar loses the engine's leadership too.
func (e *Engine) bound() time.Duration {
	if e.leaderTimeout <= 0 {
		return logical.DefaultLeaderTimeout
	}
	return e.leaderTimeout
}

// Lead runs the engine until ctx ends (when capture, cov, loses the
// leadership).
func (e *Engine) Lead(ctx context.Context, cov Coverage) {
	e.cov = cov
	svc, err := logical.Connect(ctx, e.dsn, "iasql engine", e.bound())
	if err != nil {
		e.log.Error("engine cannot connect", "err", err)
		return
	}
	defer svc.Close(context.Background())
	if err := store.Lock(ctx, svc, store.LockService); err != nil {
		e.log.Error("engine cannot take its lock", "err", err)
		return
	}
	e.seedRates(ctx, svc) // before any request is taken (privileges.go)
	e.mu.Lock()
	err = e.failOrphans(ctx, svc)
	if err == nil {
		e.svc = svc
	}
	e.mu.Unlock()
	if err != nil {
		e.log.Error("engine cannot settle the requests of ended sessions", "err", err)
		return
	}
	// The service session talks to the server at least every third of the
	// bound, whatever the loop is busy with (a long cycle).
	kctx, stopKeepAlive := context.WithCancel(ctx)
	lost := make(chan error, 1)
	var kwg sync.WaitGroup
	kwg.Go(func() {
		if err := logical.KeepAlive(kctx, svc, &e.mu, e.bound()); err != nil {
			lost <- err
		}
	})
	kwg.Go(func() { e.takeRequests(kctx) })
	defer func() {
		stopKeepAlive()
		kwg.Wait()
		e.mu.Lock()
		e.svc = nil
		e.mu.Unlock()
		e.closeWork()
	}()
	// A start that fails (a module this sidecar cannot upgrade, a read
	// that fails) is tried again while this sidecar leads; meanwhile the
	// engine answers requests with why (hold) rather than leave their
	// callers to time out, and runs no cycle.
	var reported bool // an expired transaction, while held
	for retry := time.Second; ; retry = min(2*retry, maxStartRetry) {
		err := e.start(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		e.log.Error("engine cannot start; it answers requests with why and tries again", "err", err, "retry_in", retry)
		if !e.hold(ctx, err, retry, lost, &reported) {
			return
		}
	}
	timer := time.NewTimer(e.interval)
	defer timer.Stop()
	health := time.NewTicker(5 * time.Second)
	defer health.Stop()
	driver := "the sidecar's timer"
	var cron bool
	_ = e.service(ctx, func(c *pgx.Conn) error { cron = e.scheduleWithCron(ctx, c); return nil })
	if cron {
		driver = "pg_cron job iasql_cycle"
		timer.Stop()
	}
	e.log.Info("engine running", "interval", e.interval, "schedule", driver, "modules", len(e.offered()))
	e.resetAccount()
	_ = e.checkAccount(ctx) // before the first cycle of this leadership; a mismatch is logged
	// An iasql transaction whose owner ended while the engine could not
	// start (hold) is rolled back now, before anything else.
	e.expireTransaction(ctx)
	// Intent the last leader left pending (it stopped, it failed over, the
	// database was restored from a dump) is enacted now, as a new change
	// would be, rather than at the next schedule or the next change.
	e.intentAtStart(ctx)
	// Previews are answered beside the loop, one at a time.
	sideCtx, stopSide := context.WithCancel(ctx)
	var side sync.WaitGroup
	defer side.Wait()
	defer stopSide()
	side.Go(func() {
		for {
			select {
			case <-sideCtx.Done():
				return
			case r := <-e.previews:
				e.handle(sideCtx, r)
			}
		}
	})
	if e.queue != nil {
		side.Go(func() { e.queue.consume(sideCtx, e.log.Info) })
	}
	lastFull := time.Now() // the last scheduled cycle (queue.fullReadDue)
	var soon <-chan time.Time
	var requeue time.Duration // operations run on in the cloud: a cycle asks about them after it
	if e.queue != nil {
		// A full read first: the events of changes made while no sidecar
		// read the queue may be lost, and the tables' Noticers tell the
		// resources of an event by what the last read found.
		requeue, lastFull = e.automatic(ctx, reconcile.Schedule), time.Now()
	}
	for {
		if requeue > 0 && soon == nil {
			soon, requeue = time.After(requeue), 0
		}
		select {
		case <-ctx.Done():
			return
		case r := <-e.requests:
			e.handle(ctx, r)
		case <-e.intent:
			if soon == nil {
				soon = time.After(500 * time.Millisecond)
			}
		case <-soon:
			soon = nil
			requeue = e.automatic(ctx, reconcile.Intent)
		case e.queue.readyFor() <- struct{}{}:
			// The reader receives a batch now that the loop waits for one.
		case msgs := <-e.queue.received():
			var fullNow bool
			if requeue, fullNow = e.handleEvents(ctx, msgs); fullNow {
				lastFull = time.Time{}
			}
		case <-timer.C:
			if e.queue.fullReadDue(lastFull) || e.catchUp(ctx) {
				requeue, lastFull = e.automatic(ctx, reconcile.Schedule), time.Now()
			}
			timer.Reset(e.interval)
		case <-e.tick:
			if e.queue.fullReadDue(lastFull) || e.catchUp(ctx) {
				requeue, lastFull = e.automatic(ctx, reconcile.Schedule), time.Now()
			}
		case err := <-lost:
			e.log.Warn("engine lost its session; starting again", "err", err)
			return
		case <-health.C:
			if err := e.service(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) }); err != nil {
				e.log.Warn("engine lost its session; starting again", "err", err)
				return
			}
			e.expireTransaction(ctx)
		}
	}
}

// intentAtStart asks for an automatic cycle when intent is pending.
func (e *Engine) intentAtStart(ctx context.Context) {
	var pending bool
	err := e.service(ctx, func(c *pgx.Conn) (err error) {
		pending, err = store.IntentPending(ctx, c)
		return err
	})
	switch {
	case err != nil:
		e.log.Warn("cannot tell whether intent is pending at start; the next change or schedule runs a cycle", "err", err)
	case pending:
		e.log.Info("intent is pending at start: an automatic cycle runs now")
		e.Intent()
	}
}

// maxStartRetry is the longest wait between two tries of a start that
// fails.
const maxStartRetry = 5 * time.Second

// start is what a leadership does before its first cycle, on the service
// session: register the modules (upgrading the installed ones), note when
// it began leading, load the engine's state.
func (e *Engine) start(ctx context.Context) error {
	if err := e.service(ctx, func(c *pgx.Conn) error { return e.registerModules(ctx, c) }); err != nil {
		return fmt.Errorf("register modules: %w", err)
	}
	var since time.Time
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		since, err = store.Now(ctx, c)
		return err
	}); err != nil {
		return err
	}
	e.mu.Lock()
	e.leadSince = since
	e.mu.Unlock()
	if err := e.loadLow(ctx); err != nil {
		return err
	}
	e.state.UnverifiedClear = false // another sidecar may have left parts there
	return nil
}

// hold is the engine of a leadership whose start failed (why), until
// retry has passed (true: try the start again) or the leadership or the
// service session ends (false). It runs no cycle: it answers every request
// with why, in one line, and watches the iasql transaction: one whose
// owner has ended (or sat idle past the timeout) is rolled back without a
// cycle (discardExpired), so that it does not refuse everyone's writes for
// as long as the engine cannot start; reported says that a discard that
// failed was reported already.
func (e *Engine) hold(ctx context.Context, why error, retry time.Duration, lost <-chan error, reported *bool) bool {
	failure := fmt.Errorf("the sidecar's engine cannot start, so it runs no cycle: %w; it tries again every %s (the sidecar's log says more)", why, maxStartRetry)
	timer := time.NewTimer(retry)
	defer timer.Stop()
	health := time.NewTicker(time.Second)
	defer health.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case err := <-lost:
			e.log.Warn("engine lost its session; starting again", "err", err)
			return false
		case r := <-e.requests:
			e.finish(ctx, r, nil, failure)
		case r := <-e.previews:
			e.finish(ctx, r, nil, failure)
		case <-timer.C:
			return true
		case <-health.C:
			if err := e.service(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) }); err != nil {
				e.log.Warn("engine lost its session; starting again", "err", err)
				return false
			}
			if t, why := e.expiredTransaction(ctx); t != nil {
				if err := e.discardExpired(ctx, t, why); err != nil && !*reported {
					*reported = true
					e.log.Warn("an iasql transaction has expired, and its changes cannot be discarded yet; tried again each second", "why", why, "opened_by", t.OpenedBy, "owner_pid", t.OwnerPID, "err", err)
				}
			}
		}
	}
}

// discardExpired ends an expired iasql transaction while the engine cannot
// start (hold), so that it never refuses everyone's writes for as long as
// the cause lasts: the user changes made since it began are recorded as
// discarded (store.DiscardSince: no intent any more, so none of them can
// reach the cloud), and it closes. What the rollback's cycle would have
// restored at once, the first cycles after the start restore, as they do
// any row without intent (as after a rollback that could not restore
// everything). Capture must have recorded every change committed before
// now first, or one could escape the discard.
func (e *Engine) discardExpired(ctx context.Context, t *store.Transaction, why string) error {
	var upto pglogrepl.LSN
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		upto, err = store.WALInsertLSN(ctx, c)
		return err
	}); err != nil {
		return err
	}
	if e.cov != nil {
		wctx, cancel := context.WithTimeout(ctx, time.Second)
		err := e.cov.WaitCovered(wctx, upto)
		cancel()
		if err != nil {
			return fmt.Errorf("wait until capture has recorded the changes up to %s: %w", upto, err)
		}
	}
	var n int
	var closed bool
	err := e.service(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			cur, err := store.ReadTransaction(ctx, tx)
			if err != nil || cur == nil || cur.Begin != t.Begin {
				return err // closed meanwhile, or another one
			}
			if n, err = store.DiscardSince(ctx, tx, t.Begin, upto); err != nil {
				return err
			}
			closed = true
			return store.CloseTransaction(ctx, tx)
		})
	})
	if err != nil {
		return fmt.Errorf("discard the changes of an expired iasql transaction: %w", err)
	}
	if closed {
		e.log.Warn("an expired iasql transaction is rolled back while the engine cannot start: its changes are discarded, and its rows are restored from the cloud by the first cycles once the engine starts",
			"why", why, "opened_by", t.OpenedBy, "owner_pid", t.OwnerPID, "opened_at", t.OpenedAt, "records", n)
		e.Intent() // the first cycle once the engine starts restores them
	}
	return nil
}

// automatic runs a cycle nobody waits for (trigger Schedule or Intent),
// unless an iasql transaction is open or another cycle runs. It returns
// after how long to run one again, for operations it left running in the
// cloud (zero: no need).
func (e *Engine) automatic(ctx context.Context, trigger reconcile.Trigger) time.Duration {
	var open bool
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		open, err = store.TransactionIsOpen(ctx, c)
		return err
	}); err != nil {
		e.log.Warn("cannot check for an open iasql transaction", "err", err)
		return 0
	}
	if open {
		e.log.Debug("automatic cycle held: an iasql transaction is open", "reason", trigger)
		return 0
	}
	installed, err := e.installedTables(ctx)
	if err != nil {
		e.log.Warn("cannot read installed modules", "err", err)
		return 0
	}
	if len(installed) == 0 {
		// Nothing installed, nothing to sync (and no records to write).
		return 0
	}
	out, err := e.runCycle(ctx, reconcile.Request{Trigger: trigger, Tables: installed}, false)
	switch {
	case err != nil && ctx.Err() != nil:
		e.log.Info("cycle stopped: the engine is stopping", "reason", trigger)
	case err != nil && !errors.Is(err, errBusy):
		e.log.Warn("cycle failed", "reason", trigger, "err", err)
	}
	if out == nil {
		return 0
	}
	return out.RequeueAfter
}

var errBusy = errors.New("another cycle is running")

// returnMemory gives the memory a cycle held back to the system when the
// heap holds more than returnAbove. A cycle over a large account holds
// every row and cloud record it read (200 MB at 100,000 buckets) and frees
// them when it ends; between cycles the engine keeps about a tenth of
// that, but the Go runtime keeps the heap it grew to, so the sidecar's RSS
// would stay at the peak (make bench: sidecar_rss_kb_per_resource_100k).
// Below returnAbove (any account of a few thousand resources) it costs a
// look at the heap's size; above, a full collection per cycle, which such
// a cycle's reads dwarf.
func returnMemory() {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if m.HeapSys-m.HeapReleased > returnAbove {
		debug.FreeOSMemory()
	}
}

// returnAbove is the heap held from the system past which returnMemory
// gives the unused part back.
const returnAbove = 128 << 20

// workConn is the engine loop's connection for cycles, previews and lock
// waits, kept between them (only the loop goroutine opens and closes it). A
// keep-alive talks to the server on it every third of the bound, under
// workMu, so a long cloud call never leaves it silent.
func (e *Engine) workConn(ctx context.Context) (*pgx.Conn, error) {
	if e.work != nil && !e.work.IsClosed() {
		return e.work, nil
	}
	e.closeWork()
	conn, err := logical.Connect(ctx, e.dsn, "iasql cycle", e.bound())
	if err != nil {
		return nil, fmt.Errorf("connect for a cycle: %w", err)
	}
	kctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := logical.KeepAlive(kctx, conn, &e.workMu, e.bound()); err != nil {
			e.log.Warn("the cycle session was lost", "err", err)
		}
	})
	e.work, e.workStop = conn, func() { cancel(); wg.Wait() }
	return conn, nil
}

// closeWork stops the work connection's keep-alive and closes it.
func (e *Engine) closeWork() {
	if e.workStop != nil {
		e.workStop()
		e.workStop = nil
	}
	if e.work != nil {
		e.work.Close(context.Background())
		e.work = nil
	}
}

// withWork runs fn while holding the work connection (workMu).
func (e *Engine) withWork(fn func() error) error {
	e.workMu.Lock()
	defer e.workMu.Unlock()
	return fn()
}

// lockCycles takes the cycle lock on the work connection: waiting for a
// running cycle to end, or (wait false) failing with errBusy. Release it
// with releaseWork.
func (e *Engine) lockCycles(ctx context.Context, wait bool) (*pgx.Conn, error) {
	conn, err := e.workConn(ctx)
	if err != nil {
		return nil, err
	}
	if wait {
		if err := e.withWork(func() error { return store.Lock(ctx, conn, store.LockCycle) }); err != nil {
			e.releaseWork(conn)
			return nil, fmt.Errorf("wait for the running cycle: %w", err)
		}
		return conn, nil
	}
	var ok bool
	if err := e.withWork(func() (err error) {
		ok, err = store.TryLock(ctx, conn, store.LockCycle)
		return err
	}); err != nil {
		e.releaseWork(conn)
		return nil, err
	}
	if !ok {
		e.releaseWork(conn)
		return nil, errBusy
	}
	return conn, nil
}

// releaseWork drops the cycle lock (if held) and keeps the connection for
// the next cycle, or closes it when it is no longer usable.
func (e *Engine) releaseWork(conn *pgx.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.withWork(func() error { return store.UnlockAll(ctx, conn) }); err != nil && e.work == conn {
		e.closeWork()
	}
}

// cycle runs req over the installed tables (wait: for a running cycle to
// end, rather than give up).
func (e *Engine) cycle(ctx context.Context, req reconcile.Request, wait bool) (*reconcile.Outcome, error) {
	installed, err := e.installedTables(ctx)
	if err != nil {
		return nil, err
	}
	req.Tables = installed
	return e.runCycle(ctx, req, wait)
}

// runCycle runs req, whose tables are read already, holding the cycle
// lock, once the database's account binding is checked.
func (e *Engine) runCycle(ctx context.Context, req reconcile.Request, wait bool) (*reconcile.Outcome, error) {
	if err := e.checkAccount(ctx); err != nil {
		return nil, err
	}
	conn, err := e.lockCycles(ctx, wait)
	if err != nil {
		return nil, err
	}
	defer e.releaseWork(conn)
	req.Events = e.queue.status()
	out, err := e.rec.Reconcile(ctx, e.state, conn, &e.workMu, req)
	returnMemory()
	if err == nil {
		e.setLow(out.Low)
	}
	if out != nil {
		e.mu.Lock()
		e.unsettled = len(out.Unverified) > 0 // not Unread: the list budget's rotation, not a failure
		e.mu.Unlock()
	}
	return out, err
}

// intentLow is the LSN below which every user change is known enacted: the
// intent query starts there.
func (e *Engine) intentLow() pglogrepl.LSN {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.low
}

func (e *Engine) setLow(l pglogrepl.LSN) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if l > e.low {
		e.low = l
	}
}

// installedTables returns the tables of installed modules, in dependency
// order, with their mappers.
func (e *Engine) installedTables(ctx context.Context) ([]reconcile.Table, error) {
	var names []string
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		names, err = store.InstalledModules(ctx, c)
		return err
	}); err != nil {
		return nil, err
	}
	var out []reconcile.Table
	for _, n := range e.dependencyOrder(names) {
		m, ok := e.module(n)
		if !ok {
			return nil, fmt.Errorf("module %s is installed but this sidecar does not offer it: run a sidecar that does", n)
		}
		mappers, err := e.mappersOf(ctx, m)
		if err != nil {
			return nil, err
		}
		for _, t := range m.Tables {
			mp := mappers[t.Name]
			if mp == nil {
				return nil, fmt.Errorf("module %s has no mapper for table %s", m.Name, t.Name)
			}
			// Asked once: the cycle asks the mapper's parts over and over
			// (every compare, create, poll), and PartsOf of a Parts is
			// the value itself.
			parts := module.PartsOf(mp)
			if parts.Mapper == nil && !t.ReadOnly {
				return nil, fmt.Errorf("module %s's mapper for table %s cannot write, and the table is not read-only", m.Name, t.Name)
			}
			out = append(out, reconcile.Table{Spec: t, Mapper: parts, Module: &m})
		}
	}
	return byReferences(out), nil
}

// byReferences orders tables so that a table comes after the tables it
// references: the read puts parents in cloud form before their children,
// and a child's named references are found from its parents' resources
// (snapshot.Table.Link). Module dependencies give that order for the
// hand-written modules; a Cloud Control type depends on no module, and may
// reference a table of any (aws_iam's iam_role). Otherwise the order is
// kept.
func byReferences(tables []reconcile.Table) []reconcile.Table {
	at := make(map[string]int, len(tables))
	for i, t := range tables {
		at[t.Spec.Name] = i
	}
	out := make([]reconcile.Table, 0, len(tables))
	state := make([]int, len(tables)) // 0 new, 1 visiting, 2 placed
	var visit func(i int)
	visit = func(i int) {
		if state[i] != 0 {
			return // placed, or a cycle of references (kept in order)
		}
		state[i] = 1
		for _, ref := range module.RefsOf(tables[i].Spec) {
			if j, ok := at[ref.Table]; ok && j != i {
				visit(j)
			}
		}
		state[i] = 2
		out = append(out, tables[i])
	}
	for i := range tables {
		visit(i)
	}
	return out
}

func (e *Engine) mappersOf(ctx context.Context, m module.Module) (map[string]module.Reader, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if mp, ok := e.mappers[m.Name]; ok {
		return mp, nil
	}
	mp, err := m.Mappers(ctx, e.aws)
	if err != nil {
		return nil, fmt.Errorf("set up module %s: %w", m.Name, err)
	}
	e.mappers[m.Name] = mp
	return mp, nil
}

// dependencyOrder orders module names so that dependencies come first.
func (e *Engine) dependencyOrder(names []string) []string {
	return e.dependencyOrderOf(names, func(n string) module.Module {
		m, _ := e.module(n)
		return m
	})
}

// dependencyOrderOf is dependencyOrder over the modules of returns.
func (e *Engine) dependencyOrderOf(names []string, of func(string) module.Module) []string {
	var out []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, d := range of(n).DependsOn {
			visit(d)
		}
		out = append(out, n)
	}
	sorted := append([]string{}, names...)
	sort.Strings(sorted)
	for _, n := range sorted {
		visit(n)
	}
	return out
}

// scheduleWithCron makes pg_cron drive automatic cycles where pg_cron is
// installed in this database and the interval is whole minutes (pg_cron's
// granularity): a job iasql_cycle calls iasql_cycle_tick(). It reports
// whether pg_cron drives them; otherwise the sidecar's timer does.
func (e *Engine) scheduleWithCron(ctx context.Context, c *pgx.Conn) bool {
	if !store.HasCron(ctx, c) {
		return false
	}
	minutes := int(e.interval / time.Minute)
	if e.interval%time.Minute != 0 || minutes < 1 || minutes > 59 {
		e.log.Info("pg_cron schedules whole minutes only; the sidecar's timer drives automatic cycles", "interval", e.interval)
		return false
	}
	spec := fmt.Sprintf("*/%d * * * *", minutes)
	if minutes == 1 {
		spec = "* * * * *"
	}
	if err := store.ScheduleCron(ctx, c, spec); err != nil {
		e.log.Warn("cannot schedule the pg_cron job; the sidecar's timer drives automatic cycles", "err", err)
		return false
	}
	return true
}

// manager is the engine as the cycles' Manager (package reconcile).
type manager struct{ e *Engine }

func (m manager) WaitCovered(ctx context.Context, lsn pglogrepl.LSN) error {
	return m.e.cov.WaitCovered(ctx, lsn)
}

func (m manager) IntentLow() pglogrepl.LSN { return m.e.intentLow() }

func (m manager) LeadSince() time.Time {
	m.e.mu.Lock()
	defer m.e.mu.Unlock()
	return m.e.leadSince
}

func (m manager) Service(ctx context.Context, fn func(*pgx.Conn) error) error {
	return m.e.service(ctx, fn)
}
