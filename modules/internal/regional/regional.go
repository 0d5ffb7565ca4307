// Package regional is what the modules that call a cloud service per
// region share: an SDK client per region, made once; listing every region
// of a cycle's scope, each page by page; and running the calls for many
// items (regions, buckets, roles) concurrently.
package regional

import (
	"context"
	"slices"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

// Clients holds an SDK client of type C per region, each made once by
// the function given to NewClients.
type Clients[C any] struct {
	cfg       aws.Config
	newClient func(region string) C

	mu       sync.Mutex
	byRegion map[string]C
}

// NewClients returns an empty cache whose clients newClient makes from cfg
// (e.g. ecr.NewFromConfig(cfg) with the region set in its options); cfg's
// region is the scope of a call that has none (Scope).
func NewClients[C any](cfg aws.Config, newClient func(region string) C) *Clients[C] {
	return &Clients[C]{cfg: cfg, newClient: newClient, byRegion: map[string]C{}}
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

// Scope is the scope a call works in: s, else (aws_account not installed)
// the configuration's region (module.Scope.Or).
func (c *Clients[C]) Scope(s module.Scope) module.Scope { return s.Or(c.cfg) }

// RegionOr is region, or the default region of the scope s when region is
// "" (a row that names none).
func (c *Clients[C]) RegionOr(s module.Scope, region string) string {
	if region != "" {
		return region
	}
	return c.Scope(s).Default
}

// Each runs read for every region of the scope s (Scope) concurrently,
// with each region's client, and returns the results in region order (a
// typed table's values, module.Typed). A region whose read fails does not
// stop the others: the results of the regions that worked come with a
// *module.PartialError naming the ones that failed (a region the account
// has not enabled answers AuthFailure or UnrecognizedClientException; see
// GatherRegions).
func Each[C, R any](ctx context.Context, c *Clients[C], s module.Scope, read func(ctx context.Context, region string, cl C) ([]R, error)) ([]R, error) {
	regions := c.Scope(s).Regions
	return GatherRegions(ctx, 0, len(regions), func(i int) string { return regions[i] },
		func(ctx context.Context, i int) ([]R, error) {
			return read(ctx, regions[i], c.Region(regions[i]))
		})
}

// List lists a resource type in every region of the scope s (Each:
// concurrently, a region whose read fails leaving the others), each
// region page by page: pager makes a region's paginator from its client
// (ec2.NewDescribeVpcsPaginator with the input), items takes a page's
// resources, and record renders one of them found in a region (nil to
// leave it out: one the table does not hold). A failed page is wrapped as
// "<what> in <region>", classified by terminal (nil: none is terminal).
func List[C any, PG Pager[P, O], P, O, T any](ctx context.Context, c *Clients[C], s module.Scope, terminal module.Terminal, what string,
	pager func(cl C) PG, items func(page *P) []T, record func(region string, item T) module.Record) ([]module.Record, error) {
	recs, err := ListOf(ctx, c, s, terminal, what, pager, items, record)
	return slices.DeleteFunc(recs, func(r module.Record) bool { return r == nil }), err
}

// ListOf is List for a typed table (module.Typed): record renders every
// item found in a region as the table's value R, none left out.
func ListOf[C any, PG Pager[P, O], P, O, T, R any](ctx context.Context, c *Clients[C], s module.Scope, terminal module.Terminal, what string,
	pager func(cl C) PG, items func(page *P) []T, record func(region string, item T) R) ([]R, error) {
	return Each(ctx, c, s, func(ctx context.Context, region string, cl C) ([]R, error) {
		found, err := Pages(ctx, pager(cl), items)
		if err != nil {
			return nil, terminal.Classify(err, "%s in %s", what, region)
		}
		out := make([]R, len(found))
		for i, item := range found {
			out[i] = record(region, item)
		}
		return out, nil
	})
}

// Pager is an AWS SDK paginator (ec2.NewDescribeVpcsPaginator and the
// like): pages of type P, its service's options O.
type Pager[P, O any] interface {
	HasMorePages() bool
	NextPage(ctx context.Context, optFns ...func(*O)) (*P, error)
}

// Pages reads every page of p and returns what items takes of each, in
// order (nil when there is nothing), or the first page's error. items
// converts and filters (a page's resources as records, those the table
// holds).
func Pages[T, P, O any](ctx context.Context, p Pager[P, O], items func(page *P) []T) ([]T, error) {
	var out []T
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, items(page)...)
	}
	return out, nil
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

// Records reads a record for each of items, at most limit at a time (all
// at once when limit is 0 or less): record answers nil for an item that
// has none (a resource gone, or one the table leaves out). It returns the
// records in the order of items, or the first error (a read that failed
// says nothing of the others). A Getter's Get reads its ids with it; so
// does a Read that completes what a listing named.
func Records[T any](ctx context.Context, limit int, items []T, record func(ctx context.Context, item T) (module.Record, error)) ([]module.Record, error) {
	return Gather(ctx, limit, len(items), func(ctx context.Context, i int) ([]module.Record, error) {
		r, err := record(ctx, items[i])
		if r == nil || err != nil {
			return nil, err
		}
		return []module.Record{r}, nil
	})
}
