package bridge_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/pgtest"
)

// TestUserKeepsWriting: while a commit runs, a user keeps changing the
// record it works on. The commit is not reported as a loop ("not
// converging"): it enacts what it saw and leaves the rest pending. Once the
// user stops, the next commit brings the cloud to the row's last value.
func TestUserKeepsWriting(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) VALUES ('busy')`)
	e.Commit()
	writer := pgtest.Connect(t, e.DSN)
	// The writer stops between writes, never in one: a write cancelled
	// mid-flight may still commit on the server after the client gave up,
	// after the last commit below began (left for the next cycle).
	var stopped atomic.Bool
	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := 0
	wg.Go(func() {
		for !stopped.Load() {
			if _, err := writer.Exec(context.Background(), `UPDATE bucket SET versioning = NOT versioning WHERE name = 'busy'`); err != nil {
				t.Errorf("user write: %v", err)
				return
			}
			mu.Lock()
			writes++
			mu.Unlock()
		}
	})
	// Commit until the user has written at least 20 times meanwhile (on a
	// busy machine a commit may see few of the writes).
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return writes
	}
	deadline := time.Now().Add(30 * time.Second)
	for commits := 0; commits < 3 || (count() < 20 && time.Now().Before(deadline)); commits++ {
		if _, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`); err != nil {
			t.Errorf("commit while a user keeps writing: %v", err)
		}
	}
	stopped.Store(true)
	wg.Wait()
	if writes < 20 {
		t.Fatalf("only %d user writes happened during the commits: the test did not test anything", writes)
	}
	e.Commit()
	want := e.Count(`SELECT count(*) FROM bucket WHERE name = 'busy' AND versioning`) == 1
	if got := e.cloudVersioning("busy"); got != want {
		t.Errorf("after the user stopped, the cloud's versioning is %v, the row's %v", got, want)
	}
}
