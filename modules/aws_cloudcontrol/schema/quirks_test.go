package schema_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// testdata reads one of the synthetic schemas showing a quirk of real
// ones (modules/aws_cloudcontrol/testdata).
func testdata(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestUnknownPaths: paths of readOnlyProperties, writeOnlyProperties and
// createOnlyProperties that name no property are ignored (listed in
// Ignored, for the install's warning); the others mark their columns.
func TestUnknownPaths(t *testing.T) {
	ty, err := schema.Parse(testdata(t, "unknown-paths.json"))
	if err != nil {
		t.Fatalf("a schema naming properties it does not define: %v", err)
	}
	want := []schema.IgnoredPath{
		{"readOnlyProperties", "/properties/LicenseSpecification"},
		{"writeOnlyProperties", "/properties/CreationInfo"},
		{"createOnlyProperties", "/properties/Gone/Deeper"},
	}
	if !slices.Equal(ty.Ignored, want) {
		t.Errorf("ignored %v, want %v", ty.Ignored, want)
	}
	id, _ := ty.ColumnNamed("stale_id")
	secret, _ := ty.ColumnNamed("secret")
	config, _ := ty.ColumnNamed("config")
	if !id.ReadOnly || !secret.WriteOnly || !config.CreateOnly || !slices.Equal(config.CreateOnlyPaths, []string{"/properties/Config/Key"}) {
		t.Errorf("the paths that name properties: stale_id %+v, secret %+v, config %+v", id, secret, config)
	}
	if cols := ty.ModuleTable().Columns; len(cols) != 4 {
		t.Errorf("columns %v, want one per property defined and the region", cols)
	}
}

// TestNestedIdentifier: an identifier below a top-level property makes
// that property's column the identity; Cloud Control's identifier is read
// from within it, and an identifier maps back into it.
func TestNestedIdentifier(t *testing.T) {
	ty, err := schema.Parse(testdata(t, "nested-id.json"))
	if err != nil {
		t.Fatalf("a nested primary identifier: %v", err)
	}
	if got := ty.IdentifierColumns(); !slices.Equal(got, []string{"data_set_id", "schedule"}) {
		t.Errorf("identifier columns %v", got)
	}
	if got := ty.ModuleTable().CloudID; !slices.Equal(got, []string{"data_set_id", "schedule", "region"}) {
		t.Errorf("the table's identity %v", got)
	}
	if sql := ty.SQL(); !strings.Contains(sql, `UNIQUE INDEX "aws_test_refresh_schedule_identity" ON public."aws_test_refresh_schedule" ("data_set_id", ("schedule" #>> '{ScheduleId}'), region)`) {
		t.Errorf("identity constraint:\n%s", sql)
	}
	rec := module.Record{"data_set_id": "ds", "schedule": map[string]any{"ScheduleId": "s1", "Frequency": "DAILY"}, "arn": "arn:x"}
	if got := ty.IdentifierOf(rec); got != "ds|s1" {
		t.Errorf("identifier %q, want ds|s1", got)
	}
	for _, r := range []module.Record{
		{"data_set_id": "ds"},
		{"data_set_id": "ds", "schedule": map[string]any{"Frequency": "DAILY"}},
		{"data_set_id": "ds", "schedule": "s1"},
	} {
		if got := ty.IdentifierOf(r); got != "" {
			t.Errorf("identifier of %v: %q, want none", r, got)
		}
	}
	back := ty.IdentityRecord("ds|s1")
	if want := (module.Record{"data_set_id": "ds", "schedule": map[string]any{"ScheduleId": "s1"}}); !reflect.DeepEqual(back, want) {
		t.Errorf("identity record %v, want %v", back, want)
	}
	if got := ty.IdentifierOf(back); got != "ds|s1" {
		t.Errorf("identifier of the identity record %q", got)
	}
	// The engine's rendering of an object identity names no resource by
	// itself: a read by identity is no answer (ccmapper's Get says so).
	if _, _, ok := ty.CloudIDToIdentifier(module.CloudIDOf(ty.ModuleTable(), rec)); ok || !ty.NestedIdentifier() {
		t.Error("an identity holding an object taken for an identifier")
	}
}

// TestNoListHandler: a type without a list handler makes a table (it was
// refused), not Listable, whose comment says what it holds.
func TestNoListHandler(t *testing.T) {
	ty, err := schema.Parse(testdata(t, "by-id.json"))
	if err != nil {
		t.Fatalf("a type without a list handler: %v", err)
	}
	if ty.Listable {
		t.Error("Listable without a list handler")
	}
	if c := ty.ModuleTable().Comment; !strings.Contains(c, "no list handler") || !strings.Contains(c, "nothing made elsewhere is imported") {
		t.Errorf("comment %q", c)
	}
	logs, err := schema.Parse(emulatorSchemas(t)["aws-logs-loggroup.json"])
	if err != nil || !logs.Listable || strings.Contains(logs.ModuleTable().Comment, "no list handler") {
		t.Errorf("a type with a list handler: %v, %v", logs, err)
	}
}

// TestStoredForm: a schema holding \u0000 is stored without it (jsonb
// refuses it) and read back exactly, U+E000 (the stored form's escape)
// included; a schema holding neither is stored byte for byte.
func TestStoredForm(t *testing.T) {
	doc := testdata(t, "nul.json")
	stored, err := schema.ToStored(doc)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(stored, []byte(`\u0000`)) || bytes.Contains(stored, []byte{0}) {
		t.Errorf("the stored form holds a NUL: %s", stored)
	}
	back, err := schema.FromStored(stored)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(doc, &want); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(back, &got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %s\nwant %s", back, doc)
	}
	ty, err := schema.Parse(back)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := ty.ColumnNamed("label"); strings.Contains(ty.ModuleTable().DDL(), "\x00") || !strings.Contains(c.Description, "\x00") {
		t.Error("the DDL holds a NUL, or the description lost it")
	}
	for name, plain := range emulatorSchemas(t) {
		for _, f := range []func([]byte) ([]byte, error){schema.ToStored, schema.FromStored} {
			if out, err := f(plain); err != nil || !bytes.Equal(out, plain) {
				t.Errorf("%s is not stored as it is: %v", name, err)
			}
		}
	}
}
