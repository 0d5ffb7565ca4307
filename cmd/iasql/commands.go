package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/iasql/iasql/bridge"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/logical"
	iasqlsql "github.com/iasql/iasql/sql"
)

const dsnHelp = "PostgreSQL connection string, e.g. postgres://user:pass@host:5432/db"

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("run", "Run the sidecar in the foreground: install or upgrade the SQL objects, then capture\nchanges to registered tables into iasql_audit_log. Several sidecars may run against one\ndatabase: one captures, the others wait and take over when it stops.",
		"  iasql run --dsn postgres://iasql@db:5432/app\n  IASQL_DSN=postgres://iasql@db/app iasql run --log-format json", stderr)
	dsn := f.String("dsn", "IASQL_DSN", "", dsnHelp)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	interval := f.String("interval", "IASQL_INTERVAL", "2m", "time between automatic cycles")
	timeout := f.String("cycle-timeout", "IASQL_CYCLE_TIMEOUT", "45m", "a cycle running longer is cancelled and recorded as timed out")
	logger := logFlags(f, stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	iv, err := positiveDuration("--interval", *interval)
	if err != nil {
		return err
	}
	to, err := positiveDuration("--cycle-timeout", *timeout)
	if err != nil {
		return err
	}
	return bridge.Run(ctx, bridge.Config{DSN: *dsn, Slot: *slot, Logger: log, Interval: iv, CycleTimeout: to})
}

func cmdInstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("install", "Install (or upgrade) iasql's SQL objects as plain SQL, for managed databases that allow\nno custom extensions. Where the server has the extension files, CREATE EXTENSION iasql\ndoes the same.",
		"  iasql install --dsn postgres://admin@db:5432/app", stderr)
	dsn := f.String("dsn", "IASQL_DSN", "", dsnHelp)
	if err := f.parse(args); err != nil {
		return err
	}
	conn, err := bridge.Connect(ctx, *dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	did, err := iasqlsql.InstallPlain(ctx, conn)
	if err != nil {
		return err
	}
	if did == "" {
		did = "iasql " + iasqlsql.Version + " is already installed"
	}
	fmt.Fprintln(stdout, did)
	return nil
}

func cmdStatus(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("status", "Show the capture slot, its lag, the last captured change and whether a sidecar is\nconsuming. Exits 1 when capture is not healthy: no slot, slot lost, or no consumer.",
		"  iasql status --dsn postgres://iasql@db:5432/app", stderr)
	dsn := f.String("dsn", "IASQL_DSN", "", dsnHelp)
	slot := f.String("slot", "IASQL_SLOT", "", "logical replication slot (default iasql_<database>)")
	if err := f.parse(args); err != nil {
		return err
	}
	conn, err := bridge.Connect(ctx, *dsn)
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

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("demo", "Start a throwaway PostgreSQL cluster (from the installed server binaries) with the sidecar\nrunning against it, print how to connect and what to try, and stay up until Ctrl-C.\nEverything is removed on exit.",
		"  iasql demo", stderr)
	logger := logFlags(f, stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, "starting a throwaway PostgreSQL cluster...")
	c, err := pgcluster.Start(ctx, pgcluster.Options{Durable: true})
	if err != nil {
		return err
	}
	defer c.Destroy()
	admin, err := bridge.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE iasql")
	admin.Close(context.Background())
	if err != nil {
		return fmt.Errorf("create demo database: %w", err)
	}
	dsn := c.DSN("iasql")
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var once sync.Once
		errc <- bridge.Run(ctx, bridge.Config{DSN: dsn, Logger: log, OnReady: func() { once.Do(func() { close(ready) }) }})
	}()
	select {
	case err := <-errc:
		return err
	case <-ready:
	}
	fmt.Fprintf(stdout, `
iasql is capturing. Connect with:

  psql "%s"

and try:

  CREATE TABLE bucket (id serial PRIMARY KEY, name text NOT NULL, region text);
  INSERT INTO iasql_tables (table_name) VALUES ('bucket');
  INSERT INTO bucket (name, region) VALUES ('logs', 'us-east-1');
  SELECT id, change_type, table_name, record_id, new_row, origin FROM iasql_audit_log;

Status: bin/iasql status --dsn "%s"
Press Ctrl-C to stop (the cluster is removed).
`, dsn, dsn)
	err = <-errc
	fmt.Fprintln(stdout, strings.TrimSpace("stopped; removing the cluster"))
	return err
}

func positiveDuration(flag, v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("invalid %s %q: give a positive duration such as 30s, 2m or 1h", flag, v)
	}
	return d, nil
}
