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
