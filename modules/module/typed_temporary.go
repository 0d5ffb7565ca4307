package module

import "fmt"

// WithTemporary is r, a writable table's mapper as Typed.Mapper made it,
// that is also t's Temporary: the typed layer has no typed Temporary yet,
// so a typed table whose resources need a stand-in while replaced keeps
// that one method on records. It answers every other question exactly as
// r does (Mapper, Equaler, and Getter or Finder when r is one). It panics
// when r is not a Mapper and an Equaler (what Typed.Mapper makes of a
// MapperOf): a stand-in is only made by a mapper that writes.
func WithTemporary(r Reader, t Temporary) Reader {
	m, writes := r.(Mapper)
	e, equals := r.(Equaler)
	if !writes || !equals {
		panic(fmt.Sprintf("module.WithTemporary: %T is not a typed table's mapper that writes (Typed.Mapper of a MapperOf)", r))
	}
	g, gets := r.(Getter)
	f, finds := r.(Finder)
	switch {
	case gets && finds:
		return struct {
			Mapper
			Equaler
			Getter
			Finder
			temporaryPart
		}{m, e, g, f, temporaryPart{t}}
	case gets:
		return struct {
			Mapper
			Equaler
			Getter
			temporaryPart
		}{m, e, g, temporaryPart{t}}
	case finds:
		return struct {
			Mapper
			Equaler
			Finder
			temporaryPart
		}{m, e, f, temporaryPart{t}}
	}
	return struct {
		Mapper
		Equaler
		temporaryPart
	}{m, e, temporaryPart{t}}
}

// temporaryPart is a Temporary as a field of an adapted mapper (an
// embedded Temporary would be a field named Temporary, hiding its method).
type temporaryPart struct{ t Temporary }

func (p temporaryPart) Temporary(want Record, oldCloudID string) Record {
	return p.t.Temporary(want, oldCloudID)
}
