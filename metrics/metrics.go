package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/iasql/iasql/bridge/store"
)

// CycleBuckets are the upper bounds, in seconds, of the cycle duration
// histogram: from a quiet scheduled cycle to the cycle timeout.
var CycleBuckets = []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 2700}

// ScrapeTimeout bounds the database reads of one scrape.
const ScrapeTimeout = 10 * time.Second

// Metrics is one sidecar's metrics: a registry of its own (never the
// global one), the cloud calls it counted, whether it leads, and a
// collector that reads the rest from the database at scrape time over a
// small pool of its own.
type Metrics struct {
	reg    *prometheus.Registry
	pool   *pgxpool.Pool
	slot   string
	calls  *prometheus.CounterVec
	events *prometheus.CounterVec
	queue  *prometheus.GaugeVec
	// queueURL is the events queue's (SetQueue, before the sidecar runs).
	queueURL string
	leader   atomic.Bool
	dbc      *dbCollector
}

// New connects a pool of at most two sessions to dsn and registers the
// sidecar's metrics for slot. ctx bounds the collector's reads (with
// ScrapeTimeout each); Close releases the pool.
func New(ctx context.Context, dsn, slot string) (*Metrics, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("metrics: parse DSN: %w", err)
	}
	cfg.MaxConns = 2
	cfg.MinConns = 0
	cfg.MaxConnIdleTime = time.Minute
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = "iasql metrics"
	cfg.ConnConfig.RuntimeParams["search_path"] = "pg_catalog, public"
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("metrics: connect: %w", err)
	}
	m := &Metrics{
		reg:  prometheus.NewRegistry(),
		pool: pool,
		slot: slot,
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iasql_cloud_calls_total",
			Help: "Cloud API calls made by this sidecar (SDK retries included in one call), by service, operation and outcome (ok, throttled, client_error, server_error, canceled, error).",
		}, []string{"service", "operation", "outcome"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "iasql_events_total",
			Help: "AWS change events read from the events queue (--events-queue), by outcome: noticed (about resources of installed tables: read by an event cycle), dropped (about none, or changing nothing), own (the sidecar's own calls), invalid (not a CloudTrail record), failed (given up after repeated deliveries).",
		}, []string{"outcome"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "iasql_events_queue_readable",
			Help: "1 when the last receive from the events queue worked, 0 when it failed (deleted, denied): full reads then run at the normal interval. Absent without a queue.",
		}, []string{"queue"}),
	}
	m.dbc = &dbCollector{ctx: ctx, m: m, since: time.Now(), outcomes: map[string]float64{}, buckets: make([]uint64, len(CycleBuckets))}
	m.reg.MustRegister(m.calls, m.events, m.queue, m.dbc,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m, nil
}

// Close releases the pool.
func (m *Metrics) Close() { m.pool.Close() }

// Registry is where the metrics are registered (to add more, or to gather
// in a test).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetLeader records that this sidecar took leadership (sidecar.Config.OnReady).
func (m *Metrics) SetLeader() { m.leader.Store(true) }

// Events counts n events read from the events queue by outcome
// (bridge.EventsMeter).
func (m *Metrics) Events(outcome string, n int) { m.events.WithLabelValues(outcome).Add(float64(n)) }

// QueueReadable records whether the last receive from the events queue
// worked (bridge.EventsMeter); the queue is named once known (SetQueue).
func (m *Metrics) QueueReadable(ok bool) {
	m.queue.WithLabelValues(m.queueURL).Set(b2f(ok))
}

// SetQueue names the events queue the sidecar reads.
func (m *Metrics) SetQueue(url string) { m.queueURL = url }

// Instrument adds to cfg the middleware that counts every cloud call made
// with it (and with the clients made from it).
func (m *Metrics) Instrument(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("iasqlMetrics",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				if service == "" {
					service = "unknown"
				}
				if op == "" {
					op = "unknown"
				}
				m.calls.WithLabelValues(service, op, Outcome(err)).Inc()
				return out, md, err
			}), middleware.After)
	})
}

// LogCalls adds to cfg a middleware that logs every cloud call made with
// it at debug level: service, operation, outcome, duration and, for a
// failure, the error. It costs nothing while debug is off.
func LogCalls(cfg *aws.Config, log *slog.Logger) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("iasqlLogCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if !log.Enabled(ctx, slog.LevelDebug) {
					return next.HandleInitialize(ctx, in)
				}
				start := time.Now()
				out, md, err := next.HandleInitialize(ctx, in)
				attrs := []any{"service", awsmiddleware.GetServiceID(ctx), "operation", awsmiddleware.GetOperationName(ctx),
					"region", awsmiddleware.GetRegion(ctx), "outcome", Outcome(err), "duration", time.Since(start)}
				if err != nil {
					attrs = append(attrs, "err", err)
				}
				log.DebugContext(ctx, "cloud call", attrs...)
				return out, md, err
			}), middleware.After)
	})
}

