package snapshot

// Modes, as iasql_mode spells them.
const (
	ModeNormal  = "NORMAL"
	ModeEnforce = "ENFORCE"
	ModeTrack   = "TRACK"
)

// Resolved is a mode and the rule that gives it, as iasql_effective_mode
// names it.
type Resolved struct{ Mode, Rule string }

// Modes are the modes a cycle read, resolved by iasql_effective_mode.
type Modes struct {
	Tables  map[string]Resolved // module table -> its mode
	Records map[Key]Resolved    // records (RowKey) with a rule of their own
	// Columns: module table -> column -> the mode a column rule of the
	// table gives it; RecordColumns: record (RowKey) -> column -> the mode
	// a column rule of the record gives it. Both beat record and table
	// rules; a record's beats the table's.
	Columns       map[string]map[string]Resolved
	RecordColumns map[Key]map[string]Resolved
}

// ColumnRules are the columns of a record that a column rule covers, with
// the mode it gives each (a record's column rule before the table's); nil
// when none does.
func (m Modes) ColumnRules(table, id string) map[string]Resolved {
	t, r := m.Columns[table], m.RecordColumns[RowKey(table, id)]
	switch {
	case len(r) == 0:
		return t
	case len(t) == 0:
		return r
	}
	out := make(map[string]Resolved, len(t)+len(r))
	for c, v := range t {
		out[c] = v
	}
	for c, v := range r {
		out[c] = v
	}
	return out
}

// Of returns a record's mode (or a table's, id "") and the rule that gives
// it. A table the registry does not list (none reaches a cycle) is NORMAL.
func (m Modes) Of(table, id string) (string, string) {
	if id != "" {
		if r, ok := m.Records[RowKey(table, id)]; ok {
			return r.Mode, r.Rule
		}
	}
	if r, ok := m.Tables[table]; ok {
		return r.Mode, r.Rule
	}
	return ModeNormal, "no rule"
}

// Drifty reports whether any record of the table is ENFORCE or TRACK:
// those modes are about drift, so a scoped cycle reads such a table whole.
func (m Modes) Drifty(table string) bool {
	watch := func(r Resolved) bool { return r.Mode == ModeEnforce || r.Mode == ModeTrack }
	if watch(m.Tables[table]) {
		return true
	}
	for _, r := range m.Columns[table] {
		if watch(r) {
			return true
		}
	}
	for k, cols := range m.RecordColumns {
		for _, r := range cols {
			if k.Table == table && watch(r) {
				return true
			}
		}
	}
	for k, r := range m.Records {
		if k.Table == table && watch(r) {
			return true
		}
	}
	return false
}
