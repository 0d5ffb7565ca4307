package modules_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// TestModuleSQL installs every module in a fresh database, after the
// modules it depends on, each module's SQL in a transaction of its own (the
// engine runs them all in one; a module's SQL must not need that). The
// tables it creates must be the module's Tables, their columns those the
// Table specs name, and every object it creates must have a COMMENT.
func TestModuleSQL(t *testing.T) {
	byName := map[string]module.Module{}
	for _, m := range modules.All() {
		byName[m.Name] = m
	}
	for _, m := range modules.All() {
		t.Run(m.Name, func(t *testing.T) {
			t.Parallel()
			checkSQL(t, byName, m)
		})
	}
}

// checkSQL installs m after its dependencies and checks what its SQL
// created.
func checkSQL(t *testing.T, byName map[string]module.Module, m module.Module) {
	dsn := srv.NewDB(t)
	for _, d := range dependencies(t, byName, m.Name) {
		pgtest.Exec(t, dsn, "BEGIN;\n"+byName[d].InstallSQL()+"\nCOMMIT;")
	}
	conn := pgtest.Connect(t, dsn)
	before := objects(t, conn)
	pgtest.Exec(t, dsn, "BEGIN;\n"+m.InstallSQL()+"\nCOMMIT;")
	var created []object
	for _, o := range objects(t, conn) {
		if _, ok := before[o.describe]; !ok {
			created = append(created, o)
		}
	}
	checkTables(t, conn, m, created)
	// Uninstall drops the tables only (store.UninstallModule); installing
	// again must work over what is left (functions, triggers on other
	// modules' tables): CREATE OR REPLACE.
	var drop strings.Builder
	for i := len(m.Tables) - 1; i >= 0; i-- {
		drop.WriteString("DROP TABLE public." + m.Tables[i].Name + ";\n")
	}
	pgtest.Exec(t, dsn, "BEGIN;\n"+drop.String()+m.InstallSQL()+"\nCOMMIT;")
	var missing []string
	for _, o := range created {
		if !o.commented {
			missing = append(missing, o.describe)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		t.Errorf("without a COMMENT: %s", strings.Join(missing, "; "))
	}
}

// dependencies returns the modules name depends on, directly or not, each
// after the modules it depends on.
func dependencies(t *testing.T, byName map[string]module.Module, name string) []string {
	t.Helper()
	var order []string
	seen := map[string]bool{}
	var visit func(string)
	visit = func(n string) {
		m, ok := byName[n]
		if !ok {
			t.Fatalf("%s depends on %s, which this build does not offer", name, n)
		}
		for _, d := range m.DependsOn {
			if !seen[d] {
				seen[d] = true
				visit(d)
				order = append(order, d)
			}
		}
	}
	visit(name)
	return order
}

// object is a database object as pg_describe_object names it ("column
// region of table vpc"), whether it has a comment, and for a table its name.
type object struct {
	describe  string
	commented bool
	table     string
}

// objects lists the objects of the database outside the system schemas and
// extensions that a module's SQL must comment: relations (tables, views,
// sequences, indexes) and their columns, constraints, functions, triggers
// and types (enums, domains, composites). Left out are what comes with another object and is described
// by its comment: primary keys (the id column's), NOT NULL constraints (the
// column's), the indexes of constraints (the constraint's), the row and
// array types of relations and types.
func objects(t *testing.T, conn *pgx.Conn) map[string]object {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		WITH ns AS (
		  SELECT oid FROM pg_catalog.pg_namespace
		   WHERE nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast') AND nspname !~ '^pg_(toast_)?temp_'
		), obj AS (
		  SELECT 'pg_class'::regclass AS classid, c.oid AS objid, 0 AS objsubid,
		         CASE WHEN c.relkind IN ('r', 'p') THEN c.relname END AS tbl
		    FROM pg_catalog.pg_class c
		   WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('r', 'p', 'v', 'm', 'f', 'S', 'i', 'I')
		     AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.contype IN ('p', 'u', 'x') AND k.conindid = c.oid)
		  UNION ALL
		  SELECT 'pg_class'::regclass, a.attrelid, a.attnum, NULL
		    FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
		   WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		     AND a.attnum > 0 AND NOT a.attisdropped
		  UNION ALL
		  SELECT 'pg_constraint'::regclass, k.oid, 0, NULL FROM pg_catalog.pg_constraint k
		   WHERE k.connamespace IN (SELECT oid FROM ns) AND k.contype NOT IN ('p', 'n')
		  UNION ALL
		  SELECT 'pg_proc'::regclass, p.oid, 0, NULL FROM pg_catalog.pg_proc p
		   WHERE p.pronamespace IN (SELECT oid FROM ns)
		  UNION ALL
		  SELECT 'pg_trigger'::regclass, g.oid, 0, NULL
		    FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
		   WHERE c.relnamespace IN (SELECT oid FROM ns) AND NOT g.tgisinternal
		  UNION ALL
		  SELECT 'pg_type'::regclass, y.oid, 0, NULL FROM pg_catalog.pg_type y
		   WHERE y.typnamespace IN (SELECT oid FROM ns) AND y.typtype IN ('e', 'd', 'c')
		     AND (y.typrelid = 0 OR (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = y.typrelid) = 'c')
		)
		SELECT pg_catalog.pg_describe_object(o.classid, o.objid, o.objsubid),
		       EXISTS (SELECT 1 FROM pg_catalog.pg_description d
		                WHERE d.classoid = o.classid AND d.objoid = o.objid AND d.objsubid = o.objsubid),
		       coalesce(o.tbl, '')
		  FROM obj o
		 WHERE NOT EXISTS (SELECT 1 FROM pg_catalog.pg_depend e
		                    WHERE e.classid = o.classid AND e.objid = o.objid AND e.deptype = 'e')`)
	if err != nil {
		t.Fatal(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (object, error) {
		var o object
		return o, r.Scan(&o.describe, &o.commented, &o.table)
	})
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]object, len(list))
	for _, o := range list {
		out[o.describe] = o
	}
	return out
}

// checkTables compares the tables m's SQL created with m.Tables: the same
// tables; in each, id first, then columns that are each exactly one of
// declarative, feedback and initial; every column a spec names present;
// identity columns declarative, or the one feedback column the cloud
// generates; every Refs column a foreign key to the referenced table's id.
func checkTables(t *testing.T, conn *pgx.Conn, m module.Module, created []object) {
	var made, want []string
	for _, o := range created {
		if o.table != "" {
			made = append(made, o.table)
		}
	}
	for _, tbl := range m.Tables {
		want = append(want, tbl.Name)
	}
	slices.Sort(made)
	slices.Sort(want)
	if !slices.Equal(made, want) {
		t.Errorf("the SQL creates the tables %v, the module lists %v", made, want)
	}
	ctx := t.Context()
	for _, tbl := range m.Tables {
		rows, err := conn.Query(ctx, `SELECT column_name FROM information_schema.columns
			WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position`, tbl.Name)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		if len(cols) == 0 || cols[0] != "id" {
			t.Errorf("%s: columns %v, want id first", tbl.Name, cols)
			continue
		}
		enginetest.CheckDeclared(t, conn, tbl)
		for _, c := range cols[1:] {
			n := 0
			for _, group := range [][]string{tbl.Declarative, tbl.Feedback, tbl.Initial} {
				if slices.Contains(group, c) {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%s.%s: in %d of declarative, feedback and initial, want exactly one", tbl.Name, c, n)
			}
		}
		for _, group := range [][]string{tbl.CloudID, tbl.Declarative, tbl.Feedback, tbl.Initial, slices.Collect(maps.Keys(tbl.Refs))} {
			for _, c := range group {
				if !slices.Contains(cols[1:], c) {
					t.Errorf("%s: column %s is not in the SQL", tbl.Name, c)
				}
			}
		}
		generated := len(tbl.CloudID) == 1 && slices.Contains(tbl.Feedback, tbl.CloudID[0])
		for _, c := range tbl.CloudID {
			if !generated && !slices.Contains(tbl.Declarative, c) {
				t.Errorf("%s: identity column %s must be declarative (or the one feedback column the cloud generates)", tbl.Name, c)
			}
		}
		for col, ref := range tbl.Refs {
			var fk bool
			err := conn.QueryRow(ctx, `
				SELECT EXISTS (
				  SELECT 1 FROM pg_catalog.pg_constraint k,
				         unnest(k.conkey, k.confkey) AS p(col, refcol)
				   WHERE k.contype = 'f' AND k.conrelid = ('public.' || $1)::regclass
				     AND k.confrelid = ('public.' || $3)::regclass
				     AND p.col = (SELECT attnum FROM pg_catalog.pg_attribute WHERE attrelid = k.conrelid AND attname = $2)
				     AND p.refcol = (SELECT attnum FROM pg_catalog.pg_attribute WHERE attrelid = k.confrelid AND attname = 'id'))`,
				tbl.Name, col, ref).Scan(&fk)
			if err != nil {
				t.Fatal(err)
			}
			if !fk {
				t.Errorf("%s.%s: no foreign key to %s.id, though Refs names %s", tbl.Name, col, ref, ref)
			}
		}
	}
}

// TestORMInsert: a model generated by introspecting the schema (an ORM's)
// must be able to insert. Such a model requires exactly the columns that are
// NOT NULL without a default, and sends only those (plus what the row's
// constraints ask for). A value a trigger fills in must therefore be a column
// default or a nullable column, never NOT NULL without a default.
func TestORMInsert(t *testing.T) {
	t.Parallel()
	byName := map[string]module.Module{}
	for _, m := range modules.All() {
		byName[m.Name] = m
	}
	dsn := srv.NewDB(t)
	installed := map[string]bool{}
	var tables []string
	for _, m := range modules.All() {
		for _, d := range append(dependencies(t, byName, m.Name), m.Name) {
			if !installed[d] {
				installed[d] = true
				pgtest.Exec(t, dsn, "BEGIN;\n"+byName[d].InstallSQL()+"\nCOMMIT;")
				for _, tbl := range byName[d].Tables {
					tables = append(tables, tbl.Name)
				}
			}
		}
	}
	conn := pgtest.Connect(t, dsn)
	// The columns each table's users must give, as introspection sees them.
	want := map[string]string{
		"aws_regions":         "region",
		"bucket":              "name",
		"bucket_object":       "bucket_id,key",
		"vpc":                 "cidr_block",
		"subnet":              "availability_zone,cidr_block,vpc_id",
		"security_group":      "description,group_name",
		"security_group_rule": "ip_protocol,security_group_id",
		"iam_role":            "assume_role_policy_document,role_name",
		"repository":          "repository_name",
		"instance":            "ami,instance_type",
		"load_balancer":       "name,subnets",
		"target_group":        "name,port,vpc_id",
		"target":              "instance_id,target_group_id",
		"listener":            "load_balancer_id,port,target_group_id",
	}
	for _, tbl := range tables {
		var required string
		err := conn.QueryRow(context.Background(), `
			SELECT coalesce(string_agg(a.attname, ',' ORDER BY a.attname), '')
			  FROM pg_attribute a
			 WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped
			   AND a.attnotnull AND NOT a.atthasdef AND a.attidentity = '' AND a.attgenerated = ''`, "public."+tbl).Scan(&required)
		if err != nil {
			t.Fatal(err)
		}
		if w, ok := want[tbl]; !ok || required != w {
			t.Errorf("%s: an introspecting ORM requires (%s), want (%s): a column a trigger fills needs a default or must be nullable", tbl, required, w)
		}
	}
	// Inserts that send the required columns only (setup aside: a default
	// region and a default VPC, which AWS has and the engine imports).
	pgtest.Exec(t, dsn,
		`INSERT INTO aws_regions (region) VALUES ('us-east-1')`,
		`UPDATE aws_regions SET is_default = true`,
		`INSERT INTO vpc (cidr_block) VALUES ('172.31.0.0/16')`,
		`UPDATE vpc SET is_default = true`,
		`INSERT INTO subnet (vpc_id, cidr_block, availability_zone) SELECT id, '172.31.0.0/20', 'us-east-1a' FROM vpc`,
		`INSERT INTO security_group (group_name, description) VALUES ('web', 'web servers')`,
		// A rule needs a target and ports as well: its constraints say so.
		`INSERT INTO security_group_rule (security_group_id, ip_protocol, from_port, to_port, cidr_ipv4) SELECT id, 'tcp', 443, 443, '0.0.0.0/0' FROM security_group`,
		`INSERT INTO bucket (name) VALUES ('orm-bucket')`,
		`INSERT INTO bucket_object (bucket_id, key) SELECT id, 'a.txt' FROM bucket`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('orm-role', '{"Version": "2012-10-17", "Statement": []}')`,
		`INSERT INTO repository (repository_name) VALUES ('orm-repo')`)
	var inDefault bool
	if err := conn.QueryRow(context.Background(), `SELECT g.vpc_id = v.id FROM security_group g, vpc v WHERE g.group_name = 'web'`).Scan(&inDefault); err != nil || !inDefault {
		t.Errorf("a group inserted without vpc_id is not in the default VPC: %v (%v)", inDefault, err)
	}
	// Left without a VPC, a group is refused by name.
	_, err := conn.Exec(context.Background(), `UPDATE security_group SET vpc_id = NULL`)
	pgtest.WantViolation(t, err, "security_group_vpc_id_set")
}
