package bridge

// Record scope: what a cycle someone waits for (commit, rollback, preview)
// reads. It acts on the records with pending intent, work under way or a
// replacement, so it reads those rows (and, as context never planned, the
// rows that reference them, for preview's cascades), and asks the mapper
// for their resources one by one (module.Getter) instead of listing the
// table: a commit beside 10,000 buckets costs what a commit beside none
// does. Everything else is left as the last automatic cycle read it
// (iasql_refresh reads it all now).
//
// A table is read whole instead when a record-by-record read cannot tell
// it all: a read-only table; a table under an ENFORCE or TRACK rule (those
// modes are about drift); a table with a part unverified (only a whole
// read can say it is verified again); a table with acting records whose mapper cannot
// Get, whose identities the cloud generates (rows to create are found by
// client token) or that references other tables (a resource to import
// names its parent by cloud identity); a TRUNCATE, a replacement in
// progress, a resource the engine must delete that has no row; in a later
// pass, a table whose resources the cloud makes by itself under a parent
// the cycle changed (module.Table.MadeByCloud: a VPC's default security
// group), and any table under a replacement (it moves what references it).
// The tables a table read whole references are read whole too.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// readScope says how a cycle reads each table: whole, or only the records
// in ids (acting) and context (read for reference, never planned).
type readScope struct {
	whole   map[string]bool
	acting  map[string]map[string]bool
	context map[string]map[string]bool
}

// byRecord reports whether table is read by record, not whole.
func (s *readScope) byRecord(table string) bool { return s != nil && !s.whole[table] }

