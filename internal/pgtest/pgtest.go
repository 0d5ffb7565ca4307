// Package pgtest gives tests a real PostgreSQL: a throwaway cluster started
// once per test binary, or the server named by IASQL_TEST_DSN, and a fresh
// database per test.
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgcluster"
)

// EnvDSN names an existing server (with wal_level = logical) to test against
// instead of a throwaway cluster. Its user must be able to create databases.
const EnvDSN = "IASQL_TEST_DSN"

// Server is the server a test binary runs against.
type Server struct {
	base    string             // DSN of the maintenance database
	Cluster *pgcluster.Cluster // nil when EnvDSN is used
	seq     atomic.Int64
}

// Main starts the server, runs the tests and tears the server down. Use it
// from TestMain: func TestMain(m *testing.M) { pgtest.Main(m, &srv) }.
func Main(m *testing.M, srv **Server) {
	s, err := Start(context.Background())
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgtest:", err)
		os.Exit(1)
	}
	*srv = s
	code := m.Run()
	s.Close()
	os.Exit(code)
}

// Start provides a server: the one in EnvDSN, else a new throwaway cluster.
func Start(ctx context.Context) (*Server, error) {
	if dsn := os.Getenv(EnvDSN); dsn != "" {
		return &Server{base: dsn}, nil
	}
	c, err := pgcluster.Start(ctx, pgcluster.Options{})
	if err != nil {
		return nil, err
	}
	return &Server{base: c.DSN("postgres"), Cluster: c}, nil
}

// Close tears down a throwaway cluster.
func (s *Server) Close() {
	if s.Cluster != nil {
		_ = s.Cluster.Destroy()
	}
}

// AdminDSN is the DSN of the maintenance database, as a superuser.
func (s *Server) AdminDSN() string { return s.base }

// NewDB creates an empty database for the test and drops it (with any
// replication slots on it) when the test ends. It returns its DSN.
func (s *Server) NewDB(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%d", os.Getpid(), s.seq.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() { s.dropDB(name) })
	return WithDatabase(s.base, name)
}

func (s *Server) dropDB(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, s.base)
	if err != nil {
		return
	}
	defer conn.Close(ctx)
	// Slots pin WAL and block DROP DATABASE; their consumers may be exiting.
	for i := 0; i < 50; i++ {
		_, err = conn.Exec(ctx, `SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE database = $1 AND active_pid IS NOT NULL`, name)
		if err == nil {
			_, err = conn.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1`, name)
		}
		if err == nil {
			_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		}
		if err == nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// WithDatabase returns dsn with its database replaced by db.
func WithDatabase(dsn, db string) string {
	u, err := url.Parse(dsn)
	if err == nil && u.Scheme != "" {
		u.Path = "/" + db
		return u.String()
	}
	// key=value form
	var parts []string
	for _, f := range strings.Fields(dsn) {
		if !strings.HasPrefix(f, "dbname=") {
			parts = append(parts, f)
		}
	}
	return strings.Join(append(parts, "dbname="+db), " ")
}

// Exec runs statements on dsn, failing the test on error.
func Exec(t testing.TB, dsn string, sqls ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	for _, q := range sqls {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("exec %q: %v", q, err)
		}
	}
}

// Connect opens a connection closed at the end of the test.
func Connect(t testing.TB, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// Installed creates a fresh database, runs scripts in one transaction (as
// the engine installs modules: dependencies first), then the setup
// statements, and returns a connection to it closed at the end of the test.
func (s *Server) Installed(t testing.TB, scripts []string, setup ...string) *pgx.Conn {
	t.Helper()
	dsn := s.NewDB(t)
	Exec(t, dsn, append([]string{"BEGIN;\n" + strings.Join(scripts, "\n") + "\nCOMMIT;"}, setup...)...)
	return Connect(t, dsn)
}

// WantViolation fails t unless err is a violation of constraint.
func WantViolation(t testing.TB, err error, constraint string) {
	t.Helper()
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.ConstraintName != constraint {
		t.Errorf("error %v, want a violation of %s", err, constraint)
	}
}

// WantRefused fails t unless err is what a trigger standing in for a
// foreign key raises: a foreign_key_violation (SQLSTATE 23503) of
// constraint, in one line that says each of message, with a hint that says
// hint (what to do).
func WantRefused(t testing.TB, err error, constraint, hint string, message ...string) {
	t.Helper()
	WantViolation(t, err, constraint)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return
	}
	if pe.Code != "23503" || strings.Contains(pe.Message, "\n") || !strings.Contains(pe.Hint, hint) {
		t.Errorf("SQLSTATE %s, message %q, hint %q; want 23503, one line, a hint with %q", pe.Code, pe.Message, pe.Hint, hint)
	}
	for _, m := range message {
		if !strings.Contains(pe.Message, m) {
			t.Errorf("message %q does not say %q", pe.Message, m)
		}
	}
}

// RolledBack runs sqls in a transaction that it then rolls back, and
// returns the first statement's error (nil when every one ran).
func RolledBack(ctx context.Context, conn *pgx.Conn, sqls ...string) error {
	errRollback := errors.New("rolled back on purpose")
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		for _, s := range sqls {
			if _, err := tx.Exec(ctx, s); err != nil {
				return err
			}
		}
		return errRollback
	})
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}
