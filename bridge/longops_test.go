package bridge_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/module"
)

// slowCloud is a cloud whose creates of things named "slow-*" run long: the
// create answers with an operation handle at once, and the thing appears
// only after the delay, when Poll is asked about it. Other things are made
// at once.
type slowCloud struct {
	memMapper
	delay time.Duration

	opMu    sync.Mutex
	ops     map[string]time.Time // handle -> when it is done
	creates map[string]int       // name -> Create calls
	made    map[string]time.Time // name -> when it appeared
}

func newSlowCloud(delay time.Duration) *slowCloud {
	return &slowCloud{memMapper: memMapper{things: map[string]module.Record{}}, delay: delay,
		ops: map[string]time.Time{}, creates: map[string]int{}, made: map[string]time.Time{}}
}

func (m *slowCloud) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	name := want.String("name")
	m.opMu.Lock()
	m.creates[name]++
	m.opMu.Unlock()
	if !strings.HasPrefix(name, "slow-") {
		m.note(name)
		return m.memMapper.Create(ctx, call, want)
	}
	handle := "op-" + name + "-" + want.String("size")
	m.opMu.Lock()
	m.ops[handle] = time.Now().Add(m.delay)
	m.opMu.Unlock()
	return nil, &module.Pending{Handle: handle, RetryAfter: 100 * time.Millisecond}
}

func (m *slowCloud) note(name string) {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	m.made[name] = time.Now()
}

func (m *slowCloud) Poll(ctx context.Context, call module.Call, handle string) (module.Record, error) {
	m.opMu.Lock()
	done, ok := m.ops[handle]
	m.opMu.Unlock()
	if !ok {
		return nil, &module.TerminalError{Err: errorString("no operation " + handle)}
	}
	if time.Now().Before(done) {
		return nil, &module.Pending{Handle: handle, RetryAfter: 100 * time.Millisecond}
	}
	parts := strings.SplitN(strings.TrimPrefix(handle, "op-"), "-", 3) // slow, name, size
	name := parts[0] + "-" + parts[1]
	m.note(name)
	return m.memMapper.Create(ctx, call, module.Record{"name": name, "size": module.Number(atoi(parts[2]))})
}

type errorString string

func (e errorString) Error() string { return string(e) }

func atoi(s string) int64 {
	var n int64
	for _, c := range s {
		n = n*10 + int64(c-'0')
	}
	return n
}

func slowModule(m *slowCloud) module.Module {
	mod := memModule(&m.memMapper)
	mod.Mappers = func(context.Context, aws.Config) (map[string]module.Reader, error) {
		return map[string]module.Reader{"thing": m}, nil
	}
	return mod
}

// TestLongOperations: a create that runs long is persisted as an operation
// and asked about later; nothing else waits on it (a quick create in the
// same commit is made at once), iasql_commit returns only when it has
// settled, telling its caller (NOTICE) what it waits for, and the row then
// has what the cloud made. iasql_status shows it in progress meanwhile.
func TestLongOperations(t *testing.T) {
	t.Parallel()
	cloud := newSlowCloud(1500 * time.Millisecond)
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{slowModule(cloud)}, Install: []string{"mem_test"}})
	var notices []string
	var mu sync.Mutex
	cfg, err := pgx.ParseConfig(e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		notices = append(notices, n.Message)
		mu.Unlock()
	}
	caller, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer caller.Close(context.Background())

	e.Exec(`INSERT INTO thing (name, size) VALUES ('slow-one', 7), ('fast', 1)`)
	inProgress := make(chan error, 1)
	go func() {
		inProgress <- testkit.Poll(context.Background(), 10*time.Second, "iasql_status to show the long create in progress", func() error {
			var n int
			if err := e.DB.QueryRow(context.Background(), `SELECT count(*) FROM iasql_status WHERE table_name = 'thing' AND state = 'in progress' AND action = 'create'`).Scan(&n); err != nil {
				return err
			}
			if n != 1 {
				return fmt.Errorf("%d creates in progress", n)
			}
			return nil
		})
	}()
	start := time.Now()
	if _, err := caller.Exec(context.Background(), `CALL iasql_commit()`); err != nil {
		t.Fatalf("commit: %v", err)
	}
	took := time.Since(start)
	if err := <-inProgress; err != nil {
		t.Errorf("iasql_status never showed the long create in progress: %v", err)
	}
	cloud.opMu.Lock()
	fast, slow, creates := cloud.made["fast"], cloud.made["slow-one"], cloud.creates["slow-one"]
	cloud.opMu.Unlock()
	if slow.IsZero() {
		t.Fatalf("commit returned after %s before the long create had settled", took)
	}
	if !fast.Before(slow.Add(-time.Second)) {
		t.Errorf("the quick create waited for the long one (made %s before it)", slow.Sub(fast))
	}
	if creates != 1 {
		t.Errorf("the long create was called %d times, want 1 (then asked about)", creates)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records out of sync after the commit", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.ContainsFunc(notices, func(s string) bool { return strings.Contains(s, "waiting for 1 operation(s) in the cloud: thing") }) {
		t.Errorf("the commit's caller was not told what it waited for: %q", notices)
	}
}

