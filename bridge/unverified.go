package bridge

// Partial outage: a region, service or table whose reads fail is
// unverified. The cycle goes on for everything else; in an unverified part
// nothing is done on the strength of the failed read: no row is deleted or
// imported, nothing is created, changed or deleted in the cloud, no intent
// is enacted. Unverified parts are reported in the cycle's end record (its
// summary), in iasql_unverified (and so in iasql_status), and to the
// caller of iasql_commit.
//
// What a table's read leaves unverified (tableState.unverified) is by
// region, from a mapper's module.PartialError, or the whole table ("")
// when its Read failed as a whole. A row or resource is in an unverified
// part when its table, or a table it references (its parent, recursively),
// is unverified in its region: a child cannot be synced without its parent
// (a subnet whose VPCs could not be read, the rules of groups that could
// not be read). Its region is the table's Region column of the row or
// record, else its parent's; where that cannot be told, it is unverified
// as soon as its table or a parent table has any unverified part.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/iasql/iasql/modules/module"
)

// wholeTable is the key of tableState.unverified when a table's whole read
// failed.
const wholeTable = ""

// readFailed takes the failed Read of the table: a cycle whose context
// ended fails; otherwise the failed regions (or the whole table) are
// unverified and the records of the regions that were read are kept.
func (ts *tableState) readFailed(ctx context.Context, recs []module.Record, err error) ([]module.Record, error) {
	if ctx.Err() != nil {
		return nil, err
	}
	if ts.unverified == nil {
		ts.unverified = map[string]error{}
	}
	failed, partial := module.FailedRegions(err)
	if !partial {
		ts.unverified[wholeTable] = err
		return nil, nil
	}
	for region, rerr := range failed {
		ts.unverified[region] = rerr
	}
	kept := recs[:0:0]
	for _, r := range recs {
		if _, bad := failed[r.String(ts.spec.Region)]; !bad || ts.spec.Region == "" {
			kept = append(kept, r)
		}
	}
	return kept, nil
}

// lineageFailed reports whether the table, or a table it references
// (recursively), has an unverified part.
func (s *snapshot) lineageFailed(ts *tableState, seen ...string) bool {
	if len(ts.unverified) > 0 {
		return true
	}
	for _, parent := range ts.spec.Refs {
		if p := s.byName[parent]; p != nil && !slices.Contains(seen, parent) && s.lineageFailed(p, append(seen, ts.spec.Name)...) {
			return true
		}
	}
	return false
}

