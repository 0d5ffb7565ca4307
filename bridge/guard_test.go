package bridge_test

import (
	"context"
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/module"
)

// memMapper is a cloud of its own, in memory, for engine behaviours no
// real module should show: an Equal that never agrees (the differ footgun
// the guard exists for), a Read that hangs, and a resource whose feedback
// column (seen, with tickModule) reads differently every time.
type memMapper struct {
	mu        sync.Mutex
	things    map[string]module.Record
	neverSame bool
	slowRead  time.Duration
	reads     int    // Read (and Get) calls so far
	ticking   string // the name of the thing whose seen is the read count
}

func (m *memMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	if m.slowRead > 0 {
		select {
		case <-time.After(m.slowRead):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	var out []module.Record
	for _, r := range m.things {
		out = append(out, m.tick(r))
	}
	return out, nil
}

// tick is r as the cloud reports it: the ticking thing's seen is the
// number of reads so far (m.mu held).
func (m *memMapper) tick(r module.Record) module.Record {
	if r.String("name") != m.ticking || m.ticking == "" {
		return r
	}
	r = maps.Clone(r)
	r["seen"] = json.Number(strconv.Itoa(m.reads))
	return r
}

func (m *memMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := module.Record{"name": want["name"], "size": want["size"]}
	m.things[want.String("name")] = r
	return r, nil
}

func (m *memMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return m.Create(ctx, call, want)
}

func (m *memMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.things, have.String("name"))
	return nil
}

func (m *memMapper) Equal(db, cloud module.Record) bool {
	return !m.neverSame && len(module.Table{}.Differing([]string{"name", "size"}, db, cloud)) == 0
}

func memModule(m *memMapper) module.Module {
	return module.Module{
		Name: "mem_test", Version: "0.0.1",
		SQL: `CREATE TABLE public.thing (id serial PRIMARY KEY, name text NOT NULL UNIQUE, size int);
		      COMMENT ON TABLE public.thing IS 'test resource';`,
		Tables: []module.Table{{Name: "thing", CloudID: []string{"name"}, Declarative: []string{"name", "size"}}},
		Mappers: func(context.Context, aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"thing": m}, nil
		},
	}
}

func startMem(t *testing.T, m *memMapper, timeout time.Duration) *env {
	t.Helper()
	te := enginetest.New(t, srv, enginetest.Options{CycleTimeout: timeout,
		Modules: []module.Module{memModule(m)}, Install: []string{"mem_test"}})
	return &env{Env: te}
}

// TestProgressGuard: a mapper whose equality never holds (the cloud says
// yes to every update and never shows it) would loop for ever; the cycle
// pushes once, then ends with an error that names the record and says the
// cloud did not take the change.
func TestProgressGuard(t *testing.T) {
	t.Parallel()
	e := startMem(t, &memMapper{things: map[string]module.Record{}, neverSame: true}, time.Minute)
	e.Exec(`INSERT INTO thing (name, size) VALUES ('loopy', 1)`)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
	if err == nil || !strings.Contains(err.Error(), "the cloud did not take the change") || !strings.Contains(err.Error(), "thing 1 (loopy)") {
		t.Fatalf("commit with a looping mapper: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'outcome' = 'failed' AND message LIKE '%did not take the change%'`); n != 1 {
		t.Error("the cycle's end record does not say the cloud did not take the change")
	}
}

// TestCycleTimeout: a cycle past its timeout is cancelled and recorded, and
// the next cycle runs normally.
func TestCycleTimeout(t *testing.T) {
	t.Parallel()
	m := &memMapper{things: map[string]module.Record{}}
	e := startMem(t, m, time.Second)
	m.mu.Lock()
	m.slowRead = 5 * time.Second
	m.mu.Unlock()
	_, err := e.DB.Exec(context.Background(), `CALL iasql_refresh()`) // reads the table (a commit would not: nothing to act on)
	if err == nil || !strings.Contains(err.Error(), "cycle timeout") {
		t.Fatalf("refresh of a cycle that hangs: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'outcome' = 'timeout'`); n != 1 {
		t.Error("no end record with outcome timeout")
	}
	m.mu.Lock()
	m.slowRead = 0
	m.mu.Unlock()
	e.Exec(`INSERT INTO thing (name, size) VALUES ('after', 2)`)
	e.Exec(`CALL iasql_commit()`)
	m.mu.Lock()
	_, ok := m.things["after"]
	m.mu.Unlock()
	if !ok {
		t.Error("the cycle after a timeout did not run")
	}
}

// TestModuleDependencies: installing a module installs what it depends on
// first and says so; uninstalling a module another installed one depends
// on is refused with a message naming it.
func TestModuleDependencies(t *testing.T) {
	t.Parallel()
	dep := memModule(&memMapper{things: map[string]module.Record{}})
	dep.DependsOn = []string{"aws_s3"}
	e := newEnvOn(t, srv.NewDB(t), time.Hour, dep)
	e.Exec(`SELECT * FROM iasql_uninstall('aws_s3')`)
	rows, err := e.DB.Query(context.Background(), `SELECT module || ': ' || note FROM iasql_install('mem_test') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var notes []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		notes = append(notes, n)
	}
	want := "aws_s3: installed first: a module you asked for depends on it, mem_test: installed"
	if strings.Join(notes, ", ") != want {
		t.Errorf("install said %q, want %q", strings.Join(notes, ", "), want)
	}
	_, err = e.DB.Exec(context.Background(), `SELECT * FROM iasql_uninstall('aws_s3')`)
	if err == nil || !strings.Contains(err.Error(), "cannot uninstall aws_s3: the installed module mem_test depends on it") {
		t.Errorf("uninstall of a dependency: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM pg_tables WHERE tablename = 'bucket'`); n != 1 {
		t.Error("a refused uninstall dropped tables")
	}
	e.Exec(`SELECT * FROM iasql_uninstall('aws_s3', 'mem_test')`)
	if n := e.Count(`SELECT count(*) FROM iasql_modules_list() WHERE installed`); n != 0 {
		t.Error("uninstalling both together left one installed")
	}
}
