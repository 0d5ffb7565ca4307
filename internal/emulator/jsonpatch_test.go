package emulator

import (
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/jsonvalue"
)

func TestJSONPatch(t *testing.T) {
	const doc = `{"a":1,"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}]}`
	for _, tc := range []struct {
		name, patch, want, err string
	}{
		{"add member", `[{"op":"add","path":"/d","value":"x"}]`, `{"a":1,"b":{"c":[1,2,3]},"d":"x","t":[{"Key":"k","Value":"v"}]}`, ""},
		{"add overwrites member", `[{"op":"add","path":"/a","value":2}]`, `{"a":2,"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"add inserts in array", `[{"op":"add","path":"/b/c/1","value":9}]`, `{"a":1,"b":{"c":[1,9,2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"add appends with -", `[{"op":"add","path":"/b/c/-","value":4}]`, `{"a":1,"b":{"c":[1,2,3,4]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"add nested member", `[{"op":"add","path":"/t/0/Value","value":"w"}]`, `{"a":1,"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"w"}]}`, ""},
		{"add under missing parent", `[{"op":"add","path":"/x/y","value":1}]`, "", "path not found"},
		{"remove member", `[{"op":"remove","path":"/a"}]`, `{"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"remove array item", `[{"op":"remove","path":"/b/c/0"}]`, `{"a":1,"b":{"c":[2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"remove missing", `[{"op":"remove","path":"/zz"}]`, "", "path not found"},
		{"replace", `[{"op":"replace","path":"/b","value":{}}]`, `{"a":1,"b":{},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"replace missing", `[{"op":"replace","path":"/zz","value":1}]`, "", "path not found"},
		{"replace whole array", `[{"op":"replace","path":"/t","value":[]}]`, `{"a":1,"b":{"c":[1,2,3]},"t":[]}`, ""},
		{"test passes", `[{"op":"test","path":"/a","value":1.0},{"op":"replace","path":"/a","value":5}]`, `{"a":5,"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"test fails", `[{"op":"test","path":"/a","value":2}]`, "", "test failed"},
		{"move", `[{"op":"move","from":"/a","path":"/z"}]`, `{"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}],"z":1}`, ""},
		{"move into itself", `[{"op":"move","from":"/b","path":"/b/x"}]`, "", "into itself"},
		{"copy", `[{"op":"copy","from":"/b/c/2","path":"/b/c/0"}]`, `{"a":1,"b":{"c":[3,1,2,3]},"t":[{"Key":"k","Value":"v"}]}`, ""},
		{"escaped pointer", `[{"op":"add","path":"/x~1y~0z","value":true}]`, `{"a":1,"b":{"c":[1,2,3]},"t":[{"Key":"k","Value":"v"}],"x/y~z":true}`, ""},
		{"bad index", `[{"op":"replace","path":"/b/c/01","value":1}]`, "", "bad array index"},
		{"index out of range", `[{"op":"add","path":"/b/c/5","value":1}]`, "", "out of range"},
		{"unknown op", `[{"op":"merge","path":"/a"}]`, "", "unknown op"},
		{"no value", `[{"op":"add","path":"/a"}]`, "", "no value"},
		{"not an array", `{"op":"add"}`, "", "not a JSON array"},
		{"all or nothing", `[{"op":"add","path":"/n","value":1},{"op":"remove","path":"/zz"}]`, "", "path not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in, _ := decodeJSONValue([]byte(doc))
			ops, err := parsePatch(tc.patch)
			var got any
			if err == nil {
				got, err = applyPatch(in, ops)
			}
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				if orig, _ := decodeJSONValue([]byte(doc)); !jsonvalue.Equal(in, orig) {
					t.Errorf("the input changed: %v", in)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want, _ := decodeJSONValue([]byte(tc.want))
			if !jsonvalue.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
			if orig, _ := decodeJSONValue([]byte(doc)); !jsonvalue.Equal(in, orig) {
				t.Errorf("the input changed: %v", in)
			}
		})
	}
}
