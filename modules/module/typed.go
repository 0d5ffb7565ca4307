package module

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"
)

// Typed is a table declared by a Go struct type T: each field of T is a
// column (or the client token), declared in the field's tags, and the
// table's Columns, its DDL, the engine's view of it and the conversion of
// its records to and from T all follow from that declaration, worked out
// once (Declare). A mapper of the table takes and returns T values
// (MapperOf); Typed.Mapper makes it the module.Mapper the engine calls.
//
// A field is declared by two tags:
//
//	iasql:"<column>[,<option>...]" comment:"<the column's COMMENT ON COLUMN>"
//
// (a struct tag's values are Go strings: a " in a comment is written \").
// The options are
//
//	id            the column is (part of) the resource's identity (Column.CloudID)
//	feedback      the cloud's column (Feedback); initial: the database's (Initial);
//	              neither: the user's (Declarative)
//	createonly    a change replaces the resource (Column.CreateOnly)
//	notnull       NOT NULL (Column.NotNull)
//	ref=<table>   a reference to <table> by database id: the field holds the
//	              referenced resource's identity (a string), or for a slice
//	              field (many references) their identities; the column is
//	              integer, or bigint[] for many, unless type= says otherwise
//	type=<type>   the SQL type, where the Go type does not say it (it cannot
//	              hold a comma)
//	default=<sql> the column's default, an SQL expression; last, as it takes
//	              the rest of the tag, commas included
//
// and `iasql:",token"` on a string field (no column name) makes it the
// client token a Finder's mapper reports under TokenTag (omitted when "").
// A field tagged `iasql:"-"`, and an unexported untagged one, are not
// columns.
//
// The SQL type follows from the Go type (through pointers): string kinds
// text, bool boolean, int16 smallint, int32 integer, int and int64 bigint,
// float64 double precision, json.Number numeric, time.Time timestamp with
// time zone, a slice of one of those its array (text[]), and maps, structs,
// interfaces and other slices jsonb.
//
// Values: a nil pointer, slice, map or interface, an empty json.Number and
// a zero time.Time are NULL; a NULL (or absent) column leaves the field at
// its zero value (a column that may be NULL where "" or 0 means something
// else wants a pointer). In records, values take the canonical form of
// Table.Canonical (json.Number, RFC 3339 in UTC, JSON-like values), so a
// record a T gives is what the engine compares; a record T is read from
// may hold natural values too.
type Typed[T any] struct {
	table  Table
	fields []typedField
	byKey  map[string]int // record key -> index in fields
}

// typedField is one field of T as a record key.
type typedField struct {
	index int    // in T
	key   string // the column's name, or TokenTag
	form  string // the SQL type of its values in records: a reference's is text, or text[]
	token bool   // the client token: omitted from records when ""
}

var (
	timeType   = reflect.TypeFor[time.Time]()
	numberType = reflect.TypeFor[json.Number]()
)

// Declare declares the table of T: t gives what is the table's own (Name,
// Comment, Region, ReadOnly, MadeByCloud, Created), T's fields its Columns
// (Typed). It panics on a declaration that is a mistake in the module's
// code (a field without a tag, an unknown option, a type it cannot derive,
// or what Table.Declare refuses), as Table.Declare does. Call it once per
// table, in a package-level variable: the declaration is read-only.
func Declare[T any](t Table) *Typed[T] {
	rt := reflect.TypeFor[T]()
	if rt.Kind() != reflect.Struct {
		panic(fmt.Sprintf("module table %s: %v is not a struct type", t.Name, rt))
	}
	if len(t.Columns) > 0 {
		panic(fmt.Sprintf("module table %s: its columns are %v's fields, not Columns", t.Name, rt))
	}
	d := &Typed[T]{byKey: map[string]int{}}
	for i := range rt.NumField() {
		sf := rt.Field(i)
		c, token, ok, err := fieldColumn(sf)
		if err != nil {
			panic(fmt.Sprintf("module table %s: %v.%s: %v", t.Name, rt, sf.Name, err))
		}
		if !ok {
			continue
		}
		f := typedField{index: i, key: c.Name, form: c.Type, token: token}
		switch {
		case token:
			f.key, f.form = TokenTag, "text"
		case c.Many():
			f.form = "text[]"
		case c.Ref != "":
			f.form = "text"
		}
		if _, dup := d.byKey[f.key]; dup {
			panic(fmt.Sprintf("module table %s: %v declares %s twice", t.Name, rt, f.key))
		}
		d.byKey[f.key] = len(d.fields)
		d.fields = append(d.fields, f)
		if !token {
			t.Columns = append(t.Columns, c)
		}
	}
	d.table = t.Declare()
	return d
}

