package bridge_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/module"
)

// tickMapper is a memMapper that gets things by name (module.Getter), so
// that a commit reads the records it acts on fresh at every pass.
type tickMapper struct{ *memMapper }

func (m tickMapper) Get(ctx context.Context, call module.Call, names []string) ([]module.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var out []module.Record
	for _, n := range names {
		if r, ok := m.things[n]; ok {
			out = append(out, m.tick(r))
		}
	}
	return out, nil
}

// tickModule is memModule with a feedback column, seen, that the cloud
// reports differently at every read for the thing named m.ticking: a
// record that never converges, whatever the engine writes back.
func tickModule(m *memMapper) module.Module {
	mod := memModule(m)
	mod.SQL = `CREATE TABLE public.thing (id serial PRIMARY KEY, name text NOT NULL UNIQUE, size int, seen int);
	           COMMENT ON TABLE public.thing IS 'test resource';`
	mod.Tables = []module.Table{{Name: "thing", CloudID: []string{"name"}, Declarative: []string{"name", "size"}, Feedback: []string{"seen"}}}
	mod.Mappers = func(context.Context, aws.Config) (map[string]module.Reader, error) {
		return map[string]module.Reader{"thing": tickMapper{m}}, nil
	}
	return mod
}

// TestNotConvergingIsPerRecord: a record that cannot converge fails the
// commit that is about it, naming it, and is then reported failed in
// iasql_status with its reason and backs off; commits about other records
// succeed meanwhile. A user change to it is new intent: the next commit
// tries it again (and fails, naming it).
func TestNotConvergingIsPerRecord(t *testing.T) {
	t.Parallel()
	m := &memMapper{things: map[string]module.Record{}, ticking: "ticking"}
	e := &env{Env: enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{tickModule(m)}, Install: []string{"mem_test"}})}
	commit := func() error {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return err
	}
	wantStuck := func(when string, err error) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), "thing 1 (ticking)") || !strings.Contains(err.Error(), "not converging: ") {
			t.Fatalf("%s: commit: %v, want a failure naming thing 1 (ticking), not converging", when, err)
		}
	}

	e.Exec(`INSERT INTO thing (name, size) VALUES ('ticking', 1)`)
	wantStuck("the record that cannot converge", commit())
	status := func() string {
		return e.String(`SELECT string_agg(format('%s %s %s: %s', table_name, record_id, state, last_error), '; ') FROM iasql_status`)
	}
	if got := status(); !strings.HasPrefix(got, "thing 1 failed: not converging: refresh seen from the cloud") {
		t.Fatalf("iasql_status: %q, want thing 1 failed, not converging, naming what differs", got)
	}
	retry := e.String(`SELECT next_retry::text FROM iasql_status WHERE record_id = '1'`)
	if retry == "" {
		t.Fatal("the record that is not converging has no next retry")
	}

	// Commits about other records succeed; the stuck one is left alone.
	for _, name := range []string{"calm", "calmer"} {
		e.Exec(`INSERT INTO thing (name, size) VALUES ('` + name + `', 2)`)
		reads := func() int { m.mu.Lock(); defer m.mu.Unlock(); return m.reads }()
		if err := commit(); err != nil {
			t.Fatalf("commit of %s beside a record that is not converging: %v", name, err)
		}
		m.mu.Lock()
		_, made := m.things[name]
		passes := m.reads - reads
		m.mu.Unlock()
		if !made {
			t.Errorf("%s is not in the cloud after its commit", name)
		}
		if passes > 3 {
			t.Errorf("the commit of %s read the cloud %d times: the stuck record was not left alone", name, passes)
		}
	}
	if got := status(); !strings.HasPrefix(got, "thing 1 failed: not converging: ") {
		t.Errorf("iasql_status after other commits: %q, want thing 1 still failed, not converging", got)
	}
	if got := e.String(`SELECT next_retry::text FROM iasql_status WHERE record_id = '1'`); got != retry {
		t.Errorf("the stuck record's next retry moved from %s to %s: it was tried again by commits not about it", retry, got)
	}

	// A user change to it is new intent: tried again, and it fails again,
	// backing off longer.
	e.Exec(`UPDATE thing SET size = 3 WHERE name = 'ticking'`)
	wantStuck("a user change to the record that cannot converge", commit())
	if got := e.Count(`SELECT count(*) FROM iasql_status WHERE record_id = '1' AND state = 'failed' AND attempts >= 2 AND next_retry > now() + interval '15 seconds'`); got != 1 {
		t.Errorf("after a second failure: %q, want it failed with a longer back-off", status())
	}
	m.mu.Lock()
	size := m.things["ticking"]["size"]
	m.mu.Unlock()
	if fmt.Sprint(size) != "3" {
		t.Errorf("the user's change to the stuck record did not reach the cloud: size %v", size)
	}
}
