package modules_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_vpc"
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
	// Uninstall (module.UninstallSQL, what store.UninstallModule runs)
	// leaves the database as it was before the install: nothing of the
	// module is left to break another module or a later install, nothing of
	// its dependencies is taken.
	pgtest.Exec(t, dsn, "BEGIN;\n"+m.UninstallSQL()+"\nCOMMIT;")
	after := objects(t, conn)
	for d := range after {
		if _, ok := before[d]; !ok {
			t.Errorf("left behind by the uninstall: %s", d)
		}
	}
	for d := range before {
		if _, ok := after[d]; !ok {
			t.Errorf("dropped by the uninstall, though not the module's: %s", d)
		}
	}
	// Installing again works.
	pgtest.Exec(t, dsn, "BEGIN;\n"+m.InstallSQL()+"\nCOMMIT;")
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
// default or a nullable column, never NOT NULL without a default. And since
// such a model knows no database defaults (it sends NULL for what the user
// did not set, and saves back what it holds), a column the database fills
// in takes NULL: the default on INSERT, the old value on UPDATE.
func TestORMInsert(t *testing.T) {
	t.Parallel()
	dsn, tables := installAll(t)
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
		"iam_policy":          "document,policy_name",
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
		`INSERT INTO iam_policy (policy_name, document) VALUES ('orm-policy', '{"Version": "2012-10-17", "Statement": []}')`,
		`INSERT INTO repository (repository_name) VALUES ('orm-repo')`)
	var inDefault bool
	if err := conn.QueryRow(context.Background(), `SELECT g.vpc_id = v.id FROM security_group g, vpc v WHERE g.group_name = 'web'`).Scan(&inDefault); err != nil || !inDefault {
		t.Errorf("a group inserted without vpc_id is not in the default VPC: %v (%v)", inDefault, err)
	}
	// What Django's generated models send: every column, NULL for those
	// the user did not set (module.Column.Filled). The database fills them in.
	pgtest.Exec(t, dsn,
		`INSERT INTO bucket (name, region, versioning, created_at) VALUES ('orm-nulls', NULL, NULL, NULL)`,
		`INSERT INTO security_group (group_name, description, group_id, vpc_id, region, tags) VALUES ('api', 'api servers', NULL, NULL, NULL, NULL)`)
	var filled bool
	if err := conn.QueryRow(context.Background(), `SELECT
		  (SELECT region = 'us-east-1' AND NOT versioning FROM bucket WHERE name = 'orm-nulls') AND
		  (SELECT g.region = 'us-east-1' AND g.tags = '{}' AND g.vpc_id = v.id FROM security_group g, vpc v WHERE g.group_name = 'api')`).Scan(&filled); err != nil || !filled {
		t.Errorf("a row inserted with NULL for its defaulted columns did not get the defaults: %v (%v)", filled, err)
	}
	// And what such a model's later save() sends back: NULL again for
	// every column the database filled in (and for vpc_id). The rows keep
	// their values.
	ctx := context.Background()
	for _, m := range modules.All() {
		for _, tbl := range m.Tables {
			var nulls []string
			for _, c := range tbl.Columns {
				if c.Filled() || (tbl.Name == "security_group" && c.Name == "vpc_id") {
					nulls = append(nulls, c.Name+" = NULL")
				}
			}
			if len(nulls) == 0 {
				continue
			}
			rows := `SELECT coalesce(jsonb_agg(to_jsonb(t) ORDER BY id), '[]') FROM public.` + tbl.Name + ` t`
			var before, after string
			if err := conn.QueryRow(ctx, rows).Scan(&before); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.Exec(ctx, `UPDATE public.`+tbl.Name+` SET `+strings.Join(nulls, ", ")); err != nil {
				t.Errorf("%s: an UPDATE that sets the columns the database fills in to NULL: %v", tbl.Name, err)
				continue
			}
			if err := conn.QueryRow(ctx, rows).Scan(&after); err != nil {
				t.Fatal(err)
			}
			if before != after {
				t.Errorf("%s: an UPDATE that sets the columns the database fills in to NULL changed the rows from\n%s\nto\n%s", tbl.Name, before, after)
			}
		}
	}
	// Left without a VPC, a group is refused by name (a write that bypasses
	// the trigger, as a restore does).
	if _, err := conn.Exec(ctx, `ALTER TABLE security_group DISABLE TRIGGER security_group_default_vpc`); err != nil {
		t.Fatal(err)
	}
	_, err := conn.Exec(ctx, `UPDATE security_group SET vpc_id = NULL`)
	pgtest.WantViolation(t, err, "security_group_vpc_id_set")
}

