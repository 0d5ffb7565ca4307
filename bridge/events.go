package bridge

// AWS's change events: CloudTrail records API calls, EventBridge delivers
// them ("AWS API Call via CloudTrail") to an SQS queue, and the leading
// engine long-polls that queue (EngineConfig.EventsQueue). Each event is
// shown to every installed table's Noticer, which names the resources of
// its table the call made, changed or deleted; the events received
// together make one cycle (reconcile.Event) that reads those resources
// alone, by record, and plans them by the cycle's rules, recording who
// made each change (the event's userIdentity). Events the sidecar caused
// itself (its own ARN, as STS GetCallerIdentity says, or its access key)
// and events about no installed table are dropped and counted, at no
// cloud call. A message is deleted once handled (or dropped); a cycle that
// cannot run leaves it to come back after the queue's visibility timeout.
//
// Delivery is best-effort (AWS says so of CloudTrail and EventBridge):
// scheduled full reads go on, every EventsInterval while the queue can be
// read, every Interval when it cannot; how the queue is read is recorded
// with each cycle's end, which iasql status shows.
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
	// installed tables), dropped (about none), own (the sidecar's own
	// calls), invalid (not a CloudTrail record), failed (given up after
	// maxReceives deliveries).
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
	in     chan []message // received, for the engine's loop

	mu    sync.Mutex
	state string    // "": not read yet; "ok"; else why it cannot be read
	since time.Time // the state's
}

// newQueue makes the reader of the queue at u ("" none: nil).
func newQueue(u string, cfg aws.Config, every time.Duration, meter EventsMeter) *queue {
	if u == "" {
		return nil
	}
	region := queueRegion(u)
	q := &queue{url: u, every: every, meter: meter, in: make(chan []message, 16),
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

// flowing reports whether events flow: the last receive worked.
func (q *queue) flowing() bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.state == "ok"
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
		return fmt.Sprintf("reading events queue %s since %s; full reads every %s", q.url, q.since.UTC().Format(time.RFC3339), q.every)
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

// handleEvents runs one cycle for the messages received together (first,
// and whatever else is waiting: coalesced), then deletes those handled. It
// returns after how long to run a cycle again, for operations the cycle
// left running in the cloud (zero: no need).
func (e *Engine) handleEvents(ctx context.Context, first []message) time.Duration {
	q := e.queue
	msgs := first
	for more := true; more; {
		select {
		case b := <-q.in:
			msgs = append(msgs, b...)
		default:
			more = false
		}
	}
	if err := e.checkAccount(ctx); err != nil {
		e.log.Warn("events left in the queue: the sidecar runs no cycle", "events", len(msgs), "err", err)
		return 0
	}
	installed, err := e.installedTables(ctx)
	if err != nil {
		e.log.Warn("events left in the queue: cannot read the installed modules", "events", len(msgs), "err", err)
		return 0
	}
	noticed, regions, done, acting := e.notice(ctx, msgs, installed)
	var requeue time.Duration
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
				// It read what the events named; what failed is in
				// iasql_status, and later cycles retry it.
				e.log.Warn("event cycle failed", "err", err)
			case ctx.Err() != nil:
				return 0 // the messages come back to the next leader
			default:
				e.log.Warn("event cycle could not run; its events come back from the queue", "err", err)
				ok = false
			}
			if out != nil {
				requeue = out.RequeueAfter
			}
		}
		for _, m := range acting {
			switch {
			case ok:
				done = append(done, m.handle)
			case m.receives >= maxReceives:
				q.count(EventFailed, 1)
				done = append(done, m.handle)
			}
		}
	}
	if len(done) > 0 {
		if err := q.delete(ctx, done); err != nil && ctx.Err() == nil {
			e.log.Warn("events handled but left in the queue: they come back, and change nothing twice", "err", err)
		}
	}
	return requeue
}

// notice maps events to the resources of installed tables they name (by
// each table's Noticer), with who made the newest call about each; it
// drops, and counts, the sidecar's own events, those that change nothing
// and those about no installed table. done: the messages to delete now;
// acting: those the cycle is for.
func (e *Engine) notice(ctx context.Context, msgs []message, installed []reconcile.Table) (noticed map[string]map[string]*snapshot.Attribution, regions map[string]map[string]bool, done []string, acting []message) {
	q := e.queue
	own, key := e.ownARN(), e.accessKey(ctx)
	noticed, regions = map[string]map[string]*snapshot.Attribution{}, map[string]map[string]bool{}
	counts := map[string]int{}
	for _, m := range msgs {
		outcome := EventNoticed
		switch {
		case m.err != nil:
			outcome = EventInvalid
			e.log.Debug("events queue: message dropped", "err", m.err)
		case m.record.byIdentity(own, key):
			outcome = EventOwn // its change is in the rows already: the sidecar made it
		case !m.record.mutating():
			outcome = EventDropped
		default:
			ev, who := m.record.event(), m.record.attribution()
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
