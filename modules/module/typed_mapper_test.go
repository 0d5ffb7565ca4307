package module_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// item is a typed table's row for the adapter's tests.
type item struct {
	Name  string  `iasql:"name,id,notnull" comment:"Name."`
	Size  int64   `iasql:"size" comment:"Size."`
	Label *string `iasql:"label" comment:"Label."`
	ARN   string  `iasql:"arn,feedback" comment:"ARN."`
	Token string  `iasql:",token"`
}

var items = module.Declare[item](module.Table{Name: "item", Comment: "Items."})

// shelf is a cloud of items in memory that the typed mappers below read
// and write, each answering one of the engine's questions.
type shelf struct {
	byName map[string]item
	down   bool // a region's reads fail
}

type (
	reads    struct{ s *shelf }
	writes   struct{ s *shelf }
	gets     struct{ s *shelf }
	finds    struct{ s *shelf }
	polls    struct{ s *shelf }
	equates  struct{}
	compares struct{}
	stands   struct{}
	first    struct{}
	paged    struct{}
)

func (r reads) Read(ctx context.Context, call module.Call) ([]item, error) {
	var out []item
	for _, n := range slices.Sorted(maps.Keys(r.s.byName)) {
		out = append(out, r.s.byName[n])
	}
	if r.s.down {
		return out, module.Partial(map[string]error{"eu-west-1": errors.New("down")})
	}
	return out, nil
}

func (w writes) Create(ctx context.Context, call module.Call, want item) (item, error) {
	want.ARN, want.Token = "arn:"+want.Name, call.Token
	w.s.byName[want.Name] = want
	return want, nil
}

func (w writes) Update(ctx context.Context, call module.Call, want, have item) (item, error) {
	if want.Name != have.Name {
		return item{}, module.ErrReplace
	}
	want.ARN, want.Token = have.ARN, have.Token
	w.s.byName[want.Name] = want
	return want, nil
}

func (w writes) Delete(ctx context.Context, call module.Call, have item) error {
	delete(w.s.byName, have.Name)
	return nil
}

func (g gets) Get(ctx context.Context, call module.Call, ids []string) ([]item, error) {
	var out []item
	for _, id := range ids {
		if key, ok := items.Identity(id); ok {
			if it, ok := g.s.byName[key.Name]; ok {
				out = append(out, it)
			}
		}
	}
	return out, nil
}

func (f finds) Find(ctx context.Context, call module.Call, want item) (*item, error) {
	for _, it := range f.s.byName {
		if it.Token == call.Token {
			return &it, nil
		}
	}
	return nil, nil
}

// Poll answers the item named by the handle, nil when it is gone.
func (p polls) Poll(ctx context.Context, call module.Call, handle string) (*item, error) {
	if it, ok := p.s.byName[handle]; ok {
		return &it, nil
	}
	return nil, nil
}

// Equal compares names and sizes: labels are free text.
func (equates) Equal(db, cloud item) bool { return db.Name == cloud.Name && db.Size == cloud.Size }

// Differing is the engine's comparison except that no label in the
// database is any label.
func (compares) Differing(cols []string, db, cloud item) []string {
	return slices.DeleteFunc(items.Differing(cols, db, cloud), func(c string) bool { return c == "label" && db.Label == nil })
}

func (stands) Temporary(want item, old string) item {
	want.Name = module.StandInName(want.Name, old, 64)
	return want
}

func (first) DeleteBeforeCreate() bool { return true }
func (paged) PageSize() int            { return 7 }

// answers is which of the engine's questions an adapted mapper answers,
// as the engine asks them (module.PartsOf).
func answers(r module.Reader) []string {
	p := module.PartsOf(r)
	var out []string
	for _, q := range []struct {
		name string
		ok   bool
	}{{"Mapper", p.Mapper != nil}, {"Getter", p.Getter != nil}, {"Paged", p.Paged != nil}, {"Finder", p.Finder != nil},
		{"Poller", p.Poller != nil}, {"Equaler", p.Equaler != nil}, {"Comparer", p.Comparer != nil},
		{"Temporary", p.Temporary != nil}, {"DeleteFirst", p.DeleteFirst != nil}} {
		if q.ok {
			out = append(out, q.name)
		}
	}
	return out
}

