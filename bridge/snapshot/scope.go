package snapshot

import (
	"context"
	"fmt"

	"github.com/iasql/iasql/modules/module"
)

// Scope says how a cycle reads each table: whole, or only the records
// in ids (acting) and context (read for reference, never planned).
type Scope struct {
	Whole   map[string]bool
	Acting  map[string]map[string]bool
	Context map[string]map[string]bool
}

// ByRecord reports whether table is read by record, not whole.
func (s *Scope) ByRecord(table string) bool { return s != nil && !s.Whole[table] }

// RowsOf returns the row ids a table read by record reads (acting and
// context); nil for a table read whole.
func (s *Scope) RowsOf(table string) []string {
	if !s.ByRecord(table) {
		return nil
	}
	ids := make([]string, 0, len(s.Acting[table])+len(s.Context[table]))
	for id := range s.Acting[table] {
		ids = append(ids, id)
	}
	for id := range s.Context[table] {
		if !s.Acting[table][id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// ActingSet is what the engine's state says a cycle acts on, by table:
// records with user changes newer than their enactment, operations and
// replacements; and which tables need a whole read for it.
type ActingSet struct {
	IDs       map[string]map[string]bool
	Truncated map[string]bool // a TRUNCATE is pending
	NoRow     map[string]bool // an operation on a resource that has no row
	Replacing map[string]bool // a replacement in progress
	// unverified: the last read of the table failed somewhere; a whole
	// read tells whether it still does (iasql_status says what it finds).
	Unverified map[string]bool
	// InFlight: how many of the records have an operation running in the
	// cloud (a read by record does not get them: GetCloud).
	InFlight map[string]int
}

func (s *Scope) AddContext(table, id string) {
	if s.Context[table] == nil {
		s.Context[table] = map[string]bool{}
	}
	s.Context[table][id] = true
}

// IsContext reports whether a row was read for reference only: the cycle
// plans nothing for it.
func (s *Scope) IsContext(table, id string) bool {
	return s.ByRecord(table) && !s.Acting[table][id]
}

// GetCloud reads the resources of a record-scoped table's acting records:
// the identities their rows have now and those their records last knew.
//
// fresh holds resources the cycle read fresh since its last read (the
// read-back of an operation that ended), and resources an earlier pass
// got that the cycle has not changed since, nil for one not found: they
// are taken as they are, not read again. A record whose operation still
// runs in the cloud is not read: nothing is planned for it meanwhile.
// It returns what it asked the mapper for, by cloud id (nil: not found),
// none when the read failed (unverified).
func (ts *Table) GetCloud(ctx context.Context, call module.Call, s *Scope, fresh map[string]module.Record) (map[string]module.Record, error) {
	var ids []string
	seen := map[string]bool{}
	add := func(cid string) {
		if cid == "" || seen[cid] {
			return
		}
		seen[cid] = true
		if r, ok := fresh[cid]; ok {
			if r != nil {
				ts.AddCloud([]module.Record{r})
			}
			return
		}
		ids = append(ids, cid)
	}
	for id := range s.Acting[ts.Spec.Name] {
		if ts.InFlight(id) {
			continue
		}
		add(ts.Records[id].CloudID)
		if r := ts.Rows[id]; r != nil && r.CloudID != "" {
			add(r.CloudID)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	recs, err := module.PartsOf(ts.Mapper).Getter.Get(ctx, call.AllFresh(), ids)
	failed := err != nil
	if failed {
		if recs, err = ts.readFailed(ctx, nil, err); err != nil {
			return nil, fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
		}
	}
	recs, err = ts.canonicalAll(recs)
	if err != nil {
		return nil, fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
	}
	ts.AddCloud(recs)
	if failed {
		return nil, nil
	}
	got := make(map[string]module.Record, len(ids))
	for _, cid := range ids {
		got[cid] = ts.Cloud[cid]
	}
	return got, nil
}
