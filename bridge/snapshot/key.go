package snapshot

import "cmp"

// Key names a record of a table: a row by its id (RowKey), or a resource
// that has no row by its identity in the cloud (CloudKey). It is what the
// cycle's phases key their maps by (a record's mode, the actions a plan
// orders, the records a cycle acted on), and what store writes of a
// record (iasql_records, iasql_operations) is keyed by.
type Key struct {
	Table   string
	ID      string // the row's id; for an operation, its record_key (plan.OpKey)
	CloudID string // set only for a resource without a row
}

// RowKey is the key of row id of table.
func RowKey(table, id string) Key { return Key{Table: table, ID: id} }

// CloudKey is the key of the resource cid of table, for a resource without
// a row.
func CloudKey(table, cid string) Key { return Key{Table: table, CloudID: cid} }

// String names the record as messages do: its table, then its id or cloud
// identity.
func (k Key) String() string { return k.Table + " " + cmp.Or(k.ID, k.CloudID) }

// CompareKeys orders keys by table, id, then cloud identity.
func CompareKeys(a, b Key) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.ID, b.ID), cmp.Compare(a.CloudID, b.CloudID))
}
