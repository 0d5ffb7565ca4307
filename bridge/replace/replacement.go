// Package replace is the replacement dance as a state machine: a change to
// a create-only column needs a new resource, and the new one is made
// before the old one is deleted, so that what references the record can
// move over (the walkthrough's dance). A replacement is a row of
// iasql_replacements, recorded before any cloud call so that a restart
// finishes it; its phase is the state, and every transition is a method
// here, driven by what the engine did or what a read found:
//
//	             Start (StandIn)          Observe: old resource gone
//	(none) ─────────────────────► temporary ─────────────────────────► final
//	  │                               │      Deleted(old)                 ▲
//	  │                               └───────────────────────────────────┤
//	  │           Start (NewIdentity)                                      │
//	  └────────────────────────────────────────────────────────────────────┘
//
//	final ── Done: nothing it retires is left in the cloud ──► (none)
//
// In temporary, a stand-in under a temporary identity holds the
// resource's place (the identity must stay unique while two exist: a
// security group's name in its VPC): the row stands for the stand-in, what
// references the record moves to it, and the old resource is retired. In
// final, the row stands for its own new resource (created once the old one
// is gone, or at once where the cloud generates identities), what
// references it moves back, and the old and temporary resources are
// retired. Resources whose identity is neither unique-while-two-exist nor
// generated take no dance: they are deleted, then created (DeleteFirst).
package replace

import (
	"maps"
	"slices"

	"github.com/iasql/iasql/modules/module"
)

// Phase is a replacement's state, as iasql_replacements.phase spells it.
type Phase = string

// The phases.
const (
	// PhaseTemporary: a stand-in holds the identity while the old resource
	// exists; the row stands for the stand-in.
	PhaseTemporary Phase = "temporary"
	// PhaseFinal: the row stands for its own new resource.
	PhaseFinal Phase = "final"
)

// Strategy is how a table's resources are replaced.
type Strategy int

// The strategies.
const (
	// DeleteFirst: delete the old resource, then create the new one (no
	// replacement is recorded: nothing references a stand-in).
	DeleteFirst Strategy = iota
	// StandIn: the identity must stay unique while two resources exist
	// (module.Temporary): a stand-in first, the record's own resource once
	// the old one is gone.
	StandIn
	// NewIdentity: the cloud generates identities: the new resource at once,
	// its create carrying a client token.
	NewIdentity
)

// StrategyFor is how the resources of a table (its spec and mapper) are
// replaced; generated reports whether the cloud generates their identity.
// A mapper that says its resources are deleted first (module.DeleteFirst)
// is obeyed.
func StrategyFor(mapper module.Reader, generated bool) Strategy {
	if d := module.PartsOf(mapper).DeleteFirst; d != nil && d.DeleteBeforeCreate() {
		return DeleteFirst
	}
	switch {
	case implementsTemporary(mapper):
		return StandIn
	case generated:
		return NewIdentity
	}
	return DeleteFirst
}

func implementsTemporary(m module.Reader) bool {
	return module.PartsOf(m).Temporary != nil
}

// Replacement is a row of iasql_replacements: the replacement of one
// record's resource, in progress.
type Replacement struct {
	Table, Record string
	Old, Temp     string // cloud ids; Temp "" when there is no stand-in
	Phase         Phase
	// Promote: a read found the old resource gone in PhaseTemporary; the
	// phase is final now, and the engine records it.
	Promote bool
}

// Start begins the replacement of record's resource oldCID by want, for a
// table whose strategy is StandIn or NewIdentity: the replacement to record
// before any cloud call, and the resource to create first (the stand-in,
// under the temporary identity the mapper derives from the old one; or want
// without its identity, which the cloud generates).
func Start(spec module.Table, mapper module.Reader, record, oldCID string, want module.Record) (*Replacement, module.Record) {
	rp := &Replacement{Table: spec.Name, Record: record, Old: oldCID, Phase: PhaseFinal}
	if tm := module.PartsOf(mapper).Temporary; tm != nil {
		stand := tm.Temporary(want, oldCID)
		rp.Temp, rp.Phase = module.CloudIDOf(spec, stand), PhaseTemporary
		return rp, stand
	}
	first := maps.Clone(want)
	first[spec.CloudID[0]] = nil
	return rp, first
}

// Observe moves the replacement on by what a read found: whether the old
// resource is still in the cloud. It returns the identity the row stands
// for meanwhile: the stand-in's while the old resource exists in
// PhaseTemporary, "" when the row stands for its own.
func (r *Replacement) Observe(oldThere bool) (standIn string) {
	if r.Phase != PhaseTemporary {
		return ""
	}
	if oldThere && r.Temp != "" {
		return r.Temp
	}
	r.Phase, r.Promote = PhaseFinal, true
	return ""
}

// StandingIn reports whether the row stands for the stand-in (Observe
// keeps the phase temporary only while it does).
func (r *Replacement) StandingIn() bool { return r != nil && r.Phase == PhaseTemporary }

// Retiring are the resources the replacement deletes, given the identity
// the row stands for now: the old resource and the stand-in, whichever it
// does not stand for.
func (r *Replacement) Retiring(current string) []string {
	var out []string
	for _, cid := range []string{r.Old, r.Temp} {
		if cid != "" && cid != current && !slices.Contains(out, cid) {
			out = append(out, cid)
		}
	}
	return out
}

// Deleted is the phase that follows the deletion of a retired resource,
// and whether it moved on: the old resource gone in PhaseTemporary makes
// it final (the record's own resource is created next). It changes
// nothing: the engine records the new phase, and the next read observes it.
func (r *Replacement) Deleted(cid string) (next Phase, moved bool) {
	if cid != r.Old || r.Phase != PhaseTemporary {
		return r.Phase, false
	}
	return PhaseFinal, true
}

// Done reports whether the replacement has ended: nothing it retires is
// left in the cloud, and the row stands for its own resource (or is gone).
func (r *Replacement) Done(retiredLeft, rowGone bool) bool {
	return !retiredLeft && (r.Phase == PhaseFinal || rowGone)
}