// TestLongOperationSurvivesRestart: the sidecar stops while a long create
// runs; the next sidecar asks about the persisted operation instead of
// creating the thing again.
func TestLongOperationSurvivesRestart(t *testing.T) {
	t.Parallel()
	cloud := newSlowCloud(3 * time.Second)
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{slowModule(cloud)}, Install: []string{"mem_test"}})
	e.Exec(`INSERT INTO thing (name, size) VALUES ('slow-two', 2)`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.DB.Exec(context.Background(), `CALL iasql_commit()`) // ends with the sidecar
	}()
	watcher := pgtest.Connect(t, e.DSN) // e.DB is busy with the commit
	testkit.Until(t, 10*time.Second, "the operation persisted", func() bool {
		var n int
		_ = watcher.QueryRow(context.Background(), `SELECT count(*) FROM iasql_operations WHERE table_name = 'thing' AND handle IS NOT NULL`).Scan(&n)
		return n == 1
	})
	e.Stop()
	<-done
	e.StartSidecar(true)
	e.Commit()
	cloud.opMu.Lock()
	defer cloud.opMu.Unlock()
	if cloud.creates["slow-two"] != 1 || cloud.made["slow-two"].IsZero() {
		t.Errorf("after the restart: %d creates, made %v; want 1 create, asked about until made", cloud.creates["slow-two"], !cloud.made["slow-two"].IsZero())
	}
}

// TestPreviewDuringCycle: a preview is answered while a commit's cycle
// runs (here, waiting for a long create), not queued behind it.
func TestPreviewDuringCycle(t *testing.T) {
	t.Parallel()
	cloud := newSlowCloud(4 * time.Second)
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{slowModule(cloud)}, Install: []string{"mem_test"}})
	e.Exec(`INSERT INTO thing (name, size) VALUES ('slow-three', 3)`)
	committed := make(chan error, 1)
	go func() {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		committed <- err
	}()
	previewer := pgtest.Connect(t, e.DSN) // e.DB is busy with the commit
	testkit.Until(t, 10*time.Second, "the long create under way", func() bool {
		var n int
		_ = previewer.QueryRow(context.Background(), `SELECT count(*) FROM iasql_operations WHERE table_name = 'thing' AND handle IS NOT NULL`).Scan(&n)
		return n == 1
	})
	var n int
	if err := previewer.QueryRow(context.Background(), `SELECT count(*) FROM iasql_preview()`).Scan(&n); err != nil {
		t.Fatalf("preview during a cycle: %v", err)
	}
	select {
	case err := <-committed:
		t.Fatalf("the commit ended (%v) before the preview was answered: previews wait behind cycles", err)
	default:
	}
	if n != 0 {
		t.Errorf("preview during the cycle shows %d actions; the long create in flight is not one of them", n)
	}
	if err := <-committed; err != nil {
		t.Errorf("commit: %v", err)
	}
}
