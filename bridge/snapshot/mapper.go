package snapshot

// The table's mapper as the engine calls it: every record it returns is
// made canonical by the table's columns (module.Table.Canonical), so the
// engine compares values in one form whatever form the mapper gave them.

import (
	"context"
	"errors"
	"fmt"

	"github.com/iasql/iasql/modules/module"
)

// writer is the table's mapper as a module.Mapper; a read-only table's
// mapper is never asked to write (Table.ReadOnly).
func (ts *Table) writer() (module.Mapper, error) {
	w := module.PartsOf(ts.Mapper).Mapper
	if w == nil {
		return nil, fmt.Errorf("table %s is read-only: its mapper cannot change the cloud", ts.Spec.Name)
	}
	return w, nil
}

// canonical is rec in canonical form; err, when it is a *module.Pending,
// gets its record made canonical too.
func (ts *Table) canonical(rec module.Record, err error) (module.Record, error) {
	if module.PartsOf(ts.Mapper).Canonical {
		return rec, err // a typed table's records are (Typed.Record)
	}
	if p := (*module.Pending)(nil); errors.As(err, &p) && p.Record != nil {
		c, cerr := ts.Spec.Canonical(p.Record)
		if cerr != nil {
			return nil, cerr
		}
		p.Record = c
	}
	if err != nil {
		return rec, err
	}
	return ts.Spec.Canonical(rec)
}

// canonicalAll is recs in canonical form (as they are, from a typed
// table's mapper).
func (ts *Table) canonicalAll(recs []module.Record) ([]module.Record, error) {
	if module.PartsOf(ts.Mapper).Canonical {
		return recs, nil
	}
	return ts.Spec.CanonicalAll(recs)
}

// Equal reports whether a database record and a cloud record agree, as
// the table's mapper compares them (module.Equal).
func (ts *Table) Equal(db, cloud module.Record) bool {
	return module.Equal(ts.Spec, ts.Mapper, db, cloud)
}

// Differing names the columns of cols in which a database record and a
// cloud record differ, as the table's mapper compares them
// (module.DifferingBy).
func (ts *Table) Differing(cols []string, db, cloud module.Record) []string {
	return module.DifferingBy(ts.Spec, ts.Mapper, cols, db, cloud)
}

// Create creates want's resource.
func (ts *Table) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	w, err := ts.writer()
	if err != nil {
		return nil, err
	}
	return ts.canonical(w.Create(ctx, call, want))
}

// Update makes have's resource as want says.
func (ts *Table) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	w, err := ts.writer()
	if err != nil {
		return nil, err
	}
	return ts.canonical(w.Update(ctx, call, want, have))
}

// Delete deletes have's resource.
func (ts *Table) Delete(ctx context.Context, call module.Call, have module.Record) error {
	w, err := ts.writer()
	if err != nil {
		return err
	}
	_, err = ts.canonical(nil, w.Delete(ctx, call, have))
	return err
}

// Find asks a module.Finder for the resource a create with call.Token
// made (nil when none did, or when the mapper cannot look tokens up).
func (ts *Table) Find(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	f := module.PartsOf(ts.Mapper).Finder
	if f == nil {
		return nil, nil
	}
	return ts.canonical(f.Find(ctx, call, want))
}

// Poll asks a module.Poller about an operation in progress.
func (ts *Table) Poll(ctx context.Context, call module.Call, handle string) (module.Record, error) {
	p := module.PartsOf(ts.Mapper).Poller
	if p == nil {
		return nil, fmt.Errorf("table %s's mapper cannot poll operations", ts.Spec.Name)
	}
	return ts.canonical(p.Poll(ctx, call, handle))
}
