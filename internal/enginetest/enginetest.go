// Package enginetest runs the whole product for tests: a database on the
// test binary's PostgreSQL, the in-process AWS emulator, and a sidecar
// (capture and engine) with chosen modules installed, plus the small
// helpers end-to-end tests of the engine and of modules share.
package enginetest

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/module"
)

// Options configure an Env.
type Options struct {
	// DSN of the database; "" makes a fresh one on the server.
	DSN string
	// Modules the sidecar offers; Install, the ones installed at start
	// (iasql_install with their dependencies, in this order).
	Modules []module.Module
	// Catalogs make modules on demand (modules.Catalogs for Cloud Control
	// resource types); Install may name their modules too.
	Catalogs []module.Catalog
	Install  []string
	// Interval between automatic cycles; default an hour (tests drive
	// cycles with iasql_commit).
	Interval time.Duration
	// CycleTimeout cancels cycles that run longer; default the sidecar's.
	CycleTimeout time.Duration
	// AuditRetention prunes the audit trail; default 0 (keep everything).
	AuditRetention time.Duration
	// TransactionTimeout rolls back iasql transactions idle this long;
	// default the sidecar's.
	TransactionTimeout time.Duration
	// Emulator configures the AWS emulator.
	Emulator emulator.Options
	// Logger for the sidecar; by default its log is discarded, or shown
	// on stderr at debug level when IASQL_TEST_LOG is set.
	Logger *slog.Logger
}

// Env is one database with a sidecar running against its own emulator.
type Env struct {
	T   *testing.T
	DSN string
	DB  *pgx.Conn          // a user's session
	Emu *emulator.Emulator // the cloud
	AWS aws.Config         // SDK configuration for the emulator (out-of-band clients use it too)

	opt  Options
	stop func()
}

// New starts the emulator and a sidecar, waits until the sidecar leads and
// installs opt.Install. Everything stops when the test ends.
func New(t *testing.T, srv *pgtest.Server, opt Options) *Env {
	t.Helper()
	if opt.DSN == "" {
		opt.DSN = srv.NewDB(t)
	}
	if opt.Interval == 0 {
		opt.Interval = time.Hour
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
		if os.Getenv("IASQL_TEST_LOG") != "" {
			opt.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		}
	}
	cloud := testkit.StartCloud(t, opt.Emulator)
	e := &Env{T: t, DSN: opt.DSN, Emu: cloud.Emu, AWS: cloud.AWS, opt: opt}
	e.stop = e.StartSidecar(true)
	e.DB = pgtest.Connect(t, e.DSN)
	for _, m := range opt.Install {
		e.Exec(`SELECT * FROM iasql_install('` + m + `')`)
	}
	return e
}

// StartSidecar runs another sidecar in-process until the test ends or
// stop is called; leader says whether to wait for it to lead (a second
// sidecar waits instead: the test fails unless it logs that another
// sidecar captures and it waits to take over, before it leads).
func (e *Env) StartSidecar(leader bool) (stop func()) {
	e.T.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	var once sync.Once
	done := make(chan error, 1)
	logger, standby := e.opt.Logger, &testkit.Log{}
	if !leader {
		logger = slog.New(slog.NewMultiHandler(logger.Handler(), standby.Logger(slog.LevelInfo).Handler()))
	}
	go func() {
		done <- sidecar.Run(ctx, sidecar.Config{DSN: e.DSN, Logger: logger,
			Interval: e.opt.Interval, CycleTimeout: e.opt.CycleTimeout, AuditRetention: e.opt.AuditRetention, TransactionTimeout: e.opt.TransactionTimeout,
			AWS: &e.AWS, Modules: e.opt.Modules, Catalogs: e.opt.Catalogs,
			OnReady: func() { once.Do(func() { close(ready) }) }})
	}()
	started := func() bool {
		select {
		case <-ready:
			return true
		case err := <-done:
			e.T.Fatalf("sidecar ended: %v", err)
		default:
		}
		return false
	}
	if !leader {
		testkit.Until(e.T, 30*time.Second, "the second sidecar to wait to take over", func() bool {
			if started() {
				e.T.Fatal("a second sidecar took the leadership from a live one")
			}
			return standby.Contains("another sidecar is capturing; waiting to take over")
		})
	} else {
		testkit.Until(e.T, 30*time.Second, "the sidecar to start", started)
	}
	conn := pgtest.Connect(e.T, e.DSN)
	// The engine runs once it holds its service lock (role 4); it then
	// registers the modules it offers.
	testkit.Wait(e.T, 10*time.Second, "the engine running, its modules registered", func() error {
		ok, err := store.EngineRunning(context.Background(), conn, module.Versions(e.opt.Modules))
		if err == nil && !ok {
			err = testkit.ErrNotYet
		}
		return err
	})
	var stopOnce sync.Once
	stop = func() {
		stopOnce.Do(func() {
			cancel()
			if err := <-done; err != nil {
				e.T.Errorf("sidecar: %v", err)
			}
		})
	}
	e.T.Cleanup(stop)
	return stop
}

// Upgrade stops the sidecar and starts one that offers modules instead
// (a newer build of them), against the same database and cloud; it
// returns once the new one leads.
func (e *Env) Upgrade(modules []module.Module) {
	e.T.Helper()
	e.stop()
	e.opt.Modules = modules
	e.stop = e.StartSidecar(true)
}