// rowsOf returns the row ids a table read by record reads (acting and
// context); nil for a table read whole.
func (s *readScope) rowsOf(table string) []string {
	if !s.byRecord(table) {
		return nil
	}
	ids := make([]string, 0, len(s.acting[table])+len(s.context[table]))
	for id := range s.acting[table] {
		ids = append(ids, id)
	}
	for id := range s.context[table] {
		if !s.acting[table][id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// actingSet is what the engine's state says a cycle acts on, by table:
// records with user changes newer than their enactment, operations and
// replacements; and which tables need a whole read for it.
type actingSet struct {
	ids       map[string]map[string]bool
	truncated map[string]bool // a TRUNCATE is pending
	noRow     map[string]bool // an operation on a resource that has no row
	replacing map[string]bool // a replacement in progress
	// unverified: the last read of the table failed somewhere; a whole
	// read tells whether it still does (iasql_status says what it finds).
	unverified map[string]bool
}

// readActing reads the acting set from low on. Called once capture has
// recorded every change committed before the cycle began, it holds every
// record a change committed before then made pending.
func readActing(ctx context.Context, conn *pgx.Conn, tables []string, low pglogrepl.LSN) (actingSet, error) {
	s := actingSet{ids: map[string]map[string]bool{}, truncated: map[string]bool{}, noRow: map[string]bool{},
		replacing: map[string]bool{}, unverified: map[string]bool{}}
	rows, err := conn.Query(ctx, `
		SELECT a.table_name, coalesce(a.record_id, ''), 'intent'
		  FROM public.iasql_audit_log a
		  LEFT JOIN public.iasql_records r ON r.table_name = a.table_name AND r.record_id = a.record_id
		 WHERE a.origin = 'user' AND a.lsn >= $2::text::pg_lsn AND a.table_name = ANY($1)
		   AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
		   AND (r.enacted_lsn IS NULL OR r.enacted_lsn < a.lsn)
		UNION
		SELECT table_name, coalesce(record_id, ''), 'operation' FROM public.iasql_operations WHERE table_name = ANY($1)
		UNION
		SELECT table_name, record_id, 'replacement' FROM public.iasql_replacements WHERE table_name = ANY($1)
		UNION
		SELECT table_name, '', 'unverified' FROM public.iasql_unverified WHERE table_name = ANY($1)`,
		tables, low.String())
	if err != nil {
		return s, fmt.Errorf("read the records a cycle acts on: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t, id, why string
		if err := rows.Scan(&t, &id, &why); err != nil {
			return s, fmt.Errorf("read the records a cycle acts on: %w", err)
		}
		switch {
		case why == "replacement":
			s.replacing[t] = true
		case why == "unverified":
			s.unverified[t] = true
		case id == "" && why == "intent":
			s.truncated[t] = true
		case id == "":
			s.noRow[t] = true
		}
		if id != "" {
			if s.ids[t] == nil {
				s.ids[t] = map[string]bool{}
			}
			s.ids[t][id] = true
		}
	}
	return s, rows.Err()
}

// scopeFor decides how each table is read (see the comment at the top).
func (c *cycle) scopeFor(acting actingSet, modes modeRules) *readScope {
	s := &readScope{whole: map[string]bool{}, acting: acting.ids, context: map[string]map[string]bool{}}
	// below: tables under one this cycle changed in the cloud, or under a
	// replacement in progress (the cloud changes children with their
	// parents; a replacement moves what references it).
	below := map[string]bool{}
	for _, t := range c.tables { // in dependency order: parents first
		name := t.spec.Name
		for _, parent := range t.spec.Refs {
			if acting.replacing[parent] || below[parent] || (t.spec.MadeByCloud && c.changed[parent]) {
				below[name] = true
			}
		}
		_, gets := t.mapper.(module.Getter)
		byRecord := gets && !generated(t.spec) && len(t.spec.Refs) == 0
		if t.spec.ReadOnly || modes.drifty(name) || acting.truncated[name] || acting.noRow[name] || acting.replacing[name] || acting.unverified[name] ||
			below[name] || (len(acting.ids[name]) > 0 && !byRecord) {
			s.whole[name] = true
		}
	}
	// A table read whole imports what the cloud has, naming parents by
	// cloud identity: the tables it references are read whole too
	// (children before parents: one sweep backwards).
	for i := len(c.tables) - 1; i >= 0; i-- {
		if t := c.tables[i]; s.whole[t.spec.Name] {
			for _, parent := range t.spec.Refs {
				s.whole[parent] = true
			}
		}
	}
	return s
}

// readScoped reads, in the snapshot's transaction, the rows of a table the
// scope reads by record: the acting rows, the rows that reference them
// (what a replacement would move, for preview) and then, as the caller
// walks the tables children first, the rows they reference.
func readScoped(ctx context.Context, tx pgx.Tx, spec module.Table, s *readScope) (map[string]*row, error) {
	var conds []string
	args := []any{s.rowsOf(spec.Name)}
	conds = append(conds, "t.id::text = ANY($1)")
	for col, parent := range spec.Refs {
		if len(s.acting[parent]) == 0 {
			continue
		}
		args = append(args, slices.Collect(maps.Keys(s.acting[parent])))
		conds = append(conds, fmt.Sprintf("t.%s::text = ANY($%d)", pgx.Identifier{col}.Sanitize(), len(args)))
	}
	q := `SELECT id::text, xmin::text, pg_catalog.to_jsonb(t)::text FROM ` + pgx.Identifier{"public", spec.Name}.Sanitize() + ` t WHERE ` + strings.Join(conds, " OR ")
	m, err := scanRows(ctx, tx, spec, q, args...)
	if err != nil {
		return nil, err
	}
	for id, r := range m {
		if !s.acting[spec.Name][id] {
			s.addContext(spec.Name, id)
		}
		for col, parent := range spec.Refs {
			if v := r.db.String(col); v != "" && !s.whole[parent] {
				s.addContext(parent, v)
			}
		}
	}
	return m, nil
}

func (s *readScope) addContext(table, id string) {
	if s.context[table] == nil {
		s.context[table] = map[string]bool{}
	}
	s.context[table][id] = true
}

// isContext reports whether a row was read for reference only: the cycle
// plans nothing for it.
func (s *readScope) isContext(table, id string) bool {
	return s.byRecord(table) && !s.acting[table][id]
}

// getCloud reads the resources of a record-scoped table's acting records:
// the identities their rows have now and those their records last knew.
func (ts *tableState) getCloud(ctx context.Context, s *readScope) error {
	var ids []string
	seen := map[string]bool{}
	add := func(cid string) {
		if cid != "" && !seen[cid] {
			seen[cid] = true
			ids = append(ids, cid)
		}
	}
	for id := range s.acting[ts.spec.Name] {
		add(ts.records[id].cloudID)
		if r := ts.rows[id]; r != nil && r.cloudID != "" {
			add(r.cloudID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	recs, err := ts.mapper.(module.Getter).Get(module.WithFreshRead(ctx), ids)
	if err != nil {
		if recs, err = ts.readFailed(ctx, nil, err); err != nil {
			return fmt.Errorf("read %s from the cloud: %w", ts.spec.Name, err)
		}
	}
	ts.addCloud(recs)
	return nil
}
