// Package logical captures user intent from logical replication: it keeps a
// pgoutput slot and the publication of registered tables, decodes each
// committed change, writes it to iasql_audit_log together with the capture
// progress, and only then acknowledges the position to PostgreSQL. One
// sidecar per database captures at a time; the others wait to take over.
package logical

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iasql/iasql/bridge/store"
	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// EngineMessagePrefix is the prefix of the transactional logical-decoding
// message (iasql_engine_mark) that marks a transaction as the engine's.
const EngineMessagePrefix = "iasql_engine"

// ActorMessagePrefix is the prefix of the transactional message that names
// the role making the changes that follow it in a transaction
// (iasql_note_actor, fired by a statement trigger on module tables). Like
// an engine marker, its content carries the key ("key:role"): any role
// can emit a message with its prefix, only iasql's function the key.
const ActorMessagePrefix = "iasql_actor"

// mark is what an engine marker says of the changes that follow it in its
// transaction: the sidecar's writes (origin engine) or rows it pulled from
// the cloud (origin cloud, with who made the change in AWS when known).
type mark struct {
	origin      string // user, engine or cloud
	message     *string
	actor       *string // for cloud: the AWS identity that made the change
	attribution []byte  // for cloud: JSON, what AWS said of the change
}

// parseMark reads an engine marker's content after its key: a label (an
// engine write), or a JSON object {"origin": "cloud", "message": ...,
// "attribution": {"actor": ..., ...}} (store.Marker).
func parseMark(content string) mark {
	m := mark{origin: "engine", message: &content}
	if !strings.HasPrefix(content, "{") {
		return m
	}
	var j struct {
		Origin      string          `json:"origin"`
		Message     string          `json:"message"`
		Attribution json.RawMessage `json:"attribution"`
	}
	if err := json.Unmarshal([]byte(content), &j); err != nil || (j.Origin != "engine" && j.Origin != "cloud") {
		return m
	}
	m.origin, m.message = j.Origin, &j.Message
	if len(j.Attribution) > 0 && string(j.Attribution) != "null" {
		m.attribution = j.Attribution
		var a struct {
			Actor string `json:"actor"`
		}
		if json.Unmarshal(j.Attribution, &a) == nil && a.Actor != "" {
			m.actor = &a.Actor
		}
	}
	return m
}

// Config configures capture.
type Config struct {
	DSN    string       // the database; a role with REPLICATION (or superuser)
	Slot   string       // slot name; empty means SlotName(database)
	Logger *slog.Logger // nil means slog.Default()
	// LeaderTimeout bounds how long a leader that stops making progress
	// (frozen, partitioned) keeps the leadership: PostgreSQL ends each of
	// its sessions (the one holding the leadership lock, the replication
	// connection, the WAL flush nudger's) once its client has been silent
	// that long, which frees the lock and the slot for a standby; a healthy
	// leader says something on each at least every LeaderTimeout/3 (see
	// liveness.go). Zero means $IASQL_LEADER_TIMEOUT when set, else 30s; at
	// least 1s. The engine's sessions must be bounded the same way
	// (Capture.LeaderTimeout, Connect, KeepAlive).
	LeaderTimeout time.Duration
	// LeaderPoll is how often a waiting sidecar tries to take over; default
	// 1s, at most LeaderTimeout/3 (its session is bounded too).
	LeaderPoll time.Duration
	// StatusEvery is the longest time between two standby status updates
	// on the replication connection; default 10s, at most LeaderTimeout/3.
	StatusEvery time.Duration
	BatchRows   int           // rows held before spilling into the open audit transaction; default 2000
	BatchDelay  time.Duration // longest a committed change waits for its batch to commit; default 50ms
	// AckInterval is the shortest time between two acknowledgements of
	// recorded positions to PostgreSQL (default 100ms); each one wakes the
	// walsender. Acknowledging later is always safe: what PostgreSQL
	// resends is skipped by the recorded progress.
	AckInterval time.Duration
	// OnLeader, when set, is called each time capture takes the
	// leadership, with a context that ends when it loses it.
	//
	// It is given the capture, so that what it starts can wait for capture
	// (WaitCovered) without holding on to it before it exists.
	OnLeader func(ctx context.Context, c *Capture)
	// OnMessage, when set, receives the non-transactional logical-decoding
	// messages whose prefix starts with "iasql_" (requests from the SQL
	// API), after every change committed before them is in the audit trail.
	OnMessage func(prefix string, content []byte, lsn pglogrepl.LSN)
	// OnIntent, when set, is called after a batch holding user changes is
	// committed to the audit trail.
	OnIntent func()
	// FlushPoll is how often capture checks for WAL that is written but not
	// flushed (a message from the SQL API waits there until something
	// flushes it); default 20ms, at most LeaderTimeout/3.
	FlushPoll time.Duration
	// Installed, when set, says whether iasql's objects are in the
	// database. When capture finds the objects it uses gone and Installed
	// says false, Run returns ErrRemoved instead of trying again.
	Installed func(ctx context.Context, conn *pgx.Conn) (bool, error)
}

