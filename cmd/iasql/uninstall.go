package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/logical"
	"github.com/iasql/iasql/modules"
	"github.com/iasql/iasql/modules/module"
	iasqlsql "github.com/iasql/iasql/sql"
)

// iasqlRoles are the roles iasql creates (sql/005_roles.sql).
var iasqlRoles = []string{"iasql_admin", "iasql_writer", "iasql_reader"}

// sidecarApplications are the application names of a running sidecar's
// sessions (its standby waits for leadership on an "iasql capture" one).
var sidecarApplications = []string{"iasql capture", "iasql flush", "iasql engine", "iasql cycle", "iasql preview", "iasql metrics", "iasql start-up probe"}

func cmdUninstall(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("uninstall", `Remove what iasql put in the database, in one transaction: its tables, views, functions,
procedures and types (or the extension), the schema iasql_private, the guard triggers on
module tables, the pg_cron job iasql_cycle, the publication iasql, the replication slot
iasql_<database>, and the sidecar role's grants on the database and schema public. Module
tables (with their rows, functions and triggers) stay unless --module-tables; the roles
iasql_admin, iasql_writer and iasql_reader stay unless --roles. The cloud is not touched.
Refused while a sidecar runs on the database: stop every 'iasql run' first (and keep them
stopped: a sidecar that starts installs iasql again). Run it as the role that installed
iasql, or a superuser; dropping the slot needs REPLICATION, --roles needs CREATEROLE.`,
		"  iasql uninstall --dsn postgres://admin@db:5432/app\n  iasql uninstall --dsn postgres://admin@db:5432/app --module-tables --roles", stderr)
	dsnOf := dsnFlags(f, stderr)
	moduleTables := f.Bool("module-tables", "IASQL_UNINSTALL_MODULE_TABLES", false, "also drop the module tables (their rows are lost; the cloud keeps its resources) and their functions and triggers")
	roles := f.Bool("roles", "IASQL_UNINSTALL_ROLES", false, "also drop the roles iasql_admin, iasql_writer and iasql_reader (cluster-wide: refused while another database uses them)")
	f.environment = envPostgres
	conn, err := parseAndConnect(ctx, f, args, dsnOf)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	db := conn.Config().Database
	var done []string
	err = pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var err error
		done, err = uninstall(ctx, tx, db, *moduleTables, *roles)
		return err
	})
	if err != nil {
		return err
	}
	if len(done) == 0 {
		fmt.Fprintf(stdout, "nothing of iasql is in database %s\n", db)
		return nil
	}
	fmt.Fprintf(stdout, "uninstalled iasql from database %s: %s\n", db, strings.Join(done, "; "))
	return nil
}

// uninstall removes iasql from the database in tx and says what it did.
func uninstall(ctx context.Context, tx pgx.Tx, db string, moduleTables, roles bool) ([]string, error) {
	// The install lock (sql.LockInstall): an install or upgrade starting
	// meanwhile waits for this transaction. A sidecar already running is
	// refused below (noSidecar).
	if err := iasqlsql.LockInstall(ctx, tx); err != nil {
		return nil, err
	}
	if err := noSidecar(ctx, tx, db); err != nil {
		return nil, err
	}
	if roles {
		if err := rolesDroppable(ctx, tx); err != nil {
			return nil, err
		}
	}
	in, err := iasqlsql.Detect(ctx, tx.Conn())
	if err != nil {
		return nil, err
	}
	var done []string
	slots := []string{logical.SlotName(db)}
	if in.Version != "" {
		recorded, err := store.ProgressSlots(ctx, tx)
		if err != nil {
			return nil, err
		}
		slots = append(slots, recorded...)
		kept, err := store.ModuleTables(ctx, tx)
		if err != nil {
			return nil, err
		}
		if moduleTables {
			dropped, err := dropModules(ctx, tx)
			if err != nil {
				return nil, err
			}
			if len(dropped) > 0 {
				done = append(done, "dropped the modules "+strings.Join(dropped, ", ")+" and their tables")
			}
		} else if len(kept) > 0 {
			done = append(done, "kept the module tables "+strings.Join(kept, ", ")+" (--module-tables drops them)")
		}
		if _, err := tx.Exec(ctx, iasqlsql.UninstallScript()); err != nil {
			return nil, fmt.Errorf("drop iasql's objects: %w", err)
		}
		how := "plain SQL"
		if in.Extension {
			how = "the extension"
		}
		done = append(done, fmt.Sprintf("dropped iasql %s (%s)", in.Version, how))
	}
	if did, err := iasqlsql.UnscheduleCron(ctx, tx); err != nil {
		return nil, err
	} else if did {
		done = append(done, "removed the pg_cron job iasql_cycle")
	}
	if did, err := iasqlsql.DropPublication(ctx, tx); err != nil {
		return nil, err
	} else if did {
		done = append(done, "dropped the publication iasql")
	}
	if roles {
		dropped, err := dropRoles(ctx, tx)
		if err != nil {
			return nil, err
		}
		if len(dropped) > 0 {
			done = append(done, "dropped the roles "+strings.Join(dropped, ", "))
		}
	}
	// Last: a slot's drop cannot be undone, and everything before can.
	dropped, err := iasqlsql.DropSlots(ctx, tx, slots)
	if err != nil {
		return nil, err
	}
	if len(dropped) > 0 {
		done = append(done, "dropped the replication slot "+strings.Join(dropped, ", "))
	}
	return done, nil
}

