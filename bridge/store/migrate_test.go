package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/module"
)

// TestMigrateTable: a table made from one declaration is brought to the
// next: new columns added (a required one nullable since the table has
// rows, one the database fills in filled in the rows there and in new
// ones), a column no longer declared kept with its values, nullable, its
// comment marked; a column whose type would change is refused in one
// line, changing nothing.
func TestMigrateTable(t *testing.T) {
	ctx := context.Background()
	conn := pgtest.Connect(t, srv.NewDB(t))
	col := func(name, typ, comment string) module.Column {
		return module.Column{Name: name, Type: typ, Comment: comment}
	}
	v1 := module.Table{Name: "gadget", Comment: "Gadgets.", Columns: []module.Column{
		{Name: "name", Type: "text", NotNull: true, CloudID: true, Comment: "Its name."},
		{Name: "color", Type: "text", NotNull: true, Comment: "Its color."},
	}}.Declare()
	if _, err := conn.Exec(ctx, v1.DDL()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO public.gadget (name, color) VALUES ('g', 'red')`); err != nil {
		t.Fatal(err)
	}
	required := col("shape", "text", "Its shape.")
	required.NotNull = true
	filled := col("kind", "text", "Its kind.")
	filled.NotNull, filled.Default = true, "'plain'"
	v2 := module.Table{Name: "gadget", Comment: "Gadgets, version 2.", Columns: []module.Column{
		v1.Columns[0], col("size", "integer", "Its size."), required, filled,
	}}.Declare()
	var mig store.Migration
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) (err error) {
		mig, err = store.MigrateTable(ctx, tx, v2, func(column, comment string) string { return "GONE " + column + ": " + comment })
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(mig.Added, ","); got != "size,shape,kind" {
		t.Errorf("added %s; want size, shape, kind", got)
	}
	if got := strings.Join(mig.Nullable, ","); got != "shape" {
		t.Errorf("added nullable %s; want shape (required, and the table has rows)", got)
	}
	if got := strings.Join(mig.Gone, ","); got != "color" {
		t.Errorf("gone %s; want color", got)
	}
	if _, err := conn.Exec(ctx, `INSERT INTO public.gadget (name, shape) VALUES ('h', 'round')`); err != nil {
		t.Errorf("a row without the gone column and the filled one: %v", err)
	}
	for _, c := range []struct{ q, want string }{
		{`SELECT string_agg(name || ':' || coalesce(color, '-') || ':' || kind, ',' ORDER BY name) FROM public.gadget`, "g:red:plain,h:-:plain"},
		{`SELECT col_description(attrelid, attnum) || CASE WHEN attnotnull THEN ' (NOT NULL)' ELSE '' END FROM pg_attribute WHERE attrelid = 'public.gadget'::regclass AND attname = 'color'`, "GONE color: Its color."},
		{`SELECT string_agg(col_description(attrelid, attnum), ',' ORDER BY attnum) FROM pg_attribute WHERE attrelid = 'public.gadget'::regclass AND attname IN ('size', 'shape', 'kind')`, "Its size.,Its shape.,Its kind."},
		{`SELECT obj_description('public.gadget'::regclass)`, "Gadgets, version 2."},
	} {
		var got string
		if err := conn.QueryRow(ctx, c.q).Scan(&got); err != nil || got != c.want {
			t.Errorf("%s: %q %v; want %q", c.q, got, err, c.want)
		}
	}
	// The fill trigger keeps kind set.
	if _, err := conn.Exec(ctx, `UPDATE public.gadget SET kind = NULL WHERE name = 'g'`); err != nil {
		t.Errorf("an update setting a filled column NULL: %v", err)
	}

	// A column whose type would change.
	v3 := v2
	v3.Columns = append([]module.Column(nil), v2.Columns...)
	v3.Columns[1].Type = "text"
	v3 = v3.Declare()
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		_, err := store.MigrateTable(ctx, tx, v3, func(column, comment string) string { return comment })
		return err
	})
	if err == nil || !strings.Contains(err.Error(), "size is integer") || strings.Contains(err.Error(), "\n") {
		t.Errorf("a column's type changed: %v; want it refused in one line", err)
	}
}
