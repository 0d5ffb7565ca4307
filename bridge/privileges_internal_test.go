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
