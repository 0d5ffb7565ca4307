package snapshot_test

import (
	"testing"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// TestLinkByRegion: a resource naming another by a name used in two
// regions points at the one in its own region, never at another region's;
// one whose name no resource bears, or that two bear with nothing to tell
// them apart, or whose referenced table is not installed, points at none.
func TestLinkByRegion(t *testing.T) {
	groups := module.Table{Name: "grp", Comment: "Groups.", Region: "region", Columns: []module.Column{
		{Name: "name", Type: "text", Kind: module.Declarative, CloudID: true, Comment: "Name."},
		{Name: "region", Type: "text", Kind: module.Declarative, CloudID: true, Comment: "Region."},
	}}.Declare()
	filters := module.Table{Name: "flt", Comment: "Filters.", Region: "region", Columns: []module.Column{
		{Name: "name", Type: "text", Kind: module.Declarative, CloudID: true, Comment: "Name."},
		{Name: "region", Type: "text", Kind: module.Declarative, CloudID: true, Comment: "Region."},
		{Name: "group_name", Type: "text", Kind: module.Declarative, Comment: "The group's name."},
		{Name: "group_ref", Type: "integer", Kind: module.Declarative, Ref: "grp", Names: "group_name", NamedBy: "name", Comment: "The group's row."},
	}}.Declare()
	unregioned := module.Table{Name: "flt2", Comment: "Filters without a region.", Columns: []module.Column{
		{Name: "name", Type: "text", Kind: module.Declarative, CloudID: true, Comment: "Name."},
		{Name: "group_name", Type: "text", Kind: module.Declarative, Comment: "The group's name."},
		{Name: "group_ref", Type: "integer", Kind: module.Declarative, Ref: "grp", Names: "group_name", NamedBy: "name", Comment: "The group's row."},
	}}.Declare()
	g := &snapshot.Table{Spec: groups, Cloud: map[string]module.Record{
		"app/us-east-1": {"name": "app", "region": "us-east-1"},
		"app/eu-west-1": {"name": "app", "region": "eu-west-1"},
		"web/eu-west-1": {"name": "web", "region": "eu-west-1"},
	}}
	f := &snapshot.Table{Spec: filters, Cloud: map[string]module.Record{
		"a": {"name": "a", "region": "eu-west-1", "group_name": "app"},
		"b": {"name": "b", "region": "us-east-1", "group_name": "app"},
		"c": {"name": "c", "region": "us-east-1", "group_name": "web"},
		"d": {"name": "d", "region": "eu-west-1", "group_name": "gone"},
	}}
	f2 := &snapshot.Table{Spec: unregioned, Cloud: map[string]module.Record{
		"e": {"name": "e", "group_name": "app"},
		"w": {"name": "w", "group_name": "web"},
	}}
	snap := &snapshot.Snapshot{ByName: map[string]*snapshot.Table{"grp": g, "flt": f, "flt2": f2}}
	f.Link(snap)
	f2.Link(snap)
	// The referenced table not installed: no reference, and no panic.
	alone := &snapshot.Table{Spec: filters, Cloud: map[string]module.Record{"x": {"name": "x", "region": "eu-west-1", "group_name": "app"}}}
	alone.Link(&snapshot.Snapshot{ByName: map[string]*snapshot.Table{"flt": alone}})
	if got := alone.Cloud["x"]["group_ref"]; got != nil {
		t.Errorf("a reference to a table not installed: %v, want NULL", got)
	}
	for _, tc := range []struct {
		ts   *snapshot.Table
		cid  string
		want any
	}{
		{f, "a", "app/eu-west-1"},
		{f, "b", "app/us-east-1"},
		{f, "c", nil}, // the only web is in another region: not the one c names
		{f, "d", nil},
		{f2, "e", nil}, // two apps, no region to tell
		{f2, "w", "web/eu-west-1"},
	} {
		if got := tc.ts.Cloud[tc.cid]["group_ref"]; got != tc.want {
			t.Errorf("%s %s: group_ref %v, want %v", tc.ts.Spec.Name, tc.cid, got, tc.want)
		}
	}
}
