package bridge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// row is a module-table row as the cycle read it.
type row struct {
	id      string
	xmin    string        // the row version the read saw: writes are conditional on it
	db      module.Record // as stored (refs are ids)
	cloud   module.Record // in cloud form (refs are the referenced resources' cloud ids)
	cloudID string
}

// record is what iasql_records says of one record.
type record struct {
	cloudID string
	enacted pglogrepl.LSN
}

// tableState is everything a cycle knows of one table.
type tableState struct {
	spec    module.Table
	mapper  module.Mapper
	rows    map[string]*row          // by id
	byCloud map[string]*row          // by cloud id
	cloud   map[string]module.Record // by cloud id
	records map[string]record        // by record id
	recBy   map[string]string        // cloud id -> record id
	intent  map[string]pglogrepl.LSN // record id -> newest pending user change
}

// snapshot is the state of every installed table at one point.
type snapshot struct {
	lsn    pglogrepl.LSN // every change the read saw committed before it
	tables []*tableState // in dependency order
	byName map[string]*tableState
}

// cloudID renders the identity columns of a cloud-form record.
func cloudID(spec module.Table, r module.Record) string {
	if len(spec.CloudID) == 1 {
		return r.String(spec.CloudID[0])
	}
	parts := make([]string, len(spec.CloudID))
	for i, c := range spec.CloudID {
		parts[i] = r.String(c)
	}
	js, _ := json.Marshal(parts)
	return string(js)
}

// readDB reads the rows of every table in one REPEATABLE READ snapshot and
// the WAL position that covers every commit the snapshot sees.
func readDB(ctx context.Context, conn *pgx.Conn, specs []module.Table) (pglogrepl.LSN, map[string]map[string]*row, error) {
	var lsn pglogrepl.LSN
	out := map[string]map[string]*row{}
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The first statement takes the snapshot: every commit it sees was
		// inserted in the WAL before this position.
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
			return fmt.Errorf("read WAL position: %w", err)
		}
		for _, t := range specs {
			rows, err := tx.Query(ctx, `SELECT id::text, xmin::text, to_jsonb(t)::text FROM `+pgx.Identifier{t.Name}.Sanitize()+` t`)
			if err != nil {
				return fmt.Errorf("read table %s: %w", t.Name, err)
			}
			m := map[string]*row{}
			for rows.Next() {
				var id, xmin, js string
				if err := rows.Scan(&id, &xmin, &js); err != nil {
					rows.Close()
					return fmt.Errorf("read table %s: %w", t.Name, err)
				}
				rec, err := decodeRecord(js)
				if err != nil {
					rows.Close()
					return fmt.Errorf("decode row %s of %s: %w", id, t.Name, err)
				}
				m[id] = &row{id: id, xmin: xmin, db: rec}
			}
			if err := rows.Err(); err != nil {
				return fmt.Errorf("read table %s: %w", t.Name, err)
			}
			out[t.Name] = m
		}
		return nil
	})
	return lsn, out, err
}

func decodeRecord(js string) (module.Record, error) {
	d := json.NewDecoder(strings.NewReader(js))
	d.UseNumber()
	var rec module.Record
	if err := d.Decode(&rec); err != nil {
		return nil, err
	}
	return rec, nil
}

func encodeRecord(r module.Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(r)
	return bytes.TrimSpace(b.Bytes())
}

