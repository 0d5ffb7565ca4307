package module

import (
	"context"
	"fmt"
	"time"
)

// ReaderOf is a Reader of a typed table (Typed): Read returns T values,
// which the adapter (Typed.Mapper) makes records.
type ReaderOf[T any] interface {
	Read(ctx context.Context, call Call) ([]T, error)
}

// MapperOf is a Mapper of a typed table: it takes and returns T values.
// Create returns the resource as the cloud now has it, Update too (or
// ErrReplace), Delete nil (or ErrKeep); errors mean what they mean for a
// Mapper.
type MapperOf[T any] interface {
	ReaderOf[T]
	Create(ctx context.Context, call Call, want T) (T, error)
	Update(ctx context.Context, call Call, want, have T) (T, error)
	Delete(ctx context.Context, call Call, have T) error
}

// GetterOf is a Getter of a typed table: ids are identities as CloudIDOf
// renders them (Typed.Identity reads one).
type GetterOf[T any] interface {
	Get(ctx context.Context, call Call, ids []string) ([]T, error)
}

// FinderOf is a Finder of a typed table: nil, nil when no resource
// carries call.Token.
type FinderOf[T any] interface {
	Find(ctx context.Context, call Call, want T) (*T, error)
}

// EqualerOf is an Equaler of a typed table.
type EqualerOf[T any] interface {
	Equal(db, cloud T) bool
}

// PollerOf is a Poller of a typed table: nil once a delete is done.
// A *Pending it answers says its Record in the table's form: see
// Typed.Pending.
type PollerOf[T any] interface {
	Poll(ctx context.Context, call Call, handle string) (*T, error)
}

// ComparerOf is a Comparer of a typed table.
type ComparerOf[T any] interface {
	Differing(cols []string, db, cloud T) []string
}

// TemporaryOf is a Temporary of a typed table (StandInName makes the
// name of a stand-in).
type TemporaryOf[T any] interface {
	Temporary(want T, oldCloudID string) T
}

// Mapper makes m, a table's typed mapper (a MapperOf[T], or for a
// read-only table a ReaderOf[T]), the Reader the engine calls: the Parts
// of a Mapper when m is a MapperOf[T], of a Getter when it is a
// GetterOf[T], and so on for FinderOf, PollerOf, ComparerOf, EqualerOf
// and TemporaryOf; Paged, DeleteFirst and Noticer, which say nothing of
// T, are m's own. Records in are read into T (Value); one that does not fit is a
// TerminalError (a row of the table always fits). Values out become
// records in canonical form (Record); a Read's values come with its error
// (a *PartialError's regions that worked). A FinderOf, PollerOf or
// TemporaryOf that does not write is refused (they only serve writes).
func (d *Typed[T]) Mapper(m ReaderOf[T]) Reader {
	p := Parts{Reader: readerPart[T]{d, m}, Canonical: true}
	w, writes := m.(MapperOf[T])
	if writes {
		p.Mapper = writerPart[T]{readerPart[T]{d, m}, w}
	}
	if g, ok := m.(GetterOf[T]); ok {
		p.Getter = getterPart[T]{d, g}
	}
	if e, ok := m.(EqualerOf[T]); ok {
		p.Equaler = equalerPart[T]{d, e}
	}
	if c, ok := m.(ComparerOf[T]); ok {
		p.Comparer = comparerPart[T]{d, c}
	}
	p.Paged, _ = m.(Paged)
	p.Noticer, _ = m.(Noticer)
	f, finds := m.(FinderOf[T])
	o, polls := m.(PollerOf[T])
	t, stands := m.(TemporaryOf[T])
	p.DeleteFirst, _ = m.(DeleteFirst)
	if (finds || polls || stands || p.DeleteFirst != nil) && !writes {
		panic(fmt.Sprintf("module table %s: a mapper that finds, polls, stands in or deletes first must write (MapperOf)", d.table.Name))
	}
	if finds {
		p.Finder = finderPart[T]{d, f}
	}
	if polls {
		p.Poller = pollerPart[T]{d, o}
	}
	if stands {
		p.Temporary = temporaryPart[T]{d, t}
	}
	return p
}

// Differing names the columns of cols in which a and b differ as the
// engine compares a table whose mapper says nothing of its own
// (Table.Differing): what a ComparerOf that makes one exception defers
// to. Values that make no record differ in every column.
func (d *Typed[T]) Differing(cols []string, a, b T) []string {
	ra, err := d.Record(a)
	if err != nil {
		return cols
	}
	rb, err := d.Record(b)
	if err != nil {
		return cols
	}
	return d.table.Differing(cols, ra, rb)
}