// fieldColumn reads the column a field of T declares; ok false for a field
// that is none, token true for the client token's.
func fieldColumn(sf reflect.StructField) (c Column, token, ok bool, err error) {
	tag, tagged := sf.Tag.Lookup("iasql")
	switch {
	case tag == "-" || (!tagged && !sf.IsExported()):
		return Column{}, false, false, nil
	case !tagged:
		return Column{}, false, false, fmt.Errorf(`no iasql tag: declare its column (iasql:"<column>,...") or leave it out (iasql:"-")`)
	case !sf.IsExported():
		return Column{}, false, false, fmt.Errorf("a column must be an exported field")
	}
	name, opts, _ := strings.Cut(tag, ",")
	c = Column{Name: name, Comment: sf.Tag.Get("comment")}
	for opts != "" {
		if def, ok := strings.CutPrefix(opts, "default="); ok {
			c.Default = def
			break
		}
		var o string
		o, opts, _ = strings.Cut(opts, ",")
		switch k, v, _ := strings.Cut(o, "="); k {
		case "id":
			c.CloudID = true
		case "feedback":
			c.Kind = Feedback
		case "initial":
			c.Kind = Initial
		case "createonly":
			c.CreateOnly = true
		case "notnull":
			c.NotNull = true
		case "ref":
			c.Ref = v
		case "type":
			c.Type = v
		case "token":
			token = true
		default:
			return Column{}, false, false, fmt.Errorf("unknown option %q in its iasql tag", o)
		}
	}
	if token {
		if name != "" || sf.Type.Kind() != reflect.String {
			return Column{}, false, false, fmt.Errorf(`the client token is a string field tagged iasql:",token" alone`)
		}
		return Column{}, true, true, nil
	}
	if c.Type == "" {
		switch {
		case c.Ref != "" && sf.Type.Kind() == reflect.Slice:
			c.Type = "bigint[]"
		case c.Ref != "":
			c.Type = "integer"
		default:
			c.Type = sqlType(sf.Type)
		}
	}
	if c.Type == "" {
		return Column{}, false, false, fmt.Errorf("no SQL type follows from %v: give it (type=...)", sf.Type)
	}
	return c, false, true, nil
}

// sqlType is the SQL type a Go type's values take; "" when none follows.
func sqlType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t {
	case timeType:
		return "timestamp with time zone"
	case numberType:
		return "numeric"
	}
	switch t.Kind() {
	case reflect.String:
		return "text"
	case reflect.Bool:
		return "boolean"
	case reflect.Int16:
		return "smallint"
	case reflect.Int32:
		return "integer"
	case reflect.Int, reflect.Int64:
		return "bigint"
	case reflect.Float64:
		return "double precision"
	case reflect.Slice:
		if e := sqlType(t.Elem()); e != "" && e != "jsonb" && !strings.HasSuffix(e, "[]") {
			return e + "[]"
		}
		return "jsonb"
	case reflect.Map, reflect.Struct, reflect.Interface:
		return "jsonb"
	}
	return ""
}

// Table is the declared table (Table.Declare done), a copy the caller may
// change.
func (d *Typed[T]) Table() Table {
	t := d.table
	t.Columns = slices.Clone(t.Columns)
	return t.Declare()
}

// Record is v as a record of the table, every value in canonical form.
func (d *Typed[T]) Record(v T) (Record, error) {
	rv := reflect.ValueOf(v)
	out := make(Record, len(d.fields))
	for _, f := range d.fields {
		fv := rv.Field(f.index)
		if isNil(fv) || (f.token && fv.String() == "") {
			if !f.token {
				out[f.key] = nil
			}
			continue
		}
		c, err := canonical(f.form, fv.Interface())
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", d.table.Name, f.key, err)
		}
		out[f.key] = c
	}
	return out, nil
}

