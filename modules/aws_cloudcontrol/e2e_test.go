package aws_cloudcontrol_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is a database with the Cloud Control catalog offered and types
// installed; delay is how long the emulator keeps each request IN_PROGRESS.
func env(t *testing.T, delay time.Duration, types ...string) (*enginetest.Env, *cc) {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  types,
		Emulator: emulator.Options{CloudControlDelay: delay},
	})
	return e, &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
}

// cc is an out-of-band Cloud Control client: another tool acting on the
// account.
type cc struct {
	t      *testing.T
	client *cloudcontrol.Client
}

// get returns the resource's properties (nil when it does not exist).
func (c *cc) get(typeName, id string) map[string]any {
	c.t.Helper()
	out, err := c.client.GetResource(context.Background(), &cloudcontrol.GetResourceInput{TypeName: aws.String(typeName), Identifier: aws.String(id)})
	if module.IsCode(err, "ResourceNotFoundException") {
		return nil
	}
	if err != nil {
		c.t.Fatalf("get %s %s: %v", typeName, id, err)
	}
	var props map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(out.ResourceDescription.Properties)), &props); err != nil {
		c.t.Fatal(err)
	}
	return props
}

// wait waits for a request to end, failing the test unless it succeeded.
func (c *cc) wait(ev *cctypes.ProgressEvent) {
	c.t.Helper()
	ev = testkit.WaitCloudControl(c.t, 30*time.Second, c.client, ev)
	if ev.OperationStatus != cctypes.OperationStatusSuccess {
		c.t.Fatalf("request %s: %s %s %s", aws.ToString(ev.RequestToken), ev.OperationStatus, ev.ErrorCode, aws.ToString(ev.StatusMessage))
	}
}

