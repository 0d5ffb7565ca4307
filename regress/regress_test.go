package regress_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	iasqlsql "github.com/iasql/iasql/sql"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// TestRegress runs the pg_regress suites (regress/sql/*.sql) with PGXS's
// installcheck against the test server and fails with regression.diffs.
func TestRegress(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to run the pg_regress suites: %v (Debian: apt-get install make)", err)
	}
	bin, err := pgcluster.FindBinDir()
	if err != nil {
		t.Fatal(err)
	}
	pgConfig := filepath.Join(bin, "pg_config")
	checkInstalled(t, pgConfig)

	host, port, user, password := serverAddress(t)
	checkAvailable(t)

	// Stale results would hide whether this run produced them.
	for _, f := range []string{"regression.diffs", "regression.out"} {
		_ = os.Remove(f)
	}
	_ = os.RemoveAll("results")

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vars := []string{"PGHOST=" + host, "PGPORT=" + strconv.Itoa(int(port)), "PGUSER=" + user}
	cmd := exec.CommandContext(ctx, "make", append([]string{"-C", "../extension", "installcheck", "PG_CONFIG=" + pgConfig}, vars...)...)
	cmd.Env = append(os.Environ(), vars...)
	if password != "" {
		cmd.Env = append(cmd.Env, "PGPASSWORD="+password)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	runErr := cmd.Run()
	t.Logf("make installcheck:\n%s", out.String())
	if runErr != nil {
		diffs, err := os.ReadFile("regression.diffs")
		if err != nil {
			t.Fatalf("make -C extension installcheck: %v (no regression.diffs: %v)\n%s", runErr, err, out.String())
		}
		t.Fatalf("make -C extension installcheck: %v\nregress/regression.diffs:\n%s", runErr, diffs)
	}
}

// serverAddress returns where pg_regress connects: the throwaway cluster,
// or the server named by IASQL_TEST_DSN.
func serverAddress(t *testing.T) (host string, port uint16, user, password string) {
	t.Helper()
	if srv.Cluster != nil {
		return "127.0.0.1", uint16(srv.Cluster.Port), srv.Cluster.User, ""
	}
	cfg, err := pgconn.ParseConfig(os.Getenv(pgtest.EnvDSN))
	if err != nil {
		t.Fatalf("parse %s: %v", pgtest.EnvDSN, err)
	}
	return cfg.Host, cfg.Port, cfg.User, cfg.Password
}

// checkInstalled fails unless the server's share directory holds the
// extension files of this checkout (make test installs them first).
func checkInstalled(t *testing.T, pgConfig string) {
	t.Helper()
	out, err := exec.Command(pgConfig, "--sharedir").Output()
	if err != nil {
		t.Fatalf("%s --sharedir: %v", pgConfig, err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "extension")
	if _, err := os.Stat(filepath.Join(dir, iasqlsql.ExtensionName+".control")); err != nil {
		t.Fatalf("the iasql extension is not installed in %s: run 'make extension-install' (as a user who may write there) before these tests", dir)
	}
	local, _ := filepath.Glob("../extension/" + iasqlsql.ExtensionName + "*")
	for _, src := range local {
		if !strings.HasSuffix(src, ".sql") && !strings.HasSuffix(src, ".control") {
			continue
		}
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(src)))
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s in %s is missing or differs from extension/%s: run 'make extension-install'", filepath.Base(src), dir, filepath.Base(src))
		}
	}
}

// checkAvailable fails unless the test server itself offers the extension
// at this build's version (it may be a server other than pg_config's).
func checkAvailable(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, srv.AdminDSN())
	if err != nil {
		t.Fatalf("connect to test server: %v", err)
	}
	defer conn.Close(ctx)
	var ok bool
	err = conn.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_available_extension_versions WHERE name = $1 AND version = $2)`,
		iasqlsql.ExtensionName, iasqlsql.Version).Scan(&ok)
	if err != nil {
		t.Fatalf("query available extensions: %v", err)
	}
	if !ok {
		t.Fatalf("the test server does not offer extension %s %s: run 'make extension-install' for its installation",
			iasqlsql.ExtensionName, iasqlsql.Version)
	}
}
