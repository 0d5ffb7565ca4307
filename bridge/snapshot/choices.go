package snapshot

import (
	"maps"
	"slices"

	"github.com/iasql/iasql/modules/module"
)

// The cloud's choices. A row that leaves a create-only column or a
// reference NULL (an empty list for a many-valued one) lets the cloud
// choose: Cloud Control names a queue created without a name, EC2 launches
// an instance given no subnet in the default subnet with the VPC's default
// group. What the cloud chose is then the row's value: compared as the
// row's (so a NULL name is no create-only change, hence no replacement)
// and written into the row (Row.Fill, an engine write conditional on the
// row as read). An explicit value is the user's and compared as any: a
// later change of it replaces as before.

// Chosen names the columns whose value the cloud chose for a row (row in
// cloud form) that leaves them NULL: declarative, not the identity,
// create-only or a reference, NULL in the row and set in the cloud's
// record; a create-only column only where the mapper does not already take
// NULL for the cloud's value (a schema's default is NULL's meaning, and the
// row keeps NULL). A reference is the cloud's choice of another resource,
// which the row names once that resource is a row.
func (ts *Table) Chosen(row, cloud module.Record) []string {
	var out []string
	isRef := func(col string) bool {
		_, one := ts.Spec.Refs[col]
		_, many := ts.Spec.RefsMany[col]
		return one || many
	}
	for _, col := range ts.Spec.Declarative {
		ref := isRef(col)
		if slices.Contains(ts.Spec.CloudID, col) || (!ref && !slices.Contains(ts.Spec.CreateOnly, col)) {
			continue
		}
		if !unset(row[col]) || unset(cloud[col]) {
			continue
		}
		if !ref && len(ts.Differing([]string{col}, row, cloud)) == 0 {
			continue
		}
		out = append(out, col)
	}
	return out
}

// WithChosen returns row (cloud form) with the cloud's values of cols.
func WithChosen(row, cloud module.Record, cols []string) module.Record {
	if len(cols) == 0 {
		return row
	}
	out := maps.Clone(row)
	for _, col := range cols {
		out[col] = cloud[col]
	}
	return out
}

// Unfinished reports whether a create's resource (got) is not as the row
// (want, cloud form) says, and returns the row as the create's finishing
// update must make it: what the row left to the cloud is the cloud's
// choice, not a difference to finish (a generated name; Chosen, WithChosen),
// and a later read fills it in.
func (ts *Table) Unfinished(want, got module.Record) (module.Record, bool) {
	want = WithChosen(want, got, ts.Chosen(want, got))
	return want, !ts.Equal(want, got)
}

// TakeChoices puts the cloud's choices into the cloud forms of the rows
// whose resources the read found (Chosen), and marks those the engine
// writes into the rows (Row.Fill): every chosen column but a reference to
// a resource that has no row yet (one being imported in this pass), which
// is filled in a later pass, once its row exists; and the naming columns
// of named references the cloud has as the row's references say
// (fillNames). Parents' rows must be in cloud form already (the read goes
// in dependency order).
func (ts *Table) TakeChoices(snap *Snapshot) {
	if len(ts.Spec.Refs)+len(ts.Spec.RefsMany)+len(ts.Spec.CreateOnly) == 0 {
		return // no column the cloud can choose (Chosen)
	}
	for _, r := range ts.Rows {
		r.Chosen, r.Fill = nil, nil
		if r.Cloud == nil || r.CloudID == "" {
			continue
		}
		c, ok := ts.Cloud[r.CloudID]
		if !ok {
			continue
		}
		ts.fillNames(r, c)
		cols := ts.Chosen(r.Cloud, c)
		if len(cols) == 0 {
			continue
		}
		r.Cloud, r.Chosen = WithChosen(r.Cloud, c, cols), cols
		for _, col := range cols {
			if ts.rowsFor(snap, col, c) {
				r.Fill = append(r.Fill, col)
			}
		}
	}
}

// rowsFor reports whether every resource column col of cloud record c
// references has a row (true for a column that is no reference).
func (ts *Table) rowsFor(snap *Snapshot, col string, c module.Record) bool {
	for _, ref := range module.RefsOf(ts.Spec) {
		if ref.Column != col {
			continue
		}
		p := snap.ByName[ref.Table]
		return p != nil && !slices.ContainsFunc(ref.Values(c), func(v string) bool { return p.ByCloud[v] == nil })
	}
	return true
}

// unset reports whether a value leaves a column to the cloud: NULL, an
// empty string or an empty list.
func unset(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
}
