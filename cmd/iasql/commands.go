package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge"
	"github.com/iasql/iasql/bridge/execute"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/metrics"
	"github.com/iasql/iasql/modules"
	iasqlsql "github.com/iasql/iasql/sql"
)

const dsnHelp = "PostgreSQL connection string, e.g. postgres://user@host:5432/db; give the password in PGPASSWORD, ~/.pgpass, IASQL_DSN or --dsn-file, not on the command line (ps shows it)"

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("run", "Run the sidecar in the foreground: install or upgrade the SQL objects, then capture\nchanges to registered tables into iasql_audit_log. Several sidecars may run against one\ndatabase: one captures, the others wait and take over when it stops.",
		"  iasql run --dsn postgres://iasql_sidecar@db:5432/app\n  IASQL_DSN=postgres://iasql_sidecar@db/app iasql run --log-format json\n  iasql run --events-queue https://sqs.us-east-1.amazonaws.com/123456789012/iasql-events", stderr)
	dsnOf := dsnFlags(f, stderr)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	interval := f.String("interval", "IASQL_INTERVAL", "2m", "time between automatic cycles")
	timeout := f.String("cycle-timeout", "IASQL_CYCLE_TIMEOUT", "45m", "a cycle running longer is cancelled and recorded as timed out")
	concurrency := f.String("cloud-concurrency", "IASQL_CLOUD_CONCURRENCY", fmt.Sprint(execute.DefaultCloudConcurrency), "cloud changes in flight at once per module and region")
	txTimeout := f.String("transaction-timeout", "IASQL_TRANSACTION_TIMEOUT", bridge.DefaultTransactionTimeout.String(), "an iasql transaction (iasql_begin) whose session ends, or stays idle this long, is rolled back")
	retention := f.String("audit-retention", "IASQL_AUDIT_RETENTION", bridge.DefaultAuditRetention.String(), "how long iasql_audit_log keeps history: older rows, once enacted, are deleted hourly (0 keeps everything)")
	leader := f.String("leader-timeout", "IASQL_LEADER_TIMEOUT", logical.DefaultLeaderTimeout.String(), "a sidecar silent this long (frozen, cut off) loses leadership to a standby; its sessions are ended by PostgreSQL")
	eventsQueue := f.String("events-queue", "IASQL_EVENTS_QUEUE", "", "URL of the SQS queue an EventBridge rule delivers CloudTrail's events to (\"AWS API Call via CloudTrail\"): changes made in AWS reach the rows within seconds, with who made them (README: Events); default: none")
	eventsInterval := f.String("events-interval", "IASQL_EVENTS_INTERVAL", bridge.DefaultEventsInterval.String(), "time between scheduled full reads while the events queue can be read (at least --interval); when it cannot, --interval applies")
	trailLookups := f.String("trail-lookups", "IASQL_TRAIL_LOOKUPS", "", "changes a cycle finds with no event that it looks up in CloudTrail (LookupEvents, 2 a second per region) to record who made them, at most per cycle (default: 10 with --events-queue, else 0)")
	metricsListen := f.String("metrics-listen", "IASQL_METRICS_LISTEN", "", "serve Prometheus metrics (/metrics) and /healthz on this host:port, e.g. 127.0.0.1:9187 (default: off)")
	logger := logFlags(f, stderr)
	f.environment = envPostgres + envAWS + envModules + envProfile
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	dsn, err := dsnOf()
	if err != nil {
		return err
	}
	lt, err := positiveDuration("--leader-timeout", *leader)
	if err != nil {
		return err
	}
	if lt < logical.MinLeaderTimeout {
		return fmt.Errorf("--leader-timeout %s: give at least %s", lt, logical.MinLeaderTimeout)
	}
	ret, err := time.ParseDuration(*retention)
	if err != nil || ret < 0 {
		return fmt.Errorf("--audit-retention %q: give a duration such as 720h (30 days), or 0 to keep everything", *retention)
	}
	iv, err := positiveDuration("--interval", *interval)
	if err != nil {
		return err
	}
	to, err := positiveDuration("--cycle-timeout", *timeout)
	if err != nil {
		return err
	}
	cc, err := strconv.Atoi(*concurrency)
	if err != nil || cc < 1 {
		return fmt.Errorf("--cloud-concurrency %q: give a whole number of 1 or more", *concurrency)
	}
	tt, err := positiveDuration("--transaction-timeout", *txTimeout)
	if err != nil {
		return err
	}
	ei, err := positiveDuration("--events-interval", *eventsInterval)
	if err != nil {
		return err
	}
	lookups := 0
	if *eventsQueue != "" {
		lookups = 10
	}
	if *trailLookups != "" {
		if lookups, err = strconv.Atoi(*trailLookups); err != nil || lookups < 0 {
			return fmt.Errorf("--trail-lookups %q: give a whole number of 0 or more", *trailLookups)
		}
	}
	if *eventsQueue != "" {
		if u, err := url.Parse(*eventsQueue); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return fmt.Errorf("--events-queue %q: give the queue's URL, e.g. https://sqs.us-east-1.amazonaws.com/123456789012/iasql-events", *eventsQueue)
		}
	}
	var listener net.Listener
	if *metricsListen != "" {
		if listener, err = metrics.Listen(*metricsListen); err != nil {
			return err
		}
		defer listener.Close()
	}
	// The SDK's standard chain, as sidecar.Run would load it, with a debug
	// line per cloud call (and, with metrics, their count).
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("load AWS configuration (AWS_REGION, credentials, AWS_ENDPOINT_URL): %w", err)
	}
	metrics.LogCalls(&awsCfg, log)
	cfg := sidecar.Config{DSN: dsn, Slot: *slot, Logger: log, Interval: iv, CycleTimeout: to, CloudConcurrency: cc, LeaderTimeout: lt, AuditRetention: ret,
		TransactionTimeout: tt, Modules: modules.All(), Catalogs: modules.Catalogs(), AWS: &awsCfg,
		EventsQueue: *eventsQueue, EventsInterval: ei, TrailLookups: lookups}
	// A signal (SIGTERM, Ctrl-C) is logged when it arrives, before what
	// stopping takes, and the end once everything has stopped.
	logged := make(chan struct{})
	stopLog := context.AfterFunc(ctx, func() {
		defer close(logged)
		log.Info("stopping", "cause", context.Cause(ctx).Error())
	})
	if listener == nil {
		err = sidecar.Run(ctx, cfg)
	} else {
		err = runWithMetrics(ctx, cfg, listener)
	}
	if !stopLog() {
		<-logged
		if err == nil {
			log.Info("stopped")
		}
	}
	return err
}

