package aws_security_group_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/aws_security_group"
)

// TestInstallAsReleased: what installing the module runs is, byte for
// byte, what its version ran as released (testdata/install-<version>.sql,
// after its header comment): the tables declared by the Group and Rule structs
// have the DDL they had when declared column by column.
func TestInstallAsReleased(t *testing.T) {
	m := aws_security_group.Module()
	b, err := os.ReadFile(filepath.Join("testdata", "install-"+m.Version+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	released := string(b)
	for strings.HasPrefix(released, "--") {
		_, released, _ = strings.Cut(released, "\n")
	}
	if got := m.InstallSQL(); got != released {
		t.Errorf("aws_security_group %s installs\n%s\nreleased:\n%s", m.Version, got, released)
	}
}
