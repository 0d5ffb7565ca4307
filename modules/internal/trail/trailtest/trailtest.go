// Package trailtest runs a table's Noticer over CloudTrail records, for
// the modules' tests.
package trailtest

import (
	"slices"
	"testing"

	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

// Case is a CloudTrail record (its JSON, as AWS logs it) and the cloud
// ids a table's Noticer must name of it, in order (none: the record is
// not about the table). (An unnamed struct type, so that a test's table
// of cases may leave out the field names.)
type Case = struct {
	Name, Record string
	Want         []string
}

// Run checks n against each case, a subtest each.
func Run(t *testing.T, n module.Noticer, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			ev, err := trail.Parse([]byte(c.Record))
			if err != nil {
				t.Fatal(err)
			}
			if got := n.Noticed(ev); !slices.Equal(got, c.Want) {
				t.Errorf("Noticed = %q, want %q", got, c.Want)
			}
		})
	}
}
