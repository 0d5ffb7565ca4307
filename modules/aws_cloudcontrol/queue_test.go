package aws_cloudcontrol_test

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

const queue = "AWS::SQS::Queue"

// queues lists the queues in the cloud, by name.
func (c *cc) queues() map[string]string {
	c.t.Helper()
	out := map[string]string{}
	p := cloudcontrol.NewListResourcesPaginator(c.client, &cloudcontrol.ListResourcesInput{TypeName: aws.String(queue)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			c.t.Fatal(err)
		}
		for _, d := range page.ResourceDescriptions {
			url := aws.ToString(d.Identifier)
			out[url[strings.LastIndex(url, "/")+1:]] = url
		}
	}
	return out
}

// noticeConn is a user's session that keeps the NOTICEs it receives.
func noticeConn(t *testing.T, dsn string) (*pgx.Conn, func() []string) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var notices []string
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		mu.Lock()
		defer mu.Unlock()
		notices = append(notices, n.Message)
	}
	conn, err := pgx.ConnectConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string{}, notices...)
	}
}

// TestQueueEndToEnd: a type whose identity the cloud generates (an SQS
// queue's URL): the commit waits for the slow create with NOTICE progress
// and returns with the URL in the row; updates in place, a create-only
// change replaces under a new URL keeping the row's id, deletes.
func TestQueueEndToEnd(t *testing.T) {
	t.Parallel()
	e, c := env(t, 1500*time.Millisecond, queue)
	user, notices := noticeConn(t, e.DSN)
	ctx := context.Background()

	if _, err := user.Exec(ctx, `INSERT INTO aws_sqs_queue (queue_name, delay_seconds) VALUES ('jobs', 5)`); err != nil {
		t.Fatal(err)
	}
	if _, err := user.Exec(ctx, `CALL iasql_commit()`); err != nil {
		t.Fatal(err)
	}
	url := e.String(`SELECT queue_url FROM aws_sqs_queue WHERE queue_name = 'jobs'`)
	if url == "" || c.queues()["jobs"] != url {
		t.Fatalf("row's queue_url %q; the cloud's queues %v", url, c.queues())
	}
	if n := notices(); !strings.Contains(strings.Join(n, "\n"), "waiting for 1 operation(s) in the cloud") {
		t.Errorf("the commit said nothing while it waited: %q", n)
	}
	id := e.Count(`SELECT id FROM aws_sqs_queue WHERE queue_name = 'jobs'`)

	// Nothing to do: no mutating call.
	e.Emu.Reset()
	e.Refresh()
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle over an unchanged queue made %v", m)
	}

	// Update in place.
	e.Exec(`UPDATE aws_sqs_queue SET delay_seconds = 10 WHERE queue_name = 'jobs'`)
	e.Commit()
	if got := c.get(queue, url); got["DelaySeconds"] != float64(10) {
		t.Errorf("jobs after the update: %v", got)
	}

	// Preview equals what commit then does; a create-only change (the
	// name) replaces the queue under a new URL, the row keeping its id.
	e.Exec(`CALL iasql_begin()`, `UPDATE aws_sqs_queue SET queue_name = 'jobs2' WHERE id = `+strconv.Itoa(id))
	preview := e.String(`SELECT string_agg(action || ' ' || direction || ' ' || table_name, '; ' ORDER BY action) FROM iasql_preview()`)
	if preview != "replace cloud aws_sqs_queue" {
		t.Errorf("preview %q; want one replacement", preview)
	}
	e.Commit()
	did := e.String(`SELECT string_agg((a->>'action') || ' ' || (a->>'direction') || ' ' || (a->>'table_name'), '; ' ORDER BY a->>'action')
		FROM iasql_requests r, jsonb_array_elements(r.result->'actions') a
		WHERE r.kind = 'commit' AND r.finished_at = (SELECT max(finished_at) FROM iasql_requests WHERE kind = 'commit') AND a->>'table_name' = 'aws_sqs_queue'`)
	// What preview showed, and the replaced queue's deletion it entails.
	if did != "delete cloud aws_sqs_queue; "+preview {
		t.Errorf("commit did %q; preview said %q (and the old queue's delete follows)", did, preview)
	}
	qs := c.queues()
	newURL := e.String(`SELECT queue_url FROM aws_sqs_queue WHERE id = $1`, id)
	if _, old := qs["jobs"]; old || qs["jobs2"] == "" || qs["jobs2"] != newURL || newURL == url {
		t.Errorf("after the replacement: cloud %v, row's URL %q (was %q)", qs, newURL, url)
	}

	// Delete.
	e.Exec(`DELETE FROM aws_sqs_queue WHERE id = ` + strconv.Itoa(id))
	e.Commit()
	if qs := c.queues(); len(qs) != 0 {
		t.Errorf("queues left in the cloud: %v", qs)
	}
}

