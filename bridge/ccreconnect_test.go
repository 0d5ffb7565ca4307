package bridge_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// endEngineSessions ends the engine's sessions as a DBA would
// (pg_terminate_backend) while capture keeps leading.
func endEngineSessions(t *testing.T, e *enginetest.Env) {
	t.Helper()
	if n := e.Count(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name IN ('iasql engine', 'iasql cycle')) k`); n == 0 {
		t.Fatal("found no engine session to terminate")
	}
}

// killEngineSessions ends the engine's sessions as a DBA would
// (pg_terminate_backend) while capture keeps leading, and waits until the
// engine answers a commit again.
func killEngineSessions(t *testing.T, e *enginetest.Env) {
	t.Helper()
	endEngineSessions(t, e)
	waitCommit(t, e)
}

// waitCommit waits until a commit succeeds.
func waitCommit(t *testing.T, e *enginetest.Env) {
	t.Helper()
	testkit.Until(t, 30*time.Second, "the engine to answer a commit again", func() bool {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return err == nil
	})
}

// TestCloudControlTypeSurvivesReconnects: with a Cloud Control type
// installed, the engine's sessions are ended again and again (a DBA's
// pg_terminate_backend, or a restart of the server) while the sidecar
// runs on; the engine leads again each time, from the schema stored at
// install, and commits still reach the cloud. It used to stop for good at
// the second time: the type's version was a digest of DescribeType's bytes
// at install and of the stored jsonb's text afterwards, and the mismatch
// read as an upgrade with no path. A database such a sidecar installed the
// type in (its installed_version that first digest) works too: the stored
// schema is what the table was made from, so another digest of it is no
// upgrade.
func TestCloudControlTypeSurvivesReconnects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// installedBy, when set, is the installed_version an older sidecar
		// recorded (the digest of DescribeType's bytes).
		installedBy string
		// restart: the server of a cluster of the test's own restarts,
		// rather than the engine's sessions being terminated.
		restart bool
	}{
		{name: "sessions terminated"},
		{name: "sessions terminated, installed by an older sidecar", installedBy: "schema d248bebd70df"},
		{name: "server restarted", restart: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dsn := ""
			var cluster *pgcluster.Cluster
			if tc.restart {
				c, err := pgcluster.Start(context.Background(), pgcluster.Options{})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.Destroy() })
				pgtest.Exec(t, c.DSN("postgres"), `CREATE DATABASE app`)
				cluster, dsn = c, c.DSN("app")
			}
			e := enginetest.New(t, srv, enginetest.Options{
				DSN:      dsn,
				Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
				Install:  []string{"AWS::SQS::Queue"},
			})
			want := e.String(`SELECT installed_version FROM iasql_modules WHERE name = 'AWS::SQS::Queue'`)
			if tc.installedBy != "" {
				e.Stop()
				setVersions(e, "AWS::SQS::Queue", tc.installedBy)
				e.Upgrade(nil) // a sidecar of this build starts on it
			}
			for range 3 {
				if cluster == nil {
					killEngineSessions(t, e)
					continue
				}
				if err := cluster.Restart(context.Background(), "fast"); err != nil {
					t.Fatalf("restart the server: %v", err)
				}
				e.DB = pgtest.Connect(t, e.DSN)
				waitCommit(t, e)
			}
			e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('after-reconnects')`)
			e.Commit()
			if url := e.String(`SELECT coalesce(queue_url, '') FROM aws_sqs_queue WHERE queue_name = 'after-reconnects'`); url == "" {
				t.Error("the queue made after the reconnects has no queue_url: the commit did not create it")
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
				t.Errorf("%d records not in sync after the commit", n)
			}
			if v := e.String(`SELECT version || ' ' || installed_version FROM iasql_modules WHERE name = 'AWS::SQS::Queue'`); v != want+" "+want {
				t.Errorf("version and installed_version %q after the reconnects, want %q both", v, want)
			}
		})
	}
}

// setVersions writes a module's version and installed_version as only
// the sidecar may (the registry's guard trigger), bypassing the guard as a
// superuser.
func setVersions(e *enginetest.Env, name, version string) {
	e.T.Helper()
	e.Exec(`BEGIN`, `SET LOCAL session_replication_role = replica`,
		`UPDATE iasql_modules SET version = '`+version+`', installed_version = '`+version+`' WHERE name = '`+name+`'`, `COMMIT`)
}

// setInstalledVersion writes a module's installed_version as only the
// sidecar may (the registry's guard trigger), bypassing the guard as a
// superuser.
func setInstalledVersion(e *enginetest.Env, name, version string) {
	e.T.Helper()
	e.Exec(`BEGIN`, `SET LOCAL session_replication_role = replica`,
		`UPDATE iasql_modules SET installed_version = '`+version+`' WHERE name = '`+name+`'`, `COMMIT`)
}

// TestEngineHoldsWhenItCannotStart: when the engine cannot start at a new
// leadership (here a module installed at a version this sidecar has no
// upgrade from), requests are answered at once with why, no cycle runs,
// and the start is tried again while the sidecar leads: once the cause is
// gone, the engine runs without a restart of the sidecar. An iasql
// transaction whose owner ended meanwhile expires while the engine cannot
// start (its changes discarded, so others may write), and once the engine
// starts its rows are restored: what the owner wrote never reaches the
// cloud, what others wrote meanwhile does.
func TestEngineHoldsWhenItCannotStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	owner := session(t, e.Env, "")
	for _, q := range []string{`CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('owner-ended')`} {
		if err := execErr(owner, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	installed := e.String(`SELECT installed_version FROM iasql_modules WHERE name = 'aws_s3'`)
	setInstalledVersion(e.Env, "aws_s3", "9.9.9")
	endEngineSessions(t, e.Env)
	if err := owner.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	testkit.Until(t, 30*time.Second, "a commit answered with why the engine cannot start", func() bool {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return err != nil && strings.Contains(err.Error(), "cannot start") &&
			strings.Contains(err.Error(), "aws_s3 is installed at version 9.9.9")
	})
	if e.cloudBuckets()["owner-ended"] {
		t.Error("a cycle ran while the engine could not start: the ended owner's insert reached the cloud")
	}

	// The transaction expires while the engine still cannot start: its
	// changes are discarded and everyone may write again.
	testkit.Until(t, 30*time.Second, "the expired transaction ended while the engine cannot start", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_transaction`) == 0
	})
	e.Exec(`INSERT INTO bucket (name) VALUES ('while-held')`)

	setInstalledVersion(e.Env, "aws_s3", installed)
	testkit.Until(t, 30*time.Second, "the expired transaction's insert undone once the engine starts", func() bool {
		return e.Count(`SELECT count(*) FROM bucket WHERE name = 'owner-ended'`) == 0
	})
	e.Exec(`INSERT INTO bucket (name) VALUES ('after-start')`)
	e.Commit()
	if got := e.cloudBuckets(); got["owner-ended"] || !got["after-start"] || !got["while-held"] {
		t.Errorf("buckets in the cloud %v: want while-held and after-start, not owner-ended", got)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after the commit", n)
	}
}
