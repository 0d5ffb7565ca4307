package module_test

import (
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// standIn is a Temporary on records, as a typed table's mapper keeps it.
type standIn struct{}

func (standIn) Temporary(want module.Record, oldCloudID string) module.Record {
	return module.StandIn(want, "name", oldCloudID, 64)
}

// TestWithTemporary: a typed table's adapted mapper given a Temporary
// answers the engine's questions as before, and Temporary too (the stand-in
// t makes); one that does not write cannot take one.
func TestWithTemporary(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	r, w, g, f := reads{s}, writes{s}, gets{s}, finds{s}
	cases := []struct {
		name        string
		m           module.ReaderOf[item]
		gets, finds bool
	}{
		{"mapper", struct {
			reads
			writes
		}{r, w}, false, false},
		{"mapper, getter", struct {
			reads
			writes
			gets
		}{r, w, g}, true, false},
		{"mapper, finder", struct {
			reads
			writes
			finds
		}{r, w, f}, false, true},
		{"mapper, getter, finder, equaler", struct {
			reads
			writes
			gets
			finds
			equates
		}{r, w, g, f, equates{}}, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := module.WithTemporary(items.Mapper(tc.m), standIn{})
			_, isMapper := a.(module.Mapper)
			_, isGetter := a.(module.Getter)
			_, isFinder := a.(module.Finder)
			_, isEqualer := a.(module.Equaler)
			tm, isTemporary := a.(module.Temporary)
			if !isMapper || isGetter != tc.gets || isFinder != tc.finds || !isEqualer || !isTemporary {
				t.Fatalf("Mapper %v, Getter %v, Finder %v, Equaler %v, Temporary %v; want true, %v, %v, true, true", isMapper, isGetter, isFinder, isEqualer, isTemporary, tc.gets, tc.finds)
			}
			want := module.Record{"name": "a", "size": 1}
			if got, exp := tm.Temporary(want, "a"), module.StandIn(want, "name", "a", 64); got["name"] != exp["name"] || got["name"] == "a" {
				t.Errorf("Temporary names %v, want %v", got["name"], exp["name"])
			}
		})
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "writes") {
			t.Errorf("a reader given a Temporary: %v, want a panic", r)
		}
	}()
	module.WithTemporary(items.Mapper(struct{ reads }{r}), standIn{})
}
