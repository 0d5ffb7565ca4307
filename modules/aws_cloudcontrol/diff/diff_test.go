package diff_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/diff"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

const testSchema = `{
  "typeName": "AWS::Test::Thing",
  "definitions": {"Tag": {"type": "object", "properties": {"Key": {"type": "string"}, "Value": {"type": "string"}}}},
  "properties": {
    "Name": {"type": "string"},
    "Arn": {"type": "string"},
    "Retention": {"type": "integer", "default": 30},
    "Ratio": {"type": "number"},
    "Zones": {"type": "array", "insertionOrder": false, "items": {"type": "string"}},
    "Steps": {"type": "array", "items": {"type": "string"}},
    "Tags": {"type": "array", "insertionOrder": false, "items": {"$ref": "#/definitions/Tag"}},
    "PolicyDocument": {"type": "string"},
    "KeyPolicy": {"type": ["object", "string"]},
    "Config": {"type": "object", "properties": {"Mode": {"type": "string"}, "Size": {"type": "integer"}, "Status": {"type": "string"}, "Token": {"type": "string"}}},
    "Password": {"type": "string"},
    "Indexes": {"type": "array", "items": {"type": "object", "properties": {"Name": {"type": "string"},
      "Attributes": {"type": "array", "insertionOrder": false, "items": {"type": "string"}},
      "Keys": {"type": "array", "items": {"type": "string"}}}}}
  },
  "readOnlyProperties": ["/properties/Arn", "/properties/Config/Status"],
  "writeOnlyProperties": ["/properties/Password", "/properties/Config/Token"],
  "createOnlyProperties": ["/properties/Name", "/properties/Config/Mode"],
  "primaryIdentifier": ["/properties/Name"],
  "handlers": {"create": {}, "read": {}, "update": {}, "delete": {}, "list": {}}
}`

