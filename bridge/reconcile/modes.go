package reconcile

// Modes: a cycle asks iasql_effective_mode (sql/060_mode.sql), the one
// place that resolves modes, for each registered module table and for each
// record that has a rule of its own; a record without one has its table's
// mode by that same function's definition.
