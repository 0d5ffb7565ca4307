package store

// Requests from the SQL API (iasql_requests) and the iasql transaction
// (iasql_transaction).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"
)

// Sender is what a request message claims about who sent it: the session
// pid and the transaction-scoped advisory lock (Classid, Objid) that
// session holds while it waits, and the role the request needs.
type Sender struct {
	PID            int32
	Classid, Objid uint32
	Needs          string
}

// Verified is a sender found: its role and whether that role is a member
// of the one the request needs.
type Verified struct {
	Role   string
	Member bool
}

// RequestSenders finds, in one query whatever their number, the role of
// each session that sent a request, proved by the lock it holds; a sender
// not found (nil) has no session of this database holding that lock: the
// request is forged or its sender gone.
func RequestSenders(ctx context.Context, db *pgx.Conn, senders []Sender) ([]*Verified, error) {
	pids := make([]int32, len(senders))
	classids, objids := make([]int64, len(senders)), make([]int64, len(senders))
	needs := make([]string, len(senders))
	for i, s := range senders {
		pids[i], classids[i], objids[i], needs[i] = s.PID, int64(s.Classid), int64(s.Objid), s.Needs
	}
	rows, err := db.Query(ctx, `
		WITH l AS MATERIALIZED (
		  SELECT l.pid, l.classid, l.objid FROM pg_catalog.pg_locks l
		   WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
		     AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())),
		a AS MATERIALIZED (
		  SELECT a.pid, a.usesysid FROM pg_catalog.pg_stat_activity a WHERE a.datname = pg_catalog.current_database())
		SELECT m.i::int, r.rolname::text, pg_catalog.pg_has_role(a.usesysid, m.needs::name, 'MEMBER')
		  FROM unnest($1::int[], $2::bigint[], $3::bigint[], $4::text[]) WITH ORDINALITY AS m(pid, classid, objid, needs, i)
		  JOIN a ON a.pid = m.pid
		  JOIN pg_catalog.pg_roles r ON r.oid = a.usesysid
		 WHERE EXISTS (SELECT 1 FROM l WHERE l.pid = m.pid AND l.classid = m.classid::oid AND l.objid = m.objid::oid)`,
		pids, classids, objids, needs)
	if err != nil {
		return nil, fmt.Errorf("check who sent %d request(s): %w", len(senders), err)
	}
	out := make([]*Verified, len(senders))
	var i int
	var v Verified
	if _, err := pgx.ForEachRow(rows, []any{&i, &v.Role, &v.Member}, func() error {
		if i >= 1 && i <= len(out) {
			found := v
			out[i-1] = &found
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("check who sent %d request(s): %w", len(senders), err)
	}
	return out, nil
}

// Refusals are the requests refused since the last CountRefusals, for one
// role and reason: how many, the latest message, the ids (newest last).
type Refusals struct {
	Role, Reason, Message string
	Count                 int64
	IDs                   []string
}

// RecentRefused is how many refused request ids iasql_request_refusals
// keeps per role and reason.
const RecentRefused = 64

// CountRefusals adds refusals to iasql_request_refusals, in one statement.
func CountRefusals(ctx context.Context, db Execer, refusals []Refusals) error {
	if len(refusals) == 0 {
		return nil
	}
	roles, reasons, msgs := make([]string, len(refusals)), make([]string, len(refusals)), make([]string, len(refusals))
	counts, ids := make([]int64, len(refusals)), make([]string, len(refusals))
	for i, r := range refusals {
		roles[i], reasons[i], msgs[i], counts[i] = r.Role, r.Reason, r.Message, r.Count
		last := r.IDs
		if len(last) > RecentRefused {
			last = last[len(last)-RecentRefused:]
		}
		rev := make([]string, len(last))
		for j, id := range last {
			rev[len(last)-1-j] = id
		}
		ids[i] = "{" + strings.Join(rev, ",") + "}"
	}
	_, err := db.Exec(ctx, `
		INSERT INTO public.iasql_request_refusals AS f (role_name, reason, refused, first_at, last_at, message, recent)
		SELECT n.role_name, n.reason, n.refused, pg_catalog.clock_timestamp(), pg_catalog.clock_timestamp(), n.message, n.recent::uuid[]
		  FROM unnest($1::text[], $2::text[], $3::bigint[], $4::text[], $5::text[]) AS n(role_name, reason, refused, message, recent)
		ON CONFLICT (role_name, reason) DO UPDATE SET refused = f.refused + excluded.refused, last_at = excluded.last_at,
		  message = excluded.message, recent = (excluded.recent || f.recent)[1:$6]`,
		roles, reasons, counts, msgs, ids, RecentRefused)
	if err != nil {
		return fmt.Errorf("count %d kind(s) of refused requests: %w", len(refusals), err)
	}
	return nil
}

// AcceptRequest records a request as accepted by this session, and reports
// whether it is new (a message replayed after a restart is not).
func AcceptRequest(ctx context.Context, db Execer, id, kind string, args []byte, role string) (fresh bool, err error) {
	tag, err := db.Exec(ctx, `INSERT INTO public.iasql_requests (id, kind, args, requested_by, status, taken_by_pid)
		VALUES ($1, $2, $3, $4, 'accepted', pg_catalog.pg_backend_pid()) ON CONFLICT (id) DO NOTHING`,
		id, kind, string(args), role)
	if err != nil {
		return false, fmt.Errorf("record request %s (%s): %w", id, kind, err)
	}
	return tag.RowsAffected() == 1, nil
}

// AnswerRequest records the answer to a request, only while this session
// holds it (status accepted, taken by this backend), and reports whether
// it did.
func AnswerRequest(ctx context.Context, db Execer, id, status string, result []byte, msg string) (bool, error) {
	tag, err := db.Exec(ctx, `UPDATE public.iasql_requests SET status = $2, result = $3, error = nullif($4, ''), finished_at = pg_catalog.clock_timestamp()
		WHERE id = $1 AND status = 'accepted' AND taken_by_pid = pg_catalog.pg_backend_pid()`,
		id, status, string(result), msg)
	if err != nil {
		return false, fmt.Errorf("update request %s: %w", id, err)
	}
	return tag.RowsAffected() == 1, nil
}

// Orphan is a request failed because the session that took it is gone.
type Orphan struct {
	ID, Kind string
	PID      int32
}

// FailOrphans fails every request still accepted by another session, with
// the error format (a format() string given the session's process id).
func FailOrphans(ctx context.Context, db *pgx.Conn, format string) ([]Orphan, error) {
	rows, err := db.Query(ctx, `UPDATE public.iasql_requests
		   SET status = 'failed', finished_at = pg_catalog.clock_timestamp(), error = pg_catalog.format($1, taken_by_pid)
		 WHERE status = 'accepted' AND taken_by_pid <> pg_catalog.pg_backend_pid()
		RETURNING id::text, kind, taken_by_pid`, format)
	if err != nil {
		return nil, fmt.Errorf("fail requests left by ended engine sessions: %w", err)
	}
	failed, err := pgx.CollectRows(rows, pgx.RowToStructByPos[Orphan])
	if err != nil {
		return nil, fmt.Errorf("fail requests left by ended engine sessions: %w", err)
	}
	return failed, nil
}

// ExpireRequests deletes answered requests older than retention.
func ExpireRequests(ctx context.Context, db Execer, retention time.Duration) (int64, error) {
	tag, err := db.Exec(ctx, `DELETE FROM public.iasql_requests
		WHERE status <> 'accepted' AND finished_at < pg_catalog.clock_timestamp() - pg_catalog.make_interval(secs => $1)`, retention.Seconds())
	if err != nil {
		return 0, fmt.Errorf("expire old requests: %w", err)
	}
	return tag.RowsAffected(), nil
}

// SetProgress records what a request waits for now (shown to its caller).
func SetProgress(ctx context.Context, db Execer, id, what string) error {
	if _, err := db.Exec(ctx, `UPDATE public.iasql_requests SET progress = $2 WHERE id = $1`, id, what); err != nil {
		return fmt.Errorf("report the progress of request %s: %w", id, err)
	}
	return nil
}

// Transaction is the open iasql transaction (iasql_transaction): who
// opened it, when, where intent since it starts, and the session that owns
// it.
type Transaction struct {
	OpenedBy     string
	OpenedAt     time.Time
	Begin        pglogrepl.LSN // where the transaction's intent starts
	OwnerPID     int32
	OwnerStarted time.Time
}

// MarshalJSON gives the transaction as iasql_begin answers it (its LSN in
// PostgreSQL's form; the session's start left out).
func (t Transaction) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		OpenedBy string    `json:"opened_by"`
		OpenedAt time.Time `json:"opened_at"`
		BeginLSN string    `json:"begin_lsn"`
		OwnerPID int32     `json:"owner_pid"`
	}{t.OpenedBy, t.OpenedAt, t.Begin.String(), t.OwnerPID})
}

