// Package detail remembers the per-resource details a mapper reads beside
// its listing (S3 versioning and object listings, IAM role policies), in a
// Cache, and bounds how many of them a read of a table refreshes when it may
// reuse what it read before. A Cache keeps each detail with the version of
// the resource and the time it was read; within its TTL it is reused; past it
// the detail is stale, and one read refreshes at most Budget stale details,
// oldest first, reusing the others until their turn. So an automatic cycle
// over 10,000 unchanged buckets makes its list calls and at most Budget
// detail calls, and every detail is refreshed within a bounded number of
// cycles. A detail never read, or one a read must see fresh
// (module.Fresh), is always read.
package detail

import (
	"os"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/iasql/iasql/modules/module"
)

// DefaultBudget is how many stale details one read refreshes when
// IASQL_DETAIL_BUDGET does not say.
const DefaultBudget = 1000

// Budget is IASQL_DETAIL_BUDGET (a whole number; 0 refreshes every stale
// detail), default DefaultBudget.
func Budget() int {
	if n, err := strconv.Atoi(os.Getenv("IASQL_DETAIL_BUDGET")); err == nil && n >= 0 {
		return n
	}
	return DefaultBudget
}

// Due picks, from the read times of a table's details, the stale ones (read
// more than ttl ago) to refresh in this read: all of them when budget is 0,
// else the budget's worth, oldest first (names break ties).
func Due(read map[string]time.Time, ttl time.Duration, budget int) map[string]bool {
	now := time.Now()
	var stale []string
	for name, at := range read {
		if now.Sub(at) > ttl {
			stale = append(stale, name)
		}
	}
	sort.Slice(stale, func(i, j int) bool {
		a, b := read[stale[i]], read[stale[j]]
		if !a.Equal(b) {
			return a.Before(b)
		}
		return stale[i] < stale[j]
	})
	if budget > 0 && len(stale) > budget {
		stale = stale[:budget]
	}
	due := make(map[string]bool, len(stale))
	for _, n := range stale {
		due[n] = true
	}
	return due
}

// Cache remembers one kind of detail per resource (by name: a bucket's,
// a role's) with the version of the resource it was read from (its creation
// time or cloud id: a resource made anew under the same name is read anew)
// and when it was read, and says when a read may reuse it.
type Cache[V any] struct {
	ttl time.Duration // 0: never reuse

	mu      sync.Mutex
	entries map[string]entry[V]
}

type entry[V any] struct {
	v       V
	version string
	read    time.Time
}

// NewCache returns an empty cache whose details are reused within ttl.
func NewCache[V any](ttl time.Duration) *Cache[V] {
	return &Cache[V]{ttl: ttl, entries: map[string]entry[V]{}}
}

// Due is which stale details this read refreshes (Due over the cache, with
// the configured Budget).
func (c *Cache[V]) Due() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	read := make(map[string]time.Time, len(c.entries))
	for name, e := range c.entries {
		read[name] = e.read
	}
	return Due(read, c.ttl, Budget())
}

// Get returns the detail of a resource when the read may reuse it: fresh
// does not ask for it (module.Fresh.For, by name), it was read from this
// version of the resource (never for an unknown version ""), and read
// within the TTL or, stale, not due for a refresh in this read (nil due:
// within the TTL only).
func (c *Cache[V]) Get(fresh module.Fresh, name, version string, due map[string]bool) (V, bool) {
	var zero V
	if c.ttl == 0 || version == "" || fresh.For(name) {
		return zero, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[name]
	if !ok || e.version != version || (time.Since(e.read) > c.ttl && (due == nil || due[name])) {
		return zero, false
	}
	return e.v, true
}

// Put remembers a detail just read. An unknown version ("") keeps the
// version already remembered for the name.
func (c *Cache[V]) Put(name, version string, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if version == "" {
		version = c.entries[name].version
	}
	c.entries[name] = entry[V]{v: v, version: version, read: time.Now()}
}

// Forget drops a resource's detail (the mapper changed it, or it is gone).
func (c *Cache[V]) Forget(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, name)
}
