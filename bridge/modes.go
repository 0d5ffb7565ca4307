package bridge

// Modes: a cycle asks iasql_effective_mode (sql/060_mode.sql), the one
// place that resolves modes, for each registered module table and for each
// record that has a rule of its own; a record without one has its table's
// mode by that same function's definition.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Modes, as iasql_mode spells them.
const (
	ModeNormal  = "NORMAL"
	ModeEnforce = "ENFORCE"
	ModeTrack   = "TRACK"
)

// resolved is a mode and the rule that gives it, as iasql_effective_mode
// names it.
type Resolved struct{ Mode, Rule string }

// modeRules are the modes a cycle read, resolved by iasql_effective_mode.
type Modes struct {
	Tables  map[string]Resolved // module table -> its mode
	Records map[string]Resolved // table + "\x00" + id, for records with a rule of their own
}

// of returns a record's mode (or a table's, id "") and the rule that gives
// it. A table the registry does not list (none reaches a cycle) is NORMAL.
func (m Modes) Of(table, id string) (string, string) {
	if id != "" {
		if r, ok := m.Records[table+"\x00"+id]; ok {
			return r.Mode, r.Rule
		}
	}
	if r, ok := m.Tables[table]; ok {
		return r.Mode, r.Rule
	}
	return ModeNormal, "no rule"
}

// drifty reports whether any record of the table is ENFORCE or TRACK:
// those modes are about drift, so a scoped cycle reads such a table whole.
func (m Modes) Drifty(table string) bool {
	watch := func(r Resolved) bool { return r.Mode == ModeEnforce || r.Mode == ModeTrack }
	if watch(m.Tables[table]) {
		return true
	}
	for k, r := range m.Records {
		if len(k) > len(table) && k[:len(table)+1] == table+"\x00" && watch(r) {
			return true
		}
	}
	return false
}

// readModes asks iasql_effective_mode for every module table and for every
// record that has a rule of its own.
func ReadModes(ctx context.Context, conn *pgx.Conn) (Modes, error) {
	m := Modes{Tables: map[string]Resolved{}, Records: map[string]Resolved{}}
	rows, err := conn.Query(ctx, `
		SELECT t.table_name, '', e.mode::text, e.rule
		  FROM public.iasql_tables t, public.iasql_effective_mode(t.table_name) e
		 WHERE t.module IS NOT NULL
		UNION ALL
		SELECT r.table_name, r.record_id::text, e.mode::text, e.rule
		  FROM public.iasql_mode r, public.iasql_effective_mode(r.table_name, r.record_id) e
		 WHERE r.record_id IS NOT NULL`)
	if err != nil {
		return m, fmt.Errorf("read modes: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, id string
		var r Resolved
		if err := rows.Scan(&table, &id, &r.Mode, &r.Rule); err != nil {
			return m, fmt.Errorf("read modes: %w", err)
		}
		if id == "" {
			m.Tables[table] = r
		} else {
			m.Records[table+"\x00"+id] = r
		}
	}
	return m, rows.Err()
}
