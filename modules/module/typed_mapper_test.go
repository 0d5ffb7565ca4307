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
	reads   struct{ s *shelf }
	writes  struct{ s *shelf }
	gets    struct{ s *shelf }
	finds   struct{ s *shelf }
	equates struct{}
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

// Equal compares names and sizes: labels are free text.
func (equates) Equal(db, cloud item) bool { return db.Name == cloud.Name && db.Size == cloud.Size }

// TestTypedMapperAnswers: the adapter answers exactly the engine's
// questions the typed mapper answers (a Getter or a Finder changes what
// the engine does), and is always an Equaler.
func TestTypedMapperAnswers(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	r, w, g, f := reads{s}, writes{s}, gets{s}, finds{s}
	cases := []struct {
		name                string
		m                   module.ReaderOf[item]
		writes, gets, finds bool
	}{
		{"reader", struct{ reads }{r}, false, false, false},
		{"reader, getter", struct {
			reads
			gets
		}{r, g}, false, true, false},
		{"reader, equaler", struct {
			reads
			equates
		}{r, equates{}}, false, false, false},
		{"mapper", struct {
			reads
			writes
		}{r, w}, true, false, false},
		{"mapper, getter", struct {
			reads
			writes
			gets
		}{r, w, g}, true, true, false},
		{"mapper, finder", struct {
			reads
			writes
			finds
		}{r, w, f}, true, false, true},
		{"mapper, getter, finder, equaler", struct {
			reads
			writes
			gets
			finds
			equates
		}{r, w, g, f, equates{}}, true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := items.Mapper(tc.m)
			_, isMapper := a.(module.Mapper)
			_, isGetter := a.(module.Getter)
			_, isFinder := a.(module.Finder)
			_, isEqualer := a.(module.Equaler)
			if isMapper != tc.writes || isGetter != tc.gets || isFinder != tc.finds || !isEqualer {
				t.Errorf("Mapper %v, Getter %v, Finder %v, Equaler %v; want %v, %v, %v, true", isMapper, isGetter, isFinder, isEqualer, tc.writes, tc.gets, tc.finds)
			}
		})
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "must write") {
			t.Errorf("a finder that cannot write: %v, want a panic", r)
		}
	}()
	items.Mapper(struct {
		reads
		finds
	}{r, f})
}

// TestTypedMapper: records the engine gives become values, values the
// mapper returns records in canonical form, errors pass as they are.
func TestTypedMapper(t *testing.T) {
	ctx := t.Context()
	s := &shelf{byName: map[string]item{}}
	a := items.Mapper(struct {
		reads
		writes
		gets
		finds
		equates
	}{reads{s}, writes{s}, gets{s}, finds{s}, equates{}})
	m := a.(module.Mapper)

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
	if recs, err := a.(module.Getter).Get(ctx, module.Call{}, ids); err != nil || len(recs) != 1 || recs[0]["name"] != "b" {
		t.Errorf("Get = %v, %v", recs, err)
	}
	if rec, err := a.(module.Finder).Find(ctx, module.Call{Token: "t1"}, module.Record{"name": "a"}); err != nil || rec["name"] != "a" {
		t.Errorf("Find = %v, %v", rec, err)
	}
	if rec, err := a.(module.Finder).Find(ctx, module.Call{Token: "none"}, module.Record{"name": "a"}); err != nil || rec != nil {
		t.Errorf("Find of a token no item has = %#v, %v; want nil, nil", rec, err)
	}

	// Delete.
	if err := m.Delete(ctx, module.Call{}, up); err != nil || len(s.byName) != 1 {
		t.Errorf("Delete: %v, left %v", err, s.byName)
	}
}

// TestTypedMapperEqual: by the typed Equal when the mapper has one, else
// as module.Equal compares a mapper that says nothing; a record that does
// not fit equals nothing.
func TestTypedMapperEqual(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	typed := items.Mapper(struct {
		reads
		writes
		equates
	}{reads{s}, writes{s}, equates{}}).(module.Equaler)
	plain := items.Mapper(struct {
		reads
		writes
	}{reads{s}, writes{s}}).(module.Equaler)
	base := module.Record{"name": "a", "size": json.Number("2"), "label": "x", "arn": "arn:a"}
	cases := []struct {
		name         string
		db, cloud    module.Record
		typed, plain bool
	}{
		{"same", base, base, true, true},
		{"feedback differs", base, module.Record{"name": "a", "size": json.Number("2"), "label": "x"}, true, true},
		{"label differs", base, module.Record{"name": "a", "size": json.Number("2"), "label": "y"}, true, false},
		{"size differs", base, module.Record{"name": "a", "size": json.Number("3"), "label": "x"}, false, false},
		{"does not fit", base, module.Record{"name": "a", "size": "two", "label": "x"}, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := typed.Equal(tc.db, tc.cloud); got != tc.typed {
				t.Errorf("typed Equal = %v, want %v", got, tc.typed)
			}
			if got := plain.Equal(tc.db, tc.cloud); got != tc.plain {
				t.Errorf("Equal without a typed one = %v, want %v", got, tc.plain)
			}
			if got, engine := plain.Equal(tc.db, tc.cloud), module.Equal(items.Table(), struct{ module.Reader }{}, tc.db, tc.cloud); got != engine {
				t.Errorf("Equal without a typed one = %v, module.Equal of a mapper that says nothing %v", got, engine)
			}
		})
	}
}
