package aws_cloudcontrol_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	iasqlsql "github.com/iasql/iasql/sql"
)

// TestTypeSQL installs the module of every type the emulator serves into a
// database of its own (Module.InstallSQL: the DDL of the declared table,
// then the identity's constraint) and compares the table with its
// declaration (enginetest.CheckDeclared, as for the built-in modules): id,
// then the declared columns in order, each of its type, NOT NULL and
// default; the identity unique; every object commented.
func TestTypeSQL(t *testing.T) {
	files, err := filepath.Glob("../../internal/emulator/cfnschemas/*.json")
	if err != nil || len(files) < 11 {
		t.Fatalf("want the emulator's schemas (11 or more), found %v (%v)", files, err)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		ty, err := schema.Parse(doc)
		if err != nil && strings.Contains(err.Error(), "no read handler") {
			continue // AWS::SQS::QueuePolicy: no table, as on AWS (TestEmulatorSchemas)
		}
		if err != nil {
			t.Fatal(err)
		}
		t.Run(ty.TypeName, func(t *testing.T) {
			t.Parallel()
			m, err := aws_cloudcontrol.Catalog().Module(ty.TypeName, doc)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Tables) != 1 {
				t.Fatalf("tables %v, want one", m.Tables)
			}
			tbl := m.Tables[0]
			dsn := srv.NewDB(t)
			conn := pgtest.Connect(t, dsn)
			ctx := context.Background()
			// A module is installed where iasql is (its reference checks
			// are iasql's functions).
			if _, err := iasqlsql.InstallPlain(ctx, conn); err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, dsn, "BEGIN;\n"+m.InstallSQL()+"\nCOMMIT;")

			check := func() {
				t.Helper()
				enginetest.CheckDeclared(t, conn, tbl)

				var unique string
				if err := conn.QueryRow(ctx, `SELECT pg_catalog.pg_get_constraintdef(oid) FROM pg_catalog.pg_constraint
					WHERE conrelid = ('public.' || $1)::regclass AND conname = $1 || '_identity'`, tbl.Name).Scan(&unique); err != nil {
					t.Fatalf("the identity constraint %s_identity: %v", tbl.Name, err)
				}
				ids := ""
				for i, c := range tbl.CloudID {
					if i > 0 {
						ids += ", "
					}
					ids += c
				}
				if unique != "UNIQUE ("+ids+")" {
					t.Errorf("%s_identity is %s, want UNIQUE (%s)", tbl.Name, unique, ids)
				}

				// The table, its columns, its sequence and its constraint
				// are commented.
				var missing []string
				rows, err := conn.Query(ctx, `
					WITH obj AS (
					  SELECT 'pg_class'::regclass AS classid, c.oid AS objid, 0 AS objsubid
					    FROM pg_catalog.pg_class c WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'S')
					  UNION ALL
					  SELECT 'pg_class'::regclass, a.attrelid, a.attnum FROM pg_catalog.pg_attribute a
					   WHERE a.attrelid = ('public.' || $1)::regclass AND a.attnum > 0 AND NOT a.attisdropped
					  UNION ALL
					  SELECT 'pg_constraint'::regclass, k.oid, 0 FROM pg_catalog.pg_constraint k
					   WHERE k.conrelid = ('public.' || $1)::regclass AND k.contype NOT IN ('p', 'n'))
					SELECT pg_catalog.pg_describe_object(classid, objid, objsubid) FROM obj o
					 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_description d
					                    WHERE d.classoid = o.classid AND d.objoid = o.objid AND d.objsubid = o.objsubid)`, tbl.Name)
				if err != nil {
					t.Fatal(err)
				}
				if missing, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
					t.Fatal(err)
				}
				if len(missing) > 0 {
					t.Errorf("without a COMMENT: %v", missing)
				}
			}
			check()

			// A table installed before tables had a region column (its
			// property Region, if any, the column region) is brought to
			// the declaration by the module's upgrade, which does nothing
			// the second time.
			// The engine's state names a record by its identity before
			// regions (written as the sidecar would, past the guard).
			ids := ty.IdentifierColumns()
			oldID, newID := "x", `["x","us-east-1"]`
			if len(ids) > 1 {
				oldID, newID = `["a","b"]`, `["a","b","us-east-1"]`
			}
			if !ty.RegionInIdentity() {
				newID = oldID
			}
			old := []string{"BEGIN", "SET LOCAL session_replication_role = replica",
				fmt.Sprintf(`INSERT INTO public.iasql_records (table_name, record_id, cloud_id, enacted_lsn) VALUES ('%s', '1', '%s', '0/0'), ('other', '1', '%s', '0/0')`, tbl.Name, oldID, oldID),
				fmt.Sprintf(`DROP TRIGGER %[1]s_0_defaults ON public.%[1]s`, tbl.Name),
				fmt.Sprintf(`DROP FUNCTION public.%s_defaults()`, tbl.Name),
				fmt.Sprintf(`DROP FUNCTION public.%s_region()`, tbl.Name),
				fmt.Sprintf(`ALTER TABLE public.%[1]s DROP CONSTRAINT %[1]s_identity`, tbl.Name),
				fmt.Sprintf(`ALTER TABLE public.%s DROP COLUMN region`, tbl.Name)}
			if _, ok := ty.ColumnNamed("aws_region"); ok {
				old = append(old, fmt.Sprintf(`ALTER TABLE public.%s RENAME COLUMN aws_region TO region`, tbl.Name))
			}
			old = append(old, fmt.Sprintf(`ALTER TABLE public.%[1]s ADD CONSTRAINT %[1]s_identity UNIQUE (%[2]s)`, tbl.Name, strings.Join(ids, ", ")), "COMMIT")
			pgtest.Exec(t, dsn, strings.Join(old, ";\n"))
			if len(m.Upgrades) != 1 || m.Upgrades[0].To != m.Version {
				t.Fatalf("upgrades %+v, want one to %s", m.Upgrades, m.Version)
			}
			for range 2 { // as the sidecar, which may write the engine's state
				pgtest.Exec(t, dsn, "BEGIN;\nSET LOCAL session_replication_role = replica;\n"+m.Upgrades[0].SQL+"\nCOMMIT;")
			}
			check()
			var got string
			if err := conn.QueryRow(ctx, `SELECT string_agg(cloud_id, ' ' ORDER BY table_name <> $1) FROM public.iasql_records`, tbl.Name).Scan(&got); err != nil || got != newID+" "+oldID {
				t.Errorf("the records' cloud ids after the upgrade: %q (%v), want %s, and another table's untouched", got, err, newID)
			}
		})
	}
}