// Stop stops the sidecar New started.
func (e *Env) Stop() { e.stop() }

// Exec runs statements as the user, failing the test on error.
func (e *Env) Exec(sqls ...string) {
	e.T.Helper()
	for _, q := range sqls {
		if _, err := e.DB.Exec(context.Background(), q); err != nil {
			e.T.Fatalf("%s: %v", q, err)
		}
	}
}

// Commit runs CALL iasql_commit(): a cycle, returning when it has ended.
func (e *Env) Commit() {
	e.T.Helper()
	e.Exec(`CALL iasql_commit()`)
}

// Refresh runs a cycle that reads the whole cloud fresh (iasql_refresh):
// what a test changed in the cloud out of band is seen at once (a commit
// reads fresh only what it acts on).
func (e *Env) Refresh() {
	e.T.Helper()
	e.Exec(`CALL iasql_refresh()`)
}

// Count runs a query returning one integer.
func (e *Env) Count(q string, args ...any) int {
	e.T.Helper()
	var n int
	if err := e.DB.QueryRow(context.Background(), q, args...).Scan(&n); err != nil {
		e.T.Fatalf("%s: %v", q, err)
	}
	return n
}

// String runs a query returning one text value ("" for NULL).
func (e *Env) String(q string, args ...any) string {
	e.T.Helper()
	var s *string
	if err := e.DB.QueryRow(context.Background(), q, args...).Scan(&s); err != nil {
		e.T.Fatalf("%s: %v", q, err)
	}
	if s == nil {
		return ""
	}
	return *s
}

// Mutations returns the emulator's calls since the last Emu.Reset that
// could change the cloud (every operation not named Describe*, List*,
// Get*, Head*), by "service:Operation".
func (e *Env) Mutations() map[string]int {
	out := map[string]int{}
	for op, n := range e.Emu.Calls() {
		if !emulator.IsRead(op) {
			out[op] = n
		}
	}
	return out
}

// CheckGot checks a module.Getter's records against what Read returned
// (read, by key): each record got is the record Read returned under the
// same key, equal by the mapper's Equal both ways and column by column in
// the same value forms; it returns the keys got, sorted.
func CheckGot(t testing.TB, m module.Equaler, got []module.Record, read map[string]module.Record, key func(module.Record) string) []string {
	t.Helper()
	var keys []string
	for _, r := range got {
		k := key(r)
		keys = append(keys, k)
		want, ok := read[k]
		if !ok {
			t.Errorf("got %s, which Read did not return: %v", k, r)
			continue
		}
		if !m.Equal(want, r) || !m.Equal(r, want) {
			t.Errorf("%s: got %v, read %v", k, r, want)
		}
		for _, col := range slices.Sorted(maps.Keys(maps.Collect(func(yield func(string, bool) bool) {
			for c := range want {
				yield(c, true)
			}
			for c := range r {
				yield(c, true)
			}
		}))) {
			if !reflect.DeepEqual(r[col], want[col]) {
				t.Errorf("%s.%s: got %#v, read %#v", k, col, r[col], want[col])
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// CheckDeclared compares a module table as the database has it with its
// declaration (module.Column): id (serial), then the declared columns in
// order, each of its declared type, NOT NULL and default (a Filled column
// nullable and without one); nothing else.
func CheckDeclared(t *testing.T, conn *pgx.Conn, tbl module.Table) {
	t.Helper()
	if len(tbl.Columns) == 0 {
		t.Errorf("%s declares no columns (module.Column)", tbl.Name)
		return
	}
	type col struct {
		Name, Type string
		NotNull    bool
		Default    string
	}
	// With public off the path, defaults are written schema-qualified, as
	// declarations write them.
	if _, err := conn.Exec(t.Context(), `SET search_path = pg_catalog`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET search_path`)
	rows, err := conn.Query(t.Context(), `
		SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attnotnull,
		       coalesce(pg_catalog.pg_get_expr(d.adbin, d.adrelid), '')
		  FROM pg_catalog.pg_attribute a
		  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		 WHERE a.attrelid = ('public.' || $1)::regclass AND a.attnum > 0 AND NOT a.attisdropped
		 ORDER BY a.attnum`, tbl.Name)
	if err != nil {
		t.Fatal(err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowToStructByPos[col])
	if err != nil {
		t.Fatal(err)
	}
	want := []col{{Name: "id", Type: "integer", NotNull: true, Default: "nextval("}}
	for _, c := range tbl.Columns {
		if c.Filled() {
			// Nullable without a column default: a trigger fills it in
			// (module.Column.Filled).
			want = append(want, col{Name: c.Name, Type: c.Type})
			continue
		}
		want = append(want, col{Name: c.Name, Type: c.Type, NotNull: c.NotNull, Default: c.Default})
	}
	if len(have) != len(want) {
		t.Errorf("%s: the database has columns %v, the declaration %v", tbl.Name, have, want)
		return
	}
	for i := range want {
		h, w := have[i], want[i]
		// PostgreSQL writes a default its own way ('{}'::jsonb for '{}'):
		// the declared one must be how it starts.
		if h.Name != w.Name || h.Type != w.Type || h.NotNull != w.NotNull || (w.Default == "") != (h.Default == "") ||
			!strings.HasPrefix(h.Default, w.Default) {
			t.Errorf("%s: column %d is %+v in the database, %+v in the declaration", tbl.Name, i, h, w)
		}
	}
}