// Pending is the *Pending a typed mapper answers for an operation the
// cloud carries on (handle, the cloud's advice after): v, when known, is
// what the cloud has of the resource already, as a record of the table.
func (d *Typed[T]) Pending(handle string, after time.Duration, v *T) error {
	p := &Pending{Handle: handle, RetryAfter: after}
	if v != nil {
		rec, err := d.Record(*v)
		if err != nil {
			return err
		}
		p.Record = rec
	}
	return p
}

// The parts of an adapted mapper, one per interface of the engine's.
type (
	readerPart[T any] struct {
		d *Typed[T]
		m ReaderOf[T]
	}
	writerPart[T any] struct {
		readerPart[T]
		w MapperOf[T]
	}
	getterPart[T any] struct {
		d *Typed[T]
		m GetterOf[T]
	}
	finderPart[T any] struct {
		d *Typed[T]
		m FinderOf[T]
	}
	equalerPart[T any] struct {
		d *Typed[T]
		m EqualerOf[T]
	}
	comparerPart[T any] struct {
		d *Typed[T]
		m ComparerOf[T]
	}
	pollerPart[T any] struct {
		d *Typed[T]
		m PollerOf[T]
	}
	temporaryPart[T any] struct {
		d *Typed[T]
		m TemporaryOf[T]
	}
)

func (p readerPart[T]) Read(ctx context.Context, call Call) ([]Record, error) {
	vs, err := p.m.Read(ctx, call)
	recs, rerr := p.d.Records(vs)
	if rerr != nil {
		return nil, rerr
	}
	return recs, err
}

func (p writerPart[T]) Create(ctx context.Context, call Call, want Record) (Record, error) {
	w, err := p.d.in(want)
	if err != nil {
		return nil, err
	}
	return p.d.out(p.w.Create(ctx, call, w))
}

func (p writerPart[T]) Update(ctx context.Context, call Call, want, have Record) (Record, error) {
	w, err := p.d.in(want)
	if err != nil {
		return nil, err
	}
	h, err := p.d.in(have)
	if err != nil {
		return nil, err
	}
	return p.d.out(p.w.Update(ctx, call, w, h))
}

func (p writerPart[T]) Delete(ctx context.Context, call Call, have Record) error {
	h, err := p.d.in(have)
	if err != nil {
		return err
	}
	return p.w.Delete(ctx, call, h)
}

func (p getterPart[T]) Get(ctx context.Context, call Call, ids []string) ([]Record, error) {
	vs, err := p.m.Get(ctx, call, ids)
	if err != nil {
		return nil, err
	}
	return p.d.Records(vs)
}

func (p finderPart[T]) Find(ctx context.Context, call Call, want Record) (Record, error) {
	w, err := p.d.in(want)
	if err != nil {
		return nil, err
	}
	found, err := p.m.Find(ctx, call, w)
	if err != nil || found == nil {
		return nil, err
	}
	return p.d.Record(*found)
}

// Equal compares by the typed mapper's Equal. A record that does not fit
// T equals nothing.
func (p equalerPart[T]) Equal(db, cloud Record) bool {
	a, err := p.d.Value(db)
	if err != nil {
		return false
	}
	b, err := p.d.Value(cloud)
	return err == nil && p.m.Equal(a, b)
}

// Differing names the columns the typed mapper's Differing names; a
// record that does not fit T differs in every column of cols.
func (p comparerPart[T]) Differing(cols []string, db, cloud Record) []string {
	a, err := p.d.Value(db)
	if err != nil {
		return cols
	}
	b, err := p.d.Value(cloud)
	if err != nil {
		return cols
	}
	return p.m.Differing(cols, a, b)
}

func (p pollerPart[T]) Poll(ctx context.Context, call Call, handle string) (Record, error) {
	v, err := p.m.Poll(ctx, call, handle)
	if err != nil || v == nil {
		return nil, err
	}
	return p.d.Record(*v)
}

// Temporary is the typed mapper's stand-in for want. A record that does
// not fit T (a row of the table always fits) is its own stand-in: the
// create then fails on the identity the old resource holds, which the
// engine reports, rather than the replacement going on without one.
func (p temporaryPart[T]) Temporary(want Record, oldCloudID string) Record {
	w, err := p.d.Value(want)
	if err != nil {
		return want
	}
	rec, err := p.d.Record(p.m.Temporary(w, oldCloudID))
	if err != nil {
		return want
	}
	return rec
}

// in is a record the engine gives a mapper as T: one that does not fit is
// a TerminalError (retrying cannot make it fit).
func (d *Typed[T]) in(r Record) (T, error) {
	v, err := d.Value(r)
	if err != nil {
		return v, &TerminalError{Err: err}
	}
	return v, nil
}

// out is what a typed Create or Update returned as a record: nothing but
// the error when it failed.
func (d *Typed[T]) out(v T, err error) (Record, error) {
	if err != nil {
		return nil, err
	}
	return d.Record(v)
}