// noSidecar refuses when a sidecar is connected to the database: it would
// install iasql again, or hold the slot.
func noSidecar(ctx context.Context, tx pgx.Tx, db string) error {
	rows, err := tx.Query(ctx, `
		SELECT pg_catalog.format('pid %s (%s as %s)', a.pid, coalesce(nullif(a.application_name, ''), a.backend_type), coalesce(a.usename::text, '?'))
		  FROM pg_catalog.pg_stat_activity a
		 WHERE a.datname = pg_catalog.current_database() AND a.pid <> pg_catalog.pg_backend_pid()
		   AND (a.application_name = ANY($1::text[])
		        OR a.pid IN (SELECT s.active_pid FROM pg_catalog.pg_replication_slots s
		                      WHERE s.database = pg_catalog.current_database() AND s.slot_name LIKE 'iasql%' AND s.active))
		 ORDER BY a.pid`, sidecarApplications)
	if err != nil {
		return fmt.Errorf("look for running sidecars: %w", err)
	}
	sessions, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("look for running sidecars: %w", err)
	}
	if len(sessions) > 0 {
		return fmt.Errorf("a sidecar is running on database %s (%s): stop every 'iasql run' of it (its service, or SIGTERM to the process) and keep them stopped, then run uninstall again; nothing was changed",
			db, strings.Join(sessions, ", "))
	}
	return nil
}

// rolesDroppable refuses --roles while another database uses iasql's roles
// (roles are the server's: dropping them needs their privileges gone
// everywhere), or while they own something here.
func rolesDroppable(ctx context.Context, tx pgx.Tx) error {
	var elsewhere, owned string
	err := tx.QueryRow(ctx, `
		WITH r AS (SELECT oid FROM pg_catalog.pg_roles WHERE rolname::text = ANY($1::text[])),
		     here AS (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
		SELECT coalesce((SELECT pg_catalog.string_agg(DISTINCT coalesce(d.datname::text, 'the server''s shared objects'), ', ')
		                   FROM pg_catalog.pg_shdepend s LEFT JOIN pg_catalog.pg_database d ON d.oid = s.dbid
		                  WHERE s.refclassid = 'pg_catalog.pg_authid'::regclass AND s.refobjid IN (SELECT oid FROM r)
		                    AND s.dbid <> (SELECT oid FROM here)
		                    AND NOT (s.classid = 'pg_catalog.pg_database'::regclass AND s.objid = (SELECT oid FROM here))), ''),
		       coalesce((SELECT pg_catalog.string_agg(pg_catalog.pg_describe_object(s.classid, s.objid, s.objsubid) || ' (owned by ' || pg_catalog.pg_get_userbyid(s.refobjid) || ')', ', ')
		                   FROM pg_catalog.pg_shdepend s
		                  WHERE s.refclassid = 'pg_catalog.pg_authid'::regclass AND s.refobjid IN (SELECT oid FROM r)
		                    AND s.dbid = (SELECT oid FROM here) AND s.deptype = 'o'), '')`, iasqlRoles).Scan(&elsewhere, &owned)
	if err != nil {
		return fmt.Errorf("check that iasql's roles can be dropped: %w", err)
	}
	switch {
	case elsewhere != "":
		return fmt.Errorf("the roles %s are still used in %s (roles are the server's): uninstall iasql there first (or revoke their privileges there), or run uninstall without --roles; nothing was changed",
			strings.Join(iasqlRoles, ", "), elsewhere)
	case owned != "":
		return fmt.Errorf("iasql's roles own %s: give them another owner (REASSIGN OWNED BY ... TO ...), or run uninstall without --roles; nothing was changed", owned)
	}
	return nil
}

