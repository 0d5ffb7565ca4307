package logical_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// The workload's tables: several shapes, a composite key, a TOASTed column
// (STORAGE EXTERNAL so 3 kB values go out of line), numbers, booleans and
// jsonb. An independent row trigger writes every committed change into
// expected_log in the same transaction: that is what the audit trail must
// equal.
const workloadSchema = `
CREATE TABLE item (id int PRIMARY KEY, name text NOT NULL, qty int NOT NULL DEFAULT 0,
                   price numeric(12,2), active boolean NOT NULL DEFAULT true, doc jsonb, big text);
ALTER TABLE item ALTER COLUMN big SET STORAGE EXTERNAL;
CREATE TABLE pair (a int, b text, v bigint NOT NULL DEFAULT 0, note text, PRIMARY KEY (a, b));
CREATE TABLE counter (id bigserial PRIMARY KEY, label text, n int);
CREATE TABLE expected_log (seq bigserial PRIMARY KEY, xid bigint NOT NULL DEFAULT txid_current(),
                           tbl text NOT NULL, op text NOT NULL, old jsonb, new jsonb);
CREATE FUNCTION expect() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO expected_log (tbl, op, new) VALUES (TG_TABLE_NAME, TG_OP, to_jsonb(NEW));
  ELSIF TG_OP = 'UPDATE' THEN
    INSERT INTO expected_log (tbl, op, old, new) VALUES (TG_TABLE_NAME, TG_OP, to_jsonb(OLD), to_jsonb(NEW));
  ELSE
    INSERT INTO expected_log (tbl, op, old) VALUES (TG_TABLE_NAME, TG_OP, to_jsonb(OLD));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER expect AFTER INSERT OR UPDATE OR DELETE ON item FOR EACH ROW EXECUTE FUNCTION expect();
CREATE TRIGGER expect AFTER INSERT OR UPDATE OR DELETE ON pair FOR EACH ROW EXECUTE FUNCTION expect();
CREATE TRIGGER expect AFTER INSERT OR UPDATE OR DELETE ON counter FOR EACH ROW EXECUTE FUNCTION expect();
`

const registerWorkload = `INSERT INTO iasql_tables (table_name) VALUES ('item'), ('pair'), ('counter')`

// workload makes at least n committed changes (counted by expected_log) in
// a mix of single- and multi-statement transactions, some rolled back, some
// with savepoints rolled back, some updating rows with TOASTed values left
// unchanged. It survives connection loss (a server restart): it reconnects
// and goes on; what committed is in expected_log either way.
func workload(ctx context.Context, t testing.TB, dsn string, n int, seed int64) {
	t.Helper()
	rng := rand.New(rand.NewSource(seed))
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.Background())
		}
	}()
	nextID := 0
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if conn == nil || conn.IsClosed() {
			c, err := pgx.Connect(ctx, dsn)
			if err != nil {
				time.Sleep(200 * time.Millisecond)
				continue
			}
			conn = c
			if err := conn.QueryRow(ctx, `SELECT coalesce(max(id), 0) FROM item`).Scan(&nextID); err != nil {
				conn.Close(ctx)
				conn = nil
				continue
			}
		}
		var done int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM expected_log`).Scan(&done); err != nil {
			conn.Close(ctx)
			conn = nil
			continue
		}
		if done >= n {
			return
		}
		if err := oneTransaction(ctx, conn, rng, &nextID); err != nil {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && !strings.HasPrefix(pgErr.Code, "57") && !strings.HasPrefix(pgErr.Code, "08") {
				t.Fatalf("workload statement failed: %v", err)
			}
			conn.Close(context.Background())
			conn = nil
		}
	}
	t.Fatalf("workload did not reach %d changes in time", n)
}

func oneTransaction(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, nextID *int) error {
	kind := rng.Intn(10)
	if kind < 3 { // a single autocommitted statement
		return randomStatement(ctx, conn, rng, nextID)
	}
	if _, err := conn.Exec(ctx, "BEGIN"); err != nil {
		return err
	}
	stmts := 2 + rng.Intn(8)
	for i := 0; i < stmts; i++ {
		if rng.Intn(12) == 0 {
			// A savepoint whose changes are rolled back.
			if _, err := conn.Exec(ctx, "SAVEPOINT s"); err != nil {
				return err
			}
			if err := randomStatement(ctx, conn, rng, nextID); err != nil {
				return err
			}
			if _, err := conn.Exec(ctx, "ROLLBACK TO SAVEPOINT s"); err != nil {
				return err
			}
			continue
		}
		if err := randomStatement(ctx, conn, rng, nextID); err != nil {
			return err
		}
	}
	end := "COMMIT"
	if kind == 9 {
		end = "ROLLBACK"
	}
	_, err := conn.Exec(ctx, end)
	return err
}

func randomStatement(ctx context.Context, conn *pgx.Conn, rng *rand.Rand, nextID *int) error {
	var err error
	pick := func() int { return 1 + rng.Intn(max(*nextID, 1)) }
	switch rng.Intn(11) {
	case 0, 1, 2:
		*nextID++
		big := any(nil)
		if rng.Intn(3) == 0 {
			big = strings.Repeat(fmt.Sprintf("%08x", rng.Uint32()), 500) // 4 kB, out of line
		}
		_, err = conn.Exec(ctx, `INSERT INTO item (id, name, qty, price, active, doc, big) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
			*nextID, fmt.Sprintf("item \"%d\"\n\t'ü'", *nextID), rng.Intn(100), fmt.Sprintf("%d.%02d", rng.Intn(1000), rng.Intn(100)),
			rng.Intn(2) == 0, fmt.Sprintf(`{"k": %d, "tags": ["a", "b"], "nested": {"x": null}}`, rng.Intn(50)), big)
	case 3, 4:
		// Leaves the TOASTed column unchanged.
		_, err = conn.Exec(ctx, `UPDATE item SET qty = qty + 1, active = NOT active WHERE id = $1`, pick())
	case 5:
		_, err = conn.Exec(ctx, `UPDATE item SET big = repeat(md5(random()::text), 120), price = NULL WHERE id = $1`, pick())
	case 6:
		_, err = conn.Exec(ctx, `DELETE FROM item WHERE id = $1`, pick())
	case 7:
		_, err = conn.Exec(ctx, `INSERT INTO pair (a, b, v, note) SELECT $1, g::text, $2, NULL FROM generate_series(1, 3) g ON CONFLICT DO NOTHING`,
			rng.Intn(300), rng.Int63())
	case 8:
		_, err = conn.Exec(ctx, `UPDATE pair SET v = v + 1, note = 'n' || v WHERE a BETWEEN $1 AND $1 + 2`, rng.Intn(300))
	case 9:
		_, err = conn.Exec(ctx, `INSERT INTO counter (label, n) VALUES ($1, $2)`, fmt.Sprintf("c%d", rng.Intn(9)), rng.Intn(1000))
	case 10:
		_, err = conn.Exec(ctx, `DELETE FROM pair WHERE a = $1`, rng.Intn(300))
	}
	return err
}