// TestReservedWords: a property named by a word the database reserves
// (a column name the declared table's DDL, which writes names unquoted,
// cannot have), or by a system column (xmin), makes an aws_ column, and a word it does not reserve is the
// column itself; a type with a property named by each keyword installs.
func TestReservedWords(t *testing.T) {
	dsn := srv.NewDB(t)
	conn := pgtest.Connect(t, dsn)
	rows, err := conn.Query(context.Background(), `SELECT word, catcode IN ('R', 'T') FROM pg_catalog.pg_get_keywords()`)
	if err != nil {
		t.Fatal(err)
	}
	type kw struct {
		Word     string
		Reserved bool
	}
	words, err := pgx.CollectRows(rows, pgx.RowToStructByPos[kw])
	if err != nil || len(words) == 0 {
		t.Fatalf("keywords: %v %v", words, err)
	}
	// The system columns every table has cannot name a column either.
	rows, err = conn.Query(context.Background(), `SELECT attname::text, true FROM pg_catalog.pg_attribute
		WHERE attrelid = 'pg_catalog.pg_class'::regclass AND attnum < 0`)
	if err != nil {
		t.Fatal(err)
	}
	system, err := pgx.CollectRows(rows, pgx.RowToStructByPos[kw])
	if err != nil || len(system) == 0 {
		t.Fatalf("system columns: %v %v", system, err)
	}
	words = append(words, system...)
	for _, w := range words {
		want := w.Word
		if w.Reserved {
			want = "aws_" + w.Word
		}
		if got := schema.ColumnName(w.Word); got != want {
			t.Errorf("ColumnName(%s) = %s, want %s", w.Word, got, want)
		}
	}
	props := map[string]any{"WordsId": map[string]any{"type": "string"}}
	for _, w := range words {
		props[w.Word] = map[string]any{"type": "string"}
	}
	all := map[string]any{"permissions": []any{}}
	doc, err := json.Marshal(map[string]any{
		"typeName": "AWS::Test::Words", "properties": props, "primaryIdentifier": []any{"/properties/WordsId"},
		"handlers": map[string]any{"create": all, "read": all, "delete": all, "list": all},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, err := aws_cloudcontrol.Catalog().Module("AWS::Test::Words", doc)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Exec(t, dsn, "BEGIN;\n"+m.InstallSQL()+"\nCOMMIT;")
	var n int
	if err := conn.QueryRow(context.Background(), `SELECT count(*) FROM pg_catalog.pg_attribute
		WHERE attrelid = 'public.aws_test_words'::regclass AND attnum > 1`).Scan(&n); err != nil || n != len(words)+2 {
		t.Errorf("the table has %d columns (%v), want %d (one per word, and the region)", n, err, len(words)+2)
	}
}
