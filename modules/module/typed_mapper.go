package module

import (
	"context"
	"fmt"
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

// Mapper makes m, a table's typed mapper (a MapperOf[T], or for a
// read-only table a ReaderOf[T]), the Reader the engine calls: a Mapper
// when m is a MapperOf[T], a Getter when it is a GetterOf[T], a Finder
// when a FinderOf[T] (and a MapperOf[T]: a Finder only serves creates).
// It is always an Equaler: by m's Equal when m is an EqualerOf[T], else
// exactly as module.Equal compares for a mapper that says nothing (every
// declarative column by Table.Differing). Records in are read into T
// (Value); one that does not fit is a TerminalError (a row of the table
// always fits). Values out become records in canonical form (Record); a
// Read's values come with its error (a *PartialError's regions that
// worked).
func (d *Typed[T]) Mapper(m ReaderOf[T]) Reader {
	r := readerPart[T]{d, m}
	w, writes := m.(MapperOf[T])
	g, gets := m.(GetterOf[T])
	f, finds := m.(FinderOf[T])
	e, _ := m.(EqualerOf[T])
	eq := equalerPart[T]{d, e}
	switch {
	case finds && !writes:
		panic(fmt.Sprintf("module table %s: a mapper that finds by token must write (MapperOf)", d.table.Name))
	case !writes && !gets:
		return struct {
			readerPart[T]
			equalerPart[T]
		}{r, eq}
	case !writes:
		return struct {
			readerPart[T]
			equalerPart[T]
			getterPart[T]
		}{r, eq, getterPart[T]{d, g}}
	case !gets && !finds:
		return struct {
			readerPart[T]
			equalerPart[T]
			writerPart[T]
		}{r, eq, writerPart[T]{d, w}}
	case !finds:
		return struct {
			readerPart[T]
			equalerPart[T]
			writerPart[T]
			getterPart[T]
		}{r, eq, writerPart[T]{d, w}, getterPart[T]{d, g}}
	case !gets:
		return struct {
			readerPart[T]
			equalerPart[T]
			writerPart[T]
			finderPart[T]
		}{r, eq, writerPart[T]{d, w}, finderPart[T]{d, f}}
	}
	return struct {
		readerPart[T]
		equalerPart[T]
		writerPart[T]
		getterPart[T]
		finderPart[T]
	}{r, eq, writerPart[T]{d, w}, getterPart[T]{d, g}, finderPart[T]{d, f}}
}

// The parts of an adapted mapper, one per interface of the engine's, so
// that the adapter answers exactly the questions m answers (a Getter or a
// Finder changes what the engine does).
type (
	readerPart[T any] struct {
		d *Typed[T]
		m ReaderOf[T]
	}
	writerPart[T any] struct {
		d *Typed[T]
		m MapperOf[T]
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
		m EqualerOf[T] // nil: by Table.Differing
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
	return p.d.out(p.m.Create(ctx, call, w))
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
	return p.d.out(p.m.Update(ctx, call, w, h))
}

func (p writerPart[T]) Delete(ctx context.Context, call Call, have Record) error {
	h, err := p.d.in(have)
	if err != nil {
		return err
	}
	return p.m.Delete(ctx, call, h)
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

// Equal compares by the typed mapper's Equal, else every declarative
// column by Table.Differing, as module.Equal does for a mapper that is no
// Equaler or Comparer. A record that does not fit T equals nothing.
func (p equalerPart[T]) Equal(db, cloud Record) bool {
	if p.m == nil {
		return len(p.d.table.Differing(p.d.table.Declarative, db, cloud)) == 0
	}
	a, err := p.d.Value(db)
	if err != nil {
		return false
	}
	b, err := p.d.Value(cloud)
	return err == nil && p.m.Equal(a, b)
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
