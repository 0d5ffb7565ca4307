package module_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/modules/module"
)

// state is an enum as the SDKs declare them.
type state string

// spec is JSON held in a struct of its own.
type spec struct {
	Mode  string `json:"mode"`
	Count int    `json:"count"`
}

// thing declares a column of every kind a typed table may have.
type thing struct {
	Name     string            `iasql:"name,id,notnull" comment:"Name."`
	Region   string            `iasql:"region,id,notnull,default=public.default_aws_region()" comment:"Region."`
	Note     *string           `iasql:"note" comment:"Note."`
	State    state             `iasql:"state,createonly" comment:"State."`
	On       bool              `iasql:"on,notnull,default=false" comment:"On."`
	Maybe    *bool             `iasql:"maybe" comment:"Maybe."`
	Port     int32             `iasql:"port" comment:"Port."`
	Size     *int64            `iasql:"size,feedback" comment:"Size."`
	Ratio    float64           `iasql:"ratio" comment:"Ratio."`
	Price    json.Number       `iasql:"price" comment:"Price."`
	At       time.Time         `iasql:"at,feedback" comment:"At."`
	Until    *time.Time        `iasql:"until" comment:"Until."`
	CIDR     string            `iasql:"cidr,type=cidr" comment:"CIDR."`
	ARNs     []string          `iasql:"arns" comment:"ARNs."`
	VPC      string            `iasql:"vpc_id,ref=vpc,createonly" comment:"VPC."`
	Groups   []string          `iasql:"group_ids,ref=security_group,notnull,default='{}'" comment:"Groups."`
	Tags     map[string]string `iasql:"tags,default=jsonb_build_object('team', 'web')" comment:"Tags."`
	Doc      map[string]any    `iasql:"doc" comment:"Doc."`
	Spec     spec              `iasql:"spec" comment:"Spec."`
	Raw      any               `iasql:"raw" comment:"Raw."`
	Default  bool              `iasql:"is_default,initial" comment:"Default."`
	Token    string            `iasql:",token"`
	Ignored  string            `iasql:"-"`
	internal int
}

var things = module.Declare[thing](module.Table{Name: "thing", Comment: "Things.", Region: "region"})

// TestTypedTable: the columns, and so the DDL and the engine's view,
// follow from the struct's declaration as from the same columns written
// by hand.
func TestTypedTable(t *testing.T) {
	byHand := module.Table{Name: "thing", Comment: "Things.", Region: "region", Columns: []module.Column{
		{Name: "name", Type: "text", NotNull: true, CloudID: true, Comment: "Name."},
		{Name: "region", Type: "text", NotNull: true, CloudID: true, Default: "public.default_aws_region()", Comment: "Region."},
		{Name: "note", Type: "text", Comment: "Note."},
		{Name: "state", Type: "text", CreateOnly: true, Comment: "State."},
		{Name: "on", Type: "boolean", NotNull: true, Default: "false", Comment: "On."},
		{Name: "maybe", Type: "boolean", Comment: "Maybe."},
		{Name: "port", Type: "integer", Comment: "Port."},
		{Name: "size", Type: "bigint", Kind: module.Feedback, Comment: "Size."},
		{Name: "ratio", Type: "double precision", Comment: "Ratio."},
		{Name: "price", Type: "numeric", Comment: "Price."},
		{Name: "at", Type: "timestamp with time zone", Kind: module.Feedback, Comment: "At."},
		{Name: "until", Type: "timestamp with time zone", Comment: "Until."},
		{Name: "cidr", Type: "cidr", Comment: "CIDR."},
		{Name: "arns", Type: "text[]", Comment: "ARNs."},
		{Name: "vpc_id", Type: "integer", Ref: "vpc", CreateOnly: true, Comment: "VPC."},
		{Name: "group_ids", Type: "bigint[]", Ref: "security_group", NotNull: true, Default: "'{}'", Comment: "Groups."},
		{Name: "tags", Type: "jsonb", Default: "jsonb_build_object('team', 'web')", Comment: "Tags."},
		{Name: "doc", Type: "jsonb", Comment: "Doc."},
		{Name: "spec", Type: "jsonb", Comment: "Spec."},
		{Name: "raw", Type: "jsonb", Comment: "Raw."},
		{Name: "is_default", Type: "boolean", Kind: module.Initial, Comment: "Default."},
	}}.Declare()
	got := things.Table()
	if !reflect.DeepEqual(got, byHand) {
		t.Errorf("declared by thing:\n%#v\nby hand:\n%#v", got, byHand)
	}
	if got.DDL() != byHand.DDL() {
		t.Errorf("DDL:\n%s\nby hand:\n%s", got.DDL(), byHand.DDL())
	}
	got.Columns[0].Name = "changed"
	if things.Table().Columns[0].Name != "name" {
		t.Error("changing a Table() changed the declaration")
	}
}

