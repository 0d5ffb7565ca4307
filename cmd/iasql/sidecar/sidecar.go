// Package sidecar composes the sidecar the binary runs: against one
// database it checks the server, installs or upgrades the SQL objects, and
// runs capture (package logical) with the engine (package bridge) leading
// while this sidecar holds capture leadership. Which modules it offers and
// which cloud configuration it uses are the caller's (cmd/iasql passes
// every module of its build).
package sidecar

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/modules/module"
	iasqlsql "github.com/iasql/iasql/sql"
)

// Config configures a sidecar.
type Config struct {
	DSN          string
	Slot         string // empty: logical.SlotName(database)
	Logger       *slog.Logger
	Interval     time.Duration // automatic cycles; default 2 minutes
	CycleTimeout time.Duration // default 45 minutes
	// CloudConcurrency bounds the cloud actions in flight per module and
	// region; default execute.DefaultCloudConcurrency.
	CloudConcurrency int
	// LeaderTimeout: a sidecar that stops making progress (frozen,
	// partitioned) loses capture and engine leadership within it; default
	// logical.DefaultLeaderTimeout (or IASQL_LEADER_TIMEOUT).
	LeaderTimeout time.Duration
	// AuditRetention: how long the audit trail keeps history (rows older
	// than this, and enacted, are deleted hourly); 0 keeps it all.
	AuditRetention time.Duration
	// TransactionTimeout: an iasql transaction whose owning session is idle
	// this long is rolled back; default DefaultTransactionTimeout.
	TransactionTimeout time.Duration
	// Modules offered. The binary composes the sidecar: it passes every
	// module of its build (modules.All).
	Modules []module.Module
	// Catalogs make modules on demand (modules.Catalogs: any Cloud Control
	// resource type).
	Catalogs []module.Catalog
	// AWS, when set, replaces the SDK's standard configuration chain.
	AWS *aws.Config
	// OnReady is called once the sidecar captures (it holds leadership).
	OnReady func()
	// EventsQueue, EventsInterval, EventsMeter, TrailLookups: AWS's
	// change events and who made changes (bridge.EngineConfig's).
	EventsQueue    string
	EventsInterval time.Duration
	EventsMeter    bridge.EventsMeter
	TrailLookups   int
}

// Run runs the sidecar in the foreground until ctx ends. Errors are one
// line that says what to do.
func Run(ctx context.Context, cfg Config) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	conn, err := Connect(ctx, cfg.DSN)
	if err != nil {
		return err
	}
	slot, err := Prepare(ctx, conn, cfg.Slot, cfg.Logger)
	conn.Close(context.Background())
	if err != nil {
		return err
	}
	var awsCfg aws.Config
	if cfg.AWS != nil {
		awsCfg = *cfg.AWS
	} else if awsCfg, err = config.LoadDefaultConfig(ctx); err != nil {
		return fmt.Errorf("load AWS configuration (AWS_REGION, credentials, AWS_ENDPOINT_URL): %w", err)
	}
	// A catalog whose tables default to the sidecar's region is told it
	// (the Cloud Control catalog: the region of rows without aws_account).
	for _, c := range cfg.Catalogs {
		if r, ok := c.(interface{ SetRegion(region string) }); ok {
			r.SetRegion(module.Scope{}.Or(awsCfg).Default)
		}
	}
	leaderTimeout, err := logical.ResolveLeaderTimeout(cfg.LeaderTimeout)
	if err != nil {
		cfg.Logger.Warn("ignoring an invalid leader timeout", "err", err, "leader_timeout", leaderTimeout)
	}
	// The engine leads while capture does (OnLeader), and hears what
	// capture delivers; capture is handed to it as each leadership starts.
	engine := bridge.NewEngine(bridge.EngineConfig{DSN: cfg.DSN, Logger: cfg.Logger, Modules: cfg.Modules, Catalogs: cfg.Catalogs, AWS: awsCfg,
		Interval: cfg.Interval, CycleTimeout: cfg.CycleTimeout, CloudConcurrency: cfg.CloudConcurrency, AuditRetention: cfg.AuditRetention,
		TransactionTimeout: cfg.TransactionTimeout, LeaderTimeout: leaderTimeout,
		EventsQueue: cfg.EventsQueue, EventsInterval: cfg.EventsInterval, EventsMeter: cfg.EventsMeter, TrailLookups: cfg.TrailLookups})
	capture := logical.New(logical.Config{DSN: cfg.DSN, Slot: slot, Logger: cfg.Logger, LeaderTimeout: leaderTimeout,
		OnLeader: func(ctx context.Context, c *logical.Capture) {
			if cfg.OnReady != nil {
				cfg.OnReady()
			}
			// The engine runs as long as this sidecar leads; if its own
			// session is lost, it starts again.
			for backoff := 200 * time.Millisecond; ctx.Err() == nil; backoff = min(2*backoff, 5*time.Second) {
				engine.Lead(ctx, c)
				select {
				case <-ctx.Done():
				case <-time.After(backoff):
				}
			}
		},
		OnMessage: engine.Message,
		OnIntent:  engine.Intent,
		Installed: func(ctx context.Context, conn *pgx.Conn) (bool, error) {
			in, err := iasqlsql.Detect(ctx, conn)
			return in.Version != "", err
		},
	})
	err = capture.Run(ctx)
	if errors.Is(err, logical.ErrRemoved) {
		return finishRemoval(ctx, cfg.DSN, slot, capture.LeaderTimeout(), cfg.Logger)
	}
	return err
}

