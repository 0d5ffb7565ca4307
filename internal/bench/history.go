package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"

	iasqlsql "github.com/iasql/iasql/sql"
)

// History over a large audit trail: history_ms_1m is the median time of
// iasql_history for one record among 1,000,000 audit rows (goal: under 50
// ms), as_of_ms_1m the median time of iasql_as_of for one of the tables at
// a moment in the middle of the trail. The trail holds historyTables
// registered tables of historyRecords records with historyVersions
// versions each (an INSERT then UPDATEs), written with generate_series
// the way the sidecar writes it (session_replication_role = replica
// stands in for the capture lock the audit trail's guard asks for). The
// objects are installed as this build's plain SQL, whatever extension
// files the server has. The calls run as a role that may SELECT the
// tables and not the audit trail, through the view the functions read.
const (
	historyTables   = 10
	historyRecords  = 10000
	historyVersions = 10
	historyCalls    = 50
)

func (b *bench) historyPart(ctx context.Context) error {
	return b.withDB(ctx, "bench_history", func(conn *pgx.Conn) error {
		if _, err := iasqlsql.InstallPlain(ctx, conn); err != nil {
			return fmt.Errorf("install the iasql objects: %w", err)
		}
		for i := range historyTables {
			if _, err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE public.hist_%d (id bigint PRIMARY KEY, name text, size integer)`, i)); err != nil {
				return fmt.Errorf("create the history tables: %w", err)
			}
			if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO iasql_tables (table_name) VALUES ('hist_%d')`, i)); err != nil {
				return fmt.Errorf("register the history tables: %w", err)
			}
		}
		b.logf("history: writing %d audit rows", historyTables*historyRecords*historyVersions)
		start := time.Now()
		// Version v of record r of table t, a second apart per version
		// round, over the last days; ids in time order, as capture writes.
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL session_replication_role = replica`); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
				INSERT INTO public.iasql_audit_log (lsn, seq, ts, table_name, record_id, change_type, old_row, new_row, origin, actor)
				SELECT ('0/' || to_hex(1000000 + n))::pg_lsn, 1, now() - interval '3 days' + n * interval '100 ms',
				       'hist_' || t, r::text, CASE WHEN v = 0 THEN 'INSERT' ELSE 'UPDATE' END,
				       CASE WHEN v > 0 THEN jsonb_build_object('id', r, 'name', 'r' || r, 'size', v - 1) END,
				       jsonb_build_object('id', r, 'name', 'r' || r, 'size', v),
				       CASE WHEN v % 3 = 2 THEN 'cloud' ELSE 'user' END, CASE WHEN v % 3 = 2 THEN NULL ELSE 'app' END
				  FROM generate_series(0, $1 - 1) v, generate_series(0, $2 - 1) r, generate_series(0, $3 - 1) t,
				       LATERAL (SELECT (v * $2 + r) * $3 + t AS n) k
				 ORDER BY n`, historyVersions, historyRecords, historyTables)
			return err
		})
		if err != nil {
			return fmt.Errorf("write the audit rows: %w", err)
		}
		if _, err := conn.Exec(ctx, `VACUUM ANALYZE public.iasql_audit_log`); err != nil {
			return fmt.Errorf("analyze the audit trail: %w", err)
		}
		b.logf("history: audit rows written in %s", time.Since(start).Round(time.Millisecond))
		role := "bench_history_viewer"
		if _, err := conn.Exec(ctx, `CREATE ROLE `+role); err != nil {
			return fmt.Errorf("create the viewer role: %w", err)
		}
		defer func() { _, _ = b.admin.Exec(context.Background(), `DROP ROLE IF EXISTS `+role) }()
		for i := range historyTables {
			if _, err := conn.Exec(ctx, fmt.Sprintf(`GRANT SELECT ON public.hist_%d TO %s`, i, role)); err != nil {
				return fmt.Errorf("grant the history tables: %w", err)
			}
		}
		if _, err := conn.Exec(ctx, `SET ROLE `+role); err != nil {
			return fmt.Errorf("become the viewer: %w", err)
		}
		defer func() {
			_, _ = conn.Exec(context.Background(), `RESET ROLE`)
			_, _ = conn.Exec(context.Background(), `DROP OWNED BY `+role)
		}()
		rng := rand.New(rand.NewPCG(23, 1))
		var hist, asOf []float64
		for i := range historyCalls {
			table := fmt.Sprintf("hist_%d", rng.IntN(historyTables))
			t0 := time.Now()
			var n int
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_history($1, $2)`, table, rng.IntN(historyRecords)).Scan(&n); err != nil {
				return fmt.Errorf("iasql_history: %w", err)
			}
			hist = append(hist, float64(time.Since(t0).Microseconds())/1000)
			if n != historyVersions {
				return fmt.Errorf("iasql_history of a record of %s: %d versions, want %d", table, n, historyVersions)
			}
			if i%10 != 0 {
				continue
			}
			t0 = time.Now()
			if err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_as_of($1, now() - interval '3 days' + interval '50000 s')`, table).Scan(&n); err != nil {
				return fmt.Errorf("iasql_as_of: %w", err)
			}
			asOf = append(asOf, float64(time.Since(t0).Microseconds())/1000)
			if n != historyRecords {
				return fmt.Errorf("iasql_as_of %s: %d rows, want %d", table, n, historyRecords)
			}
		}
		h, a := percentile(hist, 0.5), percentile(asOf, 0.5)
		b.figure("history_ms_1m", "%.2f", h)
		b.figure("as_of_ms_1m", "%.1f", a)
		fmt.Fprintf(b.log, "# goal: history_ms_1m = %.2f < 50: %s (p99 %.2f); as_of_ms_1m: one table of %d records, %d audit rows of it\n",
			h, met(h < 50), percentile(hist, 0.99), historyRecords, historyRecords*historyVersions)
		return nil
	})
}
