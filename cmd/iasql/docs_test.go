package main_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocsNameWhatExists: every path NOTES.md and README.md name
// (bridge/reconcile/scope.go, cmd/iasql/sidecar) is in the repository, and
// every Go file they name by itself (act.go) is somewhere in it, so that
// code moved or removed does not leave the docs pointing at nothing.
func TestDocsNameWhatExists(t *testing.T) {
	t.Parallel()
	root := filepath.Join("..", "..")
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	// Paths start at a folder of the repository's top level; bin/ is
	// what make build writes, not part of it.
	top := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && e.Name() != "bin" {
			top[e.Name()] = true
		}
	}
	goFiles := map[string]bool{}
	if err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && p != root || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(d.Name(), ".go") {
			goFiles[d.Name()] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Lower-case names joined by "/" (a folder may end in "/"); placeholders
	// are written otherwise (sql/upgrades/FROM--TO.sql, <module>/testdata)
	// and not checked past them.
	pathRe := regexp.MustCompile("(?:^|[\\s`(,;])([a-z][a-z0-9_]*/[a-z0-9_./-]*)")
	goRe := regexp.MustCompile("(?:^|[\\s`(,;])([a-z][a-z0-9_]*\\.go)\\b")
	for _, doc := range []string{"NOTES.md", "README.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		paths := 0
		for _, m := range pathRe.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimRight(m[1], ".")
			if !top[strings.Split(p, "/")[0]] {
				continue // net/http, json/jsonb, read/write
			}
			paths++
			if _, err := os.Stat(filepath.Join(root, p)); err == nil {
				continue
			}
			// The modules' own folders are named from modules/ (internal/ec2x).
			if _, err := os.Stat(filepath.Join(root, "modules", p)); err == nil {
				continue
			}
			t.Errorf("%s names %s, which is not in the repository", doc, p)
		}
		if paths < 10 {
			t.Fatalf("found only %d paths in %s", paths, doc)
		}
		for _, m := range goRe.FindAllStringSubmatch(string(b), -1) {
			if !goFiles[m[1]] {
				t.Errorf("%s names %s, which no folder of the repository has", doc, m[1])
			}
		}
	}
}