func (c *cc) create(typeName, desired string) {
	c.t.Helper()
	out, err := c.client.CreateResource(context.Background(), &cloudcontrol.CreateResourceInput{TypeName: aws.String(typeName), DesiredState: aws.String(desired)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.wait(out.ProgressEvent)
}

func (c *cc) delete(typeName, id string) {
	c.t.Helper()
	out, err := c.client.DeleteResource(context.Background(), &cloudcontrol.DeleteResourceInput{TypeName: aws.String(typeName), Identifier: aws.String(id)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.wait(out.ProgressEvent)
}

func (c *cc) update(typeName, id, patch string) {
	c.t.Helper()
	out, err := c.client.UpdateResource(context.Background(), &cloudcontrol.UpdateResourceInput{TypeName: aws.String(typeName), Identifier: aws.String(id), PatchDocument: aws.String(patch)})
	if err != nil {
		c.t.Fatal(err)
	}
	c.wait(out.ProgressEvent)
}

// TestLogGroupEndToEnd: a log group type installed as a table is written
// with plain SQL and synced both ways.
func TestLogGroupEndToEnd(t *testing.T) {
	t.Parallel()
	const lg = "AWS::Logs::LogGroup"
	e, c := env(t, 200*time.Millisecond, lg)

	// The table, from the schema.
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name = $1 AND installed_at IS NOT NULL AND definition IS NOT NULL
		AND tables = '{aws_logs_log_group}'`, lg); n != 1 {
		t.Fatalf("%s is not registered as installed with its schema", lg)
	}
	if d := e.String(`SELECT obj_description('public.aws_logs_log_group'::regclass)`); d == "" {
		t.Error("the table has no comment")
	}

	// Database -> cloud: create, waiting for the request with NOTICEs.
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name, retention_in_days, tags) VALUES ('app', 7, '{"team": "web"}')`)
	e.Commit()
	got := c.get(lg, "app")
	if got == nil || got["RetentionInDays"] != float64(7) {
		t.Fatalf("app in the cloud: %v", got)
	}
	if arn := e.String(`SELECT arn FROM aws_logs_log_group WHERE log_group_name = 'app'`); arn == "" || arn != got["Arn"] {
		t.Errorf("row's arn %q, the cloud's %v", arn, got["Arn"])
	}

	// A refresh over what is in sync changes nothing in the cloud.
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over an unchanged log group made %v", m)
	}

	// Update in place.
	e.Exec(`UPDATE aws_logs_log_group SET retention_in_days = 14 WHERE log_group_name = 'app'`)
	e.Emu.Reset()
	e.Commit()
	if got = c.get(lg, "app"); got["RetentionInDays"] != float64(14) {
		t.Errorf("app after the update: %v", got)
	}
	if m := e.Mutations(); m["cloudcontrolapi:UpdateResource"] != 1 || len(m) != 1 {
		t.Errorf("the update made %v", m)
	}

	// Cloud -> database: made, changed and deleted by another tool.
	c.create(lg, `{"LogGroupName": "made-elsewhere", "RetentionInDays": 30}`)
	c.update(lg, "app", `[{"op": "replace", "path": "/RetentionInDays", "value": 60}]`)
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'made-elsewhere' AND retention_in_days = 30`); n != 1 {
		t.Error("the log group made elsewhere was not imported")
	}
	if n := e.Count(`SELECT retention_in_days FROM aws_logs_log_group WHERE log_group_name = 'app'`); n != 60 {
		t.Errorf("app's retention in the row: %d, want the cloud's 60", n)
	}
	c.delete(lg, "made-elsewhere")
	e.Refresh()
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'made-elsewhere'`); n != 0 {
		t.Error("the log group deleted elsewhere is still a row")
	}

	// A create-only change replaces the resource.
	e.Exec(`UPDATE aws_logs_log_group SET log_group_class = 'INFREQUENT_ACCESS' WHERE log_group_name = 'app'`)
	preview := e.String(`SELECT string_agg(action || ' ' || description, '; ') FROM iasql_preview()`)
	if !strings.HasPrefix(preview, "replace ") || !strings.Contains(preview, "log_group_class") {
		t.Errorf("preview of a create-only change: %q", preview)
	}
	e.Commit()
	if got = c.get(lg, "app"); got["LogGroupClass"] != "INFREQUENT_ACCESS" {
		t.Errorf("app after the replacement: %v", got)
	}

	// Delete from the database.
	e.Exec(`DELETE FROM aws_logs_log_group WHERE log_group_name = 'app'`)
	e.Commit()
	if got = c.get(lg, "app"); got != nil {
		t.Errorf("app is still in the cloud: %v", got)
	}

	// Uninstall keeps the schema: a reinstall makes the same table.
	e.Exec(`SELECT * FROM iasql_uninstall('AWS::Logs::LogGroup')`)
	if n := e.Count(`SELECT count(*) FROM pg_tables WHERE tablename = 'aws_logs_log_group'`); n != 0 {
		t.Error("uninstall left the table")
	}
	calls := e.Emu.Calls()["cloudformation:DescribeType"]
	e.Exec(`SELECT * FROM iasql_install('AWS::Logs::LogGroup')`)
	if n := e.Emu.Calls()["cloudformation:DescribeType"]; n != calls {
		t.Errorf("the reinstall described the type again (%d calls, was %d): it must use the stored schema", n, calls)
	}
}

// TestInstallRefusals: names that are no installable type are refused in
// one line, and nothing is left half done.
func TestInstallRefusals(t *testing.T) {
	t.Parallel()
	e, _ := env(t, 0)
	ctx := context.Background()
	for _, tc := range []struct{ name, want string }{
		{"AWS::Nope::Nothing", "no such resource type"},
		{"aws_nothing", "unknown module"},
	} {
		_, err := e.DB.Exec(ctx, `SELECT * FROM iasql_install($1)`, tc.name)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("install %s: %v; want an error saying %q", tc.name, err, tc.want)
		}
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name LIKE 'AWS::%'`); n != 0 {
		t.Errorf("%d refused types left in the registry", n)
	}
}

// columnsSchema is a type whose properties are named after PostgreSQL's
// system columns (xmin, ctid, tableoid), which no column may be named.
const columnsSchema = `{
  "typeName": "AWS::Test::Columns",
  "description": "A test type whose properties are named after system columns.",
  "properties": {
    "ColumnsId": {"description": "Identifier.", "type": "string"},
    "Xmin": {"description": "A property named xmin.", "type": "string"},
    "Ctid": {"description": "A property named ctid.", "type": "string"},
    "TableOid": {"description": "A property named tableoid.", "type": "string"}
  },
  "createOnlyProperties": ["/properties/ColumnsId"],
  "primaryIdentifier": ["/properties/ColumnsId"],
  "handlers": {
    "create": {"permissions": []}, "read": {"permissions": []}, "update": {"permissions": []},
    "delete": {"permissions": []}, "list": {"permissions": []}
  },
  "additionalProperties": false
}`

// TestFailedInstallStoresNothing: an install that fails stores nothing of
// the type (no registry row, no definition), so the next install describes
// the type again; a property named after a system column (Xmin) makes an
// aws_ column, and the type installs and syncs.
func TestFailedInstallStoresNothing(t *testing.T) {
	t.Parallel()
	const typ = "AWS::Test::Columns"
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Emulator: emulator.Options{CloudFormationSchemas: []string{columnsSchema}},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	ctx := context.Background()

	// A table of that name already exists: the install fails.
	e.Exec(`CREATE TABLE public.aws_test_columns (id int)`)
	if _, err := e.DB.Exec(ctx, `SELECT * FROM iasql_install($1)`, typ); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Fatalf("install over an existing table: %v; want it refused", err)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name = $1`, typ); n != 0 {
		t.Errorf("the failed install left %d registry rows (with the definition it would reuse)", n)
	}
	calls := e.Emu.Calls()["cloudformation:DescribeType"]

	// Once the table is gone, the install describes the type again and
	// succeeds, with aws_ columns for the system column names.
	e.Exec(`DROP TABLE public.aws_test_columns`)
	e.Exec(`SELECT * FROM iasql_install('` + typ + `')`)
	if n := e.Emu.Calls()["cloudformation:DescribeType"]; n != calls+1 {
		t.Errorf("the install after a failed one made %d DescribeType calls, want 1: it must not reuse anything of the failed one", n-calls)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name = $1 AND installed_at IS NOT NULL AND definition IS NOT NULL`, typ); n != 1 {
		t.Errorf("%s is not registered as installed with its schema", typ)
	}
	cols := e.String(`SELECT string_agg(attname, ',' ORDER BY attname) FROM pg_attribute
		WHERE attrelid = 'public.aws_test_columns'::regclass AND attnum > 0 AND NOT attisdropped`)
	if cols != "aws_ctid,aws_xmin,columns_id,id,region,table_oid" {
		t.Errorf("columns %s; want aws_ctid, aws_xmin, columns_id, id, region, table_oid", cols)
	}
	e.Exec(`INSERT INTO aws_test_columns (columns_id, aws_xmin, aws_ctid) VALUES ('one', 'x', 'c')`)
	e.Commit()
	if got := c.get(typ, "one"); got == nil || got["Xmin"] != "x" || got["Ctid"] != "c" {
		t.Errorf("the resource in the cloud: %v; want Xmin x, Ctid c", got)
	}
}