// runWithMetrics runs the sidecar and serves its metrics on l until ctx
// ends or the sidecar stops; it returns once both have.
func runWithMetrics(ctx context.Context, cfg sidecar.Config, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	name := cfg.Slot
	if name == "" {
		pc, err := pgx.ParseConfig(cfg.DSN)
		if err != nil {
			return sidecar.Run(ctx, cfg) // says what is wrong with the DSN
		}
		name = logical.SlotName(pc.Database)
	}
	m, err := metrics.New(ctx, cfg.DSN, name)
	if err != nil {
		return err
	}
	defer m.Close()
	m.Instrument(cfg.AWS)
	cfg.OnReady = m.SetLeader
	if cfg.EventsQueue != "" {
		m.SetQueue(cfg.EventsQueue)
		cfg.EventsMeter = m
	}
	served := make(chan error, 1)
	go func() {
		err := metrics.Serve(ctx, l, m.Handler(cfg.Logger))
		if err != nil {
			cancel() // the sidecar stops too: one line says why
		}
		served <- err
	}()
	cfg.Logger.Info("serving metrics", "addr", l.Addr().String())
	err = sidecar.Run(ctx, cfg)
	cancel()
	if serr := <-served; err == nil && serr != nil {
		err = serr
	}
	return err
}

func cmdInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("install", "Install (or upgrade) iasql's SQL objects as plain SQL, for managed databases that allow\nno custom extensions. Where the server has the extension files, CREATE EXTENSION iasql\ndoes the same. Creates the roles iasql_admin, iasql_writer and iasql_reader when missing\n(they are cluster-wide). With --sidecar-role, makes that role the sidecar's and grants it\nwhat 'iasql run' needs, so the sidecar needs no superuser (it still needs REPLICATION).\nBoth happen in one transaction: when the installing role lacks a right (to hand the\nsidecar's role the publication it must be able to SET ROLE to it), nothing changes and\none line names each GRANT to run.",
		"  iasql install --dsn postgres://admin@db:5432/app\n  iasql install --dsn postgres://admin@db:5432/app --sidecar-role iasql_sidecar", stderr)
	dsnOf := dsnFlags(f, stderr)
	f.environment = envPostgres
	sidecarRole := f.String("sidecar-role", "IASQL_SIDECAR_ROLE", "", "role 'iasql run' will connect as (default: the installing role); it is granted what the sidecar needs")
	conn, err := parseAndConnect(ctx, f, args, dsnOf)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		return err
	}
	// The objects and the sidecar's grants in one transaction: all or nothing.
	var did, said string
	if !in.Extension || in.Version != iasqlsql.Version {
		did, said, err = iasqlsql.InstallPlainFor(ctx, conn, *sidecarRole)
	} else if *sidecarRole != "" {
		said, err = iasqlsql.GrantSidecar(ctx, conn, *sidecarRole)
	}
	if err != nil {
		return err
	}
	if did == "" {
		did = "iasql " + iasqlsql.Version + " is already installed"
	}
	fmt.Fprintln(stdout, did)
	if said != "" {
		fmt.Fprintln(stdout, said)
	}
	return nil
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("status", `Show capture and sync health: the slot, its wal_status and the WAL it retains (with
safe_wal_size and max_slot_wal_keep_size; a warning at extended or unreserved), the
server's other iasql_* slots, the consumer, the last captured change, the last cycle and
the records not in sync (iasql_status) by state.
Exit status: 0 healthy; 1 capture is not healthy (no slot, slot lost, or no consumer);
2 capture is healthy but the last cycle failed or records are failing.`,
		"  iasql status --dsn postgres://iasql_sidecar@db:5432/app\n  iasql status --json | jq .slot.wal_status", stderr)
	dsnOf := dsnFlags(f, stderr)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	asJSON := f.Bool("json", "IASQL_STATUS_JSON", false, "print one JSON object instead of text")
	f.environment = envPostgres
	conn, err := parseAndConnect(ctx, f, args, dsnOf)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	name := *slot
	if name == "" {
		name = logical.SlotName(conn.Config().Database)
	}
	h, err := metrics.ReadHealth(ctx, conn, name)
	if err != nil {
		return err
	}
	// Changes committed but not captured yet (no sidecar streams) are
	// pending too, though iasql_status shows them only once captured.
	h.CountUncaptured(ctx, conn)
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		return err
	}
	var engine *engineStatus
	if in.Version != "" {
		if engine, err = readEngineStatus(ctx, conn); err != nil {
			return err
		}
	}
	capture, sync := h.CaptureProblem(), h.SyncProblem()
	if *asJSON {
		if err := printStatusJSON(stdout, h, in, engine, capture, sync); err != nil {
			return err
		}
	} else {
		printStatus(stdout, h, in, engine, capture, sync, time.Now())
	}
	switch {
	case capture != "":
		return fmt.Errorf("capture is not healthy: %s", capture)
	case sync != "":
		return &exitError{code: 2, err: fmt.Errorf("sync is not healthy: %s", sync)}
	}
	return nil
}

