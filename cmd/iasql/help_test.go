package main_test

import (
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/testkit"
	iasqlsql "github.com/iasql/iasql/sql"
)

// TestHelpNamesEnvironment: every environment variable the binary's source
// reads is named in run's --help.
func TestHelpNamesEnvironment(t *testing.T) {
	t.Parallel()
	read := regexp.MustCompile(`os\.(?:Getenv|LookupEnv)\("([A-Z0-9_]+)"\)|Env\s*=\s*"([A-Z0-9_]+)"`)
	vars := map[string]string{}
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if d.IsDir() && path != root {
			// Tests' and the benchmark's own settings are not the binary's
			// (internal/launch starts the binary for them).
			if strings.HasPrefix(d.Name(), ".") || rel == filepath.Join("internal", "bench") || rel == filepath.Join("internal", "pgtest") || rel == filepath.Join("internal", "enginetest") ||
				rel == filepath.Join("internal", "launch") || rel == filepath.Join("internal", "testkit") {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range read.FindAllStringSubmatch(string(b), -1) {
			vars[m[1]+m[2]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(vars) < 5 {
		t.Fatalf("found only %d environment variables in the source: %v", len(vars), vars)
	}
	r := testkit.Run(t, 10*time.Second, "run", "--help")
	help := r.Stdout + r.Stderr
	for _, v := range []string{"AWS_REGION", "AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "PGPASSWORD"} {
		vars[v] = "the SDKs"
	}
	names := make([]string, 0, len(vars))
	for v := range vars {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		if !regexp.MustCompile(`\b` + v + `\b`).MatchString(help) {
			t.Errorf("run --help does not name %s (read in %s)", v, vars[v])
		}
	}
}

// TestReadmeFlagsMatchHelp: every --flag the README names is a flag of
// some command's --help, spelled the same.
func TestReadmeFlagsMatchHelp(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{"help": true, "version": true}
	def := regexp.MustCompile(`(?m)^\s+-([a-z][a-z0-9-]*)`)
	for _, cmd := range []string{"run", "install", "uninstall", "status", "demo", "emulator"} {
		r := testkit.Run(t, 10*time.Second, cmd, "--help")
		for _, m := range def.FindAllStringSubmatch(r.Stdout+r.Stderr, -1) {
			known[m[1]] = true
		}
	}
	// S3's reserved bucket name suffixes, which the README lists as such.
	notFlags := map[string]bool{"ol-s3": true, "x-s3": true, "table-s3": true}
	used := regexp.MustCompile("(?:^|[\\s`(])--([a-z][a-z0-9-]*)")
	// Lines that run PostgreSQL's own tools (the backup recipe) name their flags.
	other := regexp.MustCompile(`\b(pg_dump|pg_dumpall|pg_restore|createdb|psql|pgbench|pg_recvlogical|pg_ctl|initdb)\b`)
	var ours []string
	for _, line := range strings.Split(string(readme), "\n") {
		if !other.MatchString(line) {
			ours = append(ours, line)
		}
	}
	seen := 0
	for _, m := range used.FindAllStringSubmatch(strings.Join(ours, "\n"), -1) {
		if notFlags[m[1]] {
			continue
		}
		seen++
		if !known[m[1]] {
			t.Errorf("README names --%s, which no command's --help has", m[1])
		}
	}
	if seen < 10 {
		t.Fatalf("found only %d flags in the README", seen)
	}
	for _, want := range []string{"metrics-listen", "json"} {
		if !regexp.MustCompile(`--` + want + `\b`).Match(readme) {
			t.Errorf("README does not document --%s", want)
		}
	}
}

// TestVersionNamesSQLObjects: --version gives the release and the version
// of the SQL objects the binary installs.
func TestVersionNamesSQLObjects(t *testing.T) {
	t.Parallel()
	r := testkit.Run(t, 10*time.Second, "--version")
	want := "(SQL objects " + iasqlsql.Version + ")"
	if r.Code != 0 || !strings.HasPrefix(r.Stdout, "iasql ") || !strings.Contains(r.Stdout, want) || strings.Count(r.Stdout, "\n") != 1 {
		t.Errorf("--version: exit %d, %q; want one line naming %s", r.Code, r.Stdout, want)
	}
}