// finishRemoval ends the sidecar of a database iasql was removed from while
// it ran (DROP EXTENSION iasql [CASCADE], which cannot drop what is not an
// object of the extension): it removes what would outlive iasql and what
// it can (the pg_cron job it scheduled, the publication when its role owns
// it, and its replication slot, which would otherwise keep WAL forever),
// says what it did, and stops. It does not install iasql again: a sidecar
// started anew does. Anything it could not remove, 'iasql uninstall'
// removes (and says so).
//
// It works in one transaction holding the install lock, and only while
// iasql is still absent: a sidecar restarted meanwhile that installs iasql
// again waits for it, or has installed it already, and then nothing is
// dropped (its new publication and slot are its own).
func finishRemoval(ctx context.Context, dsn, slot string, bound time.Duration, log *slog.Logger) error {
	conn, err := logical.Connect(ctx, dsn, "iasql capture", bound)
	if err != nil {
		return fmt.Errorf("iasql was removed from the database; remove its slot %s: %w", slot, err)
	}
	defer conn.Close(context.Background())
	var did, left []string
	again := false
	// try runs one removal in a savepoint: what fails is reported, and the
	// rest goes on.
	try := func(tx pgx.Tx, fn func(pgx.Tx) (string, error)) {
		err := pgx.BeginFunc(ctx, tx, func(sp pgx.Tx) error {
			what, err := fn(sp)
			if what != "" {
				did = append(did, what)
			}
			return err
		})
		if err != nil {
			left = append(left, err.Error())
		}
	}
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_catalog.set_config('lock_timeout', '5s', true)`); err != nil {
			return err
		}
		if err := iasqlsql.LockInstall(ctx, tx); err != nil {
			return err
		}
		if in, err := iasqlsql.Detect(ctx, tx.Conn()); err != nil || in.Version != "" {
			again = err == nil
			return err
		}
		try(tx, func(tx pgx.Tx) (string, error) {
			if ok, err := iasqlsql.UnscheduleCron(ctx, tx); !ok || err != nil {
				return "", err
			}
			return "removed the pg_cron job iasql_cycle", nil
		})
		try(tx, func(tx pgx.Tx) (string, error) {
			if ok, err := iasqlsql.DropPublication(ctx, tx); !ok || err != nil {
				return "", err
			}
			return "dropped the publication iasql", nil
		})
		// This sidecar's stream has ended; PostgreSQL lets the slot go once
		// its walsender has (within the leader timeout). Another sidecar's
		// leader may hold it still: that one finishes the removal itself.
		for deadline := time.Now().Add(bound); ; {
			info, err := logical.ReadSlot(ctx, tx.Conn(), slot)
			switch {
			case err != nil:
				return err
			case !info.Exists:
				return nil
			case !info.Active:
				try(tx, func(tx pgx.Tx) (string, error) {
					if dropped, err := iasqlsql.DropSlots(ctx, tx, []string{slot}); len(dropped) == 0 || err != nil {
						return "", err
					}
					return "dropped the replication slot " + slot, nil
				})
				return nil
			case time.Now().After(deadline):
				left = append(left, "the replication slot "+slot+": another process streams from it")
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
	switch {
	case err != nil && ctx.Err() != nil:
		return nil
	case err != nil:
		return fmt.Errorf("iasql was removed from the database; remove its publication and slot %s (or run iasql uninstall): %w", slot, err)
	case again:
		log.Warn("iasql was removed from the database and installed again since; this sidecar stops, and leaves the new install's publication and slot alone", "database", conn.Config().Database)
		return nil
	}
	attrs := []any{"database", conn.Config().Database, "did", strings.Join(did, "; ")}
	if len(left) > 0 {
		attrs = append(attrs, "left", strings.Join(left, "; "), "hint", "run iasql uninstall --dsn ... as the role that installed iasql to remove what is left")
	}
	log.Warn("iasql was removed from the database (DROP EXTENSION iasql); this sidecar stops, and does not install it again: stop its service (a sidecar started anew installs iasql again)", attrs...)
	return nil
}

// Prepare checks the server and role, then installs or upgrades the SQL
// objects. It returns the slot name to capture through.
func Prepare(ctx context.Context, conn *pgx.Conn, slot string, log *slog.Logger) (string, error) {
	if slot == "" {
		slot = logical.SlotName(conn.Config().Database)
	}
	in, err := iasqlsql.Detect(ctx, conn)
	if err != nil {
		return "", err
	}
	if err := logical.Preflight(ctx, conn, slot, in.Version != iasqlsql.Version); err != nil {
		return "", err
	}
	// Each try waits at most logical.StartupLockTimeout for a lock (the
	// install lock above all): a session that holds one in a transaction
	// it keeps open is named, and the start tried again, until ctx ends.
	for backoff := 500 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
		var did string
		err := logical.StartupStep(ctx, conn, log, "install or upgrade the SQL objects", func() error {
			if in.Version == iasqlsql.Version {
				if err := logical.SidecarPreflight(ctx, conn); err != nil {
					return err
				}
			}
			var err error
			did, err = iasqlsql.Ensure(ctx, conn, true)
			return err
		})
		var lockWait *logical.LockWaitError
		if errors.As(err, &lockWait) {
			select {
			case <-ctx.Done():
				return "", fmt.Errorf("%w (stopped while waiting)", err)
			case <-time.After(backoff):
				continue
			}
		}
		if err != nil {
			return "", err
		}
		if did != "" {
			log.Info(did)
		}
		return slot, nil
	}
}

// Connect opens a connection, turning the usual failures into one line that
// says what to check.
func Connect(ctx context.Context, dsn string) (*pgx.Conn, error) {
	if dsn == "" {
		return nil, errors.New("no database given: pass --dsn or set IASQL_DSN (e.g. postgres://user@host:5432/db)")
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("invalid DSN: %s; use postgres://user:password@host:port/database", redact(err.Error()))
	}
	cfg.RuntimeParams["search_path"] = logical.SafeSearchPath
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		where := fmt.Sprintf("%s:%d/%s as %s", cfg.Host, cfg.Port, cfg.Database, cfg.User)
		var pgErr *pgconn.PgError
		var netErr net.Error
		switch {
		case errors.As(err, &pgErr) && pgErr.Code == "3D000":
			return nil, fmt.Errorf("cannot connect to %s: database %q does not exist; create it or fix --dsn", where, cfg.Database)
		case errors.As(err, &pgErr) && (pgErr.Code == "28P01" || pgErr.Code == "28000"):
			return nil, fmt.Errorf("cannot connect to %s: %s; check the user and password in --dsn (and pg_hba.conf)", where, pgErr.Message)
		case errors.As(err, &netErr) || strings.Contains(err.Error(), "connect"):
			return nil, fmt.Errorf("cannot connect to %s: %s; check that PostgreSQL is running there and --dsn is right", where, lastLine(err))
		}
		return nil, fmt.Errorf("cannot connect to %s: %w", where, err)
	}
	return conn, nil
}

func lastLine(err error) string {
	s := err.Error()
	if i := strings.LastIndex(s, ": "); i >= 0 && i+2 < len(s) {
		return s[i+2:]
	}
	return s
}

// redact keeps passwords out of messages about unparsable DSNs.
func redact(s string) string {
	if i := strings.Index(s, "://"); i >= 0 {
		if j := strings.Index(s[i:], "@"); j >= 0 {
			return s[:i+3] + "***" + s[i+j:]
		}
	}
	return s
}