// Outcome classifies the result of a cloud call: ok, throttled,
// client_error (4xx), server_error (5xx), canceled, or error (no answer).
func Outcome(err error) string {
	if err == nil {
		return "ok"
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return "canceled"
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		if _, ok := retry.DefaultThrottleErrorCodes[api.ErrorCode()]; ok {
			return "throttled"
		}
	}
	var resp *awshttp.ResponseError
	if errors.As(err, &resp) {
		switch code := resp.HTTPStatusCode(); {
		case code == http.StatusTooManyRequests:
			return "throttled"
		case code >= 500:
			return "server_error"
		case code >= 400:
			return "client_error"
		}
	}
	if api != nil {
		if api.ErrorFault() == smithy.FaultServer {
			return "server_error"
		}
		return "client_error"
	}
	return "error"
}

// Handler serves /metrics and /healthz. /healthz answers 200 when the
// database answers and the slot is not lost, 503 (with the reason)
// otherwise; its body says whether this sidecar leads.
func (m *Metrics) Handler(log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.Default()
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{log}, ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), ScrapeTimeout)
		defer cancel()
		h, err := ReadHealth(ctx, m.pool, m.slot)
		switch {
		case err != nil:
			http.Error(w, "database: "+err.Error(), http.StatusServiceUnavailable)
			return
		case h.Slot.Exists && h.Slot.WALStatus == "lost":
			http.Error(w, h.CaptureProblem(), http.StatusServiceUnavailable)
			return
		}
		role := "standby"
		if m.leader.Load() {
			role = "leader"
		}
		fmt.Fprintln(w, "ok", role)
	})
	return mux
}

type slogPrinter struct{ log *slog.Logger }

func (p slogPrinter) Println(v ...any) { p.log.Warn("metrics: " + fmt.Sprint(v...)) }

// Listen checks addr (host:port) and listens on it, so that a bad address
// is refused before anything else starts.
func Listen(addr string) (net.Listener, error) {
	_, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" {
		return nil, fmt.Errorf("invalid --metrics-listen %q: give host:port, e.g. 127.0.0.1:9187", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--metrics-listen %s: %w", addr, err)
	}
	return l, nil
}

// Serve serves h on l until ctx ends, then shuts the server down (waiting
// up to 5 s for scrapes in flight) and returns.
func Serve(ctx context.Context, l net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return fmt.Errorf("metrics server: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		return fmt.Errorf("metrics server shutdown: %w", err)
	}
	return nil
}

// dbCollector reads, at each scrape, what the database knows: capture,
// slot, records not in sync, and the cycles that ended since it started.
type dbCollector struct {
	ctx context.Context
	m   *Metrics

	mu       sync.Mutex // one scrape at a time; guards what follows
	since    time.Time  // cycles that ended before are not counted
	lastID   int64      // the newest cycle end counted
	outcomes map[string]float64
	count    uint64
	sum      float64
	buckets  []uint64 // per CycleBuckets, not cumulative
}

var (
	descLagBytes      = prometheus.NewDesc("iasql_capture_lag_bytes", "WAL written since the slot's confirmed position: what capture has not recorded yet.", nil, nil)
	descLagSeconds    = prometheus.NewDesc("iasql_capture_lag_seconds", "For the last captured transaction, the time from its commit to its audit rows.", nil, nil)
	descLastCommit    = prometheus.NewDesc("iasql_capture_last_commit_timestamp_seconds", "Commit time of the last captured transaction.", nil, nil)
	descChanges       = prometheus.NewDesc("iasql_changes_captured_total", "Changes captured into iasql_audit_log through the slot.", nil, nil)
	descSlotActive    = prometheus.NewDesc("iasql_slot_active", "1 while a sidecar streams from the slot.", nil, nil)
	descSlotStatus    = prometheus.NewDesc("iasql_slot_wal_status", "1 for the slot's wal_status (reserved, extended, unreserved, lost; missing when the slot does not exist).", []string{"wal_status"}, nil)
	descRetained      = prometheus.NewDesc("iasql_slot_retained_wal_bytes", "WAL the server keeps for the slot (current position minus restart_lsn).", nil, nil)
	descSafeWAL       = prometheus.NewDesc("iasql_slot_safe_wal_size_bytes", "WAL that can still be written before the slot is in danger of losing WAL (absent when max_slot_wal_keep_size is -1).", nil, nil)
	descKeepSize      = prometheus.NewDesc("iasql_max_slot_wal_keep_size_bytes", "The server's max_slot_wal_keep_size (-1: unlimited).", nil, nil)
	descRecords       = prometheus.NewDesc("iasql_records", "Records not in sync (iasql_status), by state: pending, in progress, failed, waiting, unverified.", []string{"state"}, nil)
	descCycles        = prometheus.NewDesc("iasql_cycles_total", "Cycles that ended since this sidecar started (by whichever sidecar ran them), by outcome.", []string{"outcome"}, nil)
	descCycleDuration = prometheus.NewDesc("iasql_cycle_duration_seconds", "Duration of the cycles that ended since this sidecar started.", nil, nil)
	descLastCycle     = prometheus.NewDesc("iasql_last_cycle_end_timestamp_seconds", "When the last cycle ended, by its outcome.", []string{"outcome"}, nil)
	descLeader        = prometheus.NewDesc("iasql_leader", "1 while this sidecar leads (it took capture leadership and the capture lock is held), 0 while it stands by.", nil, nil)
	descUp            = prometheus.NewDesc("iasql_database_up", "1 when the scrape could read the database.", nil, nil)
	descRefused       = prometheus.NewDesc("iasql_requests_refused_total", "Requests the sidecar refused (iasql_request_refusals, counted, never stored), by reason: role (lacks the role the request needs) or rate (over its role's rate).", []string{"reason"}, nil)
)