// TestCreateResumesAfterCrash: the sidecar stops while Cloud Control works
// on a create; the next sidecar asks about the persisted request (or, if
// the stop came before it was persisted, repeats the create with the same
// client token) and the row gets the resource: never a second one.
func TestCreateResumesAfterCrash(t *testing.T) {
	t.Parallel()
	e, c := env(t, 2*time.Second, queue)
	e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('resume')`)
	commit := make(chan error, 1)
	go func() {
		conn, _ := noticeConn(t, e.DSN)
		_, err := conn.Exec(context.Background(), `CALL iasql_commit()`)
		commit <- err
	}()
	testkit.Until(t, 20*time.Second, "the create to reach the cloud", func() bool {
		return e.Emu.Calls()["cloudcontrolapi:CreateResource"] > 0
	})
	e.Stop()
	if err := <-commit; err == nil {
		t.Log("the commit finished before the sidecar stopped")
	}
	e.StartSidecar(true)
	e.Commit()
	qs := c.queues()
	if len(qs) != 1 || qs["resume"] == "" {
		t.Fatalf("queues in the cloud: %v; want exactly the one", qs)
	}
	if url := e.String(`SELECT queue_url FROM aws_sqs_queue WHERE queue_name = 'resume'`); url != qs["resume"] {
		t.Errorf("row's URL %q, the cloud's %q", url, qs["resume"])
	}
}

// TestFailuresConverge: throttled calls and handler failures that AWS
// says to retry converge; a terminal failure fails the commit with AWS's
// code and message, and iasql_status shows it.
func TestFailuresConverge(t *testing.T) {
	t.Parallel()
	e, c := env(t, 100*time.Millisecond, queue)
	e.Emu.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.Throttle, Times: 2})
	e.Emu.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.HandlerFailure, ErrorCode: "ServiceInternalError", Times: 1})
	e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('retried')`)
	e.Commit()
	if qs := c.queues(); len(qs) != 1 || qs["retried"] == "" {
		t.Fatalf("queues after retryable failures: %v; want exactly 'retried'", qs)
	}

	e.Emu.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.HandlerFailure, ErrorCode: "InvalidRequest", Times: 1})
	e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('refused')`)
	_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
	if err == nil || !strings.Contains(err.Error(), "InvalidRequest") {
		t.Fatalf("commit of a create the cloud refuses: %v; want it to name InvalidRequest", err)
	}
	status := e.String(`SELECT state || ': ' || last_error FROM iasql_status WHERE table_name = 'aws_sqs_queue'`)
	if !strings.HasPrefix(status, "failed: ") || !strings.Contains(status, "InvalidRequest") || !strings.Contains(status, "injected by the emulator") {
		t.Errorf("iasql_status says %q; want the failure with AWS's code and message", status)
	}
}

// TestModes: TRACK refuses a user's write to a type's table; ENFORCE
// reverts a change made in the cloud.
func TestModes(t *testing.T) {
	t.Parallel()
	const lg = "AWS::Logs::LogGroup"
	e, c := env(t, 0, lg)
	// The rule comes first: an automatic cycle (the INSERT below schedules
	// one) that read the modes before a rule and the cloud after the
	// change made elsewhere would rightly pull that change into the row.
	e.Exec(`INSERT INTO iasql_mode (table_name, mode) VALUES ('aws_logs_log_group', 'ENFORCE')`)
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name, retention_in_days) VALUES ('kept', 7)`)
	e.Commit()

	c.update(lg, "kept", `[{"op": "replace", "path": "/RetentionInDays", "value": 90}]`)
	e.Refresh()
	if got := c.get(lg, "kept"); got["RetentionInDays"] != float64(7) {
		t.Errorf("under ENFORCE, the cloud's change stayed: %v", got)
	}

	// A cycle under way (one polling the revert above) keeps the modes it
	// read: the iasql transaction waits for it and holds the next, so the
	// cycle that reads the change below reads TRACK.
	e.Exec(`CALL iasql_begin()`, `UPDATE iasql_mode SET mode = 'TRACK' WHERE table_name = 'aws_logs_log_group'`)
	_, err := e.DB.Exec(context.Background(), `UPDATE aws_logs_log_group SET retention_in_days = 30 WHERE log_group_name = 'kept'`)
	if err == nil || !strings.Contains(err.Error(), "TRACK") {
		t.Errorf("a write under TRACK: %v; want it refused naming the rule", err)
	}
	c.update(lg, "kept", `[{"op": "replace", "path": "/RetentionInDays", "value": 90}]`)
	e.Commit() // a commit reads a TRACK table whole
	if n := e.Count(`SELECT retention_in_days FROM aws_logs_log_group WHERE log_group_name = 'kept'`); n != 90 {
		t.Errorf("under TRACK the row has %d; want the cloud's 90", n)
	}
}

