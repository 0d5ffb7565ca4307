//go:build cfncorpus

package aws_cloudcontrol_test

// The corpus install check, outside make test (a fresh clone has no
// ../shared); .ci/run runs it after make test when the folder is there:
//
//	IASQL_CFN_SCHEMAS=$PWD/../shared/cfn-schemas go test -tags cfncorpus -run TestCorpusInstall -v ./modules/aws_cloudcontrol/
//
// It runs the whole product (PostgreSQL, a sidecar, the emulator serving
// the folder) and installs then uninstalls every type of the folder with
// SQL, as a user would.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// corpusBatch is how many types one iasql_install installs (and one
// iasql_uninstall uninstalls): one cycle imports a whole batch. A batch
// that fails is installed again type by type, to tell which was refused.
const corpusBatch = 25

// TestCorpusInstall: every type of IASQL_CFN_SCHEMAS installs with
// iasql_install and uninstalls with iasql_uninstall; a type may be refused
// only as not provisionable through Cloud Control (ProvisioningType
// NON_PROVISIONABLE, or a schema with no create, read or delete handler).
// It ends with a summary: installed, not provisionable, refused (why).
func TestCorpusInstall(t *testing.T) {
	dir := os.Getenv("IASQL_CFN_SCHEMAS")
	if dir == "" {
		t.Fatal("set IASQL_CFN_SCHEMAS to a folder of resource schemas (../shared/cfn-schemas beside CI's checkout)")
	}
	types := corpusTypes(t, dir)
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Emulator: emulator.Options{SchemaDir: dir},
	})
	ctx := context.Background()
	install := func(names ...string) error {
		_, err := e.DB.Exec(ctx, `SELECT * FROM iasql_install(VARIADIC $1::text[])`, names)
		return err
	}
	var installed, nonProv []string
	refused := map[string]string{}
	for start := 0; start < len(types); start += corpusBatch {
		batch := types[start:min(start+corpusBatch, len(types))]
		in := batch
		if err := install(batch...); err != nil {
			in = nil
			for _, ty := range batch {
				err := install(ty)
				switch {
				case err == nil:
					in = append(in, ty)
				case strings.Contains(err.Error(), schema.ErrNotProvisionable.Error()):
					nonProv = append(nonProv, ty)
				default:
					refused[ty] = "install: " + oneLine(err)
				}
			}
		}
		for _, ty := range in {
			table := e.String(`SELECT tables[1] FROM iasql_modules WHERE name = $1 AND installed_at IS NOT NULL`, ty)
			if table == "" || e.Count(`SELECT count(*) FROM pg_catalog.pg_tables WHERE schemaname = 'public' AND tablename = $1`, table) != 1 {
				refused[ty] = fmt.Sprintf("install: said installed, but its table %q is not there", table)
			}
		}
		if len(in) > 0 {
			if _, err := e.DB.Exec(ctx, `SELECT * FROM iasql_uninstall(VARIADIC $1::text[])`, in); err != nil {
				for _, ty := range in {
					if _, err := e.DB.Exec(ctx, `SELECT * FROM iasql_uninstall($1)`, ty); err != nil {
						refused[ty] = "uninstall: " + oneLine(err)
					}
				}
			}
		}
		for _, ty := range in {
			if _, bad := refused[ty]; !bad {
				installed = append(installed, ty)
			}
		}
		t.Logf("%d/%d types tried", min(start+corpusBatch, len(types)), len(types))
	}
	if n := e.Count(`SELECT count(*) FROM iasql_modules WHERE name LIKE '%::%' AND installed_at IS NOT NULL`); n != 0 {
		t.Errorf("%d types still installed after every uninstall", n)
	}
	t.Logf("%s: %d types: %d installed and uninstalled, %d not provisionable, %d refused", dir, len(types), len(installed), len(nonProv), len(refused))
	t.Logf("not provisionable: %s", strings.Join(nonProv, ", "))
	for _, ty := range slices.Sorted(maps.Keys(refused)) {
		t.Errorf("refused %s: %s", ty, refused[ty])
	}
}

// corpusTypes are the type names of the folder's schemas, sorted.
func corpusTypes(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas in %s: %v", dir, err)
	}
	var out []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			TypeName string `json:"typeName"`
		}
		if err := json.Unmarshal(b, &doc); err != nil || doc.TypeName == "" {
			t.Fatalf("%s: no typeName: %v", f, err)
		}
		out = append(out, doc.TypeName)
	}
	slices.Sort(out)
	return out
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }
