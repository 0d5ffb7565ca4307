package schema

import (
	"fmt"
	"strings"
)

// RegionUpgradeSQL is the SQL that brings a type's table installed before
// tables had a region column to its declaration: its resources were those
// of the sidecar's region, so the column is added with that region in
// every existing row (a column default dropped at once: no row is
// written, so capture sees no change and nothing is planned); a property
// whose column was "region" (AWS::SNS::Subscription's Region) moves to
// its new name; the identity constraint, the default's trigger and
// function are made as at an install; and, where the region is part of
// the identity (RegionInIdentity), the engine's state names
// the records by their new identity (the identifier and the region, as
// module.CloudIDOf renders it). A table that has the region column
// already (its region function exists) is left as it is, so the step may
// run from any earlier version.
func (t *Type) RegionUpgradeSQL(region string) string {
	spec := t.ModuleTable()
	tbl := "public." + quoteIdent(spec.Name)
	lit := quoteLiteral
	var stmts []string
	exec := func(sql string) { stmts = append(stmts, "  EXECUTE "+lit(sql)+";") }
	for _, c := range t.Columns {
		if snake(c.Property) == RegionColumn && c.Name != RegionColumn {
			exec(fmt.Sprintf("ALTER TABLE %s RENAME COLUMN %s TO %s", tbl, RegionColumn, quoteIdent(c.Name)))
		}
	}
	exec(fmt.Sprintf("ALTER TABLE %s ADD COLUMN %s text DEFAULT %s", tbl, RegionColumn, lit(region)))
	exec(fmt.Sprintf("ALTER TABLE %s ALTER COLUMN %s DROP DEFAULT", tbl, RegionColumn))
	if c, ok := spec.Column(RegionColumn); ok {
		exec(fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", tbl, RegionColumn, lit(c.Comment)))
	}
	exec(fmt.Sprintf("COMMENT ON TABLE %s IS %s", tbl, lit(spec.Comment)))
	constraint := quoteIdent(t.IdentityConstraint())
	exec(fmt.Sprintf("ALTER TABLE %s DROP CONSTRAINT IF EXISTS %s", tbl, constraint))
	exec(fmt.Sprintf("DROP INDEX IF EXISTS public.%s", constraint))
	exec(spec.FillSQL())
	exec(t.SQL())
	exec(t.RegionSQL(region))
	// The engine's state: identities as CloudIDOf renders them, now with
	// the region last (a JSON array of strings).
	if !t.RegionInIdentity() {
		return t.wrapRegionUpgrade(stmts)
	}
	var newID func(col string) string
	if len(t.IdentifierColumns()) == 1 {
		newID = func(col string) string {
			return fmt.Sprintf("'[' || pg_catalog.to_json(%s)::text || ',' || pg_catalog.to_json(%s::text)::text || ']'", col, lit(region))
		}
	} else {
		newID = func(col string) string {
			return fmt.Sprintf("pg_catalog.left(%s, -1) || ',' || pg_catalog.to_json(%s::text)::text || ']'", col, lit(region))
		}
	}
	for _, st := range []struct{ table, col string }{
		{"iasql_records", "cloud_id"}, {"iasql_replacements", "old_cloud_id"}, {"iasql_replacements", "temp_cloud_id"}, {"iasql_operations", "cloud_id"},
	} {
		stmts = append(stmts, fmt.Sprintf("  UPDATE public.%s SET %s = %s WHERE table_name = %s AND %s IS NOT NULL;",
			st.table, st.col, newID(st.col), lit(spec.Name), st.col))
	}
	return t.wrapRegionUpgrade(stmts)
}

// wrapRegionUpgrade runs stmts once: where the table's region function
// does not exist yet.
func (t *Type) wrapRegionUpgrade(stmts []string) string {
	return fmt.Sprintf(`DO $iasql_regions$
BEGIN
  IF pg_catalog.to_regprocedure(%s) IS NOT NULL THEN
    RETURN;
  END IF;
%s
END;
$iasql_regions$;
`, quoteLiteral(t.RegionFunc()+"()"), strings.Join(stmts, "\n"))
}
