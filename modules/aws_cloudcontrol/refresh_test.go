package aws_cloudcontrol_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// gadgetSchema is a version of a test type's schema: its properties (JSON
// members), required ones and primary identifier.
func gadgetSchema(props, required, id string) string {
	return fmt.Sprintf(`{
  "typeName": "AWS::Test::Gadget",
  "description": "A test type whose schema changes between versions.",
  "properties": {%s,
    "Arn": {"description": "The gadget's ARN.", "type": "string"}},
  "required": [%s],
  "readOnlyProperties": ["/properties/Arn"],
  "createOnlyProperties": ["/properties/GadgetName"],
  "primaryIdentifier": ["/properties/%s"],
  "handlers": {
    "create": {"permissions": []}, "read": {"permissions": []}, "update": {"permissions": []},
    "delete": {"permissions": []}, "list": {"permissions": []}
  }
}`, props, required, id)
}

// TestRefreshSchema: a type installed at one version of its schema is
// migrated to the next by iasql_refresh_schema: a column for the new
// property (with its comment, filled from the cloud), the column of the
// property gone kept with its values and marked, the stored schema and
// module version moved; the table syncs on the new schema. Unchanged, it
// says so; a changed primary identifier is refused and nothing changes.
func TestRefreshSchema(t *testing.T) {
	t.Parallel()
	const typ = "AWS::Test::Gadget"
	dir := t.TempDir()
	write := func(doc string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "AWS_Test_Gadget.json"), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	name := `"GadgetName": {"description": "The gadget's name.", "type": "string"}`
	write(gadgetSchema(name+`,
    "Size": {"description": "The gadget's size.", "type": "integer"},
    "Color": {"description": "The gadget's color.", "type": "string"}`, `"GadgetName", "Color"`, "GadgetName"))
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{typ},
		Emulator: emulator.Options{SchemaDir: dir},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	ctx := context.Background()
	e.Exec(`INSERT INTO aws_test_gadget (gadget_name, size, color) VALUES ('g', 1, 'red')`)
	e.Commit()
	version := e.String(`SELECT version FROM iasql_modules WHERE name = $1`, typ)

	// Version 2: Color is gone, Shape is new and required.
	write(gadgetSchema(name+`,
    "Size": {"description": "The gadget's size.", "type": "integer"},
    "Shape": {"description": "The gadget's shape.", "type": "string"}`, `"GadgetName", "Shape"`, "GadgetName"))
	if err := e.Emu.ReloadSchemas(); err != nil {
		t.Fatal(err)
	}
	// Another tool gives the gadget its shape.
	c.update(typ, "g", `[{"op": "add", "path": "/Shape", "value": "round"}]`)
	note := e.String(`SELECT note FROM iasql_refresh_schema($1)`, typ)
	if !strings.Contains(note, "added shape") || !strings.Contains(note, "color no longer in the schema") {
		t.Errorf("the refresh says %q; want shape added and color gone", note)
	}
	if v := e.String(`SELECT version FROM iasql_modules WHERE name = $1 AND installed_version = version`, typ); v == version || v == "" {
		t.Errorf("module version %q after the refresh, was %q: want the new schema's, installed", v, version)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name = $1 AND definition->'properties' ? 'Shape' AND NOT definition->'properties' ? 'Color'`, typ); n != 1 {
		t.Error("the stored schema is not the new one")
	}
	if d := e.String(`SELECT col_description(attrelid, attnum) FROM pg_attribute WHERE attrelid = 'public.aws_test_gadget'::regclass AND attname = 'shape'`); !strings.Contains(d, "The gadget's shape.") {
		t.Errorf("shape's comment %q; want the property's description", d)
	}
	if d := e.String(`SELECT col_description(attrelid, attnum) FROM pg_attribute WHERE attrelid = 'public.aws_test_gadget'::regclass AND attname = 'color'`); !strings.Contains(d, "no longer in the type's schema") || !strings.Contains(d, "The gadget's color.") {
		t.Errorf("color's comment %q; want it marked as no longer in the schema, keeping what it said", d)
	}
	if got := e.String(`SELECT color || ' ' || shape FROM aws_test_gadget WHERE gadget_name = 'g'`); got != "red round" {
		t.Errorf("the row after the refresh: %q; want its color kept and its shape read from the cloud (red round)", got)
	}
	// The table syncs on the new schema; the old column holds no one back.
	e.Exec(`INSERT INTO aws_test_gadget (gadget_name, size, shape) VALUES ('h', 2, 'square')`)
	e.Exec(`UPDATE aws_test_gadget SET shape = 'oval' WHERE gadget_name = 'g'`)
	e.Commit()
	if got := c.get(typ, "h"); got == nil || got["Shape"] != "square" {
		t.Errorf("h in the cloud: %v; want Shape square", got)
	}
	if got := c.get(typ, "g"); got == nil || got["Shape"] != "oval" {
		t.Errorf("g in the cloud: %v; want Shape oval", got)
	}

	// In sync: a full read changes nothing, and nothing is left to do.
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over the migrated table in sync made %v", m)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_preview()`); n != 0 {
		t.Errorf("preview of the migrated table in sync: %d actions", n)
	}

	// Unchanged: said so, nothing else.
	if note := e.String(`SELECT note FROM iasql_refresh_schema($1)`, typ); note != "the schema has not changed" {
		t.Errorf("a refresh of the same schema says %q", note)
	}

	// Version 3: another primary identifier; refused, nothing changes.
	version = e.String(`SELECT version FROM iasql_modules WHERE name = $1`, typ)
	write(gadgetSchema(name+`,
    "Size": {"description": "The gadget's size.", "type": "integer"},
    "Shape": {"description": "The gadget's shape.", "type": "string"}`, `"GadgetName"`, "Arn"))
	if err := e.Emu.ReloadSchemas(); err != nil {
		t.Fatal(err)
	}
	_, err := e.DB.Exec(ctx, `SELECT * FROM iasql_refresh_schema($1)`, typ)
	if err == nil || !strings.Contains(err.Error(), "primary identifier changed") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a refresh to another primary identifier: %v; want it refused in one line", err)
	}
	if v := e.String(`SELECT version FROM iasql_modules WHERE name = $1`, typ); v != version {
		t.Errorf("the refused refresh moved the version to %s", v)
	}

	// What cannot be refreshed.
	for _, tc := range []struct{ name, want string }{
		{"AWS::Logs::LogGroup", "is not installed"},
		{"aws_nothing", "is not installed"},
	} {
		if _, err := e.DB.Exec(ctx, `SELECT * FROM iasql_refresh_schema($1)`, tc.name); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("refresh %s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
