package bridge

// AWS's change events: CloudTrail records API calls, EventBridge delivers
// them ("AWS API Call via CloudTrail") to an SQS queue, and the leading
// engine long-polls that queue (EngineConfig.EventsQueue). Each event is
// shown to every installed table's Noticer, which names the resources of
// its table the call made, changed or deleted; the events received
// together make one cycle (reconcile.Event) that reads those resources
// alone, by record, and plans them by the cycle's rules, recording who
// made each change (the event's userIdentity). Events the sidecar caused
// itself (its own ARN, as STS GetCallerIdentity says, or its access key),
// events about no installed table, calls that failed (errorCode), events
// not put by AWS (source not aws.*) and events of another account than the
// database's are dropped and counted, at no cloud call. A message is
// deleted once handled (or dropped); a cycle that cannot run leaves it to
// come back after the queue's visibility timeout. A message is received
// only when the engine's loop is ready to handle it (queue.ready), so that
// it is not held past its visibility timeout behind other batches.
//
// Delivery is best-effort, with no bound on its delay (AWS says so of
// CloudTrail and EventBridge): scheduled full reads go on, every
// EventsInterval while events flow (a message arrived within the last
// EventsInterval), every Interval otherwise; an event cycle that fails or
// leaves a table it was for unverified, and a message given up on, bring
// the next full read forward. How the queue is read is recorded with each
// cycle's end, which iasql status shows.
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/reconcile"
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// EventsMeter counts what the events consumer does (package metrics).
type EventsMeter interface {
	// Events counts n events by outcome: noticed (about resources of
	// installed tables), dropped (about none, or a call that failed),
	// own (the sidecar's own calls), invalid (not a CloudTrail record, or
	// not put by AWS), foreign (of another account than the database's),
	// failed (given up after maxReceives deliveries).
	Events(outcome string, n int)
	// QueueReadable says whether the last receive from the queue worked.
	QueueReadable(ok bool)
}

// Outcomes of events (EventsMeter).
const (
	EventNoticed = "noticed"
	EventDropped = "dropped"
	EventOwn     = "own"
	EventInvalid = "invalid"
	EventForeign = "foreign"
	EventFailed  = "failed"
)

// receiveWait is how long a receive waits for a message (SQS's longest
// long poll).
const receiveWait = 20

// maxReceives: a message delivered this many times whose cycle still
// could not run is deleted and counted failed (the next full read brings
// what it was about).
const maxReceives = 5

// message is one SQS message received: its receipt handle (to delete
// it), how often it was delivered, and the CloudTrail record it carries.
type message struct {
	handle   string
	receives int
	record   trailRecord
	err      error // not a CloudTrail record
}

// queue is the events queue as the engine reads it.
type queue struct {
	url    string
	client *sqs.Client
	every  time.Duration // full reads while the queue can be read
	meter  EventsMeter
	// ready: the engine's loop sends on it when it waits for work; the
	// reader receives from the queue only then, and hands what it
	// received on in (unbuffered), so that a batch waits for at most the
	// cycle the loop may have begun meanwhile.
	ready chan struct{}
	in    chan []message // received, for the engine's loop

	mu      sync.Mutex
	state   string    // "": not read yet; "ok"; else why it cannot be read
	since   time.Time // the state's
	started time.Time // when the reader began
	last    time.Time // when a message last arrived (zero: none yet)
}

// newQueue makes the reader of the queue at u ("" none: nil).
func newQueue(u string, cfg aws.Config, every time.Duration, meter EventsMeter) *queue {
	if u == "" {
		return nil
	}
	region := queueRegion(u)
	q := &queue{url: u, every: every, meter: meter, ready: make(chan struct{}), in: make(chan []message), started: time.Now(),
		client: sqs.NewFromConfig(cfg, func(o *sqs.Options) {
			if region != "" {
				o.Region = region
			}
		})}
	return q
}

// queueRegion is the region an SQS queue URL names
// (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME), "" for another host.
func queueRegion(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	parts := strings.Split(p.Hostname(), ".")
	if len(parts) >= 3 && parts[0] == "sqs" && strings.HasSuffix(p.Hostname(), ".amazonaws.com") {
		return parts[1]
	}
	return ""
}

// consume long-polls the queue until ctx ends, handing what it receives to
// the engine's loop (in). A receive that fails is reported (setState) and
// tried again after a backoff of 1 s doubling up to 30 s.
func (q *queue) consume(ctx context.Context, log func(msg string, args ...any)) {
	backoff := time.Second
	for ctx.Err() == nil {
		select {
		case <-q.ready:
		case <-ctx.Done():
			return
		}
		out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(q.url),
			MaxNumberOfMessages:         10,
			WaitTimeSeconds:             receiveWait,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameApproximateReceiveCount},
		})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if q.setState(err) {
				log("cannot read the events queue; full reads run at the normal interval until it can be read again", "queue", q.url, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, 30*time.Second)
			continue
		}
		if q.setState(nil) {
			log("reading the events queue", "queue", q.url)
		}
		backoff = time.Second
		if len(out.Messages) == 0 {
			continue
		}
		q.arrived(time.Now())
		batch := make([]message, 0, len(out.Messages))
		for _, m := range out.Messages {
			n, _ := strconv.Atoi(m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)])
			rec, err := parseEnvelope([]byte(aws.ToString(m.Body)))
			batch = append(batch, message{handle: aws.ToString(m.ReceiptHandle), receives: n, record: rec, err: err})
		}
		select {
		case q.in <- batch:
		case <-ctx.Done():
			return
		}
	}
}