// unverifiedIn returns why the table is unverified in region (its own
// read's failure or a parent table's), nil when it is not. An unknown
// region ("") is unverified where any part of the lineage is.
func (s *snapshot) unverifiedIn(ts *tableState, region string, seen ...string) error {
	if err := ts.unverified[wholeTable]; err != nil {
		return err
	}
	if region == "" {
		for _, r := range slices.Sorted(maps.Keys(ts.unverified)) {
			return ts.unverified[r]
		}
	} else if err := ts.unverified[region]; err != nil {
		return err
	}
	for _, parent := range sortedRefTables(ts.spec) {
		if p := s.byName[parent]; p != nil && !slices.Contains(seen, parent) {
			if err := s.unverifiedIn(p, region, append(seen, ts.spec.Name)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// rowRegion is the region of a row (database form: refs are ids): its
// Region column, else its parent row's.
func (s *snapshot) rowRegion(ts *tableState, r module.Record, depth int) string {
	if v := r.String(ts.spec.Region); ts.spec.Region != "" && v != "" {
		return v
	}
	for _, col := range sortedRefCols(ts.spec) {
		p := s.byName[ts.spec.Refs[col]]
		if p == nil || r[col] == nil || depth > 8 {
			continue
		}
		if pr := p.rows[r.String(col)]; pr != nil {
			if region := s.rowRegion(p, pr.db, depth+1); region != "" {
				return region
			}
		}
	}
	return ""
}

// cloudRegion is the region of a cloud record (refs are cloud ids): its
// Region key, else its parent's (as a row, or as the cloud has it).
func (s *snapshot) cloudRegion(ts *tableState, c module.Record, depth int) string {
	if v := c.String(ts.spec.Region); ts.spec.Region != "" && v != "" {
		return v
	}
	for _, col := range sortedRefCols(ts.spec) {
		p := s.byName[ts.spec.Refs[col]]
		if p == nil || c[col] == nil || depth > 8 {
			continue
		}
		if pr := p.byCloud[c.String(col)]; pr != nil {
			if region := s.rowRegion(p, pr.db, depth+1); region != "" {
				return region
			}
		}
		if pc, ok := p.cloud[c.String(col)]; ok {
			if region := s.cloudRegion(p, pc, depth+1); region != "" {
				return region
			}
		}
	}
	return ""
}

// unverifiedFilter tells, in diff, the rows and resources of one table that
// are in an unverified part. A nil filter (the common case: nothing in the
// table's lineage is unverified) passes everything.
type unverifiedFilter struct {
	s  *snapshot
	ts *tableState
}

// unverifiedParts returns the filter of a table's unverified parts, nil
// when it has none.
func (s *snapshot) unverifiedParts(ts *tableState) *unverifiedFilter {
	if !s.lineageFailed(ts) {
		return nil
	}
	return &unverifiedFilter{s: s, ts: ts}
}

// row reports whether a row is in an unverified part.
func (f *unverifiedFilter) row(r *row) bool {
	return f != nil && f.s.unverifiedIn(f.ts, f.s.rowRegion(f.ts, r.db, 0)) != nil
}

// cloud reports whether a resource (as the cloud has it) is in an
// unverified part.
func (f *unverifiedFilter) cloud(c module.Record) bool {
	return f != nil && f.s.unverifiedIn(f.ts, f.s.cloudRegion(f.ts, c, 0)) != nil
}

// record reports whether a record is in an unverified part: by its row, or
// (without one) as a record whose region cannot be told.
func (f *unverifiedFilter) record(id string) bool {
	if f == nil {
		return false
	}
	if r := f.ts.rows[id]; r != nil {
		return f.row(r)
	}
	return f.s.unverifiedIn(f.ts, "") != nil
}

// unverifiedLines are the snapshot's unverified parts, one line each
// ("vpc in eu-central-1: <why>", "iam_role: <why>" for a whole table), in
// table order then region order.
func (s *snapshot) unverifiedLines() []string {
	var out []string
	for _, ts := range s.tables {
		for _, region := range slices.Sorted(maps.Keys(ts.unverified)) {
			out = append(out, unverifiedPart(ts.spec.Name, region)+": "+oneLine(ts.unverified[region].Error()))
		}
	}
	return out
}

// unverifiedPart names a table's unverified part.
func unverifiedPart(table, region string) string {
	if region == wholeTable {
		return table + " (every region)"
	}
	return table + " in " + region
}

// held are the failures of records with pending user intent in an
// unverified part: the cycle did not act on them (nor enact them), so a
// caller who waits for them (iasql_commit, iasql_rollback,
// iasql_wait_for_all) is told, one line each naming the record, the part
// and the error. Unverified parts that hold no intent are not failures.
func (s *snapshot) held() []string {
	var out []string
	for _, ts := range s.tables {
		f := s.unverifiedParts(ts)
		if f == nil || len(ts.intent) == 0 {
			continue
		}
		ids := make([]string, 0, len(ts.intent))
		for id := range ts.intent {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return numLess(ids[i], ids[j]) })
		for _, id := range ids {
			var region, cid string
			if r := ts.rows[id]; r != nil && r.cloud != nil {
				region, cid = s.rowRegion(ts, r.db, 0), r.cloudID
			} else if rec, ok := ts.records[id]; ok && r == nil {
				c, there := ts.cloud[rec.cloudID]
				if !there {
					continue // gone from both sides, or not seen: nothing to hold
				}
				region, cid = s.cloudRegion(ts, c, 0), rec.cloudID
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
			what := ts.spec.Name + " " + id
			if cid != "" {
				what += " (" + cid + ")"
			}
			out = append(out, fmt.Sprintf("%s: not synced: %s could not be read, so nothing is done there: %s", what, where, oneLine(err.Error())))
		}
	}
	return out
}

// noteUnverified records what the cycle's last read left unverified: in
// the outcome (the union over the cycle's passes, for the end record and
// the caller) and in iasql_unverified (what is unverified now, for
// iasql_status). It returns failures with those of the records it holds
// (held) added.
func (c *cycle) noteUnverified(ctx context.Context, out *Outcome, failures []string) ([]string, error) {
	lines := c.snap.unverifiedLines()
	for _, l := range lines {
		part, _, _ := strings.Cut(l, ": ")
		i := slices.IndexFunc(out.Unverified, func(o string) bool { return strings.HasPrefix(o, part+": ") })
		if i < 0 {
			out.Unverified = append(out.Unverified, l)
			c.e.log.Warn("unverified: reads failed; nothing is done there this cycle", "cycle", c.id, "part", l)
		} else {
			out.Unverified[i] = l
		}
	}
	var tables, regions, errs, installed []string
	for _, ts := range c.snap.tables {
		if ts.cloudWhole {
			// Only a whole read says what is verified now; a table read by
			// record (scope.go) keeps what the last whole read found.
			installed = append(installed, ts.spec.Name)
		}
		for _, region := range slices.Sorted(maps.Keys(ts.unverified)) {
			tables, regions, errs = append(tables, ts.spec.Name), append(regions, region), append(errs, oneLine(ts.unverified[region].Error()))
		}
	}
	// One statement (iasql_unverified is not captured: no engine marker),
	// on the cycle's session under its mutex; none when the table is known
	// empty and nothing is unverified (every pass of every cycle, as a rule).
	if len(tables) == 0 && c.e.unverifiedClear {
		return append(failures, c.snap.held()...), nil
	}
	err := c.withConn(func() error {
		_, err := c.conn.Exec(ctx, `
		WITH cur (t, r, e) AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[])),
		gone AS (
			DELETE FROM public.iasql_unverified v
			 WHERE NOT EXISTS (SELECT 1 FROM cur WHERE cur.t = v.table_name AND cur.r = v.region)
			   AND (v.table_name = ANY($4) OR NOT EXISTS (SELECT 1 FROM public.iasql_tables t WHERE t.table_name = v.table_name)))
		INSERT INTO public.iasql_unverified AS v (table_name, region, error)
		SELECT t, r, e FROM cur
		ON CONFLICT (table_name, region) DO UPDATE SET error = excluded.error, checked_at = pg_catalog.clock_timestamp()`,
			tables, regions, errs, installed)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("record the unverified parts of the cloud: %w", err)
	}
	c.e.unverifiedClear = len(tables) == 0
	return append(failures, c.snap.held()...), nil
}

// unverifiedSummary is what a cycle's summary says of its unverified parts
// ("" when there were none).
func unverifiedSummary(o *Outcome) string {
	if len(o.Unverified) == 0 {
		return ""
	}
	return fmt.Sprintf("; %d part(s) unverified (their reads failed; nothing was done there): %s",
		len(o.Unverified), strings.Join(o.Unverified, "; "))
}

func sortedRefCols(spec module.Table) []string {
	if len(spec.Refs) < 2 {
		for col := range spec.Refs {
			return []string{col}
		}
		return nil
	}
	return slices.Sorted(maps.Keys(spec.Refs))
}

func sortedRefTables(spec module.Table) []string {
	out := make([]string, 0, len(spec.Refs))
	for _, col := range sortedRefCols(spec) {
		if !slices.Contains(out, spec.Refs[col]) {
			out = append(out, spec.Refs[col])
		}
	}
	return out
}