// TestTypedMapperAnswers: the adapter answers exactly the engine's
// questions the typed mapper answers (a Getter, a Finder or a Poller
// changes what the engine does), whatever their combination.
func TestTypedMapperAnswers(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	r, w, g, f, p := reads{s}, writes{s}, gets{s}, finds{s}, polls{s}
	cases := []struct {
		name string
		m    module.ReaderOf[item]
		want []string
	}{
		{"reader", struct{ reads }{r}, nil},
		{"reader, getter, paged", struct {
			reads
			gets
			paged
		}{r, g, paged{}}, []string{"Getter", "Paged"}},
		{"reader, equaler", struct {
			reads
			equates
		}{r, equates{}}, []string{"Equaler"}},
		{"mapper", struct {
			reads
			writes
		}{r, w}, []string{"Mapper"}},
		{"mapper, getter", struct {
			reads
			writes
			gets
		}{r, w, g}, []string{"Mapper", "Getter"}},
		{"mapper, finder, delete first", struct {
			reads
			writes
			finds
			first
		}{r, w, f, first{}}, []string{"Mapper", "Finder", "DeleteFirst"}},
		{"mapper, poller, comparer", struct {
			reads
			writes
			polls
			compares
		}{r, w, p, compares{}}, []string{"Mapper", "Poller", "Comparer"}},
		{"mapper, getter, finder, equaler, temporary", struct {
			reads
			writes
			gets
			finds
			equates
			stands
		}{r, w, g, f, equates{}, stands{}}, []string{"Mapper", "Getter", "Finder", "Equaler", "Temporary"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := answers(items.Mapper(tc.m)); !slices.Equal(got, tc.want) {
				t.Errorf("answers %v, want %v", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		name string
		m    module.ReaderOf[item]
	}{
		{"finder", struct {
			reads
			finds
		}{r, f}},
		{"poller", struct {
			reads
			polls
		}{r, p}},
		{"temporary", struct {
			reads
			stands
		}{r, stands{}}},
	} {
		t.Run("a "+tc.name+" that cannot write", func(t *testing.T) {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "must write") {
					t.Errorf("%v, want a panic", r)
				}
			}()
			items.Mapper(tc.m)
		})
	}
}

// TestTypedMapper: records the engine gives become values, values the
// mapper returns records in canonical form, errors pass as they are.
func TestTypedMapper(t *testing.T) {
	ctx := t.Context()
	s := &shelf{byName: map[string]item{}}
	a := module.PartsOf(items.Mapper(struct {
		reads
		writes
		gets
		finds
		polls
		equates
		stands
	}{reads{s}, writes{s}, gets{s}, finds{s}, polls{s}, equates{}, stands{}}))
	m := a.Mapper

	// Create: the row's id is no field; the token comes back under TokenTag.
	got, err := m.Create(ctx, module.Call{Token: "t1"}, module.Record{"id": json.Number("3"), "name": "a", "size": json.Number("2"), "label": nil})
	want := module.Record{"name": "a", "size": json.Number("2"), "label": nil, "arn": "arn:a", module.TokenTag: "t1"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("Create = %#v, %v; want %#v", got, err, want)
	}
	if s.byName["a"].Size != 2 {
		t.Errorf("created %#v", s.byName["a"])
	}

	// Update, and a replacement's ErrReplace as it is.
	up, err := m.Update(ctx, module.Call{}, module.Record{"name": "a", "size": 5, "label": "x"}, got)
	want = module.Record{"name": "a", "size": json.Number("5"), "label": "x", "arn": "arn:a", module.TokenTag: "t1"}
	if err != nil || !reflect.DeepEqual(up, want) {
		t.Errorf("Update = %#v, %v; want %#v", up, err, want)
	}
	if _, err := m.Update(ctx, module.Call{}, module.Record{"name": "b"}, got); !errors.Is(err, module.ErrReplace) {
		t.Errorf("Update of the name: %v, want ErrReplace", err)
	}

	// A record that does not fit the type: terminal, the mapper not called.
	var te *module.TerminalError
	if _, err := m.Create(ctx, module.Call{}, module.Record{"name": "c", "size": "big"}); !errors.As(err, &te) || s.byName["c"] != (item{}) {
		t.Errorf("Create of a record that does not fit: %v, want a terminal error", err)
	}
	if _, err := m.Create(ctx, module.Call{}, module.Record{"name": "c", "colour": "red"}); err != nil || s.byName["c"] == (item{}) {
		t.Errorf("Create of a record with a column the type does not declare (a newer declaration's): %v, want it created from the declared fields", err)
	}
	delete(s.byName, "c")

	// Read passes a partial read's records with its error.
	m.Create(ctx, module.Call{}, module.Record{"name": "b"})
	s.down = true
	recs, err := m.Read(ctx, module.Call{})
	if failed, ok := module.FailedRegions(err); !ok || failed["eu-west-1"] == nil || len(recs) != 2 || recs[0]["name"] != "a" || recs[1]["arn"] != "arn:b" {
		t.Errorf("partial Read = %v, %v", recs, err)
	}
	s.down = false

	// Get by identity; Find by token, nil when none.
	ids := []string{module.CloudIDOf(items.Table(), module.Record{"name": "b"}), "missing"}
	if recs, err := a.Getter.Get(ctx, module.Call{}, ids); err != nil || len(recs) != 1 || recs[0]["name"] != "b" {
		t.Errorf("Get = %v, %v", recs, err)
	}
	if rec, err := a.Finder.Find(ctx, module.Call{Token: "t1"}, module.Record{"name": "a"}); err != nil || rec["name"] != "a" {
		t.Errorf("Find = %v, %v", rec, err)
	}
	if rec, err := a.Finder.Find(ctx, module.Call{Token: "none"}, module.Record{"name": "a"}); err != nil || rec != nil {
		t.Errorf("Find of a token no item has = %#v, %v; want nil, nil", rec, err)
	}

	// Poll answers a record, nil once gone; Temporary a record under the
	// stand-in's name.
	if rec, err := a.Poller.Poll(ctx, module.Call{}, "a"); err != nil || rec["name"] != "a" || rec["size"] != json.Number("5") {
		t.Errorf("Poll = %#v, %v", rec, err)
	}
	if rec, err := a.Poller.Poll(ctx, module.Call{}, "gone"); err != nil || rec != nil {
		t.Errorf("Poll of a deleted item = %#v, %v; want nil, nil", rec, err)
	}
	if stand := a.Temporary.Temporary(up, "old-a"); stand["name"] != module.StandInName("a", "old-a", 64) || stand["size"] != json.Number("5") || up["name"] != "a" {
		t.Errorf("Temporary = %#v of %#v", stand, up)
	}

	// A Pending of a typed mapper holds the value as a record.
	v := item{Name: "p", Size: 1}
	var pending *module.Pending
	if err := items.Pending("h", 0, &v); !errors.As(err, &pending) || pending.Handle != "h" || pending.Record["name"] != "p" || pending.Record["size"] != json.Number("1") {
		t.Errorf("Pending = %#v", err)
	}

	// Delete.
	if err := m.Delete(ctx, module.Call{}, up); err != nil || len(s.byName) != 1 {
		t.Errorf("Delete: %v, left %v", err, s.byName)
	}
}

// TestTypedMapperEqual: the engine compares (module.Equal, DifferingBy)
// by the typed Equal when the mapper has one, by the typed Differing when
// it has that, else as for a mapper that says nothing; a record that does
// not fit equals nothing a typed comparison sees.
func TestTypedMapperEqual(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	typed := items.Mapper(struct {
		reads
		writes
		equates
	}{reads{s}, writes{s}, equates{}})
	compared := items.Mapper(struct {
		reads
		writes
		compares
	}{reads{s}, writes{s}, compares{}})
	plain := items.Mapper(struct {
		reads
		writes
	}{reads{s}, writes{s}})
	base := module.Record{"name": "a", "size": json.Number("2"), "label": "x", "arn": "arn:a"}
	unlabelled := module.Record{"name": "a", "size": json.Number("2"), "label": nil}
	cases := []struct {
		name                   string
		db, cloud              module.Record
		typed, compared, plain bool
	}{
		{"same", base, base, true, true, true},
		{"feedback differs", base, module.Record{"name": "a", "size": json.Number("2"), "label": "x"}, true, true, true},
		{"label differs", base, module.Record{"name": "a", "size": json.Number("2"), "label": "y"}, true, false, false},
		{"no label in the database", unlabelled, base, true, true, false},
		{"size differs", base, module.Record{"name": "a", "size": json.Number("3"), "label": "x"}, false, false, false},
		{"does not fit", base, module.Record{"name": "a", "size": "two", "label": "x"}, false, false, false},
	}
	spec := items.Table()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := module.Equal(spec, typed, tc.db, tc.cloud); got != tc.typed {
				t.Errorf("by a typed Equal = %v, want %v", got, tc.typed)
			}
			if got := module.Equal(spec, compared, tc.db, tc.cloud); got != tc.compared {
				t.Errorf("by a typed Differing = %v, want %v", got, tc.compared)
			}
			if got := module.Equal(spec, plain, tc.db, tc.cloud); got != tc.plain {
				t.Errorf("by neither = %v, want %v", got, tc.plain)
			}
			if got, engine := module.Equal(spec, plain, tc.db, tc.cloud), module.Equal(spec, struct{ module.Reader }{}, tc.db, tc.cloud); got != engine {
				t.Errorf("by neither = %v, module.Equal of a mapper that says nothing %v", got, engine)
			}
		})
	}
}

// TestTypedRecordsAreCanonical: a typed table's adapter says its records
// are canonical (the engine then does not convert them again), and they
// are: Table.Canonical leaves what Typed.Record writes as it is.
func TestTypedRecordsAreCanonical(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	if !module.PartsOf(items.Mapper(reads{s})).Canonical {
		t.Error("a typed table's adapter does not say its records are canonical")
	}
	if module.PartsOf(struct{ module.Reader }{}).Canonical {
		t.Error("a record mapper is taken for canonical")
	}
	label := "x"
	for _, v := range []item{{Name: "a"}, {Name: "b", Size: 3, Label: &label, ARN: "arn:b", Token: "t"}} {
		rec, err := items.Record(v)
		if err != nil {
			t.Fatal(err)
		}
		again, err := items.Table().Canonical(rec)
		if err != nil || !reflect.DeepEqual(again, rec) {
			t.Errorf("Canonical(%#v) = %#v, %v; want it unchanged", rec, again, err)
		}
	}
}
