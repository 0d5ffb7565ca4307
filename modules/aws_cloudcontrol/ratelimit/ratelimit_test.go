package ratelimit_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/ratelimit"
)

func TestLimiter(t *testing.T) {
	// 100/s with a burst of 10: 30 calls from 5 goroutines take at least
	// the 20 beyond the burst / 100 per second = 200 ms.
	l := ratelimit.New(100, 10)
	start := time.Now()
	var wg sync.WaitGroup
	for g := 0; g < 5; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 6; i++ {
				if err := l.Wait(context.Background()); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if d := time.Since(start); d < 190*time.Millisecond || d > 2*time.Second {
		t.Errorf("30 calls took %v, want about 200 ms", d)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	slow := ratelimit.New(0.001, 1)
	_ = slow.Wait(context.Background())
	if err := slow.Wait(ctx); err == nil {
		t.Error("Wait on an empty bucket with a cancelled context returned nil")
	}
}
