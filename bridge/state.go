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
	// seen: record id -> the newest user change the read's snapshot sees;
	// acting on the record enacts it up to there, and no further.
	seen map[string]pglogrepl.LSN
}

// snapshot is the state of every installed table at one point.
type snapshot struct {
	lsn    pglogrepl.LSN // every change the read saw committed before it
	vis    visibility    // which transactions the read saw
	low    pglogrepl.LSN // where the next cycle's intent query may start
	modes  modeRules
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
func readDB(ctx context.Context, conn *pgx.Conn, specs []module.Table) (pglogrepl.LSN, visibility, map[string]map[string]*row, error) {
	var lsn pglogrepl.LSN
	var vis visibility
	out := map[string]map[string]*row{}
	err := pgx.BeginTxFunc(ctx, conn, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		// The first statement takes the snapshot: every commit it sees was
		// inserted in the WAL before this position. (The converse does not
		// hold: a commit record is written before its transaction becomes
		// visible, so which changes the read saw is told by the snapshot's
		// transaction ids, not by LSNs.)
		var snap string
		if err := tx.QueryRow(ctx, `SELECT pg_catalog.pg_current_wal_insert_lsn()::text, pg_catalog.pg_current_snapshot()::text`).Scan(&lsn, &snap); err != nil {
			return fmt.Errorf("read WAL position: %w", err)
		}
		var err error
		if vis, err = parseSnapshot(snap); err != nil {
			return err
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
	return lsn, vis, out, err
}

// visibility is a pg_snapshot: which transactions a read saw.
type visibility struct {
	xmin, xmax uint64
	inProgress map[uint64]bool
}

func parseSnapshot(s string) (visibility, error) {
	v := visibility{inProgress: map[uint64]bool{}}
	parts := strings.SplitN(s, ":", 3)
	if len(parts) != 3 {
		return v, fmt.Errorf("unexpected snapshot %q", s)
	}
	if _, err := fmt.Sscan(parts[0], &v.xmin); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if _, err := fmt.Sscan(parts[1], &v.xmax); err != nil {
		return v, fmt.Errorf("snapshot %q: %w", s, err)
	}
	for _, x := range strings.Split(parts[2], ",") {
		if x == "" {
			continue
		}
		var id uint64
		if _, err := fmt.Sscan(x, &id); err != nil {
			return v, fmt.Errorf("snapshot %q: %w", s, err)
		}
		v.inProgress[id] = true
	}
	return v, nil
}

// sees reports whether a committed transaction, by its 32-bit id (as
// logical decoding gives it), is visible to the snapshot.
func (v visibility) sees(xid32 uint32) bool {
	// Widen to 64 bits as the id nearest xmax (transaction ids compare
	// modulo 2^32 within half the space, as PostgreSQL's own do).
	full := uint64(int64(v.xmax) + int64(int32(xid32-uint32(v.xmax))))
	if full >= v.xmax {
		return false
	}
	return full < v.xmin || !v.inProgress[full]
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

// readIntent reads the user changes from low on and keeps those the
// snapshot saw: per table and record, the newest one (seen) and, where it is
// newer than the record's enacted LSN, the pending intent. A TRUNCATE is a
// change to every record the table had. It also returns where the next
// cycle's query may start: below it every change is seen or enacted.
func readIntent(ctx context.Context, conn *pgx.Conn, tables []string, low, upto pglogrepl.LSN, vis visibility,
	recs map[string]map[string]record) (intent, seen map[string]map[string]pglogrepl.LSN, next pglogrepl.LSN, err error) {
	rows, err := conn.Query(ctx, `
		SELECT table_name, coalesce(record_id, ''), lsn::text, xid
		  FROM public.iasql_audit_log
		 WHERE origin = 'user' AND lsn >= $2::text::pg_lsn
		   AND table_name = ANY($1) AND change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		 ORDER BY lsn, seq`, tables, low.String())
	if err != nil {
		return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
	}
	defer rows.Close()
	intent, seen = map[string]map[string]pglogrepl.LSN{}, map[string]map[string]pglogrepl.LSN{}
	next = upto
	note := func(m map[string]map[string]pglogrepl.LSN, t, id string, lsn pglogrepl.LSN) {
		if m[t] == nil {
			m[t] = map[string]pglogrepl.LSN{}
		}
		if lsn > m[t][id] {
			m[t][id] = lsn
		}
	}
	add := func(t, id string, lsn pglogrepl.LSN) {
		note(seen, t, id, lsn)
		if r, ok := recs[t][id]; !ok || r.enacted < lsn {
			note(intent, t, id, lsn)
		}
	}
	for rows.Next() {
		var t, id, lsnText string
		var xid int64
		if err := rows.Scan(&t, &id, &lsnText, &xid); err != nil {
			return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
		}
		lsn, err := pglogrepl.ParseLSN(lsnText)
		if err != nil {
			return nil, nil, 0, fmt.Errorf("parse LSN %q: %w", lsnText, err)
		}
		if !vis.sees(uint32(xid)) {
			// Committed after the read: the next cycle's. Its LSN may be
			// below the read's position, so the next query starts there.
			if lsn < next {
				next = lsn
			}
			continue
		}
		if id == "" {
			for rid := range recs[t] {
				add(t, rid, lsn)
			}
			continue
		}
		add(t, id, lsn)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, 0, fmt.Errorf("read pending intent: %w", err)
	}
	return intent, seen, next, nil
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
