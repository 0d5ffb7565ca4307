package aws_s3_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/aws_s3"
)

// TestInstallAsReleased: what installing the module runs is, byte for
// byte, what its version ran as released (testdata/install-<version>.sql,
// after its two-line header: the install itself starts with comments):
// the tables declared by the Bucket and Object structs have the DDL they
// had when declared column by column.
func TestInstallAsReleased(t *testing.T) {
	m := aws_s3.Module()
	b, err := os.ReadFile(filepath.Join("testdata", "install-"+m.Version+".sql"))
	if err != nil {
		t.Fatal(err)
	}
	released := string(b)
	for range 2 {
		_, released, _ = strings.Cut(released, "\n")
	}
	if got := m.InstallSQL(); got != released {
		t.Errorf("aws_s3 %s installs\n%s\nreleased:\n%s", m.Version, got, released)
	}
}