func ptr[V any](v V) *V { return &v }

// TestTypedRecord: a value becomes a record in the canonical form
// (Table.Canonical's), nil pointers, slices and maps and a zero time NULL,
// the token only when set.
func TestTypedRecord(t *testing.T) {
	at := time.Date(2026, 11, 24, 5, 50, 0, 0, time.FixedZone("x", 3600))
	full := thing{Name: "web", Region: "eu-west-1", Note: ptr("n"), State: "running", On: true, Maybe: ptr(false), Port: 80,
		Size: ptr(int64(5)), Ratio: 0.5, Price: "12.50", At: at, Until: ptr(at), CIDR: "10.0.0.0/16", ARNs: []string{"a", "b"},
		VPC: "vpc-1", Groups: []string{"sg-1", "sg-2"}, Tags: map[string]string{"team": "web"}, Doc: map[string]any{"n": 3, "l": []int{1}},
		Spec: spec{Mode: "x", Count: 2}, Raw: []any{"x", 1}, Default: true, Token: "tok", Ignored: "not a column", internal: 7}
	cases := []struct {
		name string
		in   thing
		want module.Record
	}{
		{"every kind", full, module.Record{"name": "web", "region": "eu-west-1", "note": "n", "state": "running", "on": true,
			"maybe": false, "port": json.Number("80"), "size": json.Number("5"), "ratio": json.Number("0.5"), "price": json.Number("12.50"),
			"at": "2026-11-24T04:50:00Z", "until": "2026-11-24T04:50:00Z", "cidr": "10.0.0.0/16", "arns": []any{"a", "b"},
			"vpc_id": "vpc-1", "group_ids": []any{"sg-1", "sg-2"}, "tags": map[string]any{"team": "web"},
			"doc": map[string]any{"n": json.Number("3"), "l": []any{json.Number("1")}}, "spec": map[string]any{"mode": "x", "count": json.Number("2")},
			"raw": []any{"x", json.Number("1")}, "is_default": true, module.TokenTag: "tok"}},
		{"zero: nil is NULL, the token left out", thing{}, module.Record{"name": "", "region": "", "note": nil, "state": "", "on": false,
			"maybe": nil, "port": json.Number("0"), "size": nil, "ratio": json.Number("0"), "price": nil, "at": nil, "until": nil,
			"cidr": "", "arns": nil, "vpc_id": "", "group_ids": nil, "tags": nil, "doc": nil, "spec": map[string]any{"mode": "", "count": json.Number("0")},
			"raw": nil, "is_default": false}},
		{"empty is not NULL", thing{ARNs: []string{}, Tags: map[string]string{}}, module.Record{"name": "", "region": "", "note": nil, "state": "",
			"on": false, "maybe": nil, "port": json.Number("0"), "size": nil, "ratio": json.Number("0"), "price": nil, "at": nil, "until": nil,
			"cidr": "", "arns": []any{}, "vpc_id": "", "group_ids": nil, "tags": map[string]any{}, "doc": nil,
			"spec": map[string]any{"mode": "", "count": json.Number("0")}, "raw": nil, "is_default": false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := things.Record(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Record = %#v\nwant %#v", got, tc.want)
			}
			// What the engine makes of it is the record itself.
			if c, err := things.Table().Canonical(got); err != nil || !reflect.DeepEqual(c, got) {
				t.Errorf("Canonical(Record) = %#v, %v", c, err)
			}
		})
	}
}