func (t *Transaction) String() string {
	return fmt.Sprintf("opened by %s in session %d at %s", t.OpenedBy, t.OwnerPID, t.OpenedAt.UTC().Format(time.RFC3339))
}

// ReadTransaction reads the open iasql transaction (nil when none is).
func ReadTransaction(ctx context.Context, db Querier) (*Transaction, error) {
	var t Transaction
	err := db.QueryRow(ctx, `SELECT opened_by, opened_at, begin_lsn::text, owner_pid, owner_started FROM public.iasql_transaction`).
		Scan(&t.OpenedBy, &t.OpenedAt, &t.Begin, &t.OwnerPID, &t.OwnerStarted)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the iasql transaction: %w", err)
	}
	return &t, nil
}

// OpenTransaction opens the iasql transaction for role, owned by the
// session pid that started at started.
func OpenTransaction(ctx context.Context, db Querier, role string, pid int32, started time.Time) (Transaction, error) {
	var t Transaction
	err := db.QueryRow(ctx, `INSERT INTO public.iasql_transaction (opened_by, opened_at, begin_lsn, owner_pid, owner_started)
		VALUES ($1, pg_catalog.clock_timestamp(), pg_catalog.pg_current_wal_insert_lsn(), $2, $3)
		RETURNING opened_by, opened_at, begin_lsn::text, owner_pid, owner_started`, role, pid, started).
		Scan(&t.OpenedBy, &t.OpenedAt, &t.Begin, &t.OwnerPID, &t.OwnerStarted)
	if err != nil {
		return Transaction{}, fmt.Errorf("open the iasql transaction: %w", err)
	}
	return t, nil
}

