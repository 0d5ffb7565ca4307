package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/modules"
	iasqlsql "github.com/iasql/iasql/sql"
)

const dsnHelp = "PostgreSQL connection string, e.g. postgres://user@host:5432/db; give the password in PGPASSWORD, ~/.pgpass, IASQL_DSN or --dsn-file, not on the command line (ps shows it)"

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("run", "Run the sidecar in the foreground: install or upgrade the SQL objects, then capture\nchanges to registered tables into iasql_audit_log. Several sidecars may run against one\ndatabase: one captures, the others wait and take over when it stops.",
		"  iasql run --dsn postgres://iasql@db:5432/app\n  IASQL_DSN=postgres://iasql@db/app iasql run --log-format json", stderr)
	dsnOf := dsnFlags(f, stderr)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	interval := f.String("interval", "IASQL_INTERVAL", "2m", "time between automatic cycles")
	timeout := f.String("cycle-timeout", "IASQL_CYCLE_TIMEOUT", "45m", "a cycle running longer is cancelled and recorded as timed out")
	concurrency := f.String("cloud-concurrency", "IASQL_CLOUD_CONCURRENCY", fmt.Sprint(bridge.DefaultCloudConcurrency), "cloud changes in flight at once per module and region")
	retention := f.String("audit-retention", "IASQL_AUDIT_RETENTION", bridge.DefaultAuditRetention.String(), "how long iasql_audit_log keeps history: older rows, once enacted, are deleted hourly (0 keeps everything)")
	leader := f.String("leader-timeout", "IASQL_LEADER_TIMEOUT", logical.DefaultLeaderTimeout.String(), "a sidecar silent this long (frozen, cut off) loses leadership to a standby; its sessions are ended by PostgreSQL")
	logger := logFlags(f, stderr)
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
	return bridge.Run(ctx, bridge.Config{DSN: dsn, Slot: *slot, Logger: log, Interval: iv, CycleTimeout: to, CloudConcurrency: cc, LeaderTimeout: lt, AuditRetention: ret, Modules: modules.All()})
}

func cmdInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("install", "Install (or upgrade) iasql's SQL objects as plain SQL, for managed databases that allow\nno custom extensions. Where the server has the extension files, CREATE EXTENSION iasql\ndoes the same. Creates the roles iasql_admin, iasql_writer and iasql_reader when missing\n(they are cluster-wide). With --sidecar-role, makes that role the sidecar's and grants it\nwhat 'iasql run' needs, so the sidecar needs no superuser (it still needs REPLICATION).",
		"  iasql install --dsn postgres://admin@db:5432/app\n  iasql install --dsn postgres://admin@db:5432/app --sidecar-role iasql_sidecar", stderr)
	dsnOf := dsnFlags(f, stderr)
	sidecarRole := f.String("sidecar-role", "IASQL_SIDECAR_ROLE", "", "role 'iasql run' will connect as (default: the installing role); it is granted what the sidecar needs")
	if err := f.parse(args); err != nil {
		return err
	}
	dsn, err := dsnOf()
	if err != nil {
		return err
	}
	conn, err := bridge.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		return err
	}
	var did string
	if !in.Extension || in.Version != iasqlsql.Version {
		if did, err = iasqlsql.InstallPlain(ctx, conn); err != nil {
			return err
		}
	}
	if did == "" {
		did = "iasql " + iasqlsql.Version + " is already installed"
	}
	fmt.Fprintln(stdout, did)
	if *sidecarRole != "" {
		var said string
		if err := conn.QueryRow(ctx, `SELECT public.iasql_grant_sidecar($1)`, *sidecarRole).Scan(&said); err != nil {
			return fmt.Errorf("grant role %s what the sidecar needs (run install as the role that installed iasql, or a superuser): %w", *sidecarRole, err)
		}
		fmt.Fprintln(stdout, said)
	}
	return nil
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("status", "Show the capture slot, its lag, the last captured change and whether a sidecar is\nconsuming. Exits 1 when capture is not healthy: no slot, slot lost, or no consumer.",
		"  iasql status --dsn postgres://iasql@db:5432/app", stderr)
	dsnOf := dsnFlags(f, stderr)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	if err := f.parse(args); err != nil {
		return err
	}
	dsn, err := dsnOf()
	if err != nil {
		return err
	}
	conn, err := bridge.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	name := *slot
	if name == "" {
		name = logical.SlotName(conn.Config().Database)
	}
	info, err := logical.ReadSlot(ctx, conn, name)
	if err != nil {
		return err
	}
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		return err
	}
	problem := printStatus(stdout, info, in)
	if in.Version != "" {
		if err := printEngineStatus(ctx, conn, stdout); err != nil {
			return err
		}
	}
	if problem != "" {
		return fmt.Errorf("capture is not healthy: %s", problem)
	}
	return nil
}

