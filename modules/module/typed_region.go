package module

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// WithRegionKey is d with the field of T named field holding the region
// key of the table's records: for a table whose resources live in their
// parent's region, which declares Table.Region but has no such column,
// and whose cloud records say the region under that key all the same
// (the engine's CloudRegion reads it before it looks for the parent). The
// field is a string that declares no column (`iasql:"-"`); Record puts it
// under Table.Region (omitted when ""), Value reads it back, and the
// table, its columns and DDL are d's. It panics on a declaration that is
// a mistake in the module's code, as Declare does; call it once, in the
// package-level variable Declare is assigned to.
func (d *Typed[T]) WithRegionKey(field string) *Typed[T] {
	rt := reflect.TypeFor[T]()
	sf, ok := rt.FieldByName(field)
	switch {
	case !ok || len(sf.Index) != 1:
		panic(fmt.Sprintf("module table %s: %v has no field %s", d.table.Name, rt, field))
	case sf.Type.Kind() != reflect.String || sf.Tag.Get("iasql") != "-":
		panic(fmt.Sprintf("module table %s: %v.%s holds the region key: a string field tagged iasql:\"-\"", d.table.Name, rt, field))
	case d.table.Region == "":
		panic(fmt.Sprintf("module table %s: no Region key to hold in %v.%s", d.table.Name, rt, field))
	}
	if _, isColumn := d.byKey[d.table.Region]; isColumn {
		panic(fmt.Sprintf("module table %s: its region is the column %s, not a key of %v.%s", d.table.Name, d.table.Region, rt, field))
	}
	out := &Typed[T]{table: d.table, fields: slices.Clone(d.fields), byKey: maps.Clone(d.byKey)}
	out.byKey[d.table.Region] = len(out.fields)
	// Omitted when "", as the client token is: a record that says no
	// region leaves it to the parent's.
	out.fields = append(out.fields, typedField{index: sf.Index[0], key: d.table.Region, form: "text", token: true})
	return out
}
