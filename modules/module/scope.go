package module

import (
	"context"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Scope is the part of the account a cycle works in: the regions whose
// resources the mappers read and write, and the default region. The
// aws_account module sets it from its aws_regions table (see
// Module.Context); without it, the scope is the SDK configuration's region.
type Scope struct {
	Regions []string // enabled regions, sorted
	Default string   // the default region; one of Regions
}

type scopeKey struct{}

// WithScope returns a context carrying s.
func WithScope(ctx context.Context, s Scope) context.Context {
	s.Regions = slices.Sorted(slices.Values(s.Regions))
	return context.WithValue(ctx, scopeKey{}, s)
}

// ScopeOf returns the scope ctx carries, else the one region of cfg
// (us-east-1 when cfg names none).
func ScopeOf(ctx context.Context, cfg aws.Config) Scope {
	if s, ok := ctx.Value(scopeKey{}).(Scope); ok && len(s.Regions) > 0 {
		return s
	}
	r := cfg.Region
	if r == "" {
		r = "us-east-1"
	}
	return Scope{Regions: []string{r}, Default: r}
}

// ScopeSet returns the scope ctx carries and true, or false when it
// carries none (aws_account is not installed): then a mapper whose listing
// covers every region (S3's ListBuckets) keeps everything it lists.
func ScopeSet(ctx context.Context) (Scope, bool) {
	s, ok := ctx.Value(scopeKey{}).(Scope)
	return s, ok && len(s.Regions) > 0
}