// TestTypedValue: a record in canonical form (a row), or with natural
// values (a record written by hand), becomes the value; NULL and absent
// columns leave zero values; the row's id is no field's.
func TestTypedValue(t *testing.T) {
	at := time.Date(2026, 11, 24, 4, 50, 0, 0, time.UTC)
	cases := []struct {
		name string
		in   module.Record
		want thing
	}{
		{"canonical", module.Record{"id": json.Number("7"), "name": "web", "region": "eu-west-1", "note": "n", "state": "running", "on": true,
			"maybe": false, "port": json.Number("80"), "size": json.Number("5"), "ratio": json.Number("0.5"), "price": json.Number("12.50"),
			"at": "2026-11-24T05:50:00+01:00", "until": "2026-11-24T04:50:00Z", "cidr": "10.0.0.0/16", "arns": []any{"a", "b"},
			"vpc_id": "vpc-1", "group_ids": []any{"sg-1", "sg-2"}, "tags": map[string]any{"team": "web"},
			"doc": map[string]any{"n": json.Number("3")}, "spec": map[string]any{"mode": "x", "count": json.Number("2")},
			"raw": []any{"x", json.Number("1")}, "is_default": true, module.TokenTag: "tok"},
			thing{Name: "web", Region: "eu-west-1", Note: ptr("n"), State: "running", On: true, Maybe: ptr(false), Port: 80, Size: ptr(int64(5)),
				Ratio: 0.5, Price: "12.50", At: at, Until: ptr(at), CIDR: "10.0.0.0/16", ARNs: []string{"a", "b"}, VPC: "vpc-1",
				Groups: []string{"sg-1", "sg-2"}, Tags: map[string]string{"team": "web"}, Doc: map[string]any{"n": json.Number("3")},
				Spec: spec{Mode: "x", Count: 2}, Raw: []any{"x", json.Number("1")}, Default: true, Token: "tok"}},
		{"natural", module.Record{"name": ptr("web"), "port": int64(80), "size": 5, "at": at, "arns": []string{"a"}, "state": state("up"),
			"tags": map[string]string{"a": "b"}},
			thing{Name: "web", Port: 80, Size: ptr(int64(5)), At: at, ARNs: []string{"a"}, State: "up", Tags: map[string]string{"a": "b"}}},
		{"NULL", module.Record{"note": nil, "maybe": nil, "size": nil, "at": nil, "until": nil, "arns": nil, "tags": nil, "raw": nil, "port": nil},
			thing{}},
		{"absent", module.Record{}, thing{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := things.Value(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Value = %#v\nwant %#v", got, tc.want)
			}
			// And back: the same record in canonical form.
			back, err := things.Record(got)
			if err != nil {
				t.Fatal(err)
			}
			again, err := things.Value(back)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("round trip: %#v, %v", again, err)
			}
		})
	}
	// A key T does not declare is left out (a newer declaration's column).
	if got, err := things.Value(module.Record{"name": "x", "nope": 1}); err != nil || got.Name != "x" {
		t.Errorf("Value of a record with an undeclared key: %#v, %v; want the declared fields", got, err)
	}
	for _, bad := range []module.Record{{"port": "eighty"}, {"port": json.Number("4294967296")}, {"on": "yes"},
		{"at": "yesterday"}, {"arns": "a"}, {"spec": []any{"x"}}} {
		if _, err := things.Value(bad); err == nil || !strings.Contains(err.Error(), "thing") {
			t.Errorf("Value(%v): %v, want an error naming the table", bad, err)
		}
	}
}

