package module_test

import (
	"reflect"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// leaf is a resource in its parent's region: the table has no region
// column, its cloud records say the region under the table's Region key.
type leaf struct {
	Parent string `iasql:"parent_id,id,notnull,ref=parent" comment:"Parent."`
	Key    string `iasql:"key,id,notnull" comment:"Key."`
	Region string `iasql:"-"`
}

var leaves = module.Declare[leaf](module.Table{Name: "leaf", Comment: "Leaves.", Region: "region"}).WithRegionKey("Region")

// TestTypedRegionKey: the region key is in a typed table's records (but
// for "": none said, the parent's), read back into its field, and the
// table's columns are the struct's alone.
func TestTypedRegionKey(t *testing.T) {
	cases := []struct {
		name string
		v    leaf
		rec  module.Record
	}{
		{"region said", leaf{Parent: "p", Key: "k", Region: "eu-west-1"}, module.Record{"parent_id": "p", "key": "k", "region": "eu-west-1"}},
		{"none said", leaf{Parent: "p", Key: "k"}, module.Record{"parent_id": "p", "key": "k"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := leaves.Record(tc.v)
			if err != nil || !reflect.DeepEqual(rec, tc.rec) {
				t.Errorf("Record = %v, %v; want %v", rec, err, tc.rec)
			}
			v, err := leaves.Value(tc.rec)
			if err != nil || v != tc.v {
				t.Errorf("Value = %+v, %v; want %+v", v, err, tc.v)
			}
			if _, err := leaves.Table().Canonical(rec); err != nil {
				t.Errorf("the engine refuses the record: %v", err)
			}
		})
	}
	var cols []string
	for _, c := range leaves.Table().Columns {
		cols = append(cols, c.Name)
	}
	if !reflect.DeepEqual(cols, []string{"parent_id", "key"}) {
		t.Errorf("columns %v, want parent_id, key", cols)
	}
}

// TestTypedRegionKeyMistakes: a region key that cannot be one is a
// mistake in the module's code, refused at declaration.
func TestTypedRegionKeyMistakes(t *testing.T) {
	type withColumn struct {
		Region string `iasql:"region,id,notnull" comment:"Region."`
		Other  string `iasql:"-"`
	}
	type tagged struct {
		Key    string `iasql:"key,id" comment:"Key."`
		Region string `iasql:"region_code" comment:"Region."`
	}
	type number struct {
		Key    string `iasql:"key,id" comment:"Key."`
		Region int    `iasql:"-"`
	}
	cases := []struct {
		name string
		fn   func()
	}{
		{"no such field", func() {
			module.Declare[leaf](module.Table{Name: "l", Comment: "L.", Region: "region"}).WithRegionKey("Zone")
		}},
		{"no Region key", func() { module.Declare[leaf](module.Table{Name: "l", Comment: "L."}).WithRegionKey("Region") }},
		{"a region column", func() {
			module.Declare[withColumn](module.Table{Name: "l", Comment: "L.", Region: "region"}).WithRegionKey("Other")
		}},
		{"a field that is a column", func() {
			module.Declare[tagged](module.Table{Name: "l", Comment: "L.", Region: "region"}).WithRegionKey("Region")
		}},
		{"not a string", func() {
			module.Declare[number](module.Table{Name: "l", Comment: "L.", Region: "region"}).WithRegionKey("Region")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("declared")
				}
			}()
			tc.fn()
		})
	}
}
