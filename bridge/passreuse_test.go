package bridge_test

import (
	"testing"
	"time"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// TestLaterPassesReadWhatChanged: a cycle's second pass (the read that
// verifies and enacts what the first did) reads again only the tables the
// first changed in the cloud; a commit does not read a table it has
// nothing to act on.
func TestLaterPassesReadWhatChanged(t *testing.T) {
	t.Parallel()
	mem := &memMapper{things: map[string]module.Record{}}
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{aws_s3.Module(), memModule(mem)},
		Install: []string{"aws_s3", "mem_test"}})
	reads := func() int {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		return mem.reads
	}
	e.Exec(`CALL iasql_begin()`) // no automatic cycle in between
	before := reads()
	e.Exec(`INSERT INTO bucket (name) VALUES ('two-passes')`)
	e.Commit()
	if n := reads() - before; n != 0 {
		t.Errorf("a commit that changed buckets only read the other module's table %d times, want 0 (it has nothing to act on there)", n)
	}
	e.Exec(`CALL iasql_begin()`)
	before = reads()
	e.Exec(`INSERT INTO thing (name, size) VALUES ('verified', 1)`)
	e.Commit()
	if n := reads() - before; n != 2 {
		t.Errorf("a commit that created a thing read its table %d times, want 2 (the second pass verifies it)", n)
	}
	testkit.Until(t, 5*time.Second, "the thing enacted", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'thing'`) == 0
	})
}