// TestModuleUpgradeSQL: for each module with upgrades and each of its
// released versions (those whose install is kept as released in
// <module>/testdata/install-<version>.sql), a database where it was
// installed at that version (and what it depends on at the version its
// oldest step starts from), then upgraded step by step, a module after those
// it depends on (as the engine does), has exactly the objects of a fresh
// install: the same tables, columns, defaults, constraints (and whether
// they are validated), triggers, functions and comments.
func TestModuleUpgradeSQL(t *testing.T) {
	byName := map[string]module.Module{}
	for _, m := range modules.All() {
		byName[m.Name] = m
	}
	// released is where a module's upgrades start from: the version its
	// oldest step starts from (its own version when it has none).
	released := func(m module.Module) string {
		from := m.Version
		for _, u := range m.Upgrades {
			if from == m.Version || u.From < from {
				from = u.From
			}
		}
		return from
	}
	for _, m := range modules.All() {
		var starts []string
		for _, u := range m.Upgrades {
			if _, err := os.Stat(filepath.Join(m.Name, "testdata", "install-"+u.From+".sql")); err == nil || u.From == released(m) {
				starts = append(starts, u.From)
			}
		}
		slices.Sort(starts)
		for _, start := range starts {
			t.Run(m.Name+"@"+start, func(t *testing.T) {
				t.Parallel()
				order := append(dependencies(t, byName, m.Name), m.Name)
				fresh := srv.NewDB(t)
				old := srv.NewDB(t)
				for _, n := range order {
					d := byName[n]
					pgtest.Exec(t, fresh, "BEGIN;\n"+d.InstallSQL()+"\nCOMMIT;")
					install, from := d.InstallSQL(), d.Version
					if len(d.Upgrades) > 0 {
						from = released(d)
						if n == m.Name {
							from = start
						}
						b, err := os.ReadFile(filepath.Join(n, "testdata", "install-"+from+".sql"))
						if err != nil {
							t.Fatalf("%s %s as released: %v", n, from, err)
						}
						install = string(b)
					}
					pgtest.Exec(t, old, "BEGIN;\n"+install+"\nCOMMIT;")
					steps, err := d.UpgradePath(from)
					if err != nil {
						t.Fatal(err)
					}
					for _, u := range steps {
						pgtest.Exec(t, old, "BEGIN;\n"+u.SQL+"\nCOMMIT;")
					}
				}
				want, got := schema(t, pgtest.Connect(t, fresh)), schema(t, pgtest.Connect(t, old))
				for k, w := range want {
					if g, ok := got[k]; !ok {
						t.Errorf("upgraded: no %s", k)
					} else if g != w {
						t.Errorf("upgraded: %s is\n%s\nfresh:\n%s", k, g, w)
					}
				}
				for k := range got {
					if _, ok := want[k]; !ok {
						t.Errorf("upgraded: %s, which a fresh install has not", k)
					}
				}
			})
		}
	}
}

