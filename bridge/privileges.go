package bridge

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"sync"
	"time"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/logical"
	"github.com/jackc/pgx/v5"
)

// Who may ask the sidecar for what.
//
// A request arrives as a logical-decoding message, which any role can emit,
// so its content proves nothing by itself. The SQL API's iasql_request sends
// its session's pid in the message and, before emitting it, takes a
// transaction advisory lock whose key is the first 8 bytes of the message's
// SHA-256 (iasql_request_key), held while it waits for the answer. The
// sidecar acts on a request only when the session the message names holds
// that lock, and as that session's role (its session user): no role can hold
// a lock in another's session, and seeing the lock in pg_locks does not help
// to forge another message that hashes to it. Then the role must be a member
// of the role the kind of request needs (iasql_request_role), or the request
// is refused with one line naming it.
//
// Requests are bounded in size (MaxRequestBytes: iasql_request refuses larger
// ones before sending, the sidecar drops them) and in rate per role, refused
// ones included (a leader seeds the rates from the recent requests in
// iasql_requests, so they survive a failover), and answered requests are
// deleted after requestRetention. A refusal costs almost nothing: senders
// are verified a batch at a time (takeRequests), and refusals are counted
// (iasql_request_refusals), never stored one by one.

// The roles the product ships (sql/005_roles.sql); each includes the next.
const (
	RoleAdmin  = "iasql_admin"
	RoleWriter = "iasql_writer"
	RoleReader = "iasql_reader"
)

// MaxRequestBytes is the largest request message the sidecar takes (as
// iasql_request_max_bytes() in SQL).
const MaxRequestBytes = 64 << 10

// A request at the limit must get through the replication stream, which
// cuts the content of larger logical-decoding messages before reading it
// (logical.MaxMessageBytes): this does not compile if it would not.
var _ [logical.MaxMessageBytes - MaxRequestBytes]struct{}

// Rate of requests per role: a bucket of requestBurst, refilled at
// requestRate a second.
const (
	requestRate  = 10.0
	requestBurst = 50.0
)

// requestRetention: answered requests older than this are deleted (at
// most every requestExpiry).
const (
	requestRetention = 24 * time.Hour
	requestExpiry    = time.Hour
)

// neededRole is the role a request of kind needs (iasql_request_role).
func neededRole(kind string) string {
	switch kind {
	case "preview":
		return RoleReader
	case "begin", "commit", "rollback", "refresh", "cycle":
		return RoleWriter
	}
	return RoleAdmin
}

// senderLock is the advisory lock (bigint form) a request's sender holds:
// pg_locks shows it as classid (high 32 bits) and objid (low 32 bits) with
// objsubid 1.
func senderLock(content []byte) (classid, objid uint32) {
	sum := sha256.Sum256(content)
	k := binary.BigEndian.Uint64(sum[:8])
	return uint32(k >> 32), uint32(k)
}

// requestGuard holds the per-role rate buckets, when answered requests
// were last expired and when the last schedule tick was taken.
type requestGuard struct {
	mu      sync.Mutex
	buckets map[string]*bucket
	expired time.Time
	ticked  time.Time
}

// minTickGap: schedule ticks (iasql_cycle_tick, unauthenticated: they ask
// for nothing but an automatic cycle) closer together than this are
// dropped; pg_cron sends one a minute at most.
const minTickGap = 30 * time.Second

// tickDue reports whether a schedule tick arriving now is taken.
func (g *requestGuard) tickDue(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.ticked.IsZero() && now.Sub(g.ticked) < minTickGap {
		return false
	}
	g.ticked = now
	return true
}

// deprecatedFunctions are the names iasql_deprecated counts (sql/040_engine.sql);
// messages naming anything else are ignored.
var deprecatedFunctions = map[string]bool{"iasql_apply": true, "iasql_sync": true, "iasql_preview_apply": true, "iasql_preview_sync": true}

type bucket struct {
	tokens float64
	at     time.Time
}

// allow takes one request of role from its bucket.
func (g *requestGuard) allow(role string, now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.buckets == nil {
		g.buckets = map[string]*bucket{}
	}
	b := g.buckets[role]
	if b == nil {
		b = &bucket{tokens: requestBurst, at: now}
		g.buckets[role] = b
	}
	return b.take(now)
}

