package store

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/module"
)

// TestReadScoped: a read by record reads the acting rows, the rows that
// reference them (context) and no other, and finds the acting rows through
// the primary key: with sequential scans off, the plan of its query for a
// table without references scans no table (t.id::text = ANY(...) could
// not use the index, and read all 100,000 rows beside a commit of one).
func TestReadScoped(t *testing.T) {
	ctx := context.Background()
	srv, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	widget := module.Table{Name: "widget", Comment: "Widgets.", Columns: []module.Column{
		{Name: "name", Type: "text", CloudID: true, Comment: "Name."}}}.Declare()
	gadget := module.Table{Name: "gadget", Comment: "Gadgets of widgets.", Columns: []module.Column{
		{Name: "name", Type: "text", CloudID: true, Comment: "Name."},
		{Name: "widget_id", Type: "integer", Ref: "widget", Comment: "The widget."}}}.Declare()
	conn := pgtest.Connect(t, srv.NewDB(t))
	for _, sql := range []string{widget.DDL(), gadget.DDL(),
		`INSERT INTO widget (name) SELECT 'w' || g FROM generate_series(1, 50) g`,
		`INSERT INTO gadget (name, widget_id) VALUES ('g1', 2), ('g2', 2), ('g3', 3)`} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name   string
		spec   module.Table
		acting map[string]map[string]bool
		want   []string // ids read
		// context: the ids read for reference, by table, after the read
		context map[string][]string
	}{
		{"acting rows", widget, map[string]map[string]bool{"widget": {"2": true, "7": true, "99": true, "x": true}}, []string{"2", "7"}, map[string][]string{}},
		{"rows referencing acting ones", gadget, map[string]map[string]bool{"widget": {"2": true}, "gadget": {"3": true}},
			[]string{"1", "2", "3"}, map[string][]string{"gadget": {"1", "2"}, "widget": {"2", "3"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &snapshot.Scope{Whole: map[string]bool{}, Acting: tc.acting, Context: map[string]map[string]bool{}}
			err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				rows, err := ReadScoped(ctx, tx, tc.spec, s)
				if err != nil {
					return err
				}
				if got := slices.Sorted(maps.Keys(rows)); !slices.Equal(got, tc.want) {
					t.Errorf("read rows %v, want %v", got, tc.want)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for table, ids := range s.Context {
				got[table] = slices.Sorted(maps.Keys(ids))
			}
			if !maps.EqualFunc(got, tc.context, slices.Equal) {
				t.Errorf("context %v, want %v", got, tc.context)
			}
		})
	}
	t.Run("by primary key", func(t *testing.T) {
		s := &snapshot.Scope{Whole: map[string]bool{}, Acting: map[string]map[string]bool{"widget": {"2": true}}, Context: map[string]map[string]bool{}}
		q, args := scopedQuery(widget, s)
		var plan []string
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SET LOCAL enable_seqscan = off`); err != nil {
				return err
			}
			rows, err := tx.Query(ctx, `EXPLAIN `+q, args...)
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if p := strings.Join(plan, "\n"); strings.Contains(p, "Seq Scan") || !strings.Contains(p, "widget_pkey") {
			t.Errorf("a read by record of one row scans the table instead of using its primary key:\n%s", p)
		}
	})
}