// ErrRemoved means iasql's objects were removed from the database while
// capture ran (DROP EXTENSION iasql, or by hand): there is nothing to
// capture into.
var ErrRemoved = errors.New("iasql was removed from the database")

func (c *Config) defaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	bound, err := ResolveLeaderTimeout(c.LeaderTimeout)
	if err != nil {
		c.Logger.Warn("ignoring an invalid leader timeout", "err", err, "leader_timeout", bound)
	}
	c.LeaderTimeout = bound
	if c.LeaderPoll <= 0 {
		c.LeaderPoll = time.Second
	}
	if c.StatusEvery <= 0 {
		c.StatusEvery = 10 * time.Second
	}
	if c.BatchRows <= 0 {
		c.BatchRows = 2000
	}
	if c.FlushPoll <= 0 {
		c.FlushPoll = 20 * time.Millisecond
	}
	if c.BatchDelay <= 0 {
		c.BatchDelay = 50 * time.Millisecond
	}
	if c.AckInterval <= 0 {
		c.AckInterval = 100 * time.Millisecond
	}
	// What keeps a bounded session alive must come often enough.
	beat := HeartbeatInterval(c.LeaderTimeout)
	c.LeaderPoll = min(c.LeaderPoll, beat)
	c.StatusEvery = min(c.StatusEvery, beat)
	c.FlushPoll = min(c.FlushPoll, beat)
}

// Capture is the capture loop of one sidecar.
type Capture struct {
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	covered pglogrepl.LSN // every commit before it is in the audit trail
	changed chan struct{} // closed and replaced when covered moves
	wake    func()        // interrupts the current stream's receive
	poke    chan struct{} // asks the stream for a keepalive
}

// New returns a capture loop for cfg.
func New(cfg Config) *Capture {
	cfg.defaults()
	return &Capture{cfg: cfg, log: cfg.Logger, changed: make(chan struct{}), poke: make(chan struct{}, 1)}
}

// LeaderTimeout is the resolved Config.LeaderTimeout: the bound the
// engine's sessions must keep too (Connect, KeepAlive).
func (c *Capture) LeaderTimeout() time.Duration { return c.cfg.LeaderTimeout }

