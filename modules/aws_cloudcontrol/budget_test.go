package aws_cloudcontrol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/module"
)

// TestListBudget: 50 installed types with no rows and a scheduled cycle
// every second spend at most the list budget (25 Cloud Control calls) a
// cycle, and every type is read within the first few cycles; a type left
// out is named in the cycle's record and unverified in iasql_status with
// when it was last read. A commit still reads what its intent touches.
func TestListBudget(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var types []string
	for i := range 50 {
		name := fmt.Sprintf("Test::Budget::Thing%02d", i)
		types = append(types, name)
		doc := fmt.Sprintf(`{"typeName": %q, "description": "A thing for the list budget's test.",
			"properties": {"Name": {"type": "string", "description": "Name."}, "Size": {"type": "integer", "description": "Size."}},
			"additionalProperties": false, "required": ["Name"], "createOnlyProperties": ["/properties/Name"],
			"primaryIdentifier": ["/properties/Name"],
			"handlers": {"create": {"permissions": []}, "read": {"permissions": []}, "update": {"permissions": []}, "delete": {"permissions": []}, "list": {"permissions": []}}}`, name)
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("thing%02d.json", i)), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	e := enginetest.New(t, srv, enginetest.Options{
		Catalogs: []module.Catalog{aws_cloudcontrol.NewCatalog(1000, aws_cloudcontrol.DefaultBudget)},
		Emulator: emulator.Options{SchemaDir: dir},
		Interval: time.Second,
	})
	list := "'" + strings.Join(types, "', '") + "'"
	e.Exec(`SELECT * FROM iasql_install(` + list + `)`)
	var start int
	if err := e.DB.QueryRow(context.Background(), `SELECT coalesce(max(id), 0) FROM iasql_audit_log`).Scan(&start); err != nil {
		t.Fatal(err)
	}
	e.Emu.Reset()

	// Scheduled cycles after the install: each reads within the budget.
	const cycles = 4
	testkit.WaitQuery(t, e.DB, time.Minute, fmt.Sprintf("%d scheduled cycles", cycles),
		`SELECT count(*) >= $2 FROM iasql_audit_log WHERE id > $1 AND change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'schedule'`, start, cycles)
	calls := e.Emu.Calls()["cloudcontrolapi:ListResources"] + e.Emu.Calls()["cloudcontrolapi:GetResource"]
	var ended int
	if err := e.DB.QueryRow(context.Background(), `SELECT count(*) FROM iasql_audit_log WHERE id > $1 AND change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'schedule'`, start).Scan(&ended); err != nil {
		t.Fatal(err)
	}
	// A cycle may be under way as the calls are counted: one more budget.
	if limit := aws_cloudcontrol.DefaultBudget * (ended + 1); calls > limit {
		t.Errorf("%d Cloud Control calls in %d scheduled cycles (and one under way), more than the budget of %d a cycle", calls, ended, aws_cloudcontrol.DefaultBudget)
	}

	// Every type read in the first cycles: not among the unread of all of them.
	rows, err := e.DB.Query(context.Background(), `SELECT message::jsonb->'unread' FROM iasql_audit_log WHERE id > $1 AND change_type = 'CYCLE_END' AND message::jsonb->>'reason' = 'schedule' ORDER BY id LIMIT $2`, start, cycles)
	if err != nil {
		t.Fatal(err)
	}
	unreadAll := map[string]int{}
	n := 0
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			t.Fatal(err)
		}
		var unread []string
		if raw != nil {
			if err := json.Unmarshal(raw, &unread); err != nil {
				t.Fatal(err)
			}
		}
		if len(unread) == 0 || len(unread) >= len(types) {
			t.Errorf("scheduled cycle %d left %d of %d types unread; want some read, some left", n+1, len(unread), len(types))
		}
		for _, u := range unread {
			unreadAll[u]++
		}
		n++
	}
	for tbl, k := range unreadAll {
		if k == n {
			t.Errorf("%s was not read in any of the first %d scheduled cycles", tbl, n)
		}
	}

	// iasql_status says which are not read, and since when.
	if got := e.Count(`SELECT count(*) FROM iasql_unverified WHERE error LIKE 'not read in this cycle: the Cloud Control list budget (25 calls a scheduled cycle) went to other tables; last read %'`); got == 0 {
		t.Error("iasql_unverified names no table left unread for the budget")
	}

	// A commit reads what its intent touches, whatever the budget.
	e.Exec(`INSERT INTO test_budget_thing07 (name, size) VALUES ('seven', 7)`, `CALL iasql_commit()`)
	if n := e.Count(`SELECT count(*) FROM test_budget_thing07 WHERE name = 'seven'`); n != 1 {
		t.Error("the committed row is gone")
	}
}
