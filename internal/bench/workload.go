package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

const (
	clients = 2 // the machine has 2 cores
	// The writer-cost phase (see writerCost): warm-up per variant, then
	// slices of sliceDuration per variant, in alternating order.
	clusterWarmup = 8 * time.Second
	warmup        = 4 * time.Second
	slices        = 6
	sliceDuration = 5 * time.Second
	lagRate       = 1000 // changes per second
	lagDuration   = 20 * time.Second
	seedRows      = 100000
	// Each pgbench run inserts ids base + client_id*idsPerClient + n, with a
	// base of its own, so runs in one database never collide.
	idsPerClient = 10000000
)

// A workload is what the writers do: pgbench scripts, chosen at random by
// weight, each transaction making exactly changes changes (so the audit rows
// a run should make are known). Variables ins, del and base are per client
// and persist across transactions: a client deletes only rows it inserted,
// so every DELETE finds its row.
type workload struct {
	name    string // "" for the workload the figures are on, else the suffix of its figures
	summary string
	changes int // per transaction
	files   []workloadFile
	args    []string // pgbench's -f arguments (FILE@WEIGHT), once written
}

type workloadFile struct {
	name, body string
	weight     int
}

// transactionWorkload is pgbench's standard transaction shape (its
// TPC-B-like script updates three rows and inserts one in one transaction):
// here three UPDATEs of seeded rows, one INSERT and one DELETE per
// transaction. The figures are on singleWorkload; this one is
// measured beside it (figures suffixed _5change) because with one change per
// transaction and fsync on, writers wait for a WAL flush per change and any
// per-change work done before the commit, the trigger's included, hides in
// that wait: the trigger costs writers next to nothing there, so "capture
// costs at most half of what the trigger costs" is a comparison only where
// transactions carry several changes.
//
// The three UPDATEs take their rows from three disjoint thirds of the seeded
// ids in increasing order, so two clients can never deadlock.
func transactionWorkload() *workload {
	third := seedRows / 3
	return &workload{
		name:    "5change",
		summary: "five changes per transaction: UPDATEs of three random seeded rows, an INSERT of a new row, a DELETE of the row the client inserted in its previous transaction",
		changes: 5,
		files: []workloadFile{{"transaction.sql", `\set id1 random(1, ` + strconv.Itoa(third) + `)
\set id2 random(` + strconv.Itoa(third+1) + `, ` + strconv.Itoa(2*third) + `)
\set id3 random(` + strconv.Itoa(2*third+1) + `, ` + strconv.Itoa(seedRows) + `)
\set ins :ins + 1
\set nid :base + :client_id * ` + strconv.Itoa(idsPerClient) + ` + :ins
BEGIN;
UPDATE bench_item SET qty = qty + 1 WHERE id = :id1;
UPDATE bench_item SET qty = qty - 1 WHERE id = :id2;
UPDATE bench_item SET qty = qty + 1 WHERE id = :id3;
` + insertItem + `
\if :ins > 1
DELETE FROM bench_item WHERE id = :nid - 1;
\else
UPDATE bench_item SET qty = qty + 1 WHERE id = :id1;
\endif
END;
`, 1}},
	}
}

// singleWorkload makes one change per transaction: 60% UPDATE of a random
// seeded row, 20% INSERT, 20% DELETE of a row the client inserted.
func singleWorkload() *workload {
	return &workload{
		summary: "one change per transaction: 60% UPDATE of a random seeded row, 20% INSERT of a new row, 20% DELETE of a row the client inserted",
		changes: 1,
		files: []workloadFile{
			{"update.sql", `\set id random(1, ` + strconv.Itoa(seedRows) + `)
UPDATE bench_item SET qty = qty + 1 WHERE id = :id;
`, 6},
			{"insert.sql", `\set ins :ins + 1
\set nid :base + :client_id * ` + strconv.Itoa(idsPerClient) + ` + :ins
` + insertItem + `
`, 2},
			{"delete.sql", `\if :del < :ins
\set del :del + 1
\set did :base + :client_id * ` + strconv.Itoa(idsPerClient) + ` + :del
DELETE FROM bench_item WHERE id = :did;
\else
\set id random(1, ` + strconv.Itoa(seedRows) + `)
UPDATE bench_item SET qty = qty + 1 WHERE id = :id;
\endif
`, 2},
		},
	}
}

// insertItem inserts the row with id :nid.
const insertItem = `INSERT INTO bench_item (id, name, qty, doc) VALUES (:nid, 'item ' || :nid, 1, jsonb_build_object('color', 'red', 'size', :nid % 7, 'tags', jsonb_build_array('bench', 'new')));`

// write writes w's scripts into dir and sets w.args.
func (w *workload) write(dir string) error {
	for _, f := range w.files {
		p := filepath.Join(dir, w.name+f.name)
		if err := os.WriteFile(p, []byte(f.body), 0o644); err != nil {
			return fmt.Errorf("write pgbench script: %w", err)
		}
		w.args = append(w.args, "-f", fmt.Sprintf("%s@%d", p, f.weight))
	}
	return nil
}

// suffix is what w's figures end with.
func (w *workload) suffix() string {
	if w.name == "" {
		return ""
	}
	return "_" + w.name
}