// dropRoles drops iasql's roles: their privileges in this database first
// (on module tables that stay, on anything a user granted them; they own
// nothing here, rolesDroppable checked), and their members' memberships go
// with them.
func dropRoles(ctx context.Context, tx pgx.Tx) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT rolname::text FROM pg_catalog.pg_roles WHERE rolname::text = ANY($1::text[]) ORDER BY array_position($1::text[], rolname::text)`, iasqlRoles)
	if err != nil {
		return nil, fmt.Errorf("look for iasql's roles: %w", err)
	}
	have, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(have) == 0 {
		return nil, err
	}
	list := make([]string, len(have))
	for i, r := range have {
		list[i] = pgx.Identifier{r}.Sanitize()
	}
	if _, err := tx.Exec(ctx, `DROP OWNED BY `+strings.Join(list, ", ")); err != nil {
		return nil, fmt.Errorf("revoke the privileges of iasql's roles: %w", err)
	}
	if _, err := tx.Exec(ctx, `DROP ROLE `+strings.Join(list, ", ")); err != nil {
		return nil, fmt.Errorf("drop iasql's roles (needs CREATEROLE): %w", err)
	}
	return have, nil
}

// dropModules drops every installed module, a module before those it
// depends on: its tables, then what else it installed (functions and
// triggers: module.UninstallSQL), as iasql_uninstall does.
func dropModules(ctx context.Context, tx pgx.Tx) ([]string, error) {
	installed, err := store.InstalledWithDeps(ctx, tx)
	if err != nil {
		return nil, err
	}
	known := map[string]module.Module{}
	for _, m := range modules.All() {
		known[m.Name] = m
	}
	defs, err := store.ModuleDefinitions(ctx, tx.Conn())
	if err != nil {
		return nil, err
	}
	var dropped []string
	for len(installed) > 0 {
		// One no other remaining module depends on.
		i := slices.IndexFunc(installed, func(m store.InstalledModule) bool {
			return !slices.ContainsFunc(installed, func(o store.InstalledModule) bool { return slices.Contains(o.DependsOn, m.Name) })
		})
		if i < 0 {
			return nil, errors.New("the installed modules depend on each other in a circle; uninstall them with iasql_uninstall first")
		}
		name := installed[i].Name
		installed = slices.Delete(installed, i, i+1)
		m, ok := known[name]
		if !ok {
			for _, c := range modules.Catalogs() {
				if def, stored := defs[name]; stored && c.Offers(name) {
					if m, err = c.Module(name, def); err != nil {
						return nil, fmt.Errorf("make module %s from its stored definition: %w", name, err)
					}
					ok = true
					break
				}
			}
		}
		if !ok {
			return nil, fmt.Errorf("module %s is installed, and this iasql does not know it: uninstall it with SELECT iasql_uninstall('%s') under a sidecar that offers it, then run uninstall again; nothing was changed", name, name)
		}
		if _, err := tx.Exec(ctx, m.Declared().UninstallSQL()); err != nil {
			return nil, fmt.Errorf("drop module %s (module tables belong to the sidecar's role: run uninstall as a superuser or a member of that role): %w", name, err)
		}
		dropped = append(dropped, name)
	}
	return dropped, nil
}
