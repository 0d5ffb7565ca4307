package module

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// PartialError is what a mapper's Read returns, together with records,
// when it read some regions of the cycle's scope and not others (a region
// the account has not enabled, a regional outage, a service down in one
// region). The records are those of the regions that worked, complete for
// each of them; Failed names every region whose reads failed, with why.
//
// The engine reports those regions of the table unverified and leaves
// everything in them as it is: no row is deleted or imported, nothing is
// created, changed or deleted in the cloud on the strength of a read that
// failed, while it syncs the rest. A Read that fails as a whole (a global
// listing, a global service) returns a plain error: the whole table is
// unverified.
type PartialError struct {
	Failed map[string]error // region -> why its reads failed
}

// Partial returns a *PartialError for the regions that failed, or nil when
// none did.
func Partial(failed map[string]error) error {
	if len(failed) == 0 {
		return nil
	}
	return &PartialError{Failed: failed}
}

// Regions are the regions that failed, sorted.
func (e *PartialError) Regions() []string {
	return slices.Sorted(maps.Keys(e.Failed))
}

func (e *PartialError) Error() string {
	parts := make([]string, 0, len(e.Failed))
	for _, r := range e.Regions() {
		parts = append(parts, fmt.Sprintf("%s: %v", r, e.Failed[r]))
	}
	return fmt.Sprintf("reads failed in %d region(s): %s", len(parts), strings.Join(parts, "; "))
}

// Unwrap returns the regions' errors (in region order), so that errors.Is
// and errors.As see them.
func (e *PartialError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, r := range e.Regions() {
		out = append(out, e.Failed[r])
	}
	return out
}

// FailedRegions returns the regions a read error leaves unverified: those
// of a *PartialError err is or wraps, and ok true; ok false (and nil) for
// any other error, which leaves the whole table unverified.
func FailedRegions(err error) (failed map[string]error, ok bool) {
	var pe *PartialError
	if errors.As(err, &pe) {
		return pe.Failed, true
	}
	return nil, false
}
