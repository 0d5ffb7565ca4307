package bridge_test

import (
	"context"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/module"
)

// TestAuditRetention: with a retention of a second, the history of an
// enacted change is pruned by later cycles (but for the record's newest
// version), while the change of a record still pending (its create keeps
// failing) is kept, however old: it is intent, not history. The intent
// watermark is persisted.
func TestAuditRetention(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{Interval: time.Second, AuditRetention: time.Second,
		Modules: []module.Module{aws_s3.Module()}, Install: []string{"aws_s3"},
		Emulator: emulator.Options{ForeignBuckets: []string{"someone-elses"}}})
	e.Exec(`INSERT INTO bucket (name) VALUES ('history')`)
	e.Commit()
	e.Exec(`INSERT INTO bucket (name) VALUES ('someone-elses')`) // another account's: the create fails
	if _, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`); err == nil {
		t.Fatal("creating another account's bucket succeeded")
	}
	// Of a live record, its newest version stays (iasql_as_of needs it).
	testkit.Until(t, 30*time.Second, "the enacted change's history pruned but for its newest version", func() bool {
		return e.Count(`SELECT count(*) FROM iasql_audit_log a JOIN bucket b ON a.record_id = b.id::text
			WHERE a.table_name = 'bucket' AND b.name = 'history'`) == 1 &&
			e.Count(`SELECT count(*) FROM iasql_audit_log a JOIN bucket b ON a.record_id = b.id::text
			WHERE a.table_name = 'bucket' AND b.name = 'history' AND a.ts < iasql_history_start()`) == 1
	})
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log a JOIN bucket b ON a.record_id = b.id::text
		WHERE a.table_name = 'bucket' AND b.name = 'someone-elses' AND a.change_type = 'INSERT'`); n != 1 {
		t.Errorf("the pending change's audit row was pruned (%d left)", n)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status s JOIN bucket b ON s.record_id = b.id::text WHERE s.table_name = 'bucket' AND b.name = 'someone-elses'`); n != 1 {
		t.Errorf("the failing record is not in iasql_status after the pruning")
	}
	if n := e.Count(`SELECT count(*) FROM iasql_engine_state WHERE intent_low > '0/0' AND pruned_at IS NOT NULL`); n != 1 {
		t.Error("the engine's state (intent watermark, last pruning) was not kept")
	}
}