// The registered-shape table, seeded, and a marker table: inserting a row
// into bench_marker (registered with bench_item in the sidecar runs) and
// waiting for its audit row tells when capture has caught up.
func schema() []string {
	return []string{
		`CREATE TABLE bench_item (id int PRIMARY KEY, name text NOT NULL, qty int NOT NULL, doc jsonb NOT NULL)`,
		`INSERT INTO bench_item
	   SELECT g, 'item ' || g, g % 100,
	          jsonb_build_object('color', (ARRAY['red', 'green', 'blue'])[1 + g % 3], 'size', g % 7, 'tags', jsonb_build_array('bench', 'seed'))
	     FROM generate_series(1, ` + strconv.Itoa(seedRows) + `) g`,
		`CREATE TABLE bench_marker (id int PRIMARY KEY, at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`VACUUM ANALYZE bench_item`,
	}
}

// triggerSchema is the approach of trigger-based audit tools: an AFTER ROW
// trigger that writes the old and new row as JSONB, the table, the operation
// and the transaction id into an audit table (with just a primary key: the
// sidecar's audit log carries two more indexes, so this errs in the
// trigger's favour).
func triggerSchema() []string {
	return []string{
		`CREATE TABLE bench_trigger_audit (
	   id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	   table_name text NOT NULL,
	   op text NOT NULL,
	   txid bigint NOT NULL,
	   old_row jsonb,
	   new_row jsonb,
	   at timestamptz NOT NULL DEFAULT clock_timestamp())`,
		`CREATE FUNCTION bench_audit() RETURNS trigger LANGUAGE plpgsql AS $$
	 BEGIN
	   INSERT INTO bench_trigger_audit (table_name, op, txid, old_row, new_row)
	   VALUES (TG_TABLE_NAME, TG_OP, txid_current(),
	           CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN to_jsonb(OLD) END,
	           CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN to_jsonb(NEW) END);
	   RETURN NULL;
	 END $$`,
		`CREATE TRIGGER bench_audit AFTER INSERT OR UPDATE OR DELETE ON bench_item
	   FOR EACH ROW EXECUTE FUNCTION bench_audit()`,
	}
}

func execAll(ctx context.Context, conn *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}

// newDB creates database name with the seeded schema and connects to it.
func (b *bench) newDB(ctx context.Context, name string) (*pgx.Conn, error) {
	if _, err := b.admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, fmt.Errorf("create database %s: %w", name, err)
	}
	conn, err := pgx.Connect(ctx, b.cluster.DSN(name))
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", name, err)
	}
	if err := execAll(ctx, conn, schema()); err != nil {
		conn.Close(context.Background())
		return nil, fmt.Errorf("seed %s: %w", name, err)
	}
	return conn, nil
}

// dropDB drops database name and the replication slots on it, so that
// nothing of one variant (WAL kept for a slot, buffers) weighs on the next.
func (b *bench) dropDB(ctx context.Context, name string) error {
	deadline := time.Now().Add(15 * time.Second)
	for {
		// A walsender may take a moment to release its slot after its
		// client goes.
		_, err := b.admin.Exec(ctx, `SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE database = $1`, name)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("drop replication slots of %s: %w", name, err)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
	if _, err := b.admin.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
		return fmt.Errorf("drop database %s: %w", name, err)
	}
	return nil
}

// checkpoint starts a measurement from a checkpoint, so that each pays the
// same full-page writes.
func (b *bench) checkpoint(ctx context.Context) error {
	if _, err := b.admin.Exec(ctx, "CHECKPOINT"); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	return nil
}

// pgbenchResult is what a pgbench run reports.
type pgbenchResult struct {
	tps          float64
	transactions int64 // processed
	changes      int64 // transactions times the workload's changes per transaction
	output       string
}

// runPgbench runs workload w against db with clients connections; base
// keeps its inserted ids apart from other runs'. env adds to the
// environment (PGOPTIONS).
func (b *bench) runPgbench(ctx context.Context, w *workload, db string, base int, env []string, args ...string) (pgbenchResult, error) {
	full := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(b.cluster.Port), "-U", b.cluster.User,
		"-n", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients),
		"-D", "ins=0", "-D", "del=0", "-D", "base=" + strconv.Itoa(base)}
	full = append(full, w.args...)
	full = append(full, args...)
	full = append(full, db)
	cmd := exec.CommandContext(ctx, b.pgbench, full...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return pgbenchResult{}, fmt.Errorf("pgbench %s: %w: %s", strings.Join(args, " "), err, tail(strings.TrimSpace(out.String()), 600))
	}
	r, err := parsePgbench(out.String())
	if err != nil {
		return r, fmt.Errorf("pgbench %s: %w", strings.Join(args, " "), err)
	}
	r.changes = r.transactions * int64(w.changes)
	return r, nil
}

// parsePgbench reads "tps = N (without initial connection time)", "number
// of transactions actually processed: N[/M]" and "number of failed
// transactions: N".
func parsePgbench(out string) (pgbenchResult, error) {
	r := pgbenchResult{output: out}
	var haveTPS, haveTx bool
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "tps = "):
			f := strings.Fields(strings.TrimPrefix(line, "tps = "))
			if len(f) == 0 {
				continue
			}
			v, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				return r, fmt.Errorf("parse %q: %w", line, err)
			}
			r.tps, haveTPS = v, true
		case strings.HasPrefix(line, "number of transactions actually processed:"):
			v := strings.TrimSpace(strings.TrimPrefix(line, "number of transactions actually processed:"))
			v, _, _ = strings.Cut(v, "/")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return r, fmt.Errorf("parse %q: %w", line, err)
			}
			r.transactions, haveTx = n, true
		case strings.HasPrefix(line, "number of failed transactions:"):
			f := strings.Fields(strings.TrimPrefix(line, "number of failed transactions:"))
			if len(f) > 0 && f[0] != "0" {
				return r, fmt.Errorf("%s: the workload should never fail", line)
			}
		}
	}
	if !haveTPS || !haveTx {
		return r, fmt.Errorf("no tps or transaction count in its output: %s", tail(strings.TrimSpace(out), 600))
	}
	return r, nil
}

// pgbenchLine returns the first line of pgbench's output that starts with
// prefix, for progress messages.
func pgbenchLine(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return strings.TrimSpace(line)
		}
	}
	return ""
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
