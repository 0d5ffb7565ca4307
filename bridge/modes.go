package bridge

// Modes: the iasql_mode rules a cycle reads, resolved per record as
// iasql_effective_mode resolves them in SQL.

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Modes, as iasql_mode spells them.
const (
	modeNormal  = "NORMAL"
	modeEnforce = "ENFORCE"
	modeTrack   = "TRACK"
)

// modeRules are the iasql_mode rules a cycle read.
type modeRules struct {
	database string            // "" when there is no database rule
	tables   map[string]string // table -> mode
	records  map[string]string // table + "\x00" + id -> mode
	ids      map[string]string // the same keys ("" for the database) -> rule id
}

// of resolves a record's mode as iasql_effective_mode does: record rule,
// else table rule, else database rule, else NORMAL. It returns the mode and
// the rule that gave it.
func (m modeRules) of(table, id string) (string, string) {
	if id != "" {
		if mode, ok := m.records[table+"\x00"+id]; ok {
			return mode, "record rule " + m.ids[table+"\x00"+id]
		}
	}
	if mode, ok := m.tables[table]; ok {
		return mode, "table rule " + m.ids[table]
	}
	if m.database != "" {
		return m.database, "database rule " + m.ids[""]
	}
	return modeNormal, "no rule"
}

// drifty reports whether an ENFORCE or TRACK rule covers any record of
// the table (the database's, the table's, or one of its records').
func (m modeRules) drifty(table string) bool {
	watch := func(mode string) bool { return mode == modeEnforce || mode == modeTrack }
	if watch(m.database) || watch(m.tables[table]) {
		return true
	}
	for k, mode := range m.records {
		if strings.HasPrefix(k, table+"\x00") && watch(mode) {
			return true
		}
	}
	return false
}

// tieRank orders modes for ties: TRACK first (never break things), then
// NORMAL, then ENFORCE; no mode last.
func tieRank(mode string) int {
	switch mode {
	case modeTrack:
		return 0
	case modeNormal:
		return 1
	case modeEnforce:
		return 2
	}
	return 3
}

func readModes(ctx context.Context, conn *pgx.Conn) (modeRules, error) {
	m := modeRules{tables: map[string]string{}, records: map[string]string{}, ids: map[string]string{}}
	rows, err := conn.Query(ctx, `SELECT coalesce(table_name, ''), coalesce(record_id::text, ''), mode::text, id::text FROM public.iasql_mode`)
	if err != nil {
		return m, fmt.Errorf("read mode rules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, id, mode, rule string
		if err := rows.Scan(&table, &id, &mode, &rule); err != nil {
			return m, fmt.Errorf("read mode rules: %w", err)
		}
		// Were two rules at one level ever to exist, the tie resolves
		// TRACK > NORMAL > ENFORCE (as iasql_effective_mode does).
		switch {
		case table == "":
			if tieRank(mode) < tieRank(m.database) {
				m.database, m.ids[""] = mode, rule
			}
		case id == "":
			if old, ok := m.tables[table]; !ok || tieRank(mode) < tieRank(old) {
				m.tables[table], m.ids[table] = mode, rule
			}
		default:
			k := table + "\x00" + id
			if old, ok := m.records[k]; !ok || tieRank(mode) < tieRank(old) {
				m.records[k], m.ids[k] = mode, rule
			}
		}
	}
	return m, rows.Err()
}
