package aws_cloudcontrol_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
)

// TestSchemaVersionSurvivesJSONB: a type's module made from the schema as
// DescribeType returned it and made from the text of the jsonb it is
// stored as (what every start after the install reads) have the same
// version, whatever jsonb normalises (whitespace, key order, duplicate
// keys, number forms); a different schema has another.
func TestSchemaVersionSurvivesJSONB(t *testing.T) {
	files, err := filepath.Glob("../../internal/emulator/cfnschemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("want the emulator's schemas, found %v (%v)", files, err)
	}
	cases := map[string]string{
		"whitespace and key order": `{ "b": [1, 2],
			"a": {"y": true, "x": null} }`,
		"duplicate keys":  `{"a": 1, "a": 2, "b": "\u00e9\n"}`,
		"number forms":    `{"min": 1e2, "max": 1.50, "step": -0.0010, "big": 12345678901234567890}`,
		"escaped slashes": `{"pattern": "^arn:aws:[a-z\\/]+$", "html": "<&>"}`,
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cases[filepath.Base(f)] = string(doc)
	}
	conn := pgtest.Connect(t, srv.NewDB(t))
	seen := map[string]string{}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			var stored string
			if err := conn.QueryRow(context.Background(), `SELECT $1::jsonb::text`, raw).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			want, err := aws_cloudcontrol.SchemaVersion([]byte(raw))
			if err != nil {
				t.Fatal(err)
			}
			got, err := aws_cloudcontrol.SchemaVersion([]byte(stored))
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("version %q from the jsonb's text %s, %q from the bytes fetched", got, stored, want)
			}
			if other, ok := seen[want]; ok {
				t.Errorf("version %q is also that of %s", want, other)
			}
			seen[want] = name
		})
	}
	if _, err := aws_cloudcontrol.SchemaVersion([]byte(`{"a":`)); err == nil {
		t.Error("a schema that is not JSON has a version")
	}
}