func (c *dbCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLagBytes, descLagSeconds, descLastCommit, descChanges, descSlotActive, descSlotStatus,
		descRetained, descSafeWAL, descKeepSize, descRecords, descCycles, descCycleDuration, descLastCycle, descLeader, descUp, descRefused} {
		ch <- d
	}
}

func (c *dbCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.ctx, ScrapeTimeout)
	defer cancel()
	err := c.collect(ctx, ch)
	up := 1.0
	if err != nil {
		up = 0
		ch <- prometheus.NewInvalidMetric(descUp, err)
	}
	ch <- prometheus.MustNewConstMetric(descUp, prometheus.GaugeValue, up)
}

func (c *dbCollector) collect(ctx context.Context, ch chan<- prometheus.Metric) error {
	h, err := ReadHealth(ctx, c.m.pool, c.m.slot)
	if err != nil {
		return err
	}
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	s := h.Slot
	if s.Exists {
		gauge(descSlotStatus, 1, s.WALStatus)
		gauge(descSlotActive, b2f(s.Active))
		if s.LagBytes != nil {
			gauge(descLagBytes, float64(*s.LagBytes))
		}
		if s.RetainedBytes != nil {
			gauge(descRetained, float64(*s.RetainedBytes))
		}
		if s.SafeWALSize != nil {
			gauge(descSafeWAL, float64(*s.SafeWALSize))
		}
	} else {
		gauge(descSlotActive, 0)
	}
	gauge(descKeepSize, float64(h.MaxSlotWALKeepBytes))
	ch <- prometheus.MustNewConstMetric(descChanges, prometheus.CounterValue, float64(h.Changes))
	if h.CommitTime != nil {
		gauge(descLastCommit, float64(h.CommitTime.UnixNano())/1e9)
		if h.CapturedAt != nil {
			gauge(descLagSeconds, max(0, h.CapturedAt.Sub(*h.CommitTime).Seconds()))
		}
	}
	if h.Records != nil { // nil: this role may not read iasql_status
		for _, state := range []string{"pending", "in progress", "failed", "waiting", "unverified"} {
			gauge(descRecords, float64(h.Records[state]), state)
		}
	}
	if h.LastCycle != nil {
		gauge(descLastCycle, float64(h.LastCycle.Ended.UnixNano())/1e9, h.LastCycle.Outcome)
	}
	var held bool
	if h.Version != "" {
		if err := c.cycles(ctx); err != nil {
			return err
		}
		var err error
		if held, err = store.LockHeld(ctx, c.m.pool, store.LockCapture); err != nil {
			return fmt.Errorf("read capture leadership: %w", err)
		}
		role, rate, err := store.RefusalTotals(ctx, c.m.pool)
		if err != nil {
			return err
		}
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(role), "role")
		ch <- prometheus.MustNewConstMetric(descRefused, prometheus.CounterValue, float64(rate), "rate")
	}
	gauge(descLeader, b2f(held && c.m.leader.Load()))
	for _, o := range []string{"done", "failed", "timeout", "interrupted"} {
		ch <- prometheus.MustNewConstMetric(descCycles, prometheus.CounterValue, c.outcomes[o], o)
	}
	cum := map[float64]uint64{}
	var n uint64
	for i, b := range CycleBuckets {
		n += c.buckets[i]
		cum[b] = n
	}
	ch <- prometheus.MustNewConstHistogram(descCycleDuration, c.count, c.sum, cum)
	return nil
}

// cycles counts the cycle ends recorded since the last scrape (at most one
// cycle runs at a time, so they commit in id order).
func (c *dbCollector) cycles(ctx context.Context) error {
	ends, err := store.CycleEnds(ctx, c.m.pool, c.lastID, c.since)
	if err != nil {
		return err
	}
	for _, e := range ends {
		c.lastID = e.ID
		c.outcomes[e.Outcome]++
		if !e.Started {
			continue // its start is gone (retention): no duration
		}
		secs := e.Duration.Seconds()
		c.count++
		c.sum += secs
		for i, b := range CycleBuckets {
			if secs <= b {
				c.buckets[i]++
				break
			}
		}
	}
	return nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
