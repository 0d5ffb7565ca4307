package snapshot

import (
	"maps"

	"github.com/iasql/iasql/modules/module"
)

// Owned is r as the cycle compares and pushes it when column rules give
// some of its columns to the cloud (cols: TRACK columns of a record the
// engine pushes, or every column but the ENFORCE ones of a record it
// pulls): a copy whose cloud form holds the cloud's values of those of
// cols that differ, which are also written into the row (Fill, once what
// a reference among them names has a row), and named in Taken. r itself
// is left as the read made it.
func (ts *Table) Owned(snap *Snapshot, r *Row, c module.Record, cols []string) *Row {
	differ := ts.Differing(cols, r.Cloud, c)
	if len(differ) == 0 {
		return r
	}
	cp := *r
	cp.Cloud = maps.Clone(r.Cloud)
	cp.Fill = append([]string(nil), r.Fill...)
	for _, col := range differ {
		cp.Cloud[col] = c[col]
		cp.Taken = append(cp.Taken, col)
		if ts.rowsFor(snap, col, c) {
			cp.Fill = append(cp.Fill, col)
		}
	}
	return &cp
}
