// Package regional is what the modules that call a cloud service per
// region share: an SDK client per region, made once, and running the
// calls for many items (regions, buckets, roles) concurrently.
package regional

import (
	"context"
	"slices"
	"sync"

	"github.com/iasql/iasql/modules/module"
)

// Clients holds an SDK client of type C per region, each made once by
// the function given to NewClients.
type Clients[C any] struct {
	newClient func(region string) C

	mu       sync.Mutex
	byRegion map[string]C
}

// NewClients returns an empty cache whose clients newClient makes (e.g.
// ecr.NewFromConfig with the region set in its options).
func NewClients[C any](newClient func(region string) C) *Clients[C] {
	return &Clients[C]{newClient: newClient, byRegion: map[string]C{}}
}

// Region returns the client for a region, made on first use.
func (c *Clients[C]) Region(region string) C {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byRegion[region]; ok {
		return cl
	}
	cl := c.newClient(region)
	c.byRegion[region] = cl
	return cl
}

// ForEach runs fn(ctx, i) for i from 0 to n-1, at most limit at a time
// (all at once when limit is 0 or less). The first error cancels the
// context the others run with and is returned. Otherwise the error is
// ctx's, when ctx ended meanwhile; with a limit, the calls not started by
// then are not made.
func ForEach(ctx context.Context, limit, n int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var sem chan struct{}
	if limit > 0 {
		sem = make(chan struct{}, limit)
	}
	var wg sync.WaitGroup
	var once sync.Once
	var first error
loop:
	for i := range n {
		if sem != nil {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				break loop
			}
		}
		wg.Go(func() {
			if sem != nil {
				defer func() { <-sem }()
			}
			if err := fn(ctx, i); err != nil {
				once.Do(func() { first = err; cancel(err) })
			}
		})
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// Gather runs fn(ctx, i) for i from 0 to n-1 as ForEach does and returns
// what the calls returned, joined in order of i (nil when there is
// nothing), or ForEach's error.
func Gather[R any](ctx context.Context, limit, n int, fn func(ctx context.Context, i int) ([]R, error)) ([]R, error) {
	per := make([][]R, n)
	err := ForEach(ctx, limit, n, func(ctx context.Context, i int) error {
		got, err := fn(ctx, i)
		per[i] = got
		return err
	})
	if err != nil {
		return nil, err
	}
	return slices.Concat(per...), nil
}

// GatherRegions runs fn(ctx, i) for i from 0 to n-1, at most limit at a
// time, for items that each live in a region (regionOf(i)): regions, or
// resources read in their own region. One item's failure cancels nothing:
// it returns what the calls returned, joined in order of i, but for the
// regions where a call failed, and a *module.PartialError naming those
// regions (with the error of each one's first failed item), or nil when
// every call worked. When ctx ends meanwhile it returns ctx's error: a
// cancelled read is not a region that failed.
func GatherRegions[R any](ctx context.Context, limit, n int, regionOf func(i int) string,
	fn func(ctx context.Context, i int) ([]R, error)) ([]R, error) {
	per := make([][]R, n)
	errs := make([]error, n)
	if err := ForEach(ctx, limit, n, func(ctx context.Context, i int) error {
		per[i], errs[i] = fn(ctx, i)
		return nil
	}); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	failed := map[string]error{}
	for i, err := range errs {
		if r := regionOf(i); err != nil && failed[r] == nil {
			failed[r] = err
		}
	}
	var out []R
	for i, got := range per {
		if failed[regionOf(i)] == nil {
			out = append(out, got...)
		}
	}
	return out, module.Partial(failed)
}