func testType(t *testing.T) *schema.Type {
	t.Helper()
	ty, err := schema.Parse([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	return ty
}

func TestEqual(t *testing.T) {
	ty := testType(t)
	cases := []struct {
		name  string
		a, b  module.Record
		equal bool
	}{
		{"read-only left out", module.Record{"name": "a", "arn": "x"}, module.Record{"name": "a", "arn": "y"}, true},
		{"write-only left out", module.Record{"name": "a", "password": "secret"}, module.Record{"name": "a"}, true},
		{"nested read-only and write-only left out",
			module.Record{"config": map[string]any{"Size": json.Number("1"), "Token": "t"}},
			module.Record{"config": map[string]any{"Size": json.Number("1"), "Status": "READY"}}, true},
		{"absent equals the default", module.Record{"name": "a"}, module.Record{"name": "a", "retention": json.Number("30")}, true},
		{"absent differs from another value", module.Record{"name": "a"}, module.Record{"name": "a", "retention": json.Number("7")}, false},
		{"nested unordered arrays as sets",
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Attributes": []any{"a", "b"}, "Keys": []any{"k1", "k2"}}}},
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Attributes": []any{"b", "a"}, "Keys": []any{"k1", "k2"}}}}, true},
		{"nested unordered arrays: a different member",
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Attributes": []any{"a", "b"}}}},
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Attributes": []any{"a", "c"}}}}, false},
		{"nested ordered arrays in order",
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Keys": []any{"k1", "k2"}}}},
			module.Record{"indexes": []any{map[string]any{"Name": "i", "Keys": []any{"k2", "k1"}}}}, false},
		{"numbers by value: json.Number and int64", module.Record{"retention": json.Number("5")}, module.Record{"retention": int64(5)}, true},
		{"numbers by value: 5 and 5.0", module.Record{"ratio": json.Number("5")}, module.Record{"ratio": 5.0}, true},
		{"numbers by value: 0.1 differs from 0.10000001", module.Record{"ratio": json.Number("0.1")}, module.Record{"ratio": json.Number("0.10000001")}, false},
		{"unordered arrays as sets", module.Record{"zones": []any{"a", "b"}}, module.Record{"zones": []any{"b", "a"}}, true},
		{"unordered arrays count items", module.Record{"zones": []any{"a", "a"}}, module.Record{"zones": []any{"a", "b"}}, false},
		{"ordered arrays in order", module.Record{"steps": []any{"a", "b"}}, module.Record{"steps": []any{"b", "a"}}, false},
		{"empty array equals absent", module.Record{"zones": []any{}}, module.Record{}, true},
		{"tags as a map, list from the cloud", module.Record{"tags": map[string]any{"k": "v"}}, module.Record{"tags": []any{map[string]any{"Key": "k", "Value": "v"}}}, true},
		{"aws: tags ignored", module.Record{"tags": map[string]any{"k": "v"}}, module.Record{"tags": map[string]any{"k": "v", "aws:cloudformation:stack-name": "s"}}, true},
		{"tag values compared", module.Record{"tags": map[string]any{"k": "v"}}, module.Record{"tags": map[string]any{"k": "w"}}, false},
		{"no tags equals only aws: tags", module.Record{}, module.Record{"tags": map[string]any{"aws:x": "1"}}, true},
		{"string policy document by meaning",
			module.Record{"policy_document": `{"Version":"2012-10-17","Statement":[]}`},
			module.Record{"policy_document": `{ "Statement": [], "Version": "2012-10-17" }`}, true},
		{"object-or-string policy by meaning",
			module.Record{"key_policy": map[string]any{"Version": "2012-10-17", "N": json.Number("1")}},
			module.Record{"key_policy": `{"N": 1.0, "Version": "2012-10-17"}`}, true},
		{"policy documents that differ", module.Record{"key_policy": map[string]any{"Effect": "Allow"}}, module.Record{"key_policy": map[string]any{"Effect": "Deny"}}, false},
		{"objects key by key, absent key is null", module.Record{"config": map[string]any{"Size": json.Number("1"), "Mode": nil}}, module.Record{"config": map[string]any{"Size": 1.0}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := diff.Equal(ty, c.a, c.b); got != c.equal {
				t.Errorf("Equal = %v, want %v (differ: %v)", got, c.equal, diff.Different(ty, c.a, c.b))
			}
			if got := diff.Equal(ty, c.b, c.a); got != c.equal {
				t.Errorf("Equal (swapped) = %v, want %v", got, c.equal)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	ty := testType(t)
	cases := []struct {
		name      string
		have      module.Record
		want      module.Record
		ops       string
		replace   []string
		writeOnly bool
	}{
		{"no difference", module.Record{"name": "a", "retention": json.Number("30")}, module.Record{"name": "a"}, `null`, nil, false},
		{"replace a scalar", module.Record{"name": "a", "retention": json.Number("7")}, module.Record{"name": "a", "retention": json.Number("14")},
			`[{"op":"replace","path":"/Retention","value":14}]`, nil, false},
		{"add a property", module.Record{"name": "a"}, module.Record{"name": "a", "steps": []any{"x"}},
			`[{"op":"add","path":"/Steps","value":["x"]}]`, nil, false},
		{"remove a property", module.Record{"name": "a", "retention": json.Number("7")}, module.Record{"name": "a"},
			`[{"op":"remove","path":"/Retention"}]`, nil, false},
		{"tags replaced whole, as a list sorted by key", module.Record{"tags": map[string]any{"a": "1"}}, module.Record{"tags": map[string]any{"b": "2", "a": "1"}},
			`[{"op":"replace","path":"/Tags","value":[{"Key":"a","Value":"1"},{"Key":"b","Value":"2"}]}]`, nil, false},
		{"read-only never patched", module.Record{"arn": "x"}, module.Record{"arn": "y"}, `null`, nil, false},
		{"a create-only change is a replacement", module.Record{"name": "a"}, module.Record{"name": "b"}, `null`, []string{"/properties/Name"}, false},
		{"a nested create-only change is a replacement",
			module.Record{"config": map[string]any{"Mode": "x", "Size": json.Number("1")}},
			module.Record{"config": map[string]any{"Mode": "y", "Size": json.Number("1")}}, `null`, []string{"/properties/Config/Mode"}, false},
		{"beside a nested create-only path, patched key by key",
			module.Record{"config": map[string]any{"Mode": "x", "Size": json.Number("1"), "Status": "READY"}},
			module.Record{"config": map[string]any{"Mode": "x", "Size": json.Number("2")}},
			`[{"op":"replace","path":"/Config/Size","value":2}]`, nil, false},
		{"write-only sent as add beside a change", module.Record{"name": "a"}, module.Record{"name": "a", "password": "p", "ratio": json.Number("1.5")},
			`[{"op":"add","path":"/Password","value":"p"},{"op":"add","path":"/Ratio","value":1.5}]`, nil, false},
		{"write-only alone", module.Record{"name": "a"}, module.Record{"name": "a", "password": "p"},
			`[{"op":"add","path":"/Password","value":"p"}]`, nil, true},
		{"unordered reordering is no change", module.Record{"zones": []any{"a", "b"}}, module.Record{"zones": []any{"b", "a"}}, `null`, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := diff.Diff(ty, c.have, c.want)
			if got := p.JSON(); got != c.ops {
				t.Errorf("ops %s, want %s", got, c.ops)
			}
			if !slices.Equal(p.Replace, c.replace) {
				t.Errorf("replace %v, want %v", p.Replace, c.replace)
			}
			if p.WriteOnly != c.writeOnly {
				t.Errorf("WriteOnly %v, want %v", p.WriteOnly, c.writeOnly)
			}
		})
	}
}