// TestTypedIdentity: an identity CloudIDOf rendered fills the identity
// fields; what is no identity of the table is refused.
func TestTypedIdentity(t *testing.T) {
	id := module.CloudIDOf(things.Table(), module.Record{"name": "web", "region": "eu-west-1"})
	if got, ok := things.Identity(id); !ok || !reflect.DeepEqual(got, thing{Name: "web", Region: "eu-west-1"}) {
		t.Errorf("Identity(%s) = %#v, %v", id, got, ok)
	}
	for _, bad := range []string{"web", `["web"]`, `["web","eu-west-1","x"]`} {
		if _, ok := things.Identity(bad); ok {
			t.Errorf("Identity(%s): an identity", bad)
		}
	}
}

// TestTypedDeclareRefuses: a declaration that is a mistake panics, saying
// which field.
func TestTypedDeclareRefuses(t *testing.T) {
	type untagged struct {
		Name string
	}
	type unknown struct {
		Name string `iasql:"name,unique" comment:"c"`
	}
	type noType struct {
		Ch chan int `iasql:"ch" comment:"c"`
	}
	type noComment struct {
		Name string `iasql:"name"`
	}
	type badToken struct {
		Token int `iasql:",token"`
	}
	type twice struct {
		A string `iasql:"a" comment:"c"`
		B string `iasql:"a" comment:"c"`
	}
	type feedbackRef struct {
		VPC string `iasql:"vpc_id,feedback,ref=vpc" comment:"c"`
	}
	cases := []struct {
		name    string
		declare func()
		says    string
	}{
		{"untagged field", func() { module.Declare[untagged](module.Table{Name: "t"}) }, "Name: no iasql tag"},
		{"unknown option", func() { module.Declare[unknown](module.Table{Name: "t"}) }, `unknown option "unique"`},
		{"no SQL type", func() { module.Declare[noType](module.Table{Name: "t"}) }, "no SQL type follows from chan int"},
		{"no comment", func() { module.Declare[noComment](module.Table{Name: "t"}) }, "t.name has no comment"},
		{"token not a string", func() { module.Declare[badToken](module.Table{Name: "t"}) }, "client token"},
		{"a column twice", func() { module.Declare[twice](module.Table{Name: "t"}) }, "declares a twice"},
		{"feedback reference", func() { module.Declare[feedbackRef](module.Table{Name: "t"}) }, "only a declarative column can reference"},
		{"not a struct", func() { module.Declare[string](module.Table{Name: "t"}) }, "is not a struct type"},
		{"columns as well", func() {
			module.Declare[thing](module.Table{Name: "t", Columns: []module.Column{{Name: "x", Type: "text", Comment: "c"}}})
		}, "not Columns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if s, _ := r.(string); !strings.Contains(s, tc.says) {
					t.Errorf("panicked with %v, want it to say %q", r, tc.says)
				}
			}()
			tc.declare()
		})
	}
}

func ExampleDeclare() {
	// Queue is a row of the queue table.
	type Queue struct {
		Name  string `iasql:"queue_name,id,notnull" comment:"Queue name."`
		Delay int32  `iasql:"delay_seconds,notnull,default=0" comment:"Delay of each message, in seconds."`
		ARN   string `iasql:"queue_arn,feedback" comment:"ARN of the queue (from the cloud; not written to it)."`
	}
	queues := module.Declare[Queue](module.Table{Name: "queue", Comment: "SQS queues."})
	fmt.Println(queues.Table().CloudID, queues.Table().Declarative, queues.Table().Feedback)
	rec, _ := queues.Record(Queue{Name: "jobs", Delay: 5})
	fmt.Printf("%#v %#v %#v\n", rec["queue_name"], rec["delay_seconds"], rec["queue_arn"])
	q, _ := queues.Value(module.Record{"id": json.Number("1"), "queue_name": "jobs", "delay_seconds": json.Number("10"), "queue_arn": nil})
	fmt.Printf("%+v\n", q)
	// Output:
	// [queue_name] [queue_name delay_seconds] [queue_arn]
	// "jobs" "5" ""
	// {Name:jobs Delay:10 ARN:}
}
