package bridge

import (
	"testing"
	"time"
)

// The lock a request's sender holds is the first 8 bytes of the SHA-256 of
// the message, split as pg_locks shows a bigint advisory lock (the halves
// were computed independently of this code).
func TestSenderLock(t *testing.T) {
	classid, objid := senderLock([]byte(`{"id": "x"}`))
	if classid != wantClassid || objid != wantObjid {
		t.Errorf("senderLock = %d/%d, want %d/%d", classid, objid, wantClassid, wantObjid)
	}
}

// A role gets requestBurst requests at once, then requestRate a second;
// other roles are not held back by it.
func TestRequestRate(t *testing.T) {
	var g requestGuard
	now := time.Unix(1000, 0)
	for i := 0; i < int(requestBurst); i++ {
		if !g.allow("app", now) {
			t.Fatalf("request %d of a burst refused", i+1)
		}
	}
	if g.allow("app", now) {
		t.Error("a request past the burst was allowed")
	}
	if !g.allow("other", now) {
		t.Error("another role was held back")
	}
	if !g.allow("app", now.Add(time.Second/time.Duration(requestRate))) {
		t.Error("no request allowed after the bucket refilled by one")
	}
	if g.allow("app", now.Add(time.Second/time.Duration(requestRate))) {
		t.Error("two requests allowed after the bucket refilled by one")
	}
}

// Answered requests are expired at most every requestExpiry.
func TestRequestExpiryDue(t *testing.T) {
	var g requestGuard
	now := time.Unix(1000, 0)
	if !g.dueExpiry(now) {
		t.Error("the first request does not expire old ones")
	}
	if g.dueExpiry(now.Add(requestExpiry - time.Second)) {
		t.Error("expired again within requestExpiry")
	}
	if !g.dueExpiry(now.Add(requestExpiry)) {
		t.Error("not expired after requestExpiry")
	}
}

// sha256(`{"id": "x"}`)[:8] as two big-endian halves (Python's hashlib).
const wantClassid, wantObjid = 2839663100, 3315468857

// Schedule ticks, which any role can send, are taken at most every
// minTickGap.
func TestTickGap(t *testing.T) {
	var g requestGuard
	now := time.Unix(1000, 0)
	if !g.tickDue(now) {
		t.Error("the first tick was dropped")
	}
	if g.tickDue(now.Add(minTickGap - time.Second)) {
		t.Error("a tick within minTickGap was taken")
	}
	if !g.tickDue(now.Add(minTickGap)) {
		t.Error("a tick after minTickGap was dropped")
	}
}

// TestSeedRates: a bucket seeded from a role's recent requests is what the
// previous leader's was: a burst just before leaves it empty (refusals
// included, which took nothing), time since refills it, and a role with no
// recent requests starts full.
func TestSeedRates(t *testing.T) {
	burst := func(n int, age time.Duration) []time.Duration {
		ages := make([]time.Duration, n)
		for i := range ages {
			ages[i] = age
		}
		return ages
	}
	tests := []struct {
		name    string
		ages    []time.Duration // of "app"'s requests, oldest first
		allowed int             // of requests it sends now, at once
	}{
		{"none", nil, int(requestBurst)},
		{"a few", burst(10, time.Second), int(requestBurst)},
		{"a burst just now", burst(int(requestBurst), 0), 0},
		{"a burst and refusals just now", burst(3*int(requestBurst), 0), 0},
		{"a burst a second ago", burst(int(requestBurst)+20, time.Second), int(requestRate)},
		{"a burst a window ago", burst(3*int(requestBurst), requestWindow), int(requestBurst)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			var g requestGuard
			g.seed(map[string][]time.Duration{"app": tc.ages}, now)
			n := 0
			for g.allow("app", now) {
				n++
			}
			if n != tc.allowed {
				t.Errorf("%d requests allowed now, want %d", n, tc.allowed)
			}
			if !g.allow("other", now) {
				t.Error("another role's request was refused")
			}
		})
	}
}

// Request ids are UUIDs in their text form; anything else is dropped.
func TestIsUUID(t *testing.T) {
	for id, want := range map[string]bool{
		"00000000-0000-4000-8000-000000000002":  true,
		"6F9619FF-8B86-D011-B42D-00C04FC964FF":  true,
		"":                                      false,
		"x":                                     false,
		"00000000-0000-4000-8000-00000000000g":  false,
		"00000000_0000-4000-8000-000000000002":  false,
		"00000000-0000-4000-8000-0000000000023": false,
	} {
		if got := isUUID(id); got != want {
			t.Errorf("isUUID(%q) = %v, want %v", id, got, want)
		}
	}
}

// The inbox hands out messages oldest first, in batches, and refuses what
// would take it past maxInboxBytes.
func TestInbox(t *testing.T) {
	b := inbox{ready: make(chan struct{}, 1)}
	big := make([]byte, maxInboxBytes/2)
	for i, want := range []bool{true, true, false} {
		if got := b.put(request{ID: string(rune('a' + i)), raw: big}); got != want {
			t.Errorf("put %d = %v, want %v", i, got, want)
		}
	}
	ids := func(rs []request) string {
		var s string
		for _, r := range rs {
			s += r.ID
		}
		return s
	}
	if got := ids(b.take(1)); got != "a" {
		t.Errorf("take(1) = %q, want a", got)
	}
	if !b.put(request{ID: "c", raw: big}) {
		t.Error("no room after a take")
	}
	if got := ids(b.take(10)); got != "bc" {
		t.Errorf("take(10) = %q, want bc", got)
	}
	if got := ids(b.take(10)); got != "" {
		t.Errorf("take of an empty inbox = %q", got)
	}
}
