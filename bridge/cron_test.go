package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
)

// TestPgCronDrivesCycles: where pg_cron is installed in the database, its
// job iasql_cycle drives automatic cycles on the sidecar's interval.
func TestPgCronDrivesCycles(t *testing.T) {
	t.Parallel()
	c, err := pgcluster.Start(context.Background(), pgcluster.Options{Settings: map[string]string{
		"shared_preload_libraries": "'pg_cron'",
		"cron.database_name":       "'app'",
		"cron.host":                "'127.0.0.1'",
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Destroy() })
	pgtest.Exec(t, c.DSN("postgres"), `CREATE DATABASE app`)
	pgtest.Exec(t, c.DSN("app"), `CREATE EXTENSION pg_cron`)
	e := newEnvOn(t, c.DSN("app"), time.Minute)
	if n := e.Count(`SELECT count(*) FROM cron.job WHERE jobname = 'iasql_cycle' AND schedule = '* * * * *' AND command = 'SELECT public.iasql_cycle_tick()'`); n != 1 {
		t.Fatalf("no pg_cron job iasql_cycle every minute")
	}
	// A bucket made elsewhere is imported by the next scheduled cycle.
	if _, err := e.s3.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String("cron-imported")}); err != nil {
		t.Fatal(err)
	}
	// A scheduled cycle may have started before the bucket was made, and the
	// import is committed before its cycle's end record: wait for both.
	testkit.Until(t, 150*time.Second, "a pg_cron-driven cycle importing the bucket", func() bool {
		return e.Count(`SELECT count(*) FROM bucket WHERE name = 'cron-imported'`) == 1 &&
			e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'schedule' AND message LIKE '%create database%'`) > 0
	})
	if n := e.Count(`SELECT count(*) FROM cron.job_run_details d JOIN cron.job j USING (jobid) WHERE j.jobname = 'iasql_cycle' AND d.status = 'succeeded'`); n == 0 {
		t.Error("pg_cron recorded no successful run of iasql_cycle")
	}
}
