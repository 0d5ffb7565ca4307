// Package detail bounds how many per-resource details (S3 versioning and
// object listings, IAM role policies: what a listing does not say) a read of
// a table refreshes when it may reuse what it read before. A mapper keeps
// each detail with the time it read it; within its TTL it is reused; past it
// the detail is stale, and one read refreshes at most Budget stale details,
// oldest first, reusing the others until their turn. So an automatic cycle
// over 10,000 unchanged buckets makes its list calls and at most Budget
// detail calls, and every detail is refreshed within a bounded number of
// cycles. A detail never read, or one a read must see fresh
// (module.FreshFor), is always read.
package detail

import (
	"os"
	"sort"
	"strconv"
	"time"
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

// DueOf is Due over a mapper's remembered details (by name), whose read
// times readAt gives, with the configured Budget.
func DueOf[V any](details map[string]V, readAt func(V) time.Time, ttl time.Duration) map[string]bool {
	read := make(map[string]time.Time, len(details))
	for name, d := range details {
		read[name] = readAt(d)
	}
	return Due(read, ttl, Budget())
}
