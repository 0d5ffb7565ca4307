package aws_account_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/aws_account"
)

// TestInstallAsReleased: what installing the module runs is, byte for
// byte, what its version ran as released (testdata/install-<version>.sql,
// after its header comment): the table declared by the Region struct has the DDL it
// had when declared column by column.
func TestInstallAsReleased(t *testing.T) {
	m := aws_account.Module()
	b, err := os.ReadFile(filepath.Join("testdata", "install-"+m.Version+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	released := string(b)
	for strings.HasPrefix(released, "--") {
		_, released, _ = strings.Cut(released, "\n")
	}
	if got := m.InstallSQL(); got != released {
		t.Errorf("aws_account %s installs\n%s\nreleased:\n%s", m.Version, got, released)
	}
}
