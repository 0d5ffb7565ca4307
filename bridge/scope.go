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
type Scope struct {
	Whole   map[string]bool
	Acting  map[string]map[string]bool
	Context map[string]map[string]bool
}

// byRecord reports whether table is read by record, not whole.
func (s *Scope) ByRecord(table string) bool { return s != nil && !s.Whole[table] }

// rowsOf returns the row ids a table read by record reads (acting and
// context); nil for a table read whole.
func (s *Scope) RowsOf(table string) []string {
	if !s.ByRecord(table) {
		return nil
	}
	ids := make([]string, 0, len(s.Acting[table])+len(s.Context[table]))
	for id := range s.Acting[table] {
		ids = append(ids, id)
	}
	for id := range s.Context[table] {
		if !s.Acting[table][id] {
			ids = append(ids, id)
		}
	}
	return ids
}

// actingSet is what the engine's state says a cycle acts on, by table:
// records with user changes newer than their enactment, operations and
// replacements; and which tables need a whole read for it.
type ActingSet struct {
	IDs       map[string]map[string]bool
	Truncated map[string]bool // a TRUNCATE is pending
	NoRow     map[string]bool // an operation on a resource that has no row
	Replacing map[string]bool // a replacement in progress
	// unverified: the last read of the table failed somewhere; a whole
	// read tells whether it still does (iasql_status says what it finds).
	Unverified map[string]bool
}

// readActing reads the acting set from low on. Called once capture has
// recorded every change committed before the cycle began, it holds every
// record a change committed before then made pending.
func ReadActing(ctx context.Context, conn *pgx.Conn, tables []string, low pglogrepl.LSN) (ActingSet, error) {
	s := ActingSet{IDs: map[string]map[string]bool{}, Truncated: map[string]bool{}, NoRow: map[string]bool{},
		Replacing: map[string]bool{}, Unverified: map[string]bool{}}
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
			s.Replacing[t] = true
		case why == "unverified":
			s.Unverified[t] = true
		case id == "" && why == "intent":
			s.Truncated[t] = true
		case id == "":
			s.NoRow[t] = true
		}
		if id != "" {
			if s.IDs[t] == nil {
				s.IDs[t] = map[string]bool{}
			}
			s.IDs[t][id] = true
		}
	}
	return s, rows.Err()
}

// scopeFor decides how each table is read (see the comment at the top).
func (c *cycle) scopeFor(acting ActingSet, modes Modes) *Scope {
	s := &Scope{Whole: map[string]bool{}, Acting: acting.IDs, Context: map[string]map[string]bool{}}
	// below: tables under one this cycle changed in the cloud, or under a
	// replacement in progress (the cloud changes children with their
	// parents; a replacement moves what references it).
	below := map[string]bool{}
	for _, t := range c.tables { // in dependency order: parents first
		name := t.spec.Name
		for _, parent := range t.spec.Refs {
			if acting.Replacing[parent] || below[parent] || (t.spec.MadeByCloud && c.changed[parent]) {
				below[name] = true
			}
		}
		_, gets := t.mapper.(module.Getter)
		byRecord := gets && !Generated(t.spec) && len(t.spec.Refs) == 0
		if t.spec.ReadOnly || modes.Drifty(name) || acting.Truncated[name] || acting.NoRow[name] || acting.Replacing[name] || acting.Unverified[name] ||
			below[name] || (len(acting.IDs[name]) > 0 && !byRecord) {
			s.Whole[name] = true
		}
	}
	// A table read whole imports what the cloud has, naming parents by
	// cloud identity: the tables it references are read whole too
	// (children before parents: one sweep backwards).
	for i := len(c.tables) - 1; i >= 0; i-- {
		if t := c.tables[i]; s.Whole[t.spec.Name] {
			for _, parent := range t.spec.Refs {
				s.Whole[parent] = true
			}
		}
	}
	return s
}

// readScoped reads, in the snapshot's transaction, the rows of a table the
// scope reads by record: the acting rows, the rows that reference them
// (what a replacement would move, for preview) and then, as the caller
// walks the tables children first, the rows they reference.
func ReadScoped(ctx context.Context, tx pgx.Tx, spec module.Table, s *Scope) (map[string]*Row, error) {
	var conds []string
	args := []any{s.RowsOf(spec.Name)}
	conds = append(conds, "t.id::text = ANY($1)")
	for col, parent := range spec.Refs {
		if len(s.Acting[parent]) == 0 {
			continue
		}
		args = append(args, slices.Collect(maps.Keys(s.Acting[parent])))
		conds = append(conds, fmt.Sprintf("t.%s::text = ANY($%d)", pgx.Identifier{col}.Sanitize(), len(args)))
	}
	q := `SELECT id::text, xmin::text, pg_catalog.to_jsonb(t)::text FROM ` + pgx.Identifier{"public", spec.Name}.Sanitize() + ` t WHERE ` + strings.Join(conds, " OR ")
	m, err := scanRows(ctx, tx, spec, q, args...)
	if err != nil {
		return nil, err
	}
	for id, r := range m {
		if !s.Acting[spec.Name][id] {
			s.AddContext(spec.Name, id)
		}
		for col, parent := range spec.Refs {
			if v := r.DB.String(col); v != "" && !s.Whole[parent] {
				s.AddContext(parent, v)
			}
		}
	}
	return m, nil
}

func (s *Scope) AddContext(table, id string) {
	if s.Context[table] == nil {
		s.Context[table] = map[string]bool{}
	}
	s.Context[table][id] = true
}

// isContext reports whether a row was read for reference only: the cycle
// plans nothing for it.
func (s *Scope) IsContext(table, id string) bool {
	return s.ByRecord(table) && !s.Acting[table][id]
}

// getCloud reads the resources of a record-scoped table's acting records:
// the identities their rows have now and those their records last knew.
func (ts *Table) GetCloud(ctx context.Context, s *Scope) error {
	var ids []string
	seen := map[string]bool{}
	add := func(cid string) {
		if cid != "" && !seen[cid] {
			seen[cid] = true
			ids = append(ids, cid)
		}
	}
	for id := range s.Acting[ts.Spec.Name] {
		add(ts.Records[id].CloudID)
		if r := ts.Rows[id]; r != nil && r.CloudID != "" {
			add(r.CloudID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	recs, err := ts.Mapper.(module.Getter).Get(module.WithFreshRead(ctx), ids)
	if err != nil {
		if recs, err = ts.readFailed(ctx, nil, err); err != nil {
			return fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
		}
	}
	ts.AddCloud(recs)
	return nil
}
