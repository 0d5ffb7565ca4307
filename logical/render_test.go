package logical_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/iasql/iasql/internal/pgtest"
)

// TestRowRendering: how values of each type appear in new_row, and how
// primary keys become record_id, through real capture.
func TestRowRendering(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, typ, value string
		want             string // the JSON new_row->'v' must equal
	}{
		{"integer", "int", "42", `42`},
		{"bigint", "bigint", "-9223372036854775808", `-9223372036854775808`},
		{"numeric keeps scale", "numeric(10,3)", "1.500", `1.500`},
		{"numeric NaN is text", "numeric", "'NaN'", `"NaN"`},
		{"float", "float8", "1e20", `1e+20`},
		{"float infinity is text", "float8", "'-Infinity'", `"-Infinity"`},
		{"float NaN is text", "real", "'NaN'", `"NaN"`},
		{"boolean", "boolean", "false", `false`},
		{"null", "text", "NULL", `null`},
		{"text with quotes and controls", "text", `E'a"b\\c\n\t\x01'`, `"a\"b\\c\n\t\u0001"`},
		{"unicode", "text", "'ü € 😀'", `"ü € 😀"`},
		{"jsonb stays json", "jsonb", `'{"b": [1, 2], "a": null}'`, `{"a": null, "b": [1, 2]}`},
		{"json stays json", "json", `'[true, "x"]'`, `[true, "x"]`},
		{"timestamp is its text form", "timestamptz", "'2026-01-02 03:04:05+00'", `"2026-01-02 03:04:05+00"`},
		{"array is its text form", "text[]", `ARRAY['a', 'b c']`, `"{a,\"b c\"}"`},
		{"bytea is its text form", "bytea", `'\xdead'::bytea`, `"\\xdead"`},
		{"uuid", "uuid", "'6f1b9a3e-0000-4000-8000-000000000000'", `"6f1b9a3e-0000-4000-8000-000000000000"`},
	}
	dsn := srv.NewDB(t)
	stmts := []string{}
	for i, tc := range tests {
		stmts = append(stmts, fmt.Sprintf(`CREATE TABLE r%d (id int PRIMARY KEY, v %s)`, i, tc.typ))
	}
	stmts = append(stmts, `CREATE TABLE "Mixed Case" (k1 text, k2 int, PRIMARY KEY (k2, k1))`, `CREATE SCHEMA other`, `CREATE TABLE other.t (id int PRIMARY KEY)`)
	pgtest.Exec(t, dsn, stmts...)
	startCapture(t, dsn, nil)
	stmts = stmts[:0]
	for i, tc := range tests {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO iasql_tables (table_name) VALUES ('r%d')`, i), fmt.Sprintf(`INSERT INTO r%d VALUES (%d, %s)`, i, i, tc.value))
	}
	stmts = append(stmts, `INSERT INTO iasql_tables (table_name) VALUES ('"Mixed Case"'), ('other.t')`,
		`INSERT INTO "Mixed Case" VALUES ('a "quoted", key', 7)`, `INSERT INTO other.t VALUES (1)`)
	pgtest.Exec(t, dsn, stmts...)
	conn := pgtest.Connect(t, dsn)
	waitCaptured(t, conn, 30*time.Second)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			var same bool
			err := conn.QueryRow(context.Background(), `SELECT new_row->'v', new_row->'v' = $2::jsonb FROM iasql_audit_log WHERE table_name = $1`,
				fmt.Sprintf("r%d", i), tc.want).Scan(&got, &same)
			if err != nil {
				t.Fatal(err)
			}
			if !same {
				t.Errorf("%s %s rendered as %s, want %s", tc.typ, tc.value, got, tc.want)
			}
		})
	}
	keys := []struct{ table, recordID string }{
		{`"Mixed Case"`, `["7", "a \"quoted\", key"]`}, // key columns in primary-key order, as texts
		{`other.t`, `1`},
	}
	for _, k := range keys {
		var id string
		if err := conn.QueryRow(context.Background(), `SELECT record_id FROM iasql_audit_log WHERE table_name = $1`, k.table).Scan(&id); err != nil {
			t.Fatalf("%s: %v", k.table, err)
		}
		if id != k.recordID {
			t.Errorf("%s: record_id %s", k.table, id)
		}
	}
}
