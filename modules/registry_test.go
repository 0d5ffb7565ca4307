package modules_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iasql/iasql/modules"
)

// TestRegistryCurrent: registry_gen.go lists every module folder.
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
				if err := os.WriteFile(filepath.Join(dir, f), nil, 0o644); err != nil {
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
	seen := map[string]bool{}
	for _, m := range modules.All() {
		if m.Name == "" || m.Version == "" || m.SQL == "" || m.Mappers == nil || len(m.Tables) == 0 {
			t.Errorf("module %q lacks a name, version, SQL, tables or mappers", m.Name)
		}
		if seen[m.Name] {
			t.Errorf("module %s is listed twice", m.Name)
		}
		seen[m.Name] = true
		tables := map[string]bool{}
		for _, tb := range m.Tables {
			if len(tb.CloudID) == 0 {
				t.Errorf("%s.%s has no cloud identity columns", m.Name, tb.Name)
			}
			for col, ref := range tb.Refs {
				if !tables[ref] {
					t.Errorf("%s.%s.%s references %s, which is not an earlier table of the module", m.Name, tb.Name, col, ref)
				}
			}
			tables[tb.Name] = true
		}
	}
	for _, m := range modules.All() {
		for _, d := range m.DependsOn {
			if !seen[d] {
				t.Errorf("module %s depends on %s, which this build does not offer", m.Name, d)
			}
		}
	}
}
