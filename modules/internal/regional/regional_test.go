package regional_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

func TestClients(t *testing.T) {
	type client struct{ region string }
	made := map[string]int{}
	var mu sync.Mutex
	c := regional.NewClients(aws.Config{}, func(region string) *client {
		mu.Lock()
		made[region]++
		mu.Unlock()
		return &client{region: region}
	})
	cases := []struct {
		name, region string
		made         int // clients made for the region after the call
	}{
		{"first use makes the client", "us-east-1", 1},
		{"another region makes its own", "eu-west-1", 1},
		{"the same region reuses it", "us-east-1", 1},
		{"the empty region is a region too", "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cl := c.Region(tc.region)
			if cl.region != tc.region {
				t.Errorf("client for %q is %q's", tc.region, cl.region)
			}
			if cl != c.Region(tc.region) {
				t.Errorf("two clients for %q", tc.region)
			}
			if made[tc.region] != tc.made {
				t.Errorf("%d clients made for %q, want %d", made[tc.region], tc.region, tc.made)
			}
		})
	}
	// Concurrent first uses make one client.
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() { c.Region("ap-south-1") })
	}
	wg.Wait()
	if made["ap-south-1"] != 1 {
		t.Errorf("concurrent first uses made %d clients", made["ap-south-1"])
	}
}

func TestForEach(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name      string
		limit, n  int
		fail      int  // the i whose call fails; -1 for none
		cancelled bool // the caller's context ended before the call
		wantErr   error
		allRun    bool // every i ran exactly once
	}{
		{"nothing to do", 4, 0, -1, false, nil, true},
		{"fewer than the limit", 4, 3, -1, false, nil, true},
		{"more than the limit", 3, 40, -1, false, nil, true},
		{"no limit", 0, 40, -1, false, nil, true},
		{"the first error is returned", 2, 10, 0, false, boom, false},
		{"an error without a limit", 0, 10, 5, false, boom, false},
		{"caller's context ended, with a limit", 2, 10, -1, true, context.Canceled, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			ran := make([]atomic.Int32, tc.n)
			var inFlight, most atomic.Int32
			err := regional.ForEach(ctx, tc.limit, tc.n, func(ctx context.Context, i int) error {
				ran[i].Add(1)
				now := inFlight.Add(1)
				defer inFlight.Add(-1)
				for {
					m := most.Load()
					if now <= m || most.CompareAndSwap(m, now) {
						break
					}
				}
				if i == tc.fail {
					return boom
				}
				if tc.fail >= 0 {
					// The others wait for the failure to cancel them.
					select {
					case <-ctx.Done():
						return context.Cause(ctx)
					case <-time.After(10 * time.Second):
						return errors.New("not cancelled")
					}
				}
				time.Sleep(time.Millisecond)
				return ctx.Err()
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if tc.limit > 0 && int(most.Load()) > tc.limit {
				t.Errorf("%d calls at once, limit %d", most.Load(), tc.limit)
			}
			if tc.allRun {
				for i := range ran {
					if got := ran[i].Load(); got != 1 {
						t.Errorf("fn(%d) ran %d times", i, got)
					}
				}
			}
		})
	}
}

func TestGather(t *testing.T) {
	boom := errors.New("boom")
	cases := []struct {
		name    string
		limit   int
		per     [][]string // what the call for each i returns
		fail    int        // the i whose call fails; -1 for none
		want    []string
		wantErr error
	}{
		{"nothing to do", 2, nil, -1, nil, nil},
		{"all empty", 2, [][]string{nil, {}, nil}, -1, nil, nil},
		{"in order of i", 2, [][]string{{"a", "b"}, nil, {"c"}, {"d", "e"}}, -1, []string{"a", "b", "c", "d", "e"}, nil},
		{"no limit", 0, [][]string{{"a"}, {"b"}, {"c"}}, -1, []string{"a", "b", "c"}, nil},
		{"an error returns nothing", 2, [][]string{{"a"}, {"b"}, {"c"}}, 1, nil, boom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := regional.Gather(t.Context(), tc.limit, len(tc.per), func(ctx context.Context, i int) ([]string, error) {
				// Later items finish first: the order is i's, not completion's.
				time.Sleep(time.Duration(len(tc.per)-i) * time.Millisecond)
				if i == tc.fail {
					return tc.per[i], boom
				}
				return tc.per[i], nil
			})
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
			if !slices.Equal(got, tc.want) || (got == nil) != (tc.want == nil) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// TestGatherRegions: one region's failure cancels nothing; its records are
// left out and it is named in a module.PartialError; a cancelled context
// is the context's error, not a region's.
func TestGatherRegions(t *testing.T) {
	boom := errors.New("AuthFailure")
	regions := []string{"r1", "r2", "r2", "r3"} // item -> region
	cases := []struct {
		name   string
		fail   map[int]bool // items that fail
		want   []int
		failed []string
	}{
		{"all read", nil, []int{0, 1, 2, 3}, nil},
		{"one item fails its region", map[int]bool{2: true}, []int{0, 3}, []string{"r2"}},
		{"two regions fail", map[int]bool{0: true, 3: true}, []int{1, 2}, []string{"r1", "r3"}},
		{"every region fails", map[int]bool{0: true, 1: true, 3: true}, nil, []string{"r1", "r2", "r3"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			got, err := regional.GatherRegions(context.Background(), 2, len(regions), func(i int) string { return regions[i] },
				func(ctx context.Context, i int) ([]int, error) {
					calls.Add(1)
					if tc.fail[i] {
						return []int{i}, boom
					}
					return []int{i}, nil
				})
			if !slices.Equal(got, tc.want) {
				t.Errorf("records %v, want %v", got, tc.want)
			}
			if calls.Load() != int32(len(regions)) {
				t.Errorf("%d calls, want every item's", calls.Load())
			}
			failed, partial := module.FailedRegions(err)
			if len(tc.failed) == 0 {
				if err != nil {
					t.Errorf("error %v, want none", err)
				}
				return
			}
			if !partial || !slices.Equal(slices.Sorted(maps.Keys(failed)), tc.failed) || !errors.Is(err, boom) {
				t.Errorf("error %v, want a partial error for %v wrapping the cause", err, tc.failed)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := regional.GatherRegions(ctx, 1, 3, func(int) string { return "r1" }, func(ctx context.Context, i int) ([]int, error) {
		return nil, ctx.Err()
	}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v, want the context's error", err)
	}
	if _, partial := module.FailedRegions(context.Canceled); partial {
		t.Error("a cancellation is not a partial failure")
	}
}