// readRecords reads iasql_records for the tables.
func readRecords(ctx context.Context, conn *pgx.Conn, tables []string) (map[string]map[string]record, error) {
	rows, err := conn.Query(ctx, `SELECT table_name, record_id, coalesce(cloud_id, ''), enacted_lsn::text FROM public.iasql_records WHERE table_name = ANY($1)`, tables)
	if err != nil {
		return nil, fmt.Errorf("read record state: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]record{}
	for rows.Next() {
		var t, id, cid string
		var lsn pglogrepl.LSN
		if err := rows.Scan(&t, &id, &cid, &lsn); err != nil {
			return nil, fmt.Errorf("read record state: %w", err)
		}
		if out[t] == nil {
			out[t] = map[string]record{}
		}
		out[t][id] = record{cloudID: cid, enacted: lsn}
	}
	return out, rows.Err()
}

// readIntent returns, per table and record, the newest user change in
// [low, upto) that is newer than the record's enacted LSN: pending intent.
// A TRUNCATE is a change to every record the table had.
func readIntent(ctx context.Context, conn *pgx.Conn, tables []string, low, upto pglogrepl.LSN, recs map[string]map[string]record) (map[string]map[string]pglogrepl.LSN, error) {
	rows, err := conn.Query(ctx, `
		SELECT a.table_name, coalesce(a.record_id, ''), max(a.lsn)::text
		  FROM public.iasql_audit_log a
		 WHERE a.origin = 'user' AND a.lsn >= $2::text::pg_lsn AND a.lsn < $3::text::pg_lsn
		   AND a.table_name = ANY($1) AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		 GROUP BY 1, 2`, tables, low.String(), upto.String())
	if err != nil {
		return nil, fmt.Errorf("read pending intent: %w", err)
	}
	defer rows.Close()
	out := map[string]map[string]pglogrepl.LSN{}
	add := func(t, id string, lsn pglogrepl.LSN) {
		if r, ok := recs[t][id]; ok && r.enacted >= lsn {
			return
		}
		if out[t] == nil {
			out[t] = map[string]pglogrepl.LSN{}
		}
		if lsn > out[t][id] {
			out[t][id] = lsn
		}
	}
	var truncates [][2]string
	for rows.Next() {
		var t, id, lsnText string
		if err := rows.Scan(&t, &id, &lsnText); err != nil {
			return nil, fmt.Errorf("read pending intent: %w", err)
		}
		lsn, err := pglogrepl.ParseLSN(lsnText)
		if err != nil {
			return nil, fmt.Errorf("parse LSN %q: %w", lsnText, err)
		}
		if id == "" {
			truncates = append(truncates, [2]string{t, lsnText})
			continue
		}
		add(t, id, lsn)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read pending intent: %w", err)
	}
	for _, tr := range truncates {
		lsn, _ := pglogrepl.ParseLSN(tr[1])
		for id := range recs[tr[0]] {
			add(tr[0], id, lsn)
		}
	}
	return out, nil
}

// errNoParent means a reference could not be translated yet.
var errNoParent = errors.New("referenced record not found")

// toCloud translates a row's refs from ids to the referenced resources'
// cloud ids.
func toCloud(spec module.Table, r module.Record, snap *snapshot) (module.Record, error) {
	out := make(module.Record, len(r))
	for k, v := range r {
		out[k] = v
	}
	for col, parent := range spec.Refs {
		if r[col] == nil {
			continue
		}
		p := snap.byName[parent]
		if p == nil {
			return nil, fmt.Errorf("%s.%s references %s, which is not installed", spec.Name, col, parent)
		}
		pr := p.rows[r.String(col)]
		if pr == nil {
			return nil, fmt.Errorf("%s.%s = %s: %w in %s", spec.Name, col, r.String(col), errNoParent, parent)
		}
		out[col] = pr.cloudID
	}
	return out, nil
}

// toDB translates a cloud record's refs to ids and keeps only the columns
// the engine writes (declarative and feedback).
func toDB(spec module.Table, c module.Record, snap *snapshot) (module.Record, error) {
	out := module.Record{}
	for _, col := range append(append([]string{}, spec.Declarative...), spec.Feedback...) {
		out[col] = c[col]
	}
	for col, parent := range spec.Refs {
		if c[col] == nil {
			continue
		}
		p := snap.byName[parent]
		if p == nil {
			return nil, fmt.Errorf("%s.%s references %s, which is not installed", spec.Name, col, parent)
		}
		pr := p.byCloud[c.String(col)]
		if pr == nil {
			return nil, fmt.Errorf("%s %s: %w (%s %s)", spec.Name, cloudID(spec, c), errNoParent, parent, c.String(col))
		}
		out[col] = json.Number(pr.id)
	}
	return out, nil
}