// CloseTransaction ends the iasql transaction.
func CloseTransaction(ctx context.Context, db Execer) error {
	if _, err := db.Exec(ctx, `DELETE FROM public.iasql_transaction`); err != nil {
		return fmt.Errorf("close the iasql transaction: %w", err)
	}
	return nil
}

// OwnerOrAdmin reports whether session pid is the one that started at
// started (or its start cannot be seen: without pg_read_all_stats the
// sender's pid, which its request proves, is all there is to go by), and
// whether role is a superuser or an iasql_admin.
func OwnerOrAdmin(ctx context.Context, db Querier, pid int32, started time.Time, role string) (owner, admin bool, err error) {
	err = db.QueryRow(ctx, `
		SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_get_activity($1) a WHERE a.backend_start IS NULL OR a.backend_start = $2),
		       coalesce((SELECT r.rolsuper OR (pg_catalog.to_regrole('iasql_admin') IS NOT NULL
		                   AND pg_catalog.pg_has_role(r.oid, 'iasql_admin', 'MEMBER'))
		                   FROM pg_catalog.pg_roles r WHERE r.rolname = $3), false)`,
		pid, started, role).Scan(&owner, &admin)
	if err != nil {
		return false, false, fmt.Errorf("check the session and role of a request: %w", err)
	}
	return owner, admin, nil
}

// TransactionExpired says why the transaction owned by session pid (that
// started at started) has expired: its session ended, or has been idle
// longer than timeout; "" when it has not (or its state cannot be seen).
func TransactionExpired(ctx context.Context, db Querier, pid int32, started time.Time, timeout time.Duration) (string, error) {
	var why string
	err := db.QueryRow(ctx, `
		SELECT CASE WHEN a.pid IS NULL OR a.backend_start <> $2 THEN 'its session ended'
		            WHEN a.state <> 'active' AND pg_catalog.clock_timestamp() - a.state_change > $3 * interval '1 millisecond'
		              THEN 'its session was idle for ' || pg_catalog.date_trunc('second', pg_catalog.clock_timestamp() - a.state_change)
		            ELSE '' END -- running, or not visible (state NULL without pg_read_all_stats)
		  FROM (SELECT 1) one
		  LEFT JOIN pg_catalog.pg_stat_get_activity($1) a ON true`,
		pid, started, timeout.Milliseconds()).Scan(&why)
	if err != nil {
		return "", fmt.Errorf("check the iasql transaction's session: %w", err)
	}
	return why, nil
}

// RecentRequests returns, per role, how long ago each of its last perRole
// requests made within window was received (refused ones included), oldest
// first, by the server's clock (the sidecar's may differ).
func RecentRequests(ctx context.Context, db *pgx.Conn, window time.Duration, perRole int) (map[string][]time.Duration, error) {
	rows, err := db.Query(ctx, `
		SELECT requested_by::text, pg_catalog.array_agg(age ORDER BY age DESC)
		  FROM (SELECT requested_by, pg_catalog.date_part('epoch', pg_catalog.now() - accepted_at) AS age,
		               pg_catalog.row_number() OVER (PARTITION BY requested_by ORDER BY accepted_at DESC) AS n
		          FROM public.iasql_requests
		         WHERE accepted_at > pg_catalog.now() - pg_catalog.make_interval(secs => $1)) r
		 WHERE n <= $2
		 GROUP BY requested_by`, window.Seconds(), perRole)
	if err != nil {
		return nil, fmt.Errorf("read recent requests: %w", err)
	}
	recent := map[string][]time.Duration{}
	var role string
	var ages []float64
	_, err = pgx.ForEachRow(rows, []any{&role, &ages}, func() error {
		d := make([]time.Duration, len(ages))
		for i, a := range ages {
			d[i] = time.Duration(a * float64(time.Second))
		}
		recent[role] = d
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read recent requests: %w", err)
	}
	return recent, nil
}
