package logical

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Preflight checks, before anything is written, that this server and role
// can capture: wal_level, the REPLICATION attribute, the rights to create
// the publication and (when installing) the tables, and a free slot. Each
// failure is one line that says what to do.
func Preflight(ctx context.Context, conn *pgx.Conn, slot string, installing bool) error {
	var (
		walLevel, maxSlots              string
		super, repl, createDB, createNS bool
		slotExists                      bool
		used                            int
		pubExists                       bool
	)
	err := conn.QueryRow(ctx, `
		SELECT current_setting('wal_level'), current_setting('max_replication_slots'),
		       r.rolsuper, r.rolreplication,
		       has_database_privilege(current_database(), 'CREATE'),
		       has_schema_privilege('public', 'CREATE'),
		       EXISTS (SELECT 1 FROM pg_catalog.pg_replication_slots WHERE slot_name = $1),
		       (SELECT count(*) FROM pg_catalog.pg_replication_slots)::int,
		       EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = $2)
		  FROM pg_catalog.pg_roles r WHERE r.rolname = current_user`, slot, Publication).
		Scan(&walLevel, &maxSlots, &super, &repl, &createDB, &createNS, &slotExists, &used, &pubExists)
	if err != nil {
		return fmt.Errorf("check server settings: %w", err)
	}
	if walLevel != "logical" {
		return fatalf("wal_level is %q but capture needs logical: run ALTER SYSTEM SET wal_level = logical as a superuser (on RDS set rds.logical_replication = 1 in the parameter group), then restart PostgreSQL", walLevel)
	}
	user := conn.Config().User
	var missing []string
	if !super && !repl {
		missing = append(missing, fmt.Sprintf("REPLICATION (ALTER ROLE %s REPLICATION; on RDS GRANT rds_replication TO %s)", user, user))
	}
	if !pubExists && !createDB {
		missing = append(missing, fmt.Sprintf("CREATE on the database, to create publication %s (GRANT CREATE ON DATABASE %s TO %s)", Publication, conn.Config().Database, user))
	}
	if installing && !createNS {
		missing = append(missing, fmt.Sprintf("CREATE on schema public, to install iasql's tables (GRANT CREATE ON SCHEMA public TO %s)", user))
	}
	if len(missing) > 0 {
		return fatalf("role %s lacks %s: grant them as a superuser and start again", user, strings.Join(missing, "; and "))
	}
	var max int
	fmt.Sscan(maxSlots, &max)
	if !slotExists && used >= max {
		return fatalf("cannot create replication slot %s: all max_replication_slots (%d) are in use; drop an unused slot (SELECT pg_drop_replication_slot(name)) or raise max_replication_slots and restart PostgreSQL", slot, max)
	}
	return nil
}

// SidecarPreflight checks, before anything is created (the slot above all),
// that this role may run the sidecar of a database where iasql is installed:
// it is the sidecar's role (iasql_sidecar) and holds what the sidecar needs
// (iasql_grant_sidecar grants it all). The failure names what is missing and
// how to grant it.
func SidecarPreflight(ctx context.Context, conn *pgx.Conn) error {
	user := conn.Config().User
	var sidecar string
	var isSidecar bool
	var missing []string
	err := conn.QueryRow(ctx, `
		SELECT s.role_name, coalesce(pg_catalog.pg_has_role(r.oid, 'MEMBER'), false),
		  pg_catalog.array_remove(ARRAY[
		    CASE WHEN NOT pg_catalog.has_schema_privilege('public', 'USAGE') OR NOT pg_catalog.has_schema_privilege('public', 'CREATE')
		         THEN 'USAGE, CREATE on schema public' END,
		    CASE WHEN NOT pg_catalog.has_function_privilege('public.iasql_engine_mark(text)', 'EXECUTE') THEN 'EXECUTE on function public.iasql_engine_mark(text)' END,
		    CASE WHEN NOT pg_catalog.has_schema_privilege('iasql_private', 'USAGE') THEN 'USAGE on schema iasql_private'
		         WHEN NOT pg_catalog.has_table_privilege('iasql_private.iasql_engine_key', 'SELECT') THEN 'SELECT on iasql_private.iasql_engine_key' END,
		    CASE WHEN pg_catalog.has_schema_privilege('iasql_private', 'USAGE')
		           AND NOT (pg_catalog.has_table_privilege('iasql_private.iasql_locks', 'SELECT') AND pg_catalog.has_table_privilege('iasql_private.iasql_locks', 'UPDATE'))
		         THEN 'SELECT, UPDATE on iasql_private.iasql_locks' END,
		    CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_publication p WHERE p.pubname = $1 AND NOT pg_catalog.pg_has_role(p.pubowner, 'MEMBER'))
		         THEN 'ownership of publication ' || $1 END,
		    CASE WHEN NOT pg_catalog.has_table_privilege('public.iasql_status', 'SELECT') THEN 'SELECT on public.iasql_status' END] ||
		  ARRAY(SELECT pg_catalog.string_agg(p.priv, ', ' ORDER BY p.n) || ' on ' || c.oid::regclass::text
		          FROM pg_catalog.pg_class c
		          CROSS JOIN (VALUES (1, 'SELECT'), (2, 'INSERT'), (3, 'UPDATE'), (4, 'DELETE')) p(n, priv)
		         WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
		           AND c.relname LIKE 'iasql\_%' AND c.relname <> 'iasql_sidecar'
		           AND NOT pg_catalog.has_table_privilege(c.oid, p.priv)
		         GROUP BY c.oid ORDER BY c.oid::regclass::text), NULL)
		  FROM public.iasql_sidecar s LEFT JOIN pg_catalog.pg_roles r ON r.rolname = s.role_name`, Publication).
		Scan(&sidecar, &isSidecar, &missing)
	if err != nil {
		return fmt.Errorf("check the sidecar's grants: %w", err)
	}
	fix := fmt.Sprintf("as an administrator run: iasql install --sidecar-role %s (or SELECT iasql_grant_sidecar('%s') as the role that installed iasql)", user, user)
	if !isSidecar {
		return fatalf("role %s is not the iasql sidecar's role in database %s (%s is): %s", user, conn.Config().Database, sidecar, fix)
	}
	if len(missing) > 0 {
		return fatalf("role %s lacks %s: %s", user, strings.Join(missing, "; "), fix)
	}
	return nil
}