// compareAudit asserts that the audit trail holds exactly the committed
// changes of expected_log, in commit order, with the same rows.
func compareAudit(t testing.TB, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	var expected, audited int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM expected_log), (SELECT count(*) FROM iasql_audit_log WHERE change_type IN ('INSERT', 'UPDATE', 'DELETE'))`).Scan(&expected, &audited); err != nil {
		t.Fatal(err)
	}
	if expected != audited {
		t.Errorf("audit trail has %d changes, %d were committed", audited, expected)
	}
	// Row by row, in order: expected_log in commit order is its order per
	// transaction, transactions ordered by their first appearance in the
	// audit trail; that the audit trail's order is commit order is checked
	// by its LSNs increasing with id.
	rows, err := conn.Query(ctx, `
		WITH a AS (SELECT row_number() OVER (ORDER BY id) AS rn, * FROM iasql_audit_log WHERE change_type IN ('INSERT', 'UPDATE', 'DELETE')),
		     tx AS (SELECT xid, min(rn) AS first FROM a GROUP BY xid),
		     e AS (SELECT row_number() OVER (ORDER BY tx.first NULLS LAST, l.seq) AS rn, l.*
		             FROM expected_log l LEFT JOIN tx ON tx.xid = (l.xid & 4294967295))
		SELECT coalesce(a.rn, e.rn), a.table_name, e.tbl, a.change_type, e.op,
		       a.old_row = e.old OR (a.old_row IS NULL AND e.old IS NULL),
		       a.new_row = e.new OR (a.new_row IS NULL AND e.new IS NULL),
		       a.xid = (e.xid & 4294967295), a.old_row::text, e.old::text, a.new_row::text, e.new::text
		  FROM a FULL JOIN e ON a.rn = e.rn
		 WHERE a.rn IS NULL OR e.rn IS NULL OR a.table_name <> e.tbl OR a.change_type <> e.op
		    OR NOT (a.old_row = e.old OR (a.old_row IS NULL AND e.old IS NULL))
		    OR NOT (a.new_row = e.new OR (a.new_row IS NULL AND e.new IS NULL))
		    OR a.xid <> (e.xid & 4294967295)
		 ORDER BY 1 LIMIT 5`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var rn int64
		var at, et, ac, eo, ao, eold, an, enew *string
		var oldOK, newOK, xidOK *bool
		if err := rows.Scan(&rn, &at, &et, &ac, &eo, &oldOK, &newOK, &xidOK, &ao, &eold, &an, &enew); err != nil {
			t.Fatal(err)
		}
		t.Errorf("change %d differs: audit %v %v, expected %v %v; old %v vs %v; new %v vs %v; xid equal %v",
			rn, deref(at), deref(ac), deref(et), deref(eo), short(ao), short(eold), short(an), short(enew), deref(xidOK))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	var disorder int
	if err := conn.QueryRow(ctx, `
		SELECT count(*) FROM (SELECT lsn, seq, lag(lsn) OVER (ORDER BY id) AS plsn, lag(seq) OVER (ORDER BY id) AS pseq FROM iasql_audit_log WHERE lsn IS NOT NULL) s
		 WHERE plsn IS NOT NULL AND (lsn < plsn OR (lsn = plsn AND seq <= pseq))`).Scan(&disorder); err != nil {
		t.Fatal(err)
	}
	if disorder != 0 {
		t.Errorf("%d audit rows are out of commit order", disorder)
	}
	var badRecordIDs int
	if err := conn.QueryRow(ctx, `
		SELECT count(*) FROM iasql_audit_log WHERE change_type IN ('INSERT', 'UPDATE', 'DELETE') AND record_id IS DISTINCT FROM CASE table_name
		  WHEN 'pair' THEN jsonb_build_array(coalesce(new_row, old_row)->>'a', coalesce(new_row, old_row)->>'b')::text
		  ELSE coalesce(new_row, old_row)->>'id' END`).Scan(&badRecordIDs); err != nil {
		t.Fatal(err)
	}
	if badRecordIDs != 0 {
		t.Errorf("%d audit rows have a record_id that is not the row's primary key", badRecordIDs)
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func short(p *string) string {
	if p == nil {
		return "<nil>"
	}
	if len(*p) > 200 {
		return (*p)[:200] + "..."
	}
	return *p
}
