package modules_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/module"
)

// TestRegistryCurrent: registry_gen.go lists every module folder (and
// every catalog).
func TestRegistryCurrent(t *testing.T) {
	dir := t.TempDir()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := os.Mkdir(filepath.Join(dir, e.Name()), 0o755); err != nil {
				t.Fatal(err)
			}
			files, _ := filepath.Glob(filepath.Join(e.Name(), "*.go"))
			for _, f := range files {
				src, err := os.ReadFile(f) // the generator looks for func Module and func Catalog
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), src, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if out, err := exec.Command("go", "run", "./internal/genregistry", dir).CombinedOutput(); err != nil {
		t.Fatalf("genregistry: %v: %s", err, out)
	}
	want, _ := os.ReadFile(filepath.Join(dir, "registry_gen.go"))
	got, _ := os.ReadFile("registry_gen.go")
	if string(want) != string(got) {
		t.Errorf("registry_gen.go is stale: run go generate ./modules (make build does)\nwant:\n%s", want)
	}
}

// TestModulesWellFormed: every module declares what the engine needs.
func TestModulesWellFormed(t *testing.T) {
	byName := map[string]module.Module{}
	for _, m := range modules.All() {
		if m.Name == "" || m.Version == "" || m.SQL == "" || m.Mappers == nil || len(m.Tables) == 0 {
			t.Errorf("module %q lacks a name, version, SQL, tables or mappers", m.Name)
		}
		for _, tb := range m.Tables {
			if len(tb.Columns) == 0 {
				t.Errorf("%s.%s declares no columns (module.Column)", m.Name, tb.Name)
			} else if !reflect.DeepEqual(tb.Declare(), tb) {
				t.Errorf("%s.%s is not declared: its Module() must return Table.Declare()'s", m.Name, tb.Name)
			}
		}
		if _, dup := byName[m.Name]; dup {
			t.Errorf("module %s is listed twice", m.Name)
		}
		byName[m.Name] = m
	}
	// owner: table -> module, across modules (names are global in a database).
	owner := map[string]string{}
	for _, m := range modules.All() {
		for _, tb := range m.Tables {
			if o, ok := owner[tb.Name]; ok {
				t.Errorf("table %s is in both %s and %s", tb.Name, o, m.Name)
			}
			owner[tb.Name] = m.Name
		}
	}
	for _, m := range modules.All() {
		// What the module may reference: its earlier tables and every table
		// of the modules it depends on, directly or not.
		deps := map[string]bool{}
		var visit func(string)
		visit = func(n string) {
			for _, d := range byName[n].DependsOn {
				if _, ok := byName[d]; !ok {
					t.Errorf("module %s depends on %s, which this build does not offer", n, d)
					continue
				}
				if !deps[d] {
					deps[d] = true
					visit(d)
				}
			}
		}
		visit(m.Name)
		tables := map[string]bool{}
		for _, tb := range m.Tables {
			if len(tb.CloudID) == 0 {
				t.Errorf("%s.%s has no cloud identity columns", m.Name, tb.Name)
			}
			generated := len(tb.CloudID) == 1 && slices.Contains(tb.Feedback, tb.CloudID[0])
			for _, c := range tb.CloudID {
				if !generated && !slices.Contains(tb.Declarative, c) {
					t.Errorf("%s.%s: identity column %s must be declarative (or the one feedback column the cloud generates)", m.Name, tb.Name, c)
				}
			}
			for col, ref := range tb.Refs {
				if !tables[ref] && !deps[owner[ref]] {
					t.Errorf("%s.%s.%s references %s, which is neither an earlier table of the module nor one of a module it depends on", m.Name, tb.Name, col, ref)
				}
			}
			tables[tb.Name] = true
		}
	}
}
