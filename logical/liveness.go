package logical

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Leadership liveness.
//
// Leadership (capture's lock 1, the engine's 2 and 4: sql/006_locks.sql) is held by
// sessions, and PostgreSQL keeps a session, and so its locks, for as long as
// its TCP connection lives: a sidecar frozen (SIGSTOP, a VM paused) or cut
// off by a partition would lead for ever. So every session that holds or
// serves leadership is opened with server-side timeouts that end it once
// its client has said nothing for the leader timeout (the bound), and a
// healthy leader keeps each such session busy, with a cheap statement every
// bound/3 when it has nothing else to say. The server then ends a frozen or
// partitioned leader's sessions within the bound, which frees its locks and
// its replication slot for a standby. Every setting used is settable by any
// role at connection start (PostgreSQL 14 or newer; no superuser, so managed
// Postgres works):
//
//   - idle_session_timeout and idle_in_transaction_session_timeout: a session
//     waiting for its client longer than the bound, in a transaction or not;
//   - wal_sender_timeout: a replication connection whose client sent no
//     status for the bound (a healthy stream answers the walsender's pings,
//     sent at half of it, and reports on its own every bound/3);
//   - tcp_keepalives_idle/interval/count and tcp_user_timeout: a connection
//     whose peer is gone (the kernel's probes go unanswered, or data sent
//     stays unacknowledged for the bound) is closed even where the session
//     is not idle (a backend blocked sending a result).
//
// The client dials with TCP keepalives on the same scale, so a partitioned
// leader also finds out, instead of waiting on a dead socket for minutes.

// DefaultLeaderTimeout is the leader timeout when none is configured.
const DefaultLeaderTimeout = 30 * time.Second

// MinLeaderTimeout is the shortest leader timeout accepted.
const MinLeaderTimeout = time.Second

// LeaderTimeoutEnv names the environment variable (a Go duration, e.g. 10s)
// that sets the leader timeout of a Config that names none.
const LeaderTimeoutEnv = "IASQL_LEADER_TIMEOUT"

// ResolveLeaderTimeout is the leader timeout for a configured value d: d
// when positive, else $IASQL_LEADER_TIMEOUT when set, else
// DefaultLeaderTimeout; never below MinLeaderTimeout.
func ResolveLeaderTimeout(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		d = DefaultLeaderTimeout
		if v := os.Getenv(LeaderTimeoutEnv); v != "" {
			e, err := time.ParseDuration(v)
			if err != nil || e <= 0 {
				return DefaultLeaderTimeout, fmt.Errorf("%s=%q: give a positive duration such as 30s", LeaderTimeoutEnv, v)
			}
			d = e
		}
	}
	return max(d, MinLeaderTimeout), nil
}

// HeartbeatInterval is how often a session bounded by bound must say
// something to stay alive: bound/3, leaving two intervals of slack for a
// busy machine.
func HeartbeatInterval(bound time.Duration) time.Duration { return bound / 3 }

// SessionParams are the settings that make PostgreSQL end a session whose
// client has been silent for bound (see above), as run-time parameters sent
// when the connection starts (pgconn.Config.RuntimeParams): they become the
// session's defaults, which RESET ALL and DISCARD ALL keep.
func SessionParams(bound time.Duration) map[string]string {
	ms := strconv.FormatInt(bound.Milliseconds(), 10)
	return map[string]string{
		"idle_session_timeout":                ms,
		"idle_in_transaction_session_timeout": ms,
		"wal_sender_timeout":                  ms, // only walsenders use it
		"tcp_user_timeout":                    ms,
		"tcp_keepalives_idle":                 strconv.Itoa(keepaliveIdle(bound)),
		"tcp_keepalives_interval":             strconv.Itoa(keepaliveInterval(bound)),
		"tcp_keepalives_count":                strconv.Itoa(keepaliveCount),
	}
}

const keepaliveCount = 3

// keepaliveIdle and keepaliveInterval are in whole seconds (the unit of
// PostgreSQL's settings), at least 1: a dead peer is noticed about
// 2*bound/3 after it last spoke.
func keepaliveIdle(bound time.Duration) int     { return max(1, int(bound/3/time.Second)) }
func keepaliveInterval(bound time.Duration) int { return max(1, int(bound/9/time.Second)) }

// SafeSearchPath is the search_path of every session the sidecar opens: the
// server's own objects first, then iasql's schema, and no schema named after
// the sidecar's role ("$user"), which a role with CREATE on the database
// could create to put its own tables and triggers in front of iasql's. The
// sidecar's SQL names its objects with their schema anyway.
const SafeSearchPath = "pg_catalog, public"

// ConfigureSession bounds the sessions that cfg opens (SessionParams), names
// them application, sets the search_path (SafeSearchPath), and dials with
// TCP keepalives on the same scale.
func ConfigureSession(cfg *pgconn.Config, application string, bound time.Duration) {
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	for k, v := range SessionParams(bound) {
		cfg.RuntimeParams[k] = v
	}
	if application != "" {
		cfg.RuntimeParams["application_name"] = application
	}
	cfg.RuntimeParams["search_path"] = SafeSearchPath
	d := &net.Dialer{Timeout: cfg.ConnectTimeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable:   true,
		Idle:     time.Duration(keepaliveIdle(bound)) * time.Second,
		Interval: time.Duration(keepaliveInterval(bound)) * time.Second,
		Count:    keepaliveCount,
	}}
	cfg.DialFunc = d.DialContext
}

// Connect opens a session bounded by bound (ConfigureSession) and named
// application: the kind of session that may hold leadership.
func Connect(ctx context.Context, dsn, application string, bound time.Duration) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fatalf("parse DSN: %w", err)
	}
	ConfigureSession(&cfg.Config, application, bound)
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect (%s): %w", application, err)
	}
	return conn, nil
}

// answered says whether err is the server's answer to a statement in a
// session that goes on (an ERROR, not the FATAL of a session it ended).
func answered(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Severity == "ERROR"
}

// heartbeatSQL is the cheap statement that keeps a bounded session busy.
const heartbeatSQL = "SELECT 1"

// KeepAlive keeps a bounded session (Connect) alive while its owner lives:
// every HeartbeatInterval(bound) it takes mu, runs a cheap statement on conn
// and lets mu go. Every other use of conn must hold mu too (nil mu: nothing
// else uses conn meanwhile), and must not keep it longer than the bound
// without talking to the server (no open result read across a cloud call).
// It returns nil when ctx ends, and an error once the session is gone (the
// server ended it: whatever it held is lost); an error the server answered
// with (an aborted transaction) means the session lives, and is ignored.
//
// Run it in a goroutine its caller waits for, with a context that ends
// when conn is closed or handed on.
func KeepAlive(ctx context.Context, conn *pgx.Conn, mu sync.Locker, bound time.Duration) error {
	t := time.NewTicker(HeartbeatInterval(bound))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := heartbeat(conn, mu, bound); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// heartbeat runs the cheap statement once, under mu. Its own time limit
// (the bound: a session silent that long is ended by the server anyway)
// keeps the caller's context from cancelling it midway, which would close
// a connection that is fine.
func heartbeat(conn *pgx.Conn, mu sync.Locker, bound time.Duration) error {
	if mu != nil {
		mu.Lock()
		defer mu.Unlock()
	}
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := conn.Exec(ctx, heartbeatSQL)
	if err == nil || (answered(err) && !conn.IsClosed()) {
		return nil
	}
	return fmt.Errorf("keep session alive: %w", err)
}