// setState records whether the queue can be read (err nil) and reports
// whether that changed.
func (q *queue) setState(err error) bool {
	state := "ok"
	if err != nil {
		state = oneLine(err)
	}
	if q.meter != nil {
		q.meter.QueueReadable(err == nil)
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if (q.state == "ok") == (state == "ok") && q.state != "" {
		q.state = state // the same, perhaps said otherwise
		return false
	}
	q.state, q.since = state, time.Now()
	return true
}

// arrived notes that a message arrived at t.
func (q *queue) arrived(t time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.last = t
}

// flowing reports whether events flow: the last receive worked and a
// message (the sidecar's own included) arrived within the last
// EventsInterval. A queue that can be read but receives nothing (no trail
// of management events, the rule disabled or mistargeted, the queue
// policy wrong) is no sign that nothing changed.
func (q *queue) flowing() bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.flowingLocked()
}

func (q *queue) flowingLocked() bool {
	return q.state == "ok" && !q.last.IsZero() && time.Since(q.last) < q.every
}

// status is how the queue is read, as a cycle's end records it ("" for no
// queue).
func (q *queue) status() string {
	if q == nil {
		return ""
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	switch q.state {
	case "":
		return "starting to read events queue " + q.url
	case "ok":
		if !q.flowingLocked() {
			none := q.last
			if none.IsZero() {
				none = q.started
			}
			return fmt.Sprintf("reading events queue %s since %s; no events since %s: full reads at the normal interval", q.url, q.since.UTC().Format(time.RFC3339), none.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("reading events queue %s since %s; last event at %s; full reads every %s", q.url, q.since.UTC().Format(time.RFC3339), q.last.UTC().Format(time.RFC3339), q.every)
	}
	return fmt.Sprintf("%s %s since %s: %s; full reads at the normal interval", store.QueueUnreadable, q.url, q.since.UTC().Format(time.RFC3339), q.state)
}

// delete deletes handled messages, one request each (DeleteMessage).
func (q *queue) delete(ctx context.Context, handles []string) error {
	var errs []error
	for _, h := range handles {
		if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(h)}); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete handled messages from the events queue: %w", err)
	}
	return nil
}

func (q *queue) count(outcome string, n int) {
	if q.meter != nil && n > 0 {
		q.meter.Events(outcome, n)
	}
}

// handleEvents runs one cycle for the messages received together, then
// deletes those handled. It returns after how long to run a cycle again,
// for operations the cycle left running in the cloud (zero: no need), and
// whether the next full read is to come now: what the events named may be
// lost (the cycle failed, or could not read a part of the cloud; a message
// was given up on).
func (e *Engine) handleEvents(ctx context.Context, msgs []message) (requeue time.Duration, fullNow bool) {
	q := e.queue
	if err := e.checkAccount(ctx); err != nil {
		e.log.Warn("events left in the queue: the sidecar runs no cycle", "events", len(msgs), "err", err)
		return 0, false
	}
	installed, err := e.installedTables(ctx)
	if err != nil {
		e.log.Warn("events left in the queue: cannot read the installed modules", "events", len(msgs), "err", err)
		return 0, false
	}
	noticed, regions, done, acting := e.notice(ctx, msgs, installed)
	if len(noticed) > 0 {
		ok := true
		var open bool
		if err := e.service(ctx, func(c *pgx.Conn) (err error) {
			open, err = store.TransactionIsOpen(ctx, c)
			return err
		}); err != nil || open {
			// Paused as every automatic cycle is: the events come back
			// after the queue's visibility timeout.
			e.log.Debug("event cycle held: an iasql transaction is open, or cannot be checked", "err", err)
			ok = false
		} else {
			out, err := e.runCycle(ctx, reconcile.Request{Trigger: reconcile.Event, Tables: installed, Noticed: noticed, Regions: regions}, false)
			var cycleErr *reconcile.CycleError
			switch {
			case err == nil:
			case errors.As(err, &cycleErr):
				// What failed is in iasql_status, and later cycles retry
				// it; what the events named may not have been read: the
				// next full read comes now.
				e.log.Warn("event cycle failed; the next full read comes now", "err", err)
				fullNow = true
			case ctx.Err() != nil:
				return 0, false // the messages come back to the next leader
			default:
				e.log.Warn("event cycle could not run; its events come back from the queue", "err", err)
				ok = false
			}
			if out != nil {
				requeue = out.RequeueAfter
				if len(out.Unverified) > 0 {
					e.log.Info("event cycle could not read all it was for; the next full read comes now", "unverified", len(out.Unverified))
					fullNow = true
				}
			}
		}
		for _, m := range acting {
			switch {
			case ok:
				done = append(done, m.handle)
			case m.receives >= maxReceives:
				q.count(EventFailed, 1)
				done = append(done, m.handle)
				fullNow = true // the full read brings what it was about
			}
		}
	}
	if len(done) > 0 {
		if err := q.delete(ctx, done); err != nil && ctx.Err() == nil {
			e.log.Warn("events handled but left in the queue: they come back, and change nothing twice", "err", err)
		}
	}
	return requeue, fullNow
}

// notice maps events to the resources of installed tables they name (by
// each table's Noticer), with who made the newest call about each; it
// drops, and counts, the sidecar's own events, those that change nothing
// and those about no installed table. done: the messages to delete now;
// acting: those the cycle is for.
func (e *Engine) notice(ctx context.Context, msgs []message, installed []reconcile.Table) (noticed map[string]map[string]*snapshot.Attribution, regions map[string]map[string]bool, done []string, acting []message) {
	q := e.queue
	own, key, account := e.ownARN(), e.accessKey(ctx), e.boundAccount()
	noticed, regions = map[string]map[string]*snapshot.Attribution{}, map[string]map[string]bool{}
	counts := map[string]int{}
	for _, m := range msgs {
		outcome := EventNoticed
		switch {
		case m.err != nil:
			outcome = EventInvalid
			e.log.Debug("events queue: message dropped", "err", m.err)
		case m.record.foreignTo(account) != "":
			outcome = EventForeign
			e.log.Warn("events queue: message dropped: not of the database's account; check who may send to the queue", "why", m.record.foreignTo(account))
		case m.record.byIdentity(own, key):
			outcome = EventOwn // its change is in the rows already: the sidecar made it
		case !m.record.mutating():
			outcome = EventDropped
		default:
			ev, who := m.record.Event(), m.record.attribution()
			outcome = EventDropped
			for _, t := range installed {
				n := module.PartsOf(t.Mapper).Noticer
				if n == nil {
					continue
				}
				for _, cid := range n.Noticed(ev) {
					if noticed[t.Spec.Name] == nil {
						noticed[t.Spec.Name] = map[string]*snapshot.Attribution{}
					}
					if was := noticed[t.Spec.Name][cid]; was == nil || was.At <= who.At {
						noticed[t.Spec.Name][cid] = who
					}
					if regions[t.Spec.Name] == nil {
						regions[t.Spec.Name] = map[string]bool{}
					}
					if ev.Region != "" {
						regions[t.Spec.Name][ev.Region] = true
					}
					outcome = EventNoticed
				}
			}
		}
		counts[outcome]++
		if outcome == EventNoticed {
			acting = append(acting, m)
		} else {
			done = append(done, m.handle)
		}
		e.log.Debug("event", "outcome", outcome, "name", m.record.EventName, "source", m.record.EventSource, "actor", m.record.UserIdentity.ARN)
	}
	for outcome, n := range counts {
		q.count(outcome, n)
	}
	return noticed, regions, done, acting
}

func oneLine(err error) string { return snapshot.OneLine(err.Error()) }

var _ reconcile.Trail = (*trail)(nil)

// received is the channel the loop takes received messages from (nil,
// which never delivers, without a queue).
func (q *queue) received() <-chan []message {
	if q == nil {
		return nil
	}
	return q.in
}

// fullReadDue reports whether a scheduled cycle runs now, last having run
// at last: always, but while events flow, when their longer interval has
// not passed since.
func (q *queue) fullReadDue(last time.Time) bool {
	return !q.flowing() || time.Since(last) >= q.every
}

// readyFor is the channel the loop tells the reader it waits for work on
// (nil, which never takes, without a queue).
func (q *queue) readyFor() chan<- struct{} {
	if q == nil {
		return nil
	}
	return q.ready
}

// boundAccount is the account the database is bound to, once the
// leadership's account check found the sidecar's credentials are for it
// ("" before, or when they are not: no cycle runs then).
func (e *Engine) boundAccount() string {
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	if !e.acct.checked || e.acct.err != nil {
		return ""
	}
	return e.acct.me.Account
}

// catchUp reports whether a scheduled cycle runs at the normal interval
// even while events flow: the last cycle left parts of the cloud
// unverified (their reads failed), or a failed record's retry is due. Events stretch
// only the full read of what is in sync.
func (e *Engine) catchUp(ctx context.Context) bool {
	if e.queue == nil {
		return false // every scheduled cycle runs
	}
	e.mu.Lock()
	unsettled := e.unsettled
	e.mu.Unlock()
	if unsettled {
		return true
	}
	var due bool
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		due, err = store.RetriesDue(ctx, c)
		return err
	}); err != nil {
		e.log.Warn("cannot tell whether failed records are due for retry; the scheduled cycle runs", "err", err)
		return true
	}
	return due
}