// take refills the bucket up to now and takes a token from it, if it has one.
func (b *bucket) take(now time.Time) bool {
	b.tokens = min(requestBurst, b.tokens+now.Sub(b.at).Seconds()*requestRate)
	b.at = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// requestWindow is how far back a bucket's state depends on what its role
// did: from empty, it is full again after this long.
const requestWindow = time.Duration(requestBurst / requestRate * float64(time.Second))

// seedRecent is how many of a role's latest requests within requestWindow
// seed its bucket: with more than a bucket and its refill over the window,
// a replay from a full bucket empties it as the true one did, so earlier
// ones change nothing.
const seedRecent = 4 * int(requestBurst)

// seed replaces the buckets with what they would be had this sidecar seen
// the requests made recently (ages: how long before now each came, oldest
// first, per role): each, refused ones included, is replayed on a bucket
// full at the first. A role's requests cost it the same whichever sidecar
// takes them, so a flood cannot start again with full buckets after a
// failover.
func (g *requestGuard) seed(recent map[string][]time.Duration, now time.Time) {
	buckets := make(map[string]*bucket, len(recent))
	for role, ages := range recent {
		if len(ages) == 0 {
			continue
		}
		b := &bucket{tokens: requestBurst, at: now.Add(-ages[0])}
		for _, age := range ages {
			b.take(now.Add(-age))
		}
		buckets[role] = b
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.buckets = buckets
}

// seedRates seeds the request rate buckets from the requests of the last
// requestWindow, when this engine starts leading (Lead). Failing that, the
// buckets start full, as a new sidecar's did before (logged).
func (e *Engine) seedRates(ctx context.Context, c *pgx.Conn) {
	recent, err := store.RecentRequests(ctx, c, requestWindow, seedRecent)
	if err != nil {
		e.log.Warn("cannot read recent requests; request rates start from full buckets", "err", err)
		return
	}
	e.guard.seed(recent, time.Now())
}

// dueExpiry reports whether answered requests should be expired now.
func (g *requestGuard) dueExpiry(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if now.Sub(g.expired) < requestExpiry {
		return false
	}
	g.expired = now
	return true
}

// authorize decides on a request whose sender was verified (its role
// r.Role, member: whether that role has the one the request needs): "" to
// carry it out, else the reason ("rate" or "role") and the one line to
// refuse it with. Every verified request takes from its role's bucket,
// refused ones too, so a role that floods is limited whatever it sends.
func (e *Engine) authorize(r request, member bool, now time.Time) (reason, msg string) {
	if !e.guard.allow(r.Role, now) {
		return "rate", fmt.Sprintf("role %s sent more than %d requests at once (at most %d a second on average): wait a moment and call again", r.Role, int(requestBurst), int(requestRate))
	}
	if !member {
		needs := neededRole(r.Kind)
		return "role", fmt.Sprintf("permission denied for iasql %s: role %s is not a member of %s; an administrator grants it: GRANT %s TO %s", r.Kind, r.Role, needs, needs, pgx.Identifier{r.Role}.Sanitize())
	}
	return "", ""
}

// refusals are the requests refused and not yet written
// (iasql_request_refusals), by role and reason. A refused request is
// counted, never stored: its caller (if any: the SQL API refuses a role
// without the needed role before sending) finds its id among the latest.
type refusals map[[2]string]*store.Refusals

// add counts a refusal of r.
func (f refusals) add(r request, reason, msg string) {
	k := [2]string{r.Role, reason}
	c := f[k]
	if c == nil {
		c = &store.Refusals{Role: r.Role, Reason: reason}
		f[k] = c
	}
	c.Count++
	c.Message = msg
	c.IDs = append(c.IDs, r.ID)
	if len(c.IDs) > 2*store.RecentRefused {
		c.IDs = append(c.IDs[:0], c.IDs[len(c.IDs)-store.RecentRefused:]...)
	}
}

// drain returns the counted refusals and forgets them.
func (f refusals) drain() []store.Refusals {
	out := make([]store.Refusals, 0, len(f))
	for k, c := range f {
		out = append(out, *c)
		delete(f, k)
	}
	return out
}

// inbox holds the request messages capture delivered that the engine has
// not taken yet (Message adds to it without blocking; takeRequests takes
// them in batches), bounded in bytes: past maxInboxBytes a message is
// dropped (logged).
type inbox struct {
	mu    sync.Mutex
	queue []request
	bytes int
	ready chan struct{} // signalled when the queue is not empty
}

// maxInboxBytes bounds the messages waiting in the inbox.
const maxInboxBytes = 16 << 20

// put adds r, unless the inbox is full.
func (b *inbox) put(r request) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.bytes+len(r.raw) > maxInboxBytes {
		return false
	}
	b.queue = append(b.queue, r)
	b.bytes += len(r.raw)
	select {
	case b.ready <- struct{}{}:
	default:
	}
	return true
}

// take removes and returns up to n of the oldest messages.
func (b *inbox) take(n int) []request {
	b.mu.Lock()
	defer b.mu.Unlock()
	n = min(n, len(b.queue))
	out := make([]request, n)
	copy(out, b.queue)
	for _, r := range out {
		b.bytes -= len(r.raw)
	}
	rest := copy(b.queue, b.queue[n:])
	clear(b.queue[rest:])
	b.queue = b.queue[:rest]
	return out
}

// isUUID reports whether s is a UUID in its text form (request ids are).
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// expireRequests deletes answered requests older than requestRetention.
func (e *Engine) expireRequests(ctx context.Context, c *pgx.Conn) {
	n, err := store.ExpireRequests(ctx, c, requestRetention)
	if err != nil {
		e.log.Warn("cannot expire old requests", "err", err)
		return
	}
	if n > 0 {
		e.log.Info("expired answered requests", "count", n, "older_than", requestRetention.String())
	}
}
