package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/pgtest"
)

// TestWaitForAll: changes from several sessions, committed without an
// iasql transaction, are all in the cloud when iasql_wait_for_all returns;
// a failing change makes it raise with the record and the error.
func TestWaitForAll(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var wg sync.WaitGroup
	for s := 0; s < 3; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			conn := pgtest.Connect(t, e.DSN)
			for i := 0; i < 3; i++ {
				if _, err := conn.Exec(context.Background(), fmt.Sprintf(`INSERT INTO bucket (name) VALUES ('all-%d-%d')`, s, i)); err != nil {
					t.Errorf("insert: %v", err)
				}
			}
		}(s)
	}
	wg.Wait()
	start := time.Now()
	e.Exec(`SELECT iasql_wait_for_all(30)`)
	t.Logf("iasql_wait_for_all returned after %s", time.Since(start).Round(time.Millisecond))
	cloud := e.cloudBuckets()
	for s := 0; s < 3; s++ {
		for i := 0; i < 3; i++ {
			if !cloud[fmt.Sprintf("all-%d-%d", s, i)] {
				t.Errorf("all-%d-%d is not in the cloud when iasql_wait_for_all returned", s, i)
			}
		}
	}
	if n := e.Count(`SELECT count(*) FROM bucket WHERE name LIKE 'all-%' AND created_at IS NULL`); n != 0 {
		t.Errorf("%d rows lack their feedback", n)
	}

	// Nothing pending: returns at once.
	e.Exec(`SELECT iasql_wait_for_all(5)`)

	// A change that fails: the name belongs to another account.
	e.Exec(`INSERT INTO bucket (name) VALUES ('someone-elses')`)
	_, err := e.DB.Exec(context.Background(), `SELECT iasql_wait_for_all(20)`)
	if err == nil || !strings.Contains(err.Error(), "changes failed") || !strings.Contains(err.Error(), "someone-elses") {
		t.Errorf("iasql_wait_for_all with a failing change: %v", err)
	}

	// A timeout names what is still pending.
	e.Exec(`DELETE FROM bucket WHERE name = 'someone-elses'`, `CALL iasql_commit()`)
	e.Exec(`CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('all-held')`)
	_, err = e.DB.Exec(context.Background(), `SELECT iasql_wait_for_all(1)`)
	if err == nil || !strings.Contains(err.Error(), "not enacted within 1 seconds") || !strings.Contains(err.Error(), "bucket id") {
		t.Errorf("iasql_wait_for_all timeout: %v", err)
	}
}
