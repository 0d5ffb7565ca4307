package snapshot

import (
	"errors"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/module"
)

// TestForgotten: which records outlived their rows with nothing left to
// do (their state and operations are forgotten), and which are kept.
func TestForgotten(t *testing.T) {
	spec := module.Table{Name: "net", CloudID: []string{"name"}, Declarative: []string{"name"}}
	failed := Op{Action: "create", State: OpFailed}
	cases := []struct {
		name       string
		rows       []string
		cloud      []string
		records    map[string]string // record id -> cloud id
		ops        map[string]Op
		byRecord   bool // the table read by record, record "1" acting
		unverified bool
		want       []string
	}{
		{name: "failed create, row deleted", ops: map[string]Op{"1": failed}, want: []string{"1"}},
		{name: "failed create, row there", rows: []string{"1"}, ops: map[string]Op{"1": failed}},
		{name: "running in the cloud", ops: map[string]Op{"1": {Action: "create", State: OpInProgress, Handle: "h"}}},
		{name: "create cut short with a token", ops: map[string]Op{"1": {Action: "create", State: OpInProgress, Token: "tok"}}},
		{name: "resource still in the cloud: deleted first", records: map[string]string{"1": "a"}, cloud: []string{"a"}, ops: map[string]Op{"1": failed}},
		{name: "resource gone", records: map[string]string{"1": "a"}, ops: map[string]Op{"1": failed}, want: []string{"1"}},
		{name: "another row stands for the resource", rows: []string{"2"}, records: map[string]string{"1": "a"}, cloud: []string{"a"}, want: []string{"1"}},
		{name: "read by record, acting", byRecord: true, ops: map[string]Op{"1": failed}, want: []string{"1"}},
		{name: "read by record, not read", byRecord: true, ops: map[string]Op{"3": failed}},
		{name: "unverified", unverified: true, ops: map[string]Op{"1": failed}},
		{name: "rowless delete, resource gone", ops: map[string]Op{"cloud a": {Action: "delete", State: OpFailed}}, want: []string{"cloud a"}},
		{name: "rowless delete, resource there", cloud: []string{"a"}, ops: map[string]Op{"cloud a": {Action: "delete", State: OpFailed}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := &Table{Spec: spec, Rows: map[string]*Row{}, ByCloud: map[string]*Row{}, Cloud: map[string]module.Record{},
				Records: map[string]RecordState{}, Ops: tc.ops, CloudWhole: !tc.byRecord}
			for _, id := range tc.rows {
				ts.Rows[id] = &Row{ID: id, CloudID: "a"}
				ts.ByCloud["a"] = ts.Rows[id]
			}
			for _, cid := range tc.cloud {
				ts.Cloud[cid] = module.Record{"name": cid}
			}
			for id, cid := range tc.records {
				ts.Records[id] = RecordState{CloudID: cid}
			}
			if tc.unverified {
				ts.Unverified = map[string]error{"": errors.New("AuthFailure")}
			}
			snap := &Snapshot{ByName: map[string]*Table{"net": ts}, Tables: []*Table{ts}}
			if tc.byRecord {
				snap.Reading = &Scope{Whole: map[string]bool{}, Acting: map[string]map[string]bool{"net": {"1": true}}}
			}
			if got := ts.Forgotten(snap); !slices.Equal(got, tc.want) {
				t.Errorf("forgotten %v, want %v", got, tc.want)
			}
		})
	}
}