// printStatus prints the status and returns what makes it unhealthy, if anything.
func printStatus(w io.Writer, info logical.SlotInfo, in iasqlsql.Installed) string {
	str := func(p *string) string {
		if p == nil {
			return "-"
		}
		return *p
	}
	installed := "not installed"
	if in.Version != "" {
		installed = in.Version
		if in.Extension {
			installed += " (extension)"
		} else {
			installed += " (plain SQL)"
		}
	}
	fmt.Fprintf(w, "iasql objects:      %s\n", installed)
	fmt.Fprintf(w, "slot:               %s\n", info.Name)
	var problem string
	if !info.Exists {
		fmt.Fprintf(w, "slot state:         missing\n")
		problem = "replication slot " + info.Name + " does not exist: start 'iasql run', which creates it"
	} else {
		fmt.Fprintf(w, "wal_status:         %s\n", info.WALStatus)
		lag := "-"
		if info.LagBytes != nil {
			lag = fmt.Sprint(*info.LagBytes)
		}
		fmt.Fprintf(w, "lag_bytes:          %s\n", lag)
		fmt.Fprintf(w, "confirmed_lsn:      %s\n", str(info.ConfirmedLSN))
		consumer := "none"
		if info.Active && info.ActivePID != nil {
			consumer = fmt.Sprintf("active (pid %d)", *info.ActivePID)
		}
		fmt.Fprintf(w, "consumer:           %s\n", consumer)
		switch {
		case info.WALStatus == "lost":
			problem = "replication slot " + info.Name + " is lost (wal_status = lost): changes after " + str(info.CapturedLSN) + " cannot be captured; see 'iasql run' for how to recover"
		case !info.Active:
			problem = "no sidecar is consuming slot " + info.Name + ": start 'iasql run'"
		}
	}
	fmt.Fprintf(w, "last_captured_lsn:  %s\n", str(info.CapturedLSN))
	commit := "-"
	if info.CommitTime != nil {
		commit = info.CommitTime.UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "last_commit_time:   %s\n", commit)
	fmt.Fprintf(w, "changes_captured:   %d\n", info.Changes)
	health := "healthy"
	if problem != "" {
		health = "NOT HEALTHY"
	}
	fmt.Fprintf(w, "capture:            %s\n", health)
	return problem
}

func positiveDuration(flag, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid %s %q: give a positive duration such as 30s, 2m or 1h", flag, v)
	}
	return d, nil
}

// printEngineStatus prints the iasql transaction, the last cycle and the
// calls of deprecated functions.
func printEngineStatus(ctx context.Context, conn *pgx.Conn, w io.Writer) error {
	var tx, cycle, deprecated string
	err := conn.QueryRow(ctx, `
		SELECT coalesce((SELECT 'open since ' || to_char(opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' by ' || opened_by FROM public.iasql_transaction), 'none'),
		       coalesce((SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') || ' ' || (message::jsonb->>'outcome') || ': ' || (message::jsonb->>'summary')
		                   FROM public.iasql_audit_log WHERE change_type = 'CYCLE_END' ORDER BY id DESC LIMIT 1), 'none yet'),
		       coalesce((SELECT string_agg(function_name || ' ' || calls, ', ' ORDER BY function_name) FROM public.iasql_deprecated_calls), 'none')`).
		Scan(&tx, &cycle, &deprecated)
	if err != nil {
		return fmt.Errorf("read engine status: %w", err)
	}
	fmt.Fprintf(w, "iasql transaction:  %s\n", tx)
	fmt.Fprintf(w, "last cycle:         %s\n", cycle)
	fmt.Fprintf(w, "deprecated calls:   %s\n", deprecated)
	return nil
}
