package module_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/module"
)

// TestCanonical: natural SDK values come out in the one form rows read
// from the database have, so a mapper returning them cannot loop.
func TestCanonical(t *testing.T) {
	tbl := module.Table{Name: "thing", Columns: []module.Column{
		{Name: "name", Type: "text", CloudID: true, Comment: "c"},
		{Name: "port", Type: "integer", Comment: "c"},
		{Name: "size", Type: "bigint", Kind: module.Feedback, Comment: "c"},
		{Name: "on", Type: "boolean", Comment: "c"},
		{Name: "at", Type: "timestamp with time zone", Kind: module.Feedback, Comment: "c"},
		{Name: "tags", Type: "jsonb", Comment: "c"},
		{Name: "arns", Type: "text[]", Comment: "c"},
		{Name: "state", Type: "text", Kind: module.Feedback, Comment: "c"},
		{Name: "vpc_id", Type: "integer", Ref: "vpc", Comment: "c"},
		{Name: "group_ids", Type: "bigint[]", Ref: "security_group", Comment: "c"},
	}}.Declare()
	at := time.Date(2026, 11, 24, 5, 50, 0, 0, time.FixedZone("x", 3600))
	name := "web"
	var nilPort *int32
	cases := []struct {
		name string
		in   module.Record
		want module.Record
	}{
		{"pointers and ints", module.Record{"name": &name, "port": int32(80), "size": int64(5), "on": true},
			module.Record{"name": "web", "port": json.Number("80"), "size": json.Number("5"), "on": true}},
		{"nil pointer is NULL", module.Record{"port": nilPort}, module.Record{"port": nil}},
		{"time in UTC", module.Record{"at": at}, module.Record{"at": "2026-11-24T04:50:00Z"}},
		{"time as a string", module.Record{"at": "2026-11-24T05:50:00+01:00"}, module.Record{"at": "2026-11-24T04:50:00Z"}},
		{"enum", module.Record{"state": types.InstanceStateNameRunning}, module.Record{"state": "running"}},
		{"map of strings", module.Record{"tags": map[string]string{"a": "b"}}, module.Record{"tags": map[string]any{"a": "b"}}},
		{"numbers inside json", module.Record{"tags": map[string]any{"n": 3}}, module.Record{"tags": map[string]any{"n": json.Number("3")}}},
		{"string slice", module.Record{"arns": []string{"x", "y"}}, module.Record{"arns": []any{"x", "y"}}},
		{"references are identities", module.Record{"vpc_id": "vpc-1", "group_ids": []string{"sg-1", "sg-2"}},
			module.Record{"vpc_id": "vpc-1", "group_ids": []any{"sg-1", "sg-2"}}},
		{"token and canonical numbers pass", module.Record{module.TokenTag: "t", "port": json.Number("80")},
			module.Record{module.TokenTag: "t", "port": json.Number("80")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tbl.Canonical(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Canonical(%v) = %#v, want %#v", tc.in, got, tc.want)
			}
		})
	}
	for _, bad := range []module.Record{{"nope": 1}, {"port": "eighty"}, {"on": "yes"}, {"at": "yesterday"}} {
		if _, err := tbl.Canonical(bad); err == nil {
			t.Errorf("Canonical(%v): no error", bad)
		}
	}
}

// TestDeclare: the engine's view of a table follows from its columns.
func TestDeclare(t *testing.T) {
	tbl := module.Table{Name: "subnet", Columns: []module.Column{
		{Name: "subnet_id", Type: "text", Kind: module.Feedback, CloudID: true, Comment: "c"},
		{Name: "vpc_id", Type: "integer", NotNull: true, CreateOnly: true, Ref: "vpc", Comment: "c"},
		{Name: "group_ids", Type: "bigint[]", Ref: "security_group", Comment: "c"},
		{Name: "is_default", Type: "boolean", Kind: module.Initial, Comment: "c"},
	}}.Declare()
	want := module.Table{CloudID: []string{"subnet_id"}, Declarative: []string{"vpc_id", "group_ids"}, Feedback: []string{"subnet_id"},
		CreateOnly: []string{"vpc_id"}, Refs: map[string]string{"vpc_id": "vpc"}, RefsMany: map[string]string{"group_ids": "security_group"},
		Initial: []string{"is_default"}}
	for name, pair := range map[string][2]any{
		"CloudID": {tbl.CloudID, want.CloudID}, "Declarative": {tbl.Declarative, want.Declarative}, "Feedback": {tbl.Feedback, want.Feedback},
		"CreateOnly": {tbl.CreateOnly, want.CreateOnly}, "Refs": {tbl.Refs, want.Refs}, "RefsMany": {tbl.RefsMany, want.RefsMany}, "Initial": {tbl.Initial, want.Initial},
	} {
		if !reflect.DeepEqual(pair[0], pair[1]) {
			t.Errorf("%s = %v, want %v", name, pair[0], pair[1])
		}
	}
	if again := tbl.Declare(); !reflect.DeepEqual(again, tbl) {
		t.Errorf("Declare is not idempotent")
	}
}

// TestUpgradePath: the chain from the installed version, or one line.
func TestUpgradePath(t *testing.T) {
	m := module.Module{Name: "m", Version: "0.3.0", Upgrades: []module.Upgrade{{From: "0.1.0", To: "0.2.0", SQL: "a"}, {From: "0.2.0", To: "0.3.0", SQL: "b"}}}
	for from, want := range map[string]int{"0.1.0": 2, "0.2.0": 1, "0.3.0": 0} {
		steps, err := m.UpgradePath(from)
		if err != nil || len(steps) != want {
			t.Errorf("from %s: %d steps, %v; want %d", from, len(steps), err, want)
		}
	}
	if _, err := m.UpgradePath("0.4.0"); err == nil {
		t.Error("from a newer version: no error")
	}
}
