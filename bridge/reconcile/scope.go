package reconcile

// Record scope: what a cycle someone waits for (commit, rollback, preview)
// reads. It acts on the records with pending intent, work under way or a
// replacement, so it reads those rows (and, as context never planned, the
// rows that reference them, for preview's cascades), and asks the mapper
// for their resources one by one (module.Getter) instead of listing the
// table: a commit beside 10,000 buckets costs what a commit beside none
// does. Everything else is left as the last automatic cycle read it
// (iasql_refresh reads it all now).
//
// A table is read whole instead when a record-by-record read cannot tell
// it all: a read-only table; a table under an ENFORCE or TRACK rule (those
// modes are about drift); a table with a part unverified (only a whole
// read can say it is verified again); a table with acting records whose mapper cannot
// Get or whose identities the cloud generates (rows to create are found by
// client token); a TRUNCATE, a replacement in
// progress, a resource the engine must delete that has no row; in a later
// pass, a table whose resources the cloud makes by itself under a parent
// the cycle changed (module.Table.MadeByCloud: a VPC's default security
// group), and any table under a replacement (it moves what references it).
// The tables a table read whole references are read whole too, and so are
// those a table with acting records references (a resource it imports or
// gets names its parents by cloud identity).
//
// An Event cycle (events.go) reads the same way, with the records of the
// resources its events name acting besides. A table whose acting records
// only events name is read by record even when its identities are the
// cloud's (there is nothing to create), and what it references is read
// for reference only, but for named references; an event naming a
// resource no record knows makes its table read whole.

import (
	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// scopeFor decides how each table is read (see the comment at the top).
func (c *cycle) scopeFor(acting snapshot.ActingSet, modes snapshot.Modes, ev *eventScope) *snapshot.Scope {
	s := &snapshot.Scope{Whole: map[string]bool{}, Acting: acting.IDs, Context: map[string]map[string]bool{}}
	// below: tables under one this cycle changed in the cloud, or under a
	// replacement in progress or one made by deleting first (the cloud
	// changes children with their parents; a replacement moves what
	// references it, or makes it again).
	below := map[string]bool{}
	for _, t := range c.req.Tables { // in dependency order: parents first
		name := t.Spec.Name
		for _, ref := range module.RefsOf(t.Spec) {
			if acting.Replacing[ref.Table] || len(c.recreated[ref.Table]) > 0 || below[ref.Table] || (t.Spec.MadeByCloud && c.changed[ref.Table]) {
				below[name] = true
			}
		}
		gets := module.PartsOf(t.Mapper).Getter != nil
		// A table whose acting records only events name has nothing to
		// create: a generated identity is known, and got.
		byRecord := gets && (ev.only(name) || !snapshot.Generated(t.Spec)) && !c.st.listsCheaper(t, len(acting.IDs[name])-acting.InFlight[name]-len(c.fresh[name]))
		if t.Spec.ReadOnly || modes.Drifty(name) || acting.Truncated[name] || acting.NoRow[name] || acting.Replacing[name] || acting.Unverified[name] ||
			below[name] || ev.unknownIn(name) || (len(acting.IDs[name]) > 0 && !byRecord) {
			s.Whole[name] = true
		}
	}
	// A table read whole imports what the cloud has, and a table read by
	// record gets its acting records' resources, naming parents by cloud
	// identity: the tables it references are read whole too (children
	// before parents: one sweep backwards).
	for i := len(c.req.Tables) - 1; i >= 0; i-- {
		t := c.req.Tables[i]
		if !s.Whole[t.Spec.Name] && ev.only(t.Spec.Name) && !named(t.Spec) {
			// Only events name its records, which have rows: what they
			// reference is read for reference (store.ReadScoped), and a
			// parent the cloud now names that no such row holds is left
			// for the next whole read (snapshot.ToDB: ErrNoParent).
			continue
		}
		if s.Whole[t.Spec.Name] || len(acting.IDs[t.Spec.Name]) > 0 {
			for _, ref := range module.RefsOf(t.Spec) {
				s.Whole[ref.Table] = true
			}
		}
	}
	return s
}

// listsCheaper reports whether listing the whole table takes fewer calls
// than getting n records one by one: a mapper that lists in pages
// (module.Paged), for a table whose size the last whole read told.
func (s *State) listsCheaper(t Table, n int) bool {
	p := module.PartsOf(t.Mapper).Paged
	if p == nil || p.PageSize() <= 0 {
		return false
	}
	s.mu.Lock()
	size, known := s.sizes[t.Spec.Name]
	s.mu.Unlock()
	return known && n > size/p.PageSize()+1
}

// noteSize remembers how many resources a whole read of a table found.
func (s *State) noteSize(table string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sizes == nil {
		s.sizes = map[string]int{}
	}
	s.sizes[table] = n
}

// named reports whether a table has a named reference (module.Naming):
// its records' references are found from the referenced table's resources
// (snapshot.Table.Link), which only a whole read has.
func named(spec module.Table) bool {
	for _, ref := range module.RefsOf(spec) {
		if ref.Named.Column != "" {
			return true
		}
	}
	return false
}
