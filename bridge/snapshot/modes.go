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
	for k, r := range m.Records {
		if k.Table == table && watch(r) {
			return true
		}
	}
	return false
}