// WaitCovered returns once every transaction that committed before lsn is
// in the audit trail (or decided to hold nothing for it).
func (c *Capture) WaitCovered(ctx context.Context, lsn pglogrepl.LSN) error {
	for {
		c.mu.Lock()
		covered, changed, wake := c.covered, c.changed, c.wake
		c.mu.Unlock()
		if covered >= lsn {
			return nil
		}
		select {
		case c.poke <- struct{}{}:
		default:
		}
		if wake != nil {
			wake()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for capture to reach %s (at %s): %w", lsn, covered, ctx.Err())
		case <-changed:
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (c *Capture) cover(lsn pglogrepl.LSN) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if lsn > c.covered {
		c.covered = lsn
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

// Run captures until ctx ends, reconnecting with backoff after connection
// loss or a PostgreSQL restart. It returns nil when ctx ends, and an error
// only for conditions a retry cannot fix (a lost slot, missing rights).
func (c *Capture) Run(ctx context.Context) error {
	backoff := 200 * time.Millisecond
	for {
		started := time.Now()
		err := c.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if c.gone(ctx, err) {
			return ErrRemoved
		}
		var fatal *FatalError
		if errors.As(err, &fatal) {
			return err
		}
		if time.Since(started) > 30*time.Second {
			backoff = 200 * time.Millisecond
		}
		if lockWait := (*LockWaitError)(nil); !errors.As(err, &lockWait) { // (StartupStep said why)
			c.log.Warn("capture interrupted; reconnecting", "err", err, "retry_in", backoff)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// gone says whether err came of iasql's objects being removed from the
// database: a lookup of one of them failed (or the heartbeat found them
// gone), and Config.Installed, asked on a new session, says so.
func (c *Capture) gone(ctx context.Context, err error) bool {
	var pgErr *pgconn.PgError
	switch {
	case c.cfg.Installed == nil || err == nil:
		return false
	case errors.Is(err, ErrRemoved):
	case errors.As(err, &pgErr) && slices.Contains([]string{"42P01", "42883", "3F000"}, pgErr.Code):
		// undefined_table, undefined_function, invalid_schema_name
	default:
		return false
	}
	conn, cerr := Connect(ctx, c.cfg.DSN, "iasql capture", c.cfg.LeaderTimeout)
	if cerr != nil {
		return false
	}
	defer conn.Close(context.Background())
	installed, cerr := c.cfg.Installed(ctx, conn)
	return cerr == nil && !installed
}

// session is one connection's worth of capture: lead, then stream.
func (c *Capture) session(ctx context.Context) error {
	conn, err := Connect(ctx, c.cfg.DSN, "iasql capture", c.cfg.LeaderTimeout)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `SET synchronous_commit = on`); err != nil {
		return fmt.Errorf("configure session: %w", err)
	}
	if err := c.lead(ctx, conn); err != nil {
		return err
	}
	slot := c.cfg.Slot
	if slot == "" {
		slot = SlotName(conn.Config().Database)
	}
	// A session holding what these statements lock, in a transaction it
	// keeps open, would stall the start silently: they wait at most
	// StartupLockTimeout, name the blockers, and Run tries again.
	var markKey string
	var installed pglogrepl.LSN
	err = StartupStep(ctx, conn, c.log, "start capture", func() error {
		var err error
		markKey, installed, err = c.start(ctx, conn, slot)
		return err
	})
	if err != nil {
		return err
	}
	var pos position
	err = StartupWait(ctx, conn, c.log, "create or check the replication slot", func() error {
		var err error
		pos, err = prepareSlot(ctx, conn, slot, installed, c.log)
		return err
	})
	if err != nil {
		return err
	}
	err = StartupStep(ctx, conn, c.log, "record capture start", func() error {
		// The progress row names the slot (the SQL API finds the sidecar by it).
		return store.StartProgress(ctx, conn, slot, pos.recorded)
	})
	if err != nil {
		return err
	}
	if err := c.claimSlot(ctx, conn, slot); err != nil {
		return err
	}
	rc, err := connectReplication(ctx, c.cfg.DSN, c.cfg.LeaderTimeout, c.log)
	if err != nil {
		return err
	}
	defer rc.Close(context.Background())
	err = pglogrepl.StartReplication(ctx, rc, slot, pos.recorded, pglogrepl.StartReplicationOptions{
		// proto_version 1 without streaming: the layout msgFilter parses.
		PluginArgs: []string{"proto_version '1'", "publication_names '" + Publication + "'", "messages 'true'"},
	})
	if err != nil {
		return fmt.Errorf("start replication on slot %s: %w", slot, err)
	}
	c.log.Info("capturing", "slot", slot, "recorded", pos.recorded.String(), "confirmed", pos.confirmed.String())
	// What runs while this session leads stops before the session ends,
	// and so before it lets the leadership go.
	leaderCtx, endLeadership := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	defer func() {
		endLeadership()
		helpers.Wait()
	}()
	helpers.Go(func() { c.nudge(leaderCtx) })
	if c.cfg.OnLeader != nil {
		helpers.Go(func() { c.cfg.OnLeader(leaderCtx, c) })
	}
	sock, err := socket(rc)
	if err != nil {
		return err
	}
	s := &stream{c: c, conn: conn, rc: rc, sock: sock, w: newWriter(conn, slot), markKey: markKey, resumeAfter: pos.recorded, flushed: max(pos.recorded, pos.confirmed), rels: map[uint32]*relation{},
		beat: HeartbeatInterval(c.cfg.LeaderTimeout), connUsed: time.Now()}
	defer s.w.abort(context.Background())
	// Receive deadlines are set on the socket, not through a context per
	// call (which costs a goroutine hand-off per message); ending ctx
	// interrupts a blocked receive (or the next one) the same way.
	stop := context.AfterFunc(ctx, sock.interrupt)
	defer stop()
	// The writer commits without a context (see writer.commit): ending ctx
	// interrupts it through the socket too.
	stopWriter := context.AfterFunc(ctx, func() { _ = conn.PgConn().Conn().SetDeadline(time.Now()) })
	defer stopWriter()
	c.mu.Lock()
	c.wake = sock.interrupt
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.wake = nil
		c.mu.Unlock()
	}()
	err = s.run(ctx)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42704" && strings.Contains(pgErr.Message, "publication") {
		return &FatalError{Err: fmt.Errorf("slot %s cannot decode past a change made while publication %s did not exist (%s): recreating the publication does not help. To accept the gap, drop the slot (SELECT pg_drop_replication_slot('%s')), delete its row from iasql_capture_progress, and restart", slot, Publication, pgErr.Message, slot)}
	}
	return err
}

// start prepares capture through slot on conn, as the leader: the engine's
// mark key and where WAL was at install (returned), the restore adoption
// and the publication.
func (c *Capture) start(ctx context.Context, conn *pgx.Conn, slot string) (markKey string, installed pglogrepl.LSN, err error) {
	// Only markers carrying this key make a transaction the engine's
	// (iasql_engine_mark): any role can emit a message with its prefix.
	if markKey, installed, err = store.EngineKey(ctx, conn); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "42501" { // insufficient_privilege
			return "", 0, fatalf("role %s must be the sidecar's (as an administrator run iasql install --sidecar-role %s): %w", conn.Config().User, conn.Config().User, err)
		}
		return "", 0, err
	}
	// A database restored from a dump carries the LSNs of another server
	// or database: adopt it before anything reads them.
	if err := c.adoptRestore(ctx, conn, slot); err != nil {
		return "", 0, err
	}
	// The publication first: a slot that decodes a change made before the
	// publication existed cannot get past it.
	if _, err := conn.Exec(ctx, `SELECT public.iasql_sync_publication()`); err != nil {
		return "", 0, fatalf("sync publication %s: %w", Publication, err)
	}
	return markKey, installed, nil
}

// lead blocks until this session holds the capture leadership lock.
func (c *Capture) lead(ctx context.Context, conn *pgx.Conn) error {
	logged := false
	for {
		// The capture writer's lock (sql/006_locks.sql): a row only the
		// sidecar's role may take, held by this session until it ends.
		ok, err := store.TryLock(ctx, conn, store.LockCapture)
		if err != nil {
			return fmt.Errorf("take capture leadership: %w", err)
		}
		if ok {
			if logged {
				c.log.Info("took over capture leadership")
			}
			return nil
		}
		if !logged {
			c.log.Info("another sidecar is capturing; waiting to take over")
			logged = true
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(c.cfg.LeaderPoll):
		}
	}
}

// claimSlot waits until no connection streams from slot, before this
// session starts to. Holding the leadership, one that does is a deposed
// leader's: its lock session has ended and its walsender would end within
// the leader timeout (wal_sender_timeout). An iasql capture's is ended now,
// where this role may end it (its own role, or pg_signal_backend); any
// other is waited for, up to twice the leader timeout.
func (c *Capture) claimSlot(ctx context.Context, conn *pgx.Conn, slot string) error {
	deadline := time.Now().Add(2 * c.cfg.LeaderTimeout)
	var ended int32
	for {
		var pid *int32
		var app *string
		err := conn.QueryRow(ctx, `SELECT s.active_pid, a.application_name FROM pg_catalog.pg_replication_slots s
			LEFT JOIN pg_catalog.pg_stat_activity a ON a.pid = s.active_pid WHERE s.slot_name = $1`, slot).Scan(&pid, &app)
		if err != nil {
			return fmt.Errorf("read the state of slot %s: %w", slot, err)
		}
		if pid == nil {
			return nil
		}
		if app != nil && *app == "iasql capture" && *pid != ended {
			c.log.Info("ending the previous leader's replication connection", "slot", slot, "pid", *pid)
			if _, err := conn.Exec(ctx, `SELECT pg_catalog.pg_terminate_backend($1)`, *pid); err != nil {
				if !answered(err) {
					return fmt.Errorf("end replication connection %d on slot %s: %w", *pid, slot, err)
				}
				c.log.Info("cannot end the previous leader's replication connection; waiting for it to time out", "pid", *pid, "err", err)
			}
			ended = *pid
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replication slot %s is still in use by process %d (application %s)", slot, *pid, deref(app))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// connectReplication opens the replication connection, bounded like the
// leader's other sessions (wal_sender_timeout above all), with the
// logical-decoding messages it reads bounded (msgFilter).
func connectReplication(ctx context.Context, dsn string, bound time.Duration, log *slog.Logger) (*pgconn.PgConn, error) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		return nil, fatalf("parse DSN: %w", err)
	}
	ConfigureSession(cfg, "iasql capture", bound)
	cfg.RuntimeParams["replication"] = "database"
	dial := cfg.DialFunc
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return newReplConn(c, readWindow), nil
	}
	// Above TLS, below pgproto3 (which reads each message whole).
	cfg.BuildFrontend = func(r io.Reader, w io.Writer) *pgproto3.Frontend {
		return pgproto3.NewFrontend(newMsgFilter(r, func(prefix string, lsn uint64, dropped int64) {
			log.Warn("dropped the content of a logical-decoding message larger than the limit (any role can emit one; the sidecar does not read it)",
				"prefix", prefix, "lsn", pglogrepl.LSN(lsn).String(), "bytes_cut", dropped, "limit", MaxMessageBytes)
		}), w)
	}
	rc, err := pgconn.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open replication connection: %w", err)
	}
	return rc, nil
}

// socket returns the replication connection's replConn.
func socket(rc *pgconn.PgConn) (*replConn, error) {
	c := rc.Conn()
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	if sock, ok := c.(*replConn); ok {
		return sock, nil
	}
	return nil, fmt.Errorf("replication connection: unexpected socket %T", c)
}

// stream is the receive loop over one replication connection.
type stream struct {
	c    *Capture
	conn *pgx.Conn
	rc   *pgconn.PgConn
	sock *replConn // rc's socket
	w    *writer
	rels map[uint32]*relation
	// markKey: the prefix ("key:") an engine marker's content must carry.
	markKey string

	resumeAfter pglogrepl.LSN // transactions ending at or before it are recorded already
	flushed     pglogrepl.LSN // recorded position, acknowledged or to be
	acked       time.Time     // when a status was last sent
	ackPending  bool          // flushed moved since
	pending     *inflight     // the batch committing in the background
	sent        time.Time     // when it was sent
	beat        time.Duration // longest silence on conn (HeartbeatInterval)
	connUsed    time.Time     // when conn last answered

	// the transaction being received
	inTx      bool
	skip      bool
	begin     *pglogrepl.BeginMessage
	seq       int32
	engine    bool    // an engine marker with the key was seen in it
	mark      mark    // what the changes from here on are recorded as
	role      *string // the role the last actor marker named
	spilled   bool
	txRows    int
	last      progress // last transaction in the open batch
	batchOpen bool     // a committed transaction waits in the batch
	batchUser bool     // the batch holds user changes
	batchAge  time.Time
	warned    map[string]bool
}

func (s *stream) run(ctx context.Context) error {
	nextStatus := time.Now().Add(s.c.cfg.StatusEvery)
	defer func() {
		if s.pending != nil {
			// Let the connection go quiet before the session closes it.
			<-s.pending.done
			s.pending = nil
		}
	}()
	for {
		if err := s.settle(ctx, false); err != nil {
			return err
		}
		deadline := nextStatus
		if s.pending == nil {
			// Keep the leadership session from timing out (liveness.go):
			// only this loop, which makes capture's progress, keeps it.
			if time.Since(s.connUsed) >= s.beat {
				if err := s.heartbeat(); err != nil {
					return err
				}
			}
			deadline = earliest(deadline, s.connUsed.Add(s.beat))
		}
		if s.batchOpen && !s.inTx {
			// Something committed is waiting for its batch: wait briefly for
			// more, and commit the batch when the stream pauses (2 ms from
			// when the last message arrived, which under load may be a
			// little before it was read: see readWindow), or BatchDelay
			// after its first transaction.
			deadline = earliest(deadline, s.sock.arrival().Add(2*time.Millisecond), s.batchAge.Add(s.c.cfg.BatchDelay))
		}
		if s.ackPending {
			deadline = earliest(deadline, s.acked.Add(s.c.cfg.AckInterval))
		}
		if s.pending != nil {
			// Take the outcome of the batch in flight in time to
			// acknowledge it.
			deadline = earliest(deadline, s.sent.Add(s.c.cfg.AckInterval))
		}
		s.sock.setDeadline(deadline)
		raw, err := s.rc.ReceiveMessage(context.Background())
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !pgconn.Timeout(err) {
				return fmt.Errorf("receive: %w", err)
			}
			if err := s.flush(ctx); err != nil {
				return err
			}
			if s.ackPending && time.Since(s.acked) >= s.c.cfg.AckInterval {
				if err := s.status(ctx, false); err != nil {
					return err
				}
			}
			poked := false
			select {
			case <-s.c.poke:
				poked = true
			default:
			}
			if poked || time.Now().After(nextStatus) {
				// A reply request makes the server answer with a keepalive
				// carrying its position, which covers an idle stream.
				if err := s.status(ctx, poked); err != nil {
					return err
				}
				nextStatus = time.Now().Add(s.c.cfg.StatusEvery)
			}
			continue
		}
		switch msg := raw.(type) {
		case *pgproto3.CopyData:
			if err := s.copyData(ctx, msg.Data); err != nil {
				return err
			}
		case *pgproto3.ErrorResponse:
			return fmt.Errorf("replication stream: %w", pgconn.ErrorResponseToPgError(msg))
		default:
			return fmt.Errorf("replication stream: unexpected message %T", msg)
		}
	}
}

func (s *stream) copyData(ctx context.Context, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	switch data[0] {
	case pglogrepl.PrimaryKeepaliveMessageByteID:
		ka, err := pglogrepl.ParsePrimaryKeepaliveMessage(data[1:])
		if err != nil {
			return fmt.Errorf("parse keepalive: %w", err)
		}
		if !s.inTx && !s.batchOpen && s.pending == nil {
			// Idle: everything sent before the keepalive is recorded, so
			// the slot may advance to the server's position and free WAL.
			s.c.cover(ka.ServerWALEnd)
			s.recorded(ka.ServerWALEnd)
		}
		if ka.ReplyRequested || (s.ackPending && time.Since(s.acked) >= s.c.cfg.AckInterval) {
			return s.status(ctx, ka.ReplyRequested)
		}
		return nil
	case pglogrepl.XLogDataByteID:
		xld, err := pglogrepl.ParseXLogData(data[1:])
		if err != nil {
			return fmt.Errorf("parse XLogData: %w", err)
		}
		m, err := pglogrepl.Parse(xld.WALData)
		if err != nil {
			return fmt.Errorf("decode pgoutput message: %w", err)
		}
		return s.message(ctx, m)
	}
	return nil
}

func (s *stream) message(ctx context.Context, m pglogrepl.Message) error {
	switch m := m.(type) {
	case *pglogrepl.RelationMessage:
		if err := s.settle(ctx, true); err != nil {
			return err
		}
		name, keys, ok, err := describe(ctx, s.conn, m.RelationID)
		if err != nil {
			return err
		}
		rel := newRelation(m, keys)
		if ok {
			rel.name = name
		}
		s.rels[m.RelationID] = rel
	case *pglogrepl.BeginMessage:
		s.inTx, s.begin, s.seq, s.engine, s.mark, s.spilled, s.txRows = true, m, 0, false, mark{origin: "user"}, false, 0
		s.role = nil
		// Already recorded before a restart: PostgreSQL resends from the
		// slot's confirmed position, which may trail the audit trail.
		s.skip = m.FinalLSN < s.resumeAfter
	case *pglogrepl.CommitMessage:
		return s.commit(ctx, m)
	case *pglogrepl.LogicalDecodingMessage:
		if !m.Transactional && len(m.Content) == 0 {
			// Never a request: the SQL API sends JSON. The content of one
			// too large to read was cut (msgFilter), which said so.
			return nil
		}
		if !m.Transactional && strings.HasPrefix(m.Prefix, "iasql_") && s.c.cfg.OnMessage != nil {
			// A request: what committed before it must be in the audit
			// trail before anyone acts on it.
			if err := s.drain(ctx); err != nil {
				return err
			}
			s.c.cfg.OnMessage(m.Prefix, m.Content, m.LSN)
			return nil
		}
		if !m.Transactional || !s.inTx || s.skip {
			return nil
		}
		switch m.Prefix {
		case EngineMessagePrefix:
			msg, ok := strings.CutPrefix(string(m.Content), s.markKey+":")
			if !ok {
				// Not the sidecar's: its changes stay user intent.
				s.c.log.Warn("ignoring an engine marker without the sidecar's key: the transaction's changes are recorded as user changes", "xid", s.begin.Xid)
				return nil
			}
			s.mark = parseMark(msg)
			if !s.engine {
				s.engine = true
				if s.txRows > 0 {
					// (Spilled rows are in the open audit transaction, which
					// waited for the batch in flight.)
					return s.w.markEngine(ctx, s.begin.FinalLSN, s.mark, s.spilled)
				}
			}
		case ActorMessagePrefix:
			role, ok := strings.CutPrefix(string(m.Content), s.markKey+":")
			if !ok {
				s.c.log.Warn("ignoring an actor marker without the sidecar's key", "xid", s.begin.Xid)
				return nil
			}
			s.role = &role
		}
	case *pglogrepl.InsertMessage:
		return s.change(ctx, m.RelationID, "INSERT", nil, m.Tuple)
	case *pglogrepl.UpdateMessage:
		return s.change(ctx, m.RelationID, "UPDATE", m.OldTuple, m.NewTuple)
	case *pglogrepl.DeleteMessage:
		return s.change(ctx, m.RelationID, "DELETE", m.OldTuple, nil)
	case *pglogrepl.TruncateMessage:
		for _, id := range m.RelationIDs {
			if err := s.change(ctx, id, "TRUNCATE", nil, nil); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *stream) change(ctx context.Context, relID uint32, kind string, old, new *pglogrepl.TupleData) error {
	if !s.inTx || s.skip {
		return nil
	}
	rel, ok := s.rels[relID]
	if !ok {
		return fmt.Errorf("change to relation %d before its description", relID)
	}
	s.seq++
	s.txRows++
	r := auditRow{
		lsn: s.begin.FinalLSN, seq: s.seq, xid: int64(s.begin.Xid), ts: s.begin.CommitTime,
		table: rel.name, changeType: kind, origin: s.mark.origin, message: s.mark.message,
		actor: s.role, attribution: s.mark.attribution,
	}
	if r.origin == "cloud" {
		r.actor = s.mark.actor // who AWS says made it, when it says
	}
	if r.origin == "user" {
		s.batchUser = true
	}
	var missing bool
	if old != nil {
		r.oldRow, _ = rel.rowJSON(old, nil)
		r.recordID = rel.recordID(old)
	}
	if new != nil {
		r.newRow, missing = rel.rowJSON(new, old)
		r.recordID = rel.recordID(new)
	}
	if missing && !s.warned[rel.name] {
		if s.warned == nil {
			s.warned = map[string]bool{}
		}
		s.warned[rel.name] = true
		s.c.log.Warn("unchanged TOASTed values are not in the stream; they are recorded as null. Set REPLICA IDENTITY FULL (registering the table does)", "table", rel.name)
	}
	s.w.add(r)
	if len(s.w.rows) >= s.c.cfg.BatchRows {
		if err := s.settle(ctx, true); err != nil {
			return err
		}
		if err := s.w.spill(ctx); err != nil {
			return err
		}
		s.spilled = true
	}
	return nil
}

func (s *stream) commit(ctx context.Context, m *pglogrepl.CommitMessage) error {
	s.inTx = false
	if s.skip || s.txRows == 0 {
		// Nothing to record; an idle keepalive will advance the slot.
		return nil
	}
	if !s.batchOpen {
		s.batchOpen, s.batchAge = true, time.Now()
	}
	s.last = progress{endLSN: m.TransactionEndLSN, commitLSN: m.CommitLSN, commitTime: m.CommitTime}
	if s.spilled || len(s.w.rows) >= s.c.cfg.BatchRows || time.Since(s.batchAge) >= s.c.cfg.BatchDelay {
		return s.flush(ctx)
	}
	return nil // the receive loop commits the batch when the stream pauses
}

// flush commits the open batch: in the background (see writer.send), after
// the batch before it, unless rows of its last transaction were spilled
// into the open audit transaction. Its position is acknowledged once it has
// committed (settle).
func (s *stream) flush(ctx context.Context) error {
	if s.inTx || !s.batchOpen {
		return nil
	}
	if err := s.settle(ctx, true); err != nil {
		return err
	}
	end, user := s.last.endLSN, s.batchUser
	covered := func() {
		s.c.cover(end)
		if user && s.c.cfg.OnIntent != nil {
			s.c.cfg.OnIntent()
		}
	}
	s.batchOpen, s.batchUser = false, false
	s.resumeAfter = end
	s.sent = time.Now()
	if !s.spilled {
		s.pending = s.w.send(s.last, covered)
		return nil
	}
	if err := s.w.commit(ctx, s.last); err != nil {
		return err
	}
	s.connUsed = time.Now()
	covered()
	return s.recordedNow(ctx, end)
}

// drain commits the open batch and waits for it: everything committed
// before is then in the audit trail.
func (s *stream) drain(ctx context.Context) error {
	if err := s.flush(ctx); err != nil {
		return err
	}
	return s.settle(ctx, true)
}

// settle takes the outcome of the batch committing in the background,
// waiting for it when wait is set (before the writer's connection is used
// again), and acknowledges its position when due.
func (s *stream) settle(ctx context.Context, wait bool) error {
	f := s.pending
	if f == nil {
		return nil
	}
	var err error
	if wait {
		err = <-f.done
	} else {
		select {
		case err = <-f.done:
		default:
			return nil
		}
	}
	s.pending = nil
	s.w.recycle(f)
	if err != nil {
		return err
	}
	s.connUsed = time.Now()
	return s.recordedNow(ctx, f.p.endLSN)
}

// heartbeat says something on the writer's connection, which holds the
// leadership lock and is bounded by the leader timeout (inside the open
// audit transaction, if one is: it is bounded too). No context, as for the
// writer: the session interrupts the connection when its context ends.
//
// What it says also looks iasql up (a catalog cache lookup, no lock): an
// idle capture learns within a heartbeat that iasql was removed.
func (s *stream) heartbeat() error {
	var there bool
	if err := s.conn.QueryRow(context.Background(), `SELECT pg_catalog.to_regprocedure('public.iasql_take_lock(integer)') IS NOT NULL`).Scan(&there); err != nil {
		return fmt.Errorf("keep the capture session alive: %w", err)
	}
	if !there {
		return ErrRemoved
	}
	s.connUsed = time.Now()
	return nil
}

// recorded notes that everything up to pos is in the audit trail, to be
// acknowledged to PostgreSQL with the next status.
func (s *stream) recorded(pos pglogrepl.LSN) {
	if pos > s.flushed {
		s.flushed, s.ackPending = pos, true
	}
}

// recordedNow is recorded, then the status when one is due (AckInterval
// after the last; the receive loop sends it otherwise).
func (s *stream) recordedNow(ctx context.Context, pos pglogrepl.LSN) error {
	s.recorded(pos)
	if !s.ackPending || time.Since(s.acked) < s.c.cfg.AckInterval {
		return nil
	}
	return s.status(ctx, false)
}

// status reports the recorded position to PostgreSQL.
func (s *stream) status(ctx context.Context, reply bool) error {
	s.acked, s.ackPending = time.Now(), false
	err := pglogrepl.SendStandbyStatusUpdate(ctx, s.rc, pglogrepl.StandbyStatusUpdate{
		WALWritePosition: s.flushed, WALFlushPosition: s.flushed, WALApplyPosition: s.flushed,
		ClientTime: time.Now(), ReplyRequested: reply,
	})
	if err != nil {
		return fmt.Errorf("send standby status: %w", err)
	}
	return nil
}

// describe reads a relation's canonical name and primary key from the
// catalog; ok is false when the table no longer exists.
func describe(ctx context.Context, conn *pgx.Conn, relID uint32) (name string, keys []string, ok bool, err error) {
	err = conn.QueryRow(ctx, `
		SELECT public.iasql_table_name(c.oid),
		       array(SELECT a.attname::text FROM pg_catalog.pg_index i
		               JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
		              WHERE i.indrelid = c.oid AND i.indisprimary
		              ORDER BY array_position(i.indkey::int2[], a.attnum))
		  FROM pg_catalog.pg_class c WHERE c.oid = $1`, relID).Scan(&name, &keys)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("describe relation %d: %w", relID, err)
	}
	return name, keys, true, nil
}

func earliest(t time.Time, ts ...time.Time) time.Time {
	for _, u := range ts {
		if u.Before(t) {
			t = u
		}
	}
	return t
}

// nudge flushes WAL that stays written but unflushed: a non-transactional
// message from the SQL API (a request) reaches the replication stream only
// once flushed, and nothing else may flush it soon on a quiet server. It
// commits a tiny transaction (a transactional message, no table written)
// when the insert position has stayed ahead of the flush position for a
// whole poll interval.
func (c *Capture) nudge(ctx context.Context) {
	conn, err := Connect(ctx, c.cfg.DSN, "iasql flush", c.cfg.LeaderTimeout)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("WAL flush nudger cannot connect; SQL API requests may wait for other commits", "err", err)
		}
		return
	}
	defer conn.Close(context.Background())
	// The polls run without a context (pgx watches one with a goroutine per
	// statement); ending ctx interrupts them through the socket.
	stop := context.AfterFunc(ctx, func() { _ = conn.PgConn().Conn().SetDeadline(time.Now()) })
	defer stop()
	var pending pglogrepl.LSN
	t := time.NewTicker(c.cfg.FlushPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var insert, flush pglogrepl.LSN
		if err := conn.QueryRow(context.Background(), `SELECT pg_catalog.pg_current_wal_insert_lsn()::text, pg_catalog.pg_current_wal_flush_lsn()::text`).Scan(&insert, &flush); err != nil {
			if ctx.Err() == nil {
				c.log.Warn("WAL flush nudger stopped", "err", err)
			}
			return
		}
		switch {
		case insert <= flush:
			pending = 0
		case pending != 0 && flush < pending:
			if _, err := conn.Exec(context.Background(), `SELECT pg_catalog.pg_logical_emit_message(true, 'iasql_flush', '')`); err != nil && ctx.Err() == nil {
				c.log.Warn("WAL flush nudge failed", "err", err)
			}
			pending = 0
		default:
			pending = insert
		}
	}
}
