package snapshot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// WholeTable is the key of Table.unverified when a table's whole read
// failed.
const WholeTable = ""

// readFailed takes the failed Read of the table: a cycle whose context
// ended fails; otherwise the failed regions (or the whole table) are
// unverified and the records of the regions that were read are kept.
func (ts *Table) readFailed(ctx context.Context, recs []module.Record, err error) ([]module.Record, error) {
	if ctx.Err() != nil {
		return nil, err
	}
	if ts.Unverified == nil {
		ts.Unverified = map[string]error{}
	}
	failed, partial := module.FailedRegions(err)
	if !partial {
		ts.Unverified[WholeTable] = err
		return nil, nil
	}
	for region, rerr := range failed {
		ts.Unverified[region] = rerr
	}
	kept := recs[:0:0]
	for _, r := range recs {
		if _, bad := failed[r.String(ts.Spec.Region)]; !bad || ts.Spec.Region == "" {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// lineageFailed reports whether the table, or a table it references
// (recursively), has an unverified part.
func (s *Snapshot) lineageFailed(ts *Table, seen ...string) bool {
	if len(ts.Unverified) > 0 {
		return true
	}
	for _, parent := range sortedRefTables(ts.Spec) {
		if p := s.ByName[parent]; p != nil && !slices.Contains(seen, parent) && s.lineageFailed(p, append(seen, ts.Spec.Name)...) {
			return true
		}
	}
	return false
}

// unverifiedIn returns why the table is unverified in region (its own
// read's failure or a parent table's), nil when it is not. An unknown
// region ("") is unverified where any part of the lineage is.
func (s *Snapshot) unverifiedIn(ts *Table, region string, seen ...string) error {
	if err := ts.Unverified[WholeTable]; err != nil {
		return err
	}
	if region == "" {
		for _, r := range slices.Sorted(maps.Keys(ts.Unverified)) {
			return ts.Unverified[r]
		}
	} else if err := ts.Unverified[region]; err != nil {
		return err
	}
	for _, parent := range sortedRefTables(ts.Spec) {
		if p := s.ByName[parent]; p != nil && !slices.Contains(seen, parent) {
			if err := s.unverifiedIn(p, region, append(seen, ts.Spec.Name)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// RowRegion is the region of a row (database form: refs are ids): its
// Region column, else its parent row's.
func (s *Snapshot) RowRegion(ts *Table, r module.Record, depth int) string {
	if v := r.String(ts.Spec.Region); ts.Spec.Region != "" && v != "" {
		return v
	}
	for _, ref := range module.RefsOf(ts.Spec) {
		p := s.ByName[ref.Table]
		if p == nil || depth > 8 {
			continue
		}
		for _, v := range ref.Values(r) {
			if pr := p.Rows[v]; pr != nil {
				if region := s.RowRegion(p, pr.DB, depth+1); region != "" {
					return region
				}
			}
		}
	}
	return ""
}

// CloudRegion is the region of a cloud record (refs are cloud ids): its
// Region key, else its parent's (as a row, or as the cloud has it).
func (s *Snapshot) CloudRegion(ts *Table, c module.Record, depth int) string {
	if v := c.String(ts.Spec.Region); ts.Spec.Region != "" && v != "" {
		return v
	}
	for _, ref := range module.RefsOf(ts.Spec) {
		p := s.ByName[ref.Table]
		if p == nil || depth > 8 {
			continue
		}
		for _, v := range ref.Values(c) {
			if pr := p.ByCloud[v]; pr != nil {
				if region := s.RowRegion(p, pr.DB, depth+1); region != "" {
					return region
				}
			}
			if pc, ok := p.Cloud[v]; ok {
				if region := s.CloudRegion(p, pc, depth+1); region != "" {
					return region
				}
			}
		}
	}
	return ""
}

// UnverifiedFilter tells, in diff, the rows and resources of one table that
// are in an unverified part. A nil filter (the common case: nothing in the
// table's lineage is unverified) passes everything.
type UnverifiedFilter struct {
	s  *Snapshot
	ts *Table
}

// UnverifiedParts returns the filter of a table's unverified parts, nil
// when it has none.
func (s *Snapshot) UnverifiedParts(ts *Table) *UnverifiedFilter {
	if !s.lineageFailed(ts) {
		return nil
	}
	return &UnverifiedFilter{s: s, ts: ts}
}

// Row reports whether a row is in an unverified part.
func (f *UnverifiedFilter) Row(r *Row) bool {
	return f != nil && f.s.unverifiedIn(f.ts, f.s.RowRegion(f.ts, r.DB, 0)) != nil
}

// Cloud reports whether a resource (as the cloud has it) is in an
// unverified part.
func (f *UnverifiedFilter) Cloud(c module.Record) bool {
	return f != nil && f.s.unverifiedIn(f.ts, f.s.CloudRegion(f.ts, c, 0)) != nil
}

// Record reports whether a record is in an unverified part: by its row, or
// (without one) as a record whose region cannot be told.
func (f *UnverifiedFilter) Record(id string) bool {
	if f == nil {
		return false
	}
	if r := f.ts.Rows[id]; r != nil {
		return f.Row(r)
	}
	return f.s.unverifiedIn(f.ts, "") != nil
}

// UnverifiedPart names a table's unverified part (region, or WholeTable
// for every region).
func UnverifiedPart(table, region string) string {
	if region == WholeTable {
		return table + " (every region)"
	}
	return table + " in " + region
}

// Held are the failures of records with pending user intent in an
// unverified part: the cycle did not act on them (nor enact them), so a
// caller who waits for them (iasql_commit, iasql_rollback,
// iasql_wait_for_all) is told, one line each naming the record, the part
// and the error. Unverified parts that hold no intent are not failures.
func (s *Snapshot) Held() []string {
	var out []string
	for _, ts := range s.Tables {
		f := s.UnverifiedParts(ts)
		if f == nil || len(ts.Intent) == 0 {
			continue
		}
		ids := make([]string, 0, len(ts.Intent))
		for id := range ts.Intent {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return NumLess(ids[i], ids[j]) })
		for _, id := range ids {
			var region, cid string
			if r := ts.Rows[id]; r != nil && r.Cloud != nil {
				region, cid = s.RowRegion(ts, r.DB, 0), r.CloudID
			} else if rec, ok := ts.Records[id]; ok && r == nil {
				c, there := ts.Cloud[rec.CloudID]
				if !there {
					continue // gone from both sides, or not seen: nothing to hold
				}
				region, cid = s.CloudRegion(ts, c, 0), rec.CloudID
			} else {
				continue
			}
			err := s.unverifiedIn(ts, region)
			if err == nil {
				continue
			}
			where := "its region " + region
			if region == "" {
				where = "its table"
			}
			what := ts.Spec.Name + " " + id
			if cid != "" {
				what += " (" + cid + ")"
			}
			out = append(out, fmt.Sprintf("%s: not synced: %s could not be read, so nothing is done there: %s", what, where, OneLine(err.Error())))
		}
	}
	return out
}

// sortedRefTables are the tables a table references (single or many), in
// the order of its reference columns.
func sortedRefTables(spec module.Table) []string {
	var out []string
	for _, ref := range module.RefsOf(spec) {
		if !slices.Contains(out, ref.Table) {
			out = append(out, ref.Table)
		}
	}
	return out
}

// OneLine folds an error message onto one line, as the engine's tables and
// answers hold them.
func OneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
