// Package ratelimit is a token bucket shared by every Cloud Control call
// of a sidecar (reads, writes and polls of every type's mapper). AWS
// publishes no Cloud Control rate; about 25 requests a second is what other
// tools settled on, and the default here. (golang.org/x/time/rate is not
// in go.sum; the bucket below is all that is needed.)
package ratelimit

import (
	"context"
	"sync"
	"time"
)

// DefaultRate is requests per second when none is configured.
const DefaultRate = 25

// Limiter is a token bucket: up to burst calls at once, refilled at rate
// per second. One Limiter is made per sidecar and passed to every mapper;
// it has no package-level state.
type Limiter struct {
	rate  float64
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
}

// New returns a full bucket of burst tokens refilled at perSecond (<= 0:
// DefaultRate; burst < 1: one second's worth).
func New(perSecond float64, burst int) *Limiter {
	if perSecond <= 0 {
		perSecond = DefaultRate
	}
	b := float64(burst)
	if burst < 1 {
		b = perSecond
	}
	return &Limiter{rate: perSecond, burst: b, tokens: b, last: time.Now()}
}

// Wait takes a token, waiting for one as long as needed or until ctx ends.
func (l *Limiter) Wait(ctx context.Context) error {
	if l == nil {
		return nil
	}
	for {
		l.mu.Lock()
		now := time.Now()
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
		l.last = now
		if l.tokens >= 1 {
			l.tokens--
			l.mu.Unlock()
			return nil
		}
		wait := time.Duration((1 - l.tokens) / l.rate * float64(time.Second))
		l.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
