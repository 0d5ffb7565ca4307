package aws_cloudcontrol_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
)

// TestSchemasMakeTables: every schema of a folder makes a table, as an
// install does: parsed, stored as jsonb and read back, made a module from
// there, its DDL and SQL run (in a transaction rolled back). A type is
// refused only when Cloud Control cannot provision it (no create, read or
// delete handler). The folder is testdata, the synthetic schemas showing
// real schemas' quirks, unless IASQL_CFN_SCHEMAS names another (a corpus
// of public schemas, such as ../shared/cfn-schemas beside CI's checkout).
func TestSchemasMakeTables(t *testing.T) {
	dir := os.Getenv("IASQL_CFN_SCHEMAS")
	if dir == "" {
		dir = "testdata"
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
	}
	ctx := context.Background()
	conn := pgtest.Connect(t, srv.NewDB(t))
	cat := aws_cloudcontrol.Catalog()
	var made, notProvisionable, listless, ignoring, nested int
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ty, err := schema.Parse(raw)
		if errors.Is(err, schema.ErrNotProvisionable) {
			notProvisionable++
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		stored, err := schema.ToStored(ty.Raw)
		if err != nil {
			t.Errorf("%s: %v", ty.TypeName, err)
			continue
		}
		var text string
		if err := conn.QueryRow(ctx, `SELECT $1::text::jsonb::text`, string(stored)).Scan(&text); err != nil {
			t.Errorf("%s: stored as jsonb: %v", ty.TypeName, err)
			continue
		}
		m, err := cat.Module(ty.TypeName, []byte(text))
		if err != nil {
			t.Errorf("%s: made from its stored definition: %v", ty.TypeName, err)
			continue
		}
		if err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, m.Declared().InstallSQL()); err != nil {
				return err
			}
			return errors.New("rollback")
		}); err != nil && err.Error() != "rollback" {
			t.Errorf("%s: its table: %v", ty.TypeName, strings.ReplaceAll(err.Error(), "\n", " "))
			continue
		}
		made++
		if !ty.Listable {
			listless++
		}
		if len(ty.Ignored) > 0 {
			ignoring++
		}
		if ty.NestedIdentifier() {
			nested++
		}
	}
	t.Logf("%s: %d schemas: %d make tables (%d without a list handler, %d naming missing properties, %d with a nested identifier), %d not provisionable",
		dir, len(files), made, listless, ignoring, nested, notProvisionable)
}
