package modules_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules"
)

// TestInstallAsReleased: what installing a module runs is, byte for byte,
// what its version ran as released, where the module keeps that release's
// snapshot (<module>/testdata/install-<version>.sql, after its two-line
// header comment). A table declared by a Go type (module.Declare) thus has the DDL
// it had when it was declared column by column, and a declaration that
// changes the DDL needs a new version with its upgrade step.
func TestInstallAsReleased(t *testing.T) {
	checked := 0
	for _, m := range modules.All() {
		b, err := os.ReadFile(filepath.Join(m.Name, "testdata", "install-"+m.Version+".sql"))
		if errors.Is(err, fs.ErrNotExist) {
			continue // not released at this version yet
		}
		if err != nil {
			t.Fatal(err)
		}
		released := string(b)
		for range 2 { // the header: what the file is, and which tests use it
			_, released, _ = strings.Cut(released, "\n")
		}
		if got := m.InstallSQL(); got != released {
			t.Errorf("%s %s installs\n%s\nreleased:\n%s", m.Name, m.Version, got, released)
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("no module has a snapshot of its current version: nothing was checked")
	}
}
