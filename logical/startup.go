package logical

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// StartupLockTimeout bounds each lock wait of the sidecar's start-up
// statements (installing or upgrading the SQL objects, the publication, the
// slot, the capture progress). Without it, a session that holds one of
// those locks in a transaction it keeps open (the install lock, a LOCK TABLE
// on an iasql table, a write transaction that slot creation waits for)
// stalled the start for ever without a word. With it, the start names the
// sessions that block it (StartupStep) and tries again.
const StartupLockTimeout = 3 * time.Second

// blockerPoll is how often, while a start-up step runs, a second session
// asks which sessions block it (pg_blocking_pids only answers while the
// step waits, so it cannot be asked afterwards).
const blockerPoll = 250 * time.Millisecond

// Blocker is a session that held a lock a start-up step waited for.
type Blocker struct {
	PID   int32
	Role  string
	App   string
	State string     // "" when not visible (pg_read_all_stats)
	Since *time.Time // its transaction's start, else its session's; nil when not visible
}

func (b Blocker) String() string {
	s := fmt.Sprintf("pid %d (role %s, application %q", b.PID, b.Role, b.App)
	if b.State != "" {
		s += ", " + b.State
	} else {
		s += ", state not visible without pg_read_all_stats"
	}
	if b.Since != nil {
		s += ", since " + b.Since.UTC().Format(time.RFC3339)
	}
	return s + ")"
}

// LockWaitError: a start-up step waited longer than StartupLockTimeout for
// a lock that Blockers held. The caller tries again (with backoff).
type LockWaitError struct {
	Step     string
	Blockers []Blocker
	Err      error
}

func (e *LockWaitError) Error() string {
	return fmt.Sprintf("%s: waited more than %s for a lock held by %s: %v", e.Step, StartupLockTimeout, describeBlockers(e.Blockers), e.Err)
}

func (e *LockWaitError) Unwrap() error { return e.Err }

func describeBlockers(bs []Blocker) string {
	if len(bs) == 0 {
		return "a session that ended or cannot be seen"
	}
	s := make([]string, len(bs))
	for i, b := range bs {
		s[i] = b.String()
	}
	return strings.Join(s, "; ")
}

// lockTimedOut says whether err is PostgreSQL's lock_not_available (what a
// lock_timeout raises), wherever it is wrapped.
func lockTimedOut(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "55P03"
}

// StartupStep runs fn, start-up statements on conn, with lock_timeout set to
// StartupLockTimeout (restored afterwards). When a lock wait times out, it
// logs one line naming the sessions that blocked it and what to do, and
// returns a *LockWaitError for the caller to try again. Those sessions are
// only named, never ended: one may be a user's ordinary transaction (on
// their own tables, which slot creation waits for) or an administrator's
// install. (Other roles cannot hold the sidecar's locks: sql/006_locks.sql.)
func StartupStep(ctx context.Context, conn *pgx.Conn, log *slog.Logger, step string, fn func() error) error {
	if _, err := conn.Exec(ctx, `SELECT pg_catalog.set_config('lock_timeout', $1, false)`, strconv.FormatInt(StartupLockTimeout.Milliseconds(), 10)); err != nil {
		return fmt.Errorf("%s: set lock_timeout: %w", step, err)
	}
	stop := watchBlockers(ctx, conn, nil)
	err := fn()
	blockers := stop()
	if _, rerr := conn.Exec(ctx, `RESET lock_timeout`); rerr != nil && err == nil {
		err = fmt.Errorf("%s: reset lock_timeout: %w", step, rerr)
	}
	if !lockTimedOut(err) {
		return err
	}
	log.Warn("start-up waits for a lock that other sessions hold in open transactions; it tries again until they end: finish those transactions (COMMIT or ROLLBACK), or end the sessions (SELECT pg_terminate_backend(pid))",
		"step", step, "blocking_pids", pidList(blockers), "blocking", describeBlockers(blockers), "lock_timeout", StartupLockTimeout.String())
	// Only the timeout itself: a wrapper may say the failure is fatal
	// (FatalError), which a lock wait is not.
	var pgErr *pgconn.PgError
	errors.As(err, &pgErr)
	return &LockWaitError{Step: step, Blockers: blockers, Err: pgErr}
}

// StartupWait runs fn, a start-up statement on conn, like StartupStep, but
// lets its lock waits run on: creating the slot waits for every transaction
// open when it starts, so trying again would only wait for newer ones too.
// Once it has waited StartupLockTimeout, it logs one line naming the
// sessions it waits for, and another whenever they change.
func StartupWait(ctx context.Context, conn *pgx.Conn, log *slog.Logger, step string, fn func() error) error {
	started := time.Now()
	var said string
	stop := watchBlockers(ctx, conn, func(bs []Blocker) {
		if time.Since(started) < StartupLockTimeout || pidList(bs) == said {
			return
		}
		said = pidList(bs)
		log.Warn("start-up waits for other sessions' open transactions to end (creating the replication slot waits for every transaction open when it starts): finish them (COMMIT or ROLLBACK), or end the sessions (SELECT pg_terminate_backend(pid))",
			"step", step, "blocking_pids", said, "blocking", describeBlockers(bs))
	})
	err := fn()
	stop()
	return err
}

func pidList(bs []Blocker) string {
	pids := make([]string, len(bs))
	for i, b := range bs {
		pids[i] = strconv.Itoa(int(b.PID))
	}
	return strings.Join(pids, ",")
}

// watchBlockers asks, from a session of its own (opened only if the step
// takes longer than blockerPoll), which sessions block conn's, until stop
// is called; stop returns the last sessions found. seen, when set, is given
// each non-empty answer (in the watching goroutine).
func watchBlockers(ctx context.Context, conn *pgx.Conn, seen func([]Blocker)) (stop func() []Blocker) {
	pid := conn.PgConn().PID()
	cfg := conn.Config().Copy()
	cfg.RuntimeParams["application_name"] = "iasql start-up probe"
	wctx, cancel := context.WithCancel(ctx)
	found := make(chan []Blocker, 1)
	go func() {
		var last []Blocker
		defer func() { found <- last }()
		var probe *pgx.Conn
		defer func() {
			if probe != nil {
				probe.Close(context.Background())
			}
		}()
		tick := time.NewTicker(blockerPoll)
		defer tick.Stop()
		for {
			select {
			case <-wctx.Done():
				return
			case <-tick.C:
			}
			if probe == nil {
				p, err := pgx.ConnectConfig(wctx, cfg)
				if err != nil {
					continue // the step's own outcome says what matters
				}
				probe = p
			}
			if bs, err := readBlockers(wctx, probe, pid); err == nil && len(bs) > 0 {
				last = bs
				if seen != nil {
					seen(bs)
				}
			}
		}
	}()
	return func() []Blocker {
		cancel()
		return <-found
	}
}

// readBlockers returns the sessions that block session pid now.
func readBlockers(ctx context.Context, db *pgx.Conn, pid uint32) ([]Blocker, error) {
	rows, err := db.Query(ctx, `
		SELECT a.pid, coalesce(a.usename::text, ''), coalesce(a.application_name, ''), coalesce(a.state, ''),
		       coalesce(a.xact_start, a.backend_start)
		  FROM pg_catalog.pg_stat_activity a
		 WHERE a.pid = ANY (pg_catalog.pg_blocking_pids($1))
		 ORDER BY a.pid`, int32(pid))
	if err != nil {
		return nil, fmt.Errorf("read the sessions that block the start: %w", err)
	}
	bs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Blocker])
	if err != nil {
		return nil, fmt.Errorf("read the sessions that block the start: %w", err)
	}
	return bs, nil
}