// statusJSON is what status --json prints.
type statusJSON struct {
	*metrics.Health
	Installed     string        `json:"installed"`
	Engine        *engineStatus `json:"engine,omitempty"`
	Capture       string        `json:"capture"` // healthy, not healthy
	CaptureReason string        `json:"capture_problem,omitempty"`
	Sync          string        `json:"sync"` // healthy, not healthy, unknown (records not readable)
	SyncReason    string        `json:"sync_problem,omitempty"`
	Warnings      []string      `json:"warnings"`
	LastCycleSecs *float64      `json:"last_cycle_duration_seconds"`
}

func printStatusJSON(w io.Writer, h *metrics.Health, in iasqlsql.Installed, engine *engineStatus, capture, sync string) error {
	out := statusJSON{Health: h, Installed: installedString(in), Engine: engine, Capture: "healthy", CaptureReason: capture, Sync: "healthy", SyncReason: sync, Warnings: h.Warnings()}
	if capture != "" {
		out.Capture = "not healthy"
	}
	switch {
	case sync != "":
		out.Sync = "not healthy"
	case h.Records == nil:
		out.Sync = "unknown"
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if h.OtherSlots == nil {
		h.OtherSlots = []metrics.Slot{}
	}
	if h.LastCycle != nil && h.LastCycle.Duration > 0 {
		secs := h.LastCycle.Duration.Seconds()
		out.LastCycleSecs = &secs
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("write status: %w", err)
	}
	return nil
}

func installedString(in iasqlsql.Installed) string {
	if in.Version == "" {
		return "not installed"
	}
	if in.Extension {
		return in.Version + " (extension)"
	}
	return in.Version + " (plain SQL)"
}

// printStatus prints the status as text, one "name: value" line each.
func printStatus(w io.Writer, h *metrics.Health, in iasqlsql.Installed, engine *engineStatus, capture, sync string, now time.Time) {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	bytes := func(p *int64) string {
		if p == nil {
			return "-"
		}
		return fmt.Sprintf("%d (%s)", *p, metrics.Bytes(*p))
	}
	line := func(name, format string, args ...any) {
		label := name + ":"
		if len(label) < 20 {
			label += strings.Repeat(" ", 20-len(label))
		} else {
			label += " "
		}
		fmt.Fprintf(w, "%s%s\n", label, fmt.Sprintf(format, args...))
	}
	line("iasql objects", "%s", installedString(in))
	s := h.Slot
	line("slot", "%s", s.Name)
	if !s.Exists {
		line("slot state", "missing")
	} else {
		line("wal_status", "%s", s.WALStatus)
		line("lag_bytes", "%s", bytes(s.LagBytes))
		line("retained_wal", "%s", bytes(s.RetainedBytes))
		line("safe_wal_size", "%s", bytes(s.SafeWALSize))
		line("confirmed_lsn", "%s", str(s.ConfirmedLSN))
		consumer := "none"
		if s.Active && s.ActivePID != nil {
			consumer = fmt.Sprintf("active (pid %d", *s.ActivePID)
			if s.Consumer != nil && *s.Consumer != "" {
				consumer += ", " + *s.Consumer
			}
			consumer += ")"
		}
		line("consumer", "%s", consumer)
	}
	keep := h.MaxSlotWALKeepSize
	if h.MaxSlotWALKeepBytes < 0 {
		keep += " (unlimited: a slot never loses WAL, and may fill the disk)"
	}
	line("max_slot_wal_keep_size", "%s", keep)
	others := "none"
	if len(h.OtherSlots) > 0 {
		var parts []string
		for _, o := range h.OtherSlots {
			state := "inactive"
			if o.Active {
				state = "active"
			}
			p := fmt.Sprintf("%s (database %s, %s, %s", o.Name, o.Database, state, o.WALStatus)
			if o.RetainedBytes != nil {
				p += ", retains " + metrics.Bytes(*o.RetainedBytes)
			}
			parts = append(parts, p+")")
		}
		others = strings.Join(parts, "; ")
	}
	line("other iasql slots", "%s", others)
	line("last_captured_lsn", "%s", str(h.CapturedLSN))
	commit := "-"
	if h.CommitTime != nil {
		commit = h.CommitTime.UTC().Format(time.RFC3339Nano) + " (" + ago(now, *h.CommitTime) + ")"
	}
	line("last_commit_time", "%s", commit)
	line("changes_captured", "%d", h.Changes)
	health := "healthy"
	if capture != "" {
		health = "NOT HEALTHY"
	}
	line("capture", "%s", health)
	if engine != nil {
		line("iasql transaction", "%s", engine.Transaction)
	}
	if in.Version != "" {
		cycle := "none yet"
		if h.CycleError != "" {
			cycle = "unknown"
		}
		if c := h.LastCycle; c != nil {
			cycle = fmt.Sprintf("%s (%s) %s", c.Ended.UTC().Format(time.RFC3339), ago(now, c.Ended), c.Outcome)
			if c.Duration > 0 {
				cycle += " in " + human(c.Duration)
			}
			if c.Summary != "" {
				cycle += ": " + c.Summary
			}
			if c.Error != "" {
				cycle += "; error: " + c.Error
			}
		}
		line("last cycle", "%s", cycle)
		if c := h.LastCycle; c != nil && c.Events != "" {
			line("events", "%s", c.Events)
		}
		if h.Records == nil {
			line("records", "unknown (see the warning)")
		} else {
			var parts []string
			for _, state := range []string{"pending", "in progress", "failed", "waiting", "unverified"} {
				p := fmt.Sprintf("%d %s", h.Records[state], state)
				if u := h.Uncaptured; state == "pending" && u != nil && u.Changes > 0 {
					more := ""
					if u.AtLeast {
						more = "at least "
					}
					p += fmt.Sprintf(" (%s%d not captured yet)", more, u.Changes)
				}
				parts = append(parts, p)
			}
			line("records", "%s", strings.Join(parts, ", "))
		}
		sh := "healthy"
		switch {
		case sync != "":
			sh = "NOT HEALTHY"
		case h.CycleError != "":
			sh = "unknown: the last cycle cannot be read"
		case h.Records == nil:
			sh = "unknown: the last cycle is fine, the records cannot be read"
		}
		line("sync", "%s", sh)
		line("deprecated calls", "%s", engine.Deprecated)
	}
	for _, warn := range h.Warnings() {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
}

// trimZeroSeconds turns 5m0s into 5m and 2h5m0s into 2h5m.
func trimZeroSeconds(s string) string {
	if strings.HasSuffix(s, "m0s") {
		return strings.TrimSuffix(s, "0s")
	}
	return s
}

// ago says how long before now t was, in human units.
func ago(now, t time.Time) string {
	d := now.Sub(t)
	if d < 0 {
		return "in the future"
	}
	return human(d) + " ago"
}

// human renders a duration for people: 850ms, 12.3s, 4m10s, 2h5m, 3d4h.
func human(d time.Duration) string {
	switch {
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return trimZeroSeconds(d.Round(time.Second).String())
	case d < 48*time.Hour:
		return trimZeroSeconds(d.Round(time.Minute).String())
	}
	days := d / (24 * time.Hour)
	return fmt.Sprintf("%dd%dh", days, (d-days*24*time.Hour)/time.Hour)
}

func positiveDuration(flag, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid %s %q: give a positive duration such as 30s, 2m or 1h", flag, v)
	}
	return d, nil
}

// engineStatus is the iasql transaction and the deprecated calls.
type engineStatus struct {
	Transaction string `json:"iasql_transaction"`
	Deprecated  string `json:"deprecated_calls"`
}

// readEngineStatus reads the iasql transaction and the calls of deprecated
// functions; both "unknown" for a role that may not read them (they are
// iasql_reader's, and ReadHealth's warnings say so).
func readEngineStatus(ctx context.Context, conn *pgx.Conn) (*engineStatus, error) {
	var e engineStatus
	var pe *pgconn.PgError
	var err error
	e.Transaction, e.Deprecated, err = store.EngineSummary(ctx, conn)
	if errors.As(err, &pe) && pe.Code == "42501" {
		return &engineStatus{Transaction: "unknown", Deprecated: "unknown"}, nil
	}
	if err != nil {
		return nil, err
	}
	return &e, nil
}
