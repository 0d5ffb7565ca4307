package module_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// standIns names stand-ins by module.StandIn on the name column.
type standIns struct{}

func (standIns) Temporary(want module.Record, oldCloudID string) module.Record {
	return module.StandIn(want, "name", oldCloudID, 20)
}

// TestTypedMapperWith: a typed mapper with a Temporary on records is a
// Mapper, an Equaler and a Temporary (no Getter, no Finder), its writes
// typed and its stand-ins named by the Temporary given; a mapper that gets
// or finds is refused.
func TestTypedMapperWith(t *testing.T) {
	s := &shelf{byName: map[string]item{}}
	a := items.MapperWith(struct {
		reads
		writes
	}{reads{s}, writes{s}}, standIns{})
	_, isMapper := a.(module.Mapper)
	_, isGetter := a.(module.Getter)
	_, isFinder := a.(module.Finder)
	_, isEqualer := a.(module.Equaler)
	temp, isTemporary := a.(module.Temporary)
	if !isMapper || isGetter || isFinder || !isEqualer || !isTemporary {
		t.Fatalf("Mapper %v, Getter %v, Finder %v, Equaler %v, Temporary %v; want true, false, false, true, true", isMapper, isGetter, isFinder, isEqualer, isTemporary)
	}
	want := module.Record{"name": "a", "size": nil}
	if got, exp := temp.Temporary(want, "old"), module.StandIn(want, "name", "old", 20); !reflect.DeepEqual(got, exp) {
		t.Errorf("Temporary = %#v, want %#v", got, exp)
	}
	got, err := a.(module.Mapper).Create(t.Context(), module.Call{}, module.Record{"name": "b"})
	if err != nil || got["arn"] != "arn:b" || s.byName["b"].Name != "b" {
		t.Errorf("Create = %#v, %v; want the typed mapper's", got, err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "neither gets nor finds") {
			t.Errorf("a mapper that finds: %v, want a panic", r)
		}
	}()
	items.MapperWith(struct {
		reads
		writes
		finds
	}{reads{s}, writes{s}, finds{s}}, standIns{})
}