// TestQueueNameLeftToCloud: a queue inserted without a name (AWS:
// "If you don't specify a name, AWS CloudFormation generates a unique
// physical ID and uses that ID for the queue name") is created once; the
// name Cloud Control chose is written into the row, which is then in sync:
// no replacement, no update, and commits about other records go on. A
// later explicit name is a change of the create-only column: a
// replacement.
func TestQueueNameLeftToCloud(t *testing.T) {
	t.Parallel()
	e, c := env(t, 0, queue)
	e.Exec(`INSERT INTO aws_sqs_queue (tags) VALUES ('{"x": "1"}')`)
	e.Commit()
	qs := c.queues()
	name := e.String(`SELECT queue_name FROM aws_sqs_queue`)
	if len(qs) != 1 || name == "" || qs[name] == "" || qs[name] != e.String(`SELECT queue_url FROM aws_sqs_queue`) {
		t.Fatalf("the cloud's queues %v; the row's name %q: want one queue, its generated name in the row", qs, name)
	}
	if calls := e.Emu.Calls(); calls["cloudcontrolapi:CreateResource"] != 1 || calls["cloudcontrolapi:DeleteResource"] != 0 || calls["cloudcontrolapi:UpdateResource"] != 0 {
		t.Errorf("the commit made %d create(s), %d update(s), %d delete(s); want one create", calls["cloudcontrolapi:CreateResource"],
			calls["cloudcontrolapi:UpdateResource"], calls["cloudcontrolapi:DeleteResource"])
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d record(s) not in sync: %s", n, e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, state, action, last_error), '; ') FROM iasql_status`))
	}

	// In sync from now on: cycles make no call that changes anything, and
	// a commit about another record succeeds.
	e.Emu.Reset()
	e.Refresh()
	e.Exec(`INSERT INTO aws_sqs_queue (queue_name) VALUES ('other')`)
	e.Commit()
	e.Refresh()
	if m := e.Mutations(); m["cloudcontrolapi:CreateResource"] != 1 || len(m) != 1 {
		t.Errorf("after the queue was in sync, cycles made %v; want the other queue's create only", m)
	}
	if got := e.String(`SELECT queue_name FROM aws_sqs_queue WHERE tags->>'x' = '1'`); got != name {
		t.Errorf("the row's name changed from %q to %q", name, got)
	}

	// An explicit name is a change of a create-only column: replaced.
	e.Emu.Reset()
	e.Exec(`UPDATE aws_sqs_queue SET queue_name = 'named' WHERE tags->>'x' = '1'`)
	e.Commit()
	if qs := c.queues(); qs["named"] == "" || qs[name] != "" {
		t.Errorf("after naming the queue: cloud %v; want 'named' in place of %q", qs, name)
	}
	if m := e.Mutations(); m["cloudcontrolapi:CreateResource"] != 1 || m["cloudcontrolapi:DeleteResource"] != 1 {
		t.Errorf("the rename made %v; want one create and one delete (a replacement)", m)
	}

	// The name left to the cloud again, with a create-only change: the new
	// queue gets a name of the cloud's choosing (the old one's is taken).
	e.Exec(`UPDATE aws_sqs_queue SET queue_name = NULL, fifo_queue = true WHERE tags->>'x' = '1'`)
	e.Commit()
	fifo := e.String(`SELECT queue_name FROM aws_sqs_queue WHERE tags->>'x' = '1'`)
	if qs := c.queues(); !strings.HasSuffix(fifo, ".fifo") || qs[fifo] == "" || qs["named"] != "" {
		t.Errorf("after a FIFO change with the name left to the cloud: cloud %v, the row's name %q; want a new generated .fifo name", qs, fifo)
	}
}
