package module

import "context"

// Parts are the questions a table's mapper answers: Reader always, and
// each optional interface of the engine's, nil where the mapper does not
// answer it. The engine asks a mapper through PartsOf, never by a type
// assertion of its own, so that a mapper assembled from parts (a typed
// table's adapter) answers exactly the questions its parts do,
// whichever combination they are.
type Parts struct {
	Reader      Reader
	Mapper      Mapper      // writes: every table that is not read-only
	Equaler     Equaler     // compares otherwise than by value
	Comparer    Comparer    // names the columns that differ, as it compares them
	Getter      Getter      // reads by identity
	Paged       Paged       // a Getter that reads in small pages
	Finder      Finder      // finds what a create's token made
	Poller      Poller      // long operations (*Pending)
	Temporary   Temporary   // a stand-in while replaced
	DeleteFirst DeleteFirst // a replacement deletes before it creates
	Budgeted    Budgeted    // reads spend a shared budget
	// Canonical: every record the parts return is in the table's canonical
	// form already (a typed table's: Typed.Record writes it), so the
	// engine does not convert it again (Table.Canonical).
	Canonical bool
}

// Read is the Reader's: Parts is itself the table's mapper (a Reader) the
// engine holds, and PartsOf gives it back as it is.
func (p Parts) Read(ctx context.Context, call Call) ([]Record, error) {
	return p.Reader.Read(ctx, call)
}

// PartsOf is what r answers: r's own parts when r is a Parts (a typed
// table's adapter, Compose's result), else each interface r implements.
func PartsOf(r Reader) Parts {
	if p, ok := r.(Parts); ok {
		return p
	}
	p := Parts{Reader: r}
	p.Mapper, _ = r.(Mapper)
	p.Equaler, _ = r.(Equaler)
	p.Comparer, _ = r.(Comparer)
	p.Getter, _ = r.(Getter)
	p.Paged, _ = r.(Paged)
	p.Finder, _ = r.(Finder)
	p.Poller, _ = r.(Poller)
	p.Temporary, _ = r.(Temporary)
	p.DeleteFirst, _ = r.(DeleteFirst)
	p.Budgeted, _ = r.(Budgeted)
	return p
}
