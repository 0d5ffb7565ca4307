package bridge_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/module"
)

// TestCommitReadsWhatItActsOn: a commit reads fresh the resources it acts
// on and reuses recent reads of the rest. Beside ten unchanged buckets, a
// commit that creates one bucket reads the details (versioning, objects)
// of that bucket only; iasql_refresh reads them all.
func TestCommitReadsWhatItActsOn(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO bucket (name) SELECT 'scoped-' || g FROM generate_series(1, 10) g`)
	e.Commit()
	e.Exec(`CALL iasql_begin()`) // no automatic cycle in between
	e.Emu.Reset()
	e.Exec(`INSERT INTO bucket (name) VALUES ('scoped-new')`)
	e.Commit()
	calls := e.Emu.Calls()
	if n := calls["s3:GetBucketVersioning"]; n == 0 || n > 3 {
		t.Errorf("the commit read versioning %d times; want the new bucket's only (1 to 3 reads)", n)
	}
	if n := calls["s3:ListObjectsV2"]; n > 3 {
		t.Errorf("the commit listed objects %d times; want the new bucket's only (at most 3)", n)
	}
	if !e.cloudBuckets()["scoped-new"] {
		t.Fatal("the new bucket was not created")
	}
	e.Emu.Reset()
	e.Refresh()
	if n := e.Emu.Calls()["s3:GetBucketVersioning"]; n < 11 {
		t.Errorf("iasql_refresh read versioning %d times; want every bucket's (11)", n)
	}
}

// getterMapper is a memMapper that can also read things one by one.
type getterMapper struct {
	*memMapper
	got int // things asked for by Get so far
	// waitedReads: whole-table reads by a cycle someone waits for (they
	// read fresh what they act on; automatic cycles, which may run between
	// the test's steps, do not).
	waitedReads int
}

func (m *getterMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	if call.Fresh.For("thing-new", "thing-001", "thing-002", "thing-003") {
		m.mu.Lock()
		m.waitedReads++
		m.mu.Unlock()
	}
	return m.memMapper.Read(ctx, call)
}

func (m *getterMapper) Get(ctx context.Context, call module.Call, names []string) ([]module.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.got += len(names)
	var out []module.Record
	for _, n := range names {
		if r, ok := m.things[n]; ok {
			out = append(out, r)
		}
	}
	return out, nil
}

// TestCommitActsByRecord: beside 200 things in sync, a commit that creates,
// updates and deletes one thing each asks the cloud for those things only
// and never lists the table; what else changed in the cloud waits for the
// next automatic cycle (or iasql_refresh). A rollback restores a deleted
// row under its id the same way.
func TestCommitActsByRecord(t *testing.T) {
	t.Parallel()
	mem := &memMapper{things: map[string]module.Record{}}
	for i := range 200 {
		name := fmt.Sprintf("thing-%03d", i)
		mem.things[name] = module.Record{"name": name, "size": json.Number("1")}
	}
	gm := &getterMapper{memMapper: mem}
	mod := memModule(mem)
	mod.Mappers = func(context.Context, aws.Config) (map[string]module.Reader, error) {
		return map[string]module.Reader{"thing": gm}, nil
	}
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{mod}, Install: []string{"mem_test"}})
	if n := e.Count(`SELECT count(*) FROM thing`); n != 200 {
		t.Fatalf("install imported %d things, want 200", n)
	}
	counts := func() (reads, got int) {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		return gm.waitedReads, gm.got
	}
	cloud := func(name string) (module.Record, bool) {
		mem.mu.Lock()
		defer mem.mu.Unlock()
		r, ok := mem.things[name]
		return r, ok
	}

	e.Exec(`CALL iasql_begin()`) // no automatic cycle in between
	mem.mu.Lock()
	mem.things["thing-100"] = module.Record{"name": "thing-100", "size": json.Number("9")} // changed outside iasql
	mem.mu.Unlock()
	reads0, got0 := counts()
	e.Exec(`INSERT INTO thing (name, size) VALUES ('thing-new', 5)`,
		`UPDATE thing SET size = 7 WHERE name = 'thing-001'`,
		`DELETE FROM thing WHERE name = 'thing-002'`)
	e.Commit()
	reads, got := counts()
	if reads != reads0 {
		t.Errorf("the commit listed the table %d times; want none", reads-reads0)
	}
	if got-got0 == 0 || got-got0 > 9 {
		t.Errorf("the commit asked for %d things; want the three it acts on, once per pass", got-got0)
	}
	if r, ok := cloud("thing-new"); !ok || r.String("size") != "5" {
		t.Errorf("thing-new in the cloud: %v %v", ok, r)
	}
	if r, _ := cloud("thing-001"); r.String("size") != "7" {
		t.Errorf("thing-001 in the cloud has size %s, want 7", r.String("size"))
	}
	if _, ok := cloud("thing-002"); ok {
		t.Error("thing-002 is still in the cloud")
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'thing'`); n != 0 {
		t.Errorf("%d things not in sync after the commit", n)
	}
	// (An automatic cycle may pull it once the commit has ended.)
	if s := e.String(`SELECT message::jsonb->>'summary' FROM iasql_audit_log
		WHERE change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'commit' ORDER BY id DESC LIMIT 1`); strings.Contains(s, "database") {
		t.Errorf("the commit changed the database (%s): it had nothing to act on but the three things", s)
	}

	// A rollback asks for the records it restores.
	id := e.String(`SELECT id::text FROM thing WHERE name = 'thing-003'`)
	e.Exec(`CALL iasql_begin()`, `DELETE FROM thing WHERE name = 'thing-003'`, `CALL iasql_rollback()`)
	if got := e.String(`SELECT id::text FROM thing WHERE name = 'thing-003'`); got != id {
		t.Errorf("rollback restored thing-003 under id %q, want %s", got, id)
	}
	if reads2, _ := counts(); reads2 != reads {
		t.Errorf("the rollback listed the table %d times; want none", reads2-reads)
	}

	e.Refresh()
	if s := e.String(`SELECT size::text FROM thing WHERE name = 'thing-100'`); s != "9" {
		t.Errorf("iasql_refresh left thing-100 at size %s, want the cloud's 9", s)
	}
}
