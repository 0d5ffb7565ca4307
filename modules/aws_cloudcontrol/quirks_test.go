package aws_cloudcontrol_test

import (
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// synthetic reads the synthetic schemas named (testdata), each showing a
// quirk of real ones, for the emulator to serve.
func synthetic(t *testing.T, files ...string) []string {
	t.Helper()
	var out []string
	for _, f := range files {
		b, err := os.ReadFile("testdata/" + f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}

// TestByIDEndToEnd: a type without a list handler (as AWS::EC2::Instance,
// AWS::IAM::RolePolicy) installs as a table that manages what is created
// from SQL: rows created, updated, replaced and deleted reach the cloud; each row is
// read back by its identifier (a change made elsewhere comes back, a
// resource deleted elsewhere deletes its row); a resource made elsewhere
// is never imported.
func TestByIDEndToEnd(t *testing.T) {
	t.Parallel()
	const typ = "AWS::Test::Widget"
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{typ},
		Emulator: emulator.Options{CloudFormationSchemas: synthetic(t, "by-id.json"), CloudControlDelay: 50 * time.Millisecond},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	if d := e.String(`SELECT obj_description('public.aws_test_widget'::regclass)`); !strings.Contains(d, "no list handler") {
		t.Errorf("the table's comment does not say what it holds: %q", d)
	}

	// Made elsewhere: never imported.
	c.create(typ, `{"WidgetName": "elsewhere", "Size": 9}`)
	e.Refresh()

	// Create from SQL.
	e.Exec(`INSERT INTO aws_test_widget (widget_name, size) VALUES ('w1', 1)`)
	e.Commit()
	if got := c.get(typ, "w1"); got == nil || got["Size"] != float64(1) {
		t.Fatalf("w1 in the cloud: %v", got)
	}

	// Update from SQL, in place.
	e.Exec(`UPDATE aws_test_widget SET size = 2 WHERE widget_name = 'w1'`)
	e.Emu.Reset()
	e.Commit()
	if got := c.get(typ, "w1"); got["Size"] != float64(2) {
		t.Errorf("w1 after the update: %v", got)
	}
	if m := e.Mutations(); m["cloudcontrolapi:UpdateResource"] != 1 || len(m) != 1 {
		t.Errorf("the update made %v", m)
	}

	// A create-only change replaces: the new resource made, the old one
	// (no row names it now) still read, and deleted.
	e.Exec(`UPDATE aws_test_widget SET widget_name = 'w1b' WHERE widget_name = 'w1'`)
	e.Commit()
	if c.get(typ, "w1b") == nil || c.get(typ, "w1") != nil {
		t.Errorf("after the replacement: w1b %v, w1 %v; want w1b only", c.get(typ, "w1b"), c.get(typ, "w1"))
	}
	e.Exec(`UPDATE aws_test_widget SET widget_name = 'w1' WHERE widget_name = 'w1b'`)
	e.Refresh()
	if c.get(typ, "w1") == nil || c.get(typ, "w1b") != nil {
		t.Errorf("after the replacement by a whole read: w1 %v, w1b %v; want w1 only", c.get(typ, "w1"), c.get(typ, "w1b"))
	}

	// Changed elsewhere: read back by its identifier.
	c.update(typ, "w1", `[{"op": "replace", "path": "/Size", "value": 5}]`)
	e.Emu.Reset()
	e.Refresh()
	if n := e.Count(`SELECT size FROM aws_test_widget WHERE widget_name = 'w1'`); n != 5 {
		t.Errorf("w1's size in the row: %d, want the cloud's 5", n)
	}
	if calls := e.Emu.Calls(); calls["cloudcontrolapi:ListResources"] != 0 || calls["cloudcontrolapi:GetResource"] == 0 {
		t.Errorf("a whole read made %v: want GetResource per row, no list", calls)
	}
	if n := e.Count(`SELECT count(*) FROM aws_test_widget WHERE widget_name = 'elsewhere'`); n != 0 {
		t.Error("the widget made elsewhere was imported")
	}

	// Deleted elsewhere: the row follows.
	c.delete(typ, "w1")
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM aws_test_widget WHERE widget_name = 'w1'`); n != 0 {
		t.Error("the widget deleted elsewhere is still a row")
	}

	// Delete from SQL: by a commit (which reads what it acts on), and by a
	// cycle that reads the whole table, as automatic cycles do: the row is
	// gone, its resource is still read (the engine still knows it) and
	// deleted.
	e.Exec(`INSERT INTO aws_test_widget (widget_name, size) VALUES ('w2', 1), ('w3', 1)`)
	e.Commit()
	e.Exec(`DELETE FROM aws_test_widget WHERE widget_name = 'w2'`)
	e.Commit()
	e.Exec(`DELETE FROM aws_test_widget WHERE widget_name = 'w3'`)
	e.Refresh()
	for _, name := range []string{"w2", "w3"} {
		if got := c.get(typ, name); got != nil {
			t.Errorf("%s, deleted from the table, is still in the cloud: %v", name, got)
		}
	}
	if got := c.get(typ, "elsewhere"); got == nil {
		t.Error("the widget made elsewhere was deleted")
	}
}

// TestQuirkySchemasInstall: types whose schemas have the quirks of real
// ones install: paths naming no property (one warning each, naming the
// type and the path), an identifier below a top-level property (unique on
// the nested value), and \u0000 (stored in jsonb and read back exactly).
func TestQuirkySchemasInstall(t *testing.T) {
	t.Parallel()
	var log testkit.Log
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.CatalogLogging(slog.New(slog.NewTextHandler(&log, nil)))},
		Emulator: emulator.Options{CloudFormationSchemas: synthetic(t, "unknown-paths.json", "nested-id.json", "nul.json")},
	})
	for _, typ := range []string{"AWS::Test::Stale", "AWS::Test::RefreshSchedule", "AWS::Test::Control"} {
		e.Exec(`SELECT * FROM iasql_install('` + typ + `')`)
		if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name = $1 AND installed_at IS NOT NULL AND definition IS NOT NULL`, typ); n != 1 {
			t.Errorf("%s is not installed with its schema", typ)
		}
	}

	// Paths naming no property: one warning each.
	for _, path := range []string{"/properties/LicenseSpecification", "/properties/CreationInfo", "/properties/Gone/Deeper"} {
		if n := strings.Count(log.String(), "type=AWS::Test::Stale list="); n != 3 || strings.Count(log.String(), "path="+path+"\n") != 1 {
			t.Errorf("warnings for %s: want one naming the type and the path; log:\n%s", path, log.String())
		}
	}

	// A nested identifier: unique on the value within the object.
	e.Exec(`INSERT INTO aws_test_refresh_schedule (data_set_id, schedule) VALUES ('ds', '{"ScheduleId": "s1", "Frequency": "DAILY"}')`)
	if _, err := e.DB.Exec(t.Context(), `INSERT INTO aws_test_refresh_schedule (data_set_id, schedule) VALUES ('ds', '{"ScheduleId": "s1", "Frequency": "WEEKLY"}')`); err == nil || !strings.Contains(err.Error(), "aws_test_refresh_schedule_identity") {
		t.Errorf("a second row of the same identity: %v; want the identity's unique index to refuse it", err)
	}
	e.Exec(`DELETE FROM aws_test_refresh_schedule`)

	// \u0000: the stored definition reads back as the schema, and makes the
	// module the registry has (as every start does).
	var stored []byte
	var version string
	if err := e.DB.QueryRow(t.Context(), `SELECT definition::text, version FROM iasql_modules WHERE name = 'AWS::Test::Control'`).Scan(&stored, &version); err != nil {
		t.Fatal(err)
	}
	doc, err := schema.FromStored(stored)
	if err != nil {
		t.Fatal(err)
	}
	var got, want any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(synthetic(t, "nul.json")[0]), &want); err != nil {
		t.Fatal(err)
	}
	if !module.Same(got, want) {
		t.Errorf("the stored schema reads back as\n%s", doc)
	}
	m, err := aws_cloudcontrol.Catalog().Module("AWS::Test::Control", stored)
	if err != nil || m.Version != version {
		t.Errorf("module from the stored definition: version %q (registered %q), %v", m.Version, version, err)
	}
}
