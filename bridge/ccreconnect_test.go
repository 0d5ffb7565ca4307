package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// killEngineSessions ends the engine's sessions as a DBA would
// (pg_terminate_backend) while capture keeps leading, and waits until the
// engine answers a commit again.
func killEngineSessions(t *testing.T, e *enginetest.Env) {
	t.Helper()
	if n := e.Count(`SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE datname = current_database() AND application_name IN ('iasql engine', 'iasql cycle')) k`); n == 0 {
		t.Fatal("found no engine session to terminate")
	}
	var last error
	enginetest.WaitUntil(t, 30*time.Second, "the engine to answer a commit again", func() bool {
		_, last = e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		return last == nil
	})
}

// TestCloudControlTypeSurvivesReconnects: with a Cloud Control type
// installed, the engine's sessions are ended again and again (a DBA's
// pg_terminate_backend; a server restart ends them the same way); the
// engine leads again each time, from the schema stored at install, and
// commits still reach the cloud. It used to stop for good at the second
// time: the type's version was a digest of DescribeType's bytes at
// install and of the stored jsonb's text afterwards, and the mismatch
// read as an upgrade with no path. A database such a sidecar installed
// the type in (its installed_version that first digest) works too: the
// stored schema is what the table was made from, so another digest of it
// is no upgrade.
func TestCloudControlTypeSurvivesReconnects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		// installedBy, when set, is the installed_version an older sidecar
		// recorded (the digest of DescribeType's bytes).
		installedBy string
	}{
		{name: "installed by this sidecar"},
		{name: "installed by an older sidecar", installedBy: "schema d248bebd70df"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := enginetest.New(t, srv, enginetest.Options{
				Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
				Install:  []string{"AWS::SQS::Queue"},
			})
			want := e.String(`SELECT installed_version FROM iasql_modules WHERE name = 'AWS::SQS::Queue'`)
			if tc.installedBy != "" {
				e.Stop()
				// Only the sidecar writes the registry (its guard trigger):
				// as the older sidecar did, bypassing it as a superuser.
				e.Exec(`BEGIN`, `SET LOCAL session_replication_role = replica`,
					`UPDATE iasql_modules SET version = '`+tc.installedBy+`', installed_version = '`+tc.installedBy+`' WHERE name = 'AWS::SQS::Queue'`,
					`COMMIT`)
				e.Upgrade(nil) // a sidecar of this build starts on it
			}
			for range 3 {
				killEngineSessions(t, e)
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
