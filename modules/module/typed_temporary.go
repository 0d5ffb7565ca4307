package module

import "fmt"

// MapperWith is Mapper(m) for a table whose mapper also names the stand-in
// of a replacement (Temporary), which the typed layer does not type yet:
// the Reader is m's adapter (a Mapper and an Equaler, as Mapper makes it)
// and answers Temporary by temp, on records. m may be neither a GetterOf
// nor a FinderOf (no such table yet); it panics if it is, a mistake in the
// module's code.
func (d *Typed[T]) MapperWith(m MapperOf[T], temp Temporary) Reader {
	_, gets := m.(GetterOf[T])
	_, finds := m.(FinderOf[T])
	if gets || finds || temp == nil {
		panic(fmt.Sprintf("module table %s: MapperWith takes a mapper that neither gets nor finds, and a Temporary", d.table.Name))
	}
	e, _ := m.(EqualerOf[T])
	return struct {
		readerPart[T]
		equalerPart[T]
		writerPart[T]
		temporaryPart
	}{readerPart[T]{d, m}, equalerPart[T]{d, e}, writerPart[T]{d, m}, temporaryPart{temp}}
}

// temporaryPart answers Temporary (an embedded Temporary would be a field
// of that name, hiding its method).
type temporaryPart struct{ t Temporary }

func (p temporaryPart) Temporary(want Record, oldCloudID string) Record {
	return p.t.Temporary(want, oldCloudID)
}