// schema describes the objects of the database's public schema by what
// they are: columns with type, default and nullability, constraints with
// their definition and whether they are validated, triggers and functions
// with theirs, and every comment.
func schema(t *testing.T, conn *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := conn.Query(t.Context(), `
		SELECT 'column ' || c.relname || '.' || a.attname,
		       pg_catalog.format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
		       coalesce(' DEFAULT ' || pg_catalog.pg_get_expr(d.adbin, d.adrelid), '') ||
		       coalesce(' -- ' || pg_catalog.col_description(c.oid, a.attnum), '')
		  FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
		  LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
		 WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped
		UNION ALL
		SELECT 'relation ' || c.relname, c.relkind::text || coalesce(' -- ' || pg_catalog.obj_description(c.oid, 'pg_class'), '')
		  FROM pg_catalog.pg_class c WHERE c.relnamespace = 'public'::regnamespace
		UNION ALL
		SELECT 'constraint ' || k.conname || ' on ' || k.conrelid::regclass::text,
		       pg_catalog.pg_get_constraintdef(k.oid) || CASE WHEN k.convalidated THEN '' ELSE ' NOT VALID' END ||
		       coalesce(' -- ' || pg_catalog.obj_description(k.oid, 'pg_constraint'), '')
		  FROM pg_catalog.pg_constraint k WHERE k.connamespace = 'public'::regnamespace
		UNION ALL
		SELECT 'trigger ' || g.tgname || ' on ' || g.tgrelid::regclass::text,
		       pg_catalog.pg_get_triggerdef(g.oid) || coalesce(' -- ' || pg_catalog.obj_description(g.oid, 'pg_trigger'), '')
		  FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_class c ON c.oid = g.tgrelid
		 WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal
		UNION ALL
		SELECT 'function ' || p.oid::regprocedure::text,
		       pg_catalog.pg_get_functiondef(p.oid) || coalesce(' -- ' || pg_catalog.obj_description(p.oid, 'pg_proc'), '')
		  FROM pg_catalog.pg_proc p WHERE p.pronamespace = 'public'::regnamespace`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var k, v string
	if _, err := pgx.ForEachRow(rows, []any{&k, &v}, func() error {
		out[k] = v
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// installAll installs every module in a fresh database, each after the
// modules it depends on, each in a transaction of its own; it returns the
// database and the tables in install order.
func installAll(t *testing.T) (dsn string, tables []string) {
	t.Helper()
	byName := map[string]module.Module{}
	for _, m := range modules.All() {
		byName[m.Name] = m
	}
	dsn = srv.NewDB(t)
	installed := map[string]bool{}
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
	return dsn, tables
}

// errRollback ends a transaction a test wanted to see succeed.
var errRollback = errors.New("rolled back on purpose")

// TestSQLTagRestrictions: every hand-written table with a tags column
// refuses, when the row is written, the tags AWS would refuse at commit,
// with SQLSTATE 23514, the constraint <table>_tags_aws_limits and a one-line
// message that says what is wrong and what to do: a key starting with aws:
// (any case), an empty key, a key over 128 or a value over 256 characters,
// more than 50 tags, and more than 49 on a row iasql creates with its
// client-token tag (vpc, subnet, instance; not yet created: its cloud id is
// NULL). What AWS takes passes, whatever the case of a key's other letters.
// EC2: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions
// ELB: https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-tags.html
// IAM: https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#id_tags_rules_creating
func TestSQLTagRestrictions(t *testing.T) {
	t.Parallel()
	dsn, _ := installAll(t)
	pgtest.Exec(t, dsn,
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`,
		`INSERT INTO vpc (vpc_id, cidr_block, is_default) VALUES ('vpc-1', '172.31.0.0/16', true)`,
		`INSERT INTO subnet (subnet_id, vpc_id, cidr_block, availability_zone)
		 SELECT s.id, v.id, s.block::cidr, s.zone FROM vpc v, (VALUES ('subnet-a', '172.31.0.0/20', 'us-east-1a'), ('subnet-b', '172.31.16.0/20', 'us-east-1b')) s(id, block, zone)`)
	conn := pgtest.Connect(t, dsn)
	ctx := t.Context()
	tables := []struct {
		name string
		// create inserts a row iasql is to create, imported one the cloud
		// has (its cloud id set); $1 is the tags.
		create, imported string
		token            bool // the create adds iasql:client-token
	}{
		{"vpc", `INSERT INTO vpc (cidr_block, tags) VALUES ('10.0.0.0/16', $1)`,
			`INSERT INTO vpc (vpc_id, cidr_block, tags) VALUES ('vpc-2', '10.1.0.0/16', $1)`, true},
		{"subnet", `INSERT INTO subnet (vpc_id, cidr_block, availability_zone, tags) SELECT id, '172.31.32.0/24', 'us-east-1a', $1 FROM vpc WHERE vpc_id = 'vpc-1'`,
			`INSERT INTO subnet (subnet_id, vpc_id, cidr_block, availability_zone, tags) SELECT 'subnet-c', id, '172.31.33.0/24', 'us-east-1a', $1 FROM vpc WHERE vpc_id = 'vpc-1'`, true},
		{"security_group", `INSERT INTO security_group (group_name, description, tags) VALUES ('web', 'web', $1)`,
			`INSERT INTO security_group (group_id, group_name, description, tags) VALUES ('sg-2', 'db', 'db', $1)`, false},
		{"instance", `INSERT INTO instance (ami, instance_type, tags) VALUES ('ami-0123456789abcdef0', 't3.micro', $1)`,
			`INSERT INTO instance (instance_id, ami, instance_type, tags) VALUES ('i-2', 'ami-0123456789abcdef0', 't3.micro', $1)`, true},
		{"load_balancer", `INSERT INTO load_balancer (name, subnets, tags) SELECT 'web', array_agg(id ORDER BY id), $1 FROM subnet WHERE subnet_id IN ('subnet-a', 'subnet-b')`,
			`INSERT INTO load_balancer (load_balancer_arn, name, subnets, tags) SELECT 'arn:aws:elasticloadbalancing:us-east-1:123456789012:loadbalancer/app/db/1', 'db', array_agg(id ORDER BY id), $1 FROM subnet WHERE subnet_id IN ('subnet-a', 'subnet-b')`, false},
		{"target_group", `INSERT INTO target_group (name, port, vpc_id, tags) SELECT 'web', 80, id, $1 FROM vpc WHERE vpc_id = 'vpc-1'`,
			`INSERT INTO target_group (target_group_arn, name, port, vpc_id, tags) SELECT 'arn:aws:elasticloadbalancing:us-east-1:123456789012:targetgroup/db/1', 'db', 80, id, $1 FROM vpc WHERE vpc_id = 'vpc-1'`, false},
		{"iam_policy", `INSERT INTO iam_policy (policy_name, document, tags) VALUES ('web', '{}', $1)`,
			`INSERT INTO iam_policy (arn, policy_name, document, tags) VALUES ('arn:aws:iam::123456789012:policy/db', 'db', '{}', $1)`, false},
	}
	many := func(n int) map[string]string {
		out := map[string]string{}
		for i := range n {
			out[fmt.Sprintf("k%02d", i)] = "v"
		}
		return out
	}
	long := strings.Repeat("é", 129) // 129 characters, 258 bytes
	// try writes the row in a transaction it rolls back, and returns the
	// write's error (nil when the row was taken).
	try := func(sql string, tags map[string]string) error {
		js, err := json.Marshal(tags)
		if err != nil {
			t.Fatal(err)
		}
		err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, sql, string(js)); err != nil {
				return err
			}
			return errRollback
		})
		if errors.Is(err, errRollback) {
			return nil
		}
		return err
	}
	for _, tbl := range tables {
		t.Run(tbl.name, func(t *testing.T) {
			refused := []struct {
				name     string
				imported bool
				tags     map[string]string
				message  string
			}{
				{"aws: key", false, map[string]string{"AWS:cloudformation:stack-name": "web"},
					tbl.name + ` tag key "AWS:cloudformation:stack-name" starts with aws:, which AWS keeps for its own tags: use another key`},
				{"aws: key read back", true, map[string]string{"aws:cloudformation:stack-name": "web"},
					tbl.name + ` tag key "aws:cloudformation:stack-name" starts with aws:, which AWS keeps for its own tags: use another key`},
				{"empty key", false, map[string]string{"": "x"}, tbl.name + ` has a tag with an empty key: give every tag a key`},
				{"key over 128", false, map[string]string{long: "x"},
					tbl.name + ` tag key "` + strings.Repeat("é", 40) + `..." is 129 characters long, AWS allows at most 128: shorten it`},
				{"value over 256", false, map[string]string{"team": long + long[:256]},
					tbl.name + ` tag "team" has a value 257 characters long, AWS allows at most 256: shorten it`},
				{"51 tags", true, many(51), tbl.name + ` has 51 tags, AWS allows at most 50 per resource: remove 1`},
			}
			if tbl.token {
				refused = append(refused, struct {
					name     string
					imported bool
					tags     map[string]string
					message  string
				}{"50 tags on a create", false, many(50),
					tbl.name + ` has 50 tags, a resource iasql creates takes at most 49 (AWS allows 50, and the create adds its iasql:client-token tag): remove 1`})
			} else {
				refused = append(refused, struct {
					name     string
					imported bool
					tags     map[string]string
					message  string
				}{"51 tags on a create", false, many(51), tbl.name + ` has 51 tags, AWS allows at most 50 per resource: remove 1`})
			}
			for _, c := range refused {
				sql := tbl.create
				if c.imported {
					sql = tbl.imported
				}
				err := try(sql, c.tags)
				var pe *pgconn.PgError
				if !errors.As(err, &pe) || pe.Code != "23514" || pe.ConstraintName != tbl.name+"_tags_aws_limits" || pe.Message != c.message {
					t.Errorf("%s: %v; want SQLSTATE 23514, constraint %s_tags_aws_limits, message %q", c.name, err, tbl.name, c.message)
				}
			}
			taken := []struct {
				name     string
				imported bool
				tags     map[string]string
			}{
				{"128-character key, 256-character value", false, map[string]string{long[:256]: long + long[:254]}},
				{"aws without the colon, aws: inside", false, map[string]string{"awsome": "x", "team:aws:x": "aws:y"}},
				{"an empty value", false, map[string]string{"team": ""}},
				{"50 tags read back", true, many(50)},
			}
			if tbl.token {
				taken = append(taken, struct {
					name     string
					imported bool
					tags     map[string]string
				}{"49 tags on a create", false, many(49)})
			} else {
				taken = append(taken, struct {
					name     string
					imported bool
					tags     map[string]string
				}{"50 tags on a create", false, many(50)})
			}
			for _, c := range taken {
				sql := tbl.create
				if c.imported {
					sql = tbl.imported
				}
				if err := try(sql, c.tags); err != nil {
					t.Errorf("%s: %v", c.name, err)
				}
			}
		})
	}
}

// TestModuleUpgradeKeepsRows: the 0.2.0 steps of aws_account and aws_vpc
// upgrade a database whose rows break the new checks (a VPC imported with
// AWS's own aws: tags before the mappers left them out, a subnet the cloud
// refused) without failing: the tag constraints are then left NOT VALID,
// and refuse new writes all the same.
func TestModuleUpgradeKeepsRows(t *testing.T) {
	t.Parallel()
	dsn := srv.NewDB(t)
	for _, m := range []module.Module{aws_account.Module(), aws_vpc.Module()} {
		b, err := os.ReadFile(filepath.Join(m.Name, "testdata", "install-0.1.0.sql"))
		if err != nil {
			t.Fatal(err)
		}
		pgtest.Exec(t, dsn, "BEGIN;\n"+string(b)+"\nCOMMIT;")
	}
	pgtest.Exec(t, dsn,
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`,
		`INSERT INTO vpc (vpc_id, cidr_block, tags) VALUES ('vpc-1', '10.0.0.0/16', '{"aws:cloudformation:stack-name": "web", "team": "web"}')`,
		`INSERT INTO subnet (vpc_id, cidr_block, availability_zone) SELECT id, '10.9.0.0/24', 'us-east-1a' FROM vpc`)
	for _, m := range []module.Module{aws_account.Module(), aws_vpc.Module()} {
		steps, err := m.UpgradePath("0.1.0")
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range steps {
			pgtest.Exec(t, dsn, "BEGIN;\n"+u.SQL+"\nCOMMIT;")
		}
	}
	conn := pgtest.Connect(t, dsn)
	var valid []bool
	if err := conn.QueryRow(t.Context(), `SELECT array_agg(convalidated ORDER BY conname) FROM pg_constraint
		WHERE conname IN ('subnet_tags_aws_limits', 'vpc_tags_aws_limits')`).Scan(&valid); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(valid, []bool{true, false}) {
		t.Errorf("validated (subnet, vpc): %v, want the subnet's constraint validated and the VPC's left NOT VALID", valid)
	}
	var n int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM vpc WHERE tags ? 'aws:cloudformation:stack-name'`).Scan(&n); err != nil || n != 1 {
		t.Errorf("the upgrade changed the VPC row: %d rows (%v)", n, err)
	}
	_, err := conn.Exec(t.Context(), `INSERT INTO vpc (cidr_block, tags) VALUES ('10.1.0.0/16', '{"aws:x": "y"}')`)
	pgtest.WantViolation(t, err, "vpc_tags_aws_limits")
}
