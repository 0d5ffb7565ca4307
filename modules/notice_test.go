package modules_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/module"
)

// silent are the tables no AWS change event names, and why.
var silent = map[string]string{
	"bucket_object": "object calls are CloudTrail data events, which trails log only when asked to",
	"aws_regions":   "its rows do not follow the account's regions after import (is_enabled is the database's)",
}

// TestEveryTableNotices: every hand-written table's mapper, as its module
// makes it, tells which of its resources an AWS event names
// (module.Noticer, found by module.PartsOf as the engine finds it), but
// the tables of silent.
func TestEveryTableNotices(t *testing.T) {
	for _, m := range modules.All() {
		readers, err := m.Mappers(context.Background(), aws.Config{Region: "us-east-1"})
		if err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		for _, tbl := range m.Tables {
			noticer := module.PartsOf(readers[tbl.Name]).Noticer
			if why, ok := silent[tbl.Name]; ok {
				if noticer != nil {
					t.Errorf("%s.%s notices events, but is said not to (%s)", m.Name, tbl.Name, why)
				}
				continue
			}
			if noticer == nil {
				t.Errorf("%s.%s: its mapper is no module.Noticer", m.Name, tbl.Name)
			}
		}
	}
}