// Records is Record of each value.
func (d *Typed[T]) Records(vs []T) ([]Record, error) {
	if vs == nil {
		return nil, nil
	}
	out := make([]Record, len(vs))
	for i, v := range vs {
		r, err := d.Record(v)
		if err != nil {
			return nil, err
		}
		out[i] = r
	}
	return out, nil
}

// Value is the T of a record of the table (a row as the engine read it, a
// record a mapper returned): its values in canonical or natural form. A key
// T does not declare is left out, as a mapper on records leaves out what it
// does not read: the row's id, the client token (TokenTag), the region key
// of a table without a region column, and the columns of a newer
// declaration of the table that this mapper does not know (a database-own
// column an upgrade step added: bridge TestModuleUpgrade).
func (d *Typed[T]) Value(r Record) (T, error) {
	var v T
	rv := reflect.ValueOf(&v).Elem()
	for k, x := range r {
		i, ok := d.byKey[k]
		if !ok {
			continue
		}
		f := d.fields[i]
		c, err := canonical(f.form, x)
		if err == nil {
			err = assign(rv.Field(f.index), c)
		}
		if err != nil {
			return v, fmt.Errorf("%s.%s: %w", d.table.Name, k, err)
		}
	}
	return v, nil
}

// Identity is the T that holds an identity CloudIDOf rendered (a Getter's
// id) in its identity fields, the others zero; false when id is no
// identity of the table.
func (d *Typed[T]) Identity(id string) (T, bool) {
	r, ok := IdentityOf(d.table, id)
	if !ok {
		var zero T
		return zero, false
	}
	v, err := d.Value(r)
	return v, err == nil
}

// isNil reports whether a field's value is NULL by its Go form: a nil
// pointer, slice, map or interface, an empty json.Number (a zero time.Time
// is NULL by canonical).
func isNil(v reflect.Value) bool {
	if v.Type() == numberType {
		return v.String() == ""
	}
	switch v.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return v.IsNil()
	}
	return false
}

// assign sets dst from a canonical value c (nil, bool, string,
// json.Number, []any, map[string]any): NULL is dst's zero value.
func assign(dst reflect.Value, c any) error {
	if c == nil {
		dst.SetZero()
		return nil
	}
	t := dst.Type()
	switch {
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := assign(p.Elem(), c); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	case t == timeType:
		s, _ := c.(string)
		tm, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return fmt.Errorf("%v is not an RFC 3339 timestamp", c)
		}
		dst.Set(reflect.ValueOf(tm))
		return nil
	}
	if cv := reflect.ValueOf(c); cv.Type().AssignableTo(t) {
		dst.Set(cv) // any, map[string]any, []any, string, bool, json.Number
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		if s, ok := c.(string); ok {
			dst.SetString(s) // a named string type: an SDK enum
			return nil
		}
	case reflect.Bool:
		if b, ok := c.(bool); ok {
			dst.SetBool(b)
			return nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		// encoding/json reads a numeral into any numeric type, in range.
		if n := numeral(c); n != "" && json.Unmarshal([]byte(n), dst.Addr().Interface()) == nil {
			return nil
		}
		return fmt.Errorf("%v is not a %v", c, t)
	case reflect.Slice:
		if list, ok := c.([]any); ok {
			s := reflect.MakeSlice(t, len(list), len(list))
			for i, e := range list {
				if err := assign(s.Index(i), e); err != nil {
					return err
				}
			}
			dst.Set(s)
			return nil
		}
	case reflect.Map, reflect.Struct, reflect.Interface:
		// JSON held in a Go type of its own (map[string]string, a struct).
		b, err := json.Marshal(c)
		if err == nil {
			err = json.Unmarshal(b, dst.Addr().Interface())
		}
		if err != nil {
			return fmt.Errorf("%v does not fit %v: %w", c, t, err)
		}
		return nil
	}
	return fmt.Errorf("%T %v does not fit %v", c, c, t)
}

// numeral is a canonical number's text ("" for what is none).
func numeral(c any) string {
	switch x := c.(type) {
	case json.Number:
		return x.String()
	case string:
		return x
	}
	return ""
}
