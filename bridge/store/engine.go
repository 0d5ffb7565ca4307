package store

// The engine's SQL outside a cycle: its locks, the module registry and
// the tables modules install, and scheduling.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// The sidecar's locks held by a session (sql/006_locks.sql): rows of
// iasql_private.iasql_locks only the sidecar's role may take, never
// advisory locks, which any role could take and hold to stall the engine.
const (
	LockCapture = 1 // held by the capture writer (the one sidecar consuming the slot)
	LockCycle   = 2 // held for each cycle
	LockService = 4 // held by the engine's service session
)

// lockPoll is how often Lock tries again while another session holds the
// lock (nothing wakes a waiter on a row that names a holder).
const lockPoll = 20 * time.Millisecond

// Lock takes the engine's lock of role, waiting for it.
func Lock(ctx context.Context, db Querier, role int) error {
	for {
		ok, err := TryLock(ctx, db, role)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("take lock %d: %w", role, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// TryLock takes the engine's lock of role if it is free.
func TryLock(ctx context.Context, db Querier, role int) (bool, error) {
	var ok bool
	// Its commit need not wait for a WAL flush: a crash ends the session,
	// and with it whatever it held.
	if err := db.QueryRow(ctx, `SELECT public.iasql_take_lock($1) FROM pg_catalog.set_config('synchronous_commit', 'off', true)`, role).Scan(&ok); err != nil {
		return false, fmt.Errorf("take lock %d: %w", role, err)
	}
	return ok, nil
}

// UnlockAll releases every lock the session holds.
func UnlockAll(ctx context.Context, db Execer) error {
	_, err := db.Exec(ctx, `SELECT public.iasql_release_locks() FROM pg_catalog.set_config('synchronous_commit', 'off', true)`)
	return err
}

// TransactionIsOpen reports whether an iasql transaction is open.
func TransactionIsOpen(ctx context.Context, db Querier) (bool, error) {
	var open bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.iasql_transaction)`).Scan(&open); err != nil {
		return false, fmt.Errorf("check for an open iasql transaction: %w", err)
	}
	return open, nil
}

// IntentPending reports whether a user change committed before now is not
// enacted yet (iasql_pending_intent): intent a sidecar that stopped, or the
// database a dump was taken of, left behind.
func IntentPending(ctx context.Context, db Querier) (bool, error) {
	var pending bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.iasql_pending_intent(pg_catalog.pg_current_wal_insert_lsn()))`).Scan(&pending); err != nil {
		return false, fmt.Errorf("check for pending intent: %w", err)
	}
	return pending, nil
}

// InstalledModules are the names of the installed modules, in the order
// they were installed.
func InstalledModules(ctx context.Context, db Reader) ([]string, error) {
	return texts(ctx, db, "installed modules", `SELECT name FROM public.iasql_modules WHERE installed_at IS NOT NULL ORDER BY installed_at, name`)
}

// InstalledModule is an installed module and the modules it depends on.
type InstalledModule struct {
	Name      string
	DependsOn []string
}

// InstalledWithDeps are the installed modules with their dependencies.
func InstalledWithDeps(ctx context.Context, tx pgx.Tx) ([]InstalledModule, error) {
	rows, err := tx.Query(ctx, `SELECT name, depends_on FROM public.iasql_modules WHERE installed_at IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read installed modules: %w", err)
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (InstalledModule, error) {
		var m InstalledModule
		return m, r.Scan(&m.Name, &m.DependsOn)
	})
	if err != nil {
		return nil, fmt.Errorf("read installed modules: %w", err)
	}
	return all, nil
}

// RegisterModule offers a module in iasql_modules (its version, what it
// depends on and its tables), installed or not; definition, for a module
// made from one (a resource type's schema), is stored at its first
// registration and kept (nil for a built-in module).
func RegisterModule(ctx context.Context, db Execer, m *module.Module, definition []byte) error {
	var def any
	if definition != nil {
		def = string(definition)
	}
	dependsOn := m.DependsOn
	if dependsOn == nil {
		dependsOn = []string{}
	}
	tables := make([]string, len(m.Tables))
	kinds := map[string]map[string]string{}
	for i, t := range m.Tables {
		tables[i], kinds[t.Name] = t.Name, ColumnKinds(t)
	}
	if _, err := db.Exec(ctx, `INSERT INTO public.iasql_modules (name, version, depends_on, tables, definition, columns) VALUES ($1, $2, $3, $4, $5::jsonb, $6)
		ON CONFLICT (name) DO UPDATE SET version = excluded.version, depends_on = excluded.depends_on, tables = excluded.tables,
		  definition = coalesce(public.iasql_modules.definition, excluded.definition), columns = excluded.columns`,
		m.Name, m.Version, dependsOn, tables, def, kinds); err != nil {
		return fmt.Errorf("register module %s: %w", m.Name, err)
	}
	return nil
}

// ColumnKinds is each column of t by kind, as iasql_modules.columns lists
// them for mode rules: declarative (a rule may name it), identity,
// feedback, initial, or read-only (every column of a read-only table).
func ColumnKinds(t module.Table) map[string]string {
	out := map[string]string{}
	for _, c := range t.Declarative {
		out[c] = "declarative"
		if t.ReadOnly {
			out[c] = "read-only"
		}
	}
	for _, c := range t.Feedback {
		out[c] = "feedback"
	}
	for _, c := range t.Initial {
		out[c] = "initial"
	}
	for _, c := range t.CloudID {
		out[c] = "identity"
	}
	if t.Region != "" && out[t.Region] == "declarative" {
		out[t.Region] = "identity" // where the resource lives: another region is another resource
	}
	return out
}

// ModuleDefinition is the stored definition of a module made from one
// (nil when none is stored).
func ModuleDefinition(ctx context.Context, db Querier, name string) ([]byte, error) {
	var def *string
	err := db.QueryRow(ctx, `SELECT definition::text FROM public.iasql_modules WHERE name = $1`, name).Scan(&def)
	if errors.Is(err, pgx.ErrNoRows) || (err == nil && def == nil) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the definition of module %s: %w", name, err)
	}
	return []byte(*def), nil
}

// ModuleDefinitions are the stored definitions of the modules made from
// one, by name.
func ModuleDefinitions(ctx context.Context, db *pgx.Conn) (map[string][]byte, error) {
	rows, err := db.Query(ctx, `SELECT name, definition::text FROM public.iasql_modules WHERE definition IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read module definitions: %w", err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var name, def string
		if err := rows.Scan(&name, &def); err != nil {
			return nil, fmt.Errorf("read module definitions: %w", err)
		}
		out[name] = []byte(def)
	}
	return out, rows.Err()
}

// ModuleInstalled reports whether a module is installed.
func ModuleInstalled(ctx context.Context, tx pgx.Tx, name string) (bool, error) {
	var installed bool
	if err := tx.QueryRow(ctx, `SELECT installed_at IS NOT NULL FROM public.iasql_modules WHERE name = $1`, name).Scan(&installed); err != nil {
		return false, fmt.Errorf("read module %s: %w", name, err)
	}
	return installed, nil
}

// InstallModule runs a module's SQL (its tables, in tx), registers its
// tables for capture and marks it installed.
func InstallModule(ctx context.Context, tx pgx.Tx, name, sql string, tables []string) error {
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("create the tables of %s: %w", name, err)
	}
	for _, t := range tables {
		if _, err := tx.Exec(ctx, `INSERT INTO public.iasql_tables (table_name, module) VALUES ($1, $2)`, t, name); err != nil {
			return fmt.Errorf("register table %s: %w", t, err)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET installed_at = pg_catalog.clock_timestamp(), installed_version = version WHERE name = $1`, name); err != nil {
		return fmt.Errorf("mark %s installed: %w", name, err)
	}
	return nil
}

// LinkReferences makes every named reference of tables (a Cloud Control
// type's <column>_ref) a foreign key where both its table and the table it
// references exist (public.iasql_link_reference, sql/080_references.sql):
// after an install, for a type installed before what it references.
func LinkReferences(ctx context.Context, tx pgx.Tx, tables []module.Table) error {
	for _, t := range tables {
		for _, ref := range module.RefsOf(t) {
			if ref.Named.Column == "" {
				continue
			}
			if _, err := tx.Exec(ctx, `SELECT public.iasql_link_reference($1, $2, $3, $4)`, t.Name, ref.Column, ref.Table, ref.Many); err != nil {
				return fmt.Errorf("link %s.%s to %s: %w", t.Name, ref.Column, ref.Table, err)
			}
		}
	}
	return nil
}

// UnlinkReference undoes LinkReferences for child's reference col to
// target, which is being uninstalled: it refuses, in one line, while rows
// of child still point at target's rows (their ids would mean nothing),
// and drops the foreign key otherwise (an array's trigger goes with the
// target table).
func UnlinkReference(ctx context.Context, tx pgx.Tx, child, col, target string, many bool) error {
	c := pgx.Identifier{col}.Sanitize()
	set := c + ` IS NOT NULL`
	if many {
		set = `pg_catalog.cardinality(` + c + `) > 0`
	}
	var n int64
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{"public", child}.Sanitize()+` WHERE `+set).Scan(&n); err != nil {
		return fmt.Errorf("count the rows of %s that %s names: %w", child, col, err)
	}
	if n > 0 {
		return fmt.Errorf("cannot uninstall the module of %s: %d row(s) of %s point at its rows in %s; set %s to NULL first (the resource stays named in the column beside it), or uninstall %s's module too", target, n, child, col, col, child)
	}
	if _, err := tx.Exec(ctx, `SELECT public.iasql_unlink_reference($1, $2)`, child, col); err != nil {
		return fmt.Errorf("unlink %s.%s from %s: %w", child, col, target, err)
	}
	return nil
}

// Now is the database's clock.
func Now(ctx context.Context, db Querier) (time.Time, error) {
	var t time.Time
	if err := db.QueryRow(ctx, `SELECT pg_catalog.clock_timestamp()`).Scan(&t); err != nil {
		return time.Time{}, fmt.Errorf("read the database's clock: %w", err)
	}
	return t, nil
}

// InstalledVersions are the versions installed modules' tables have, by
// module name.
func InstalledVersions(ctx context.Context, db *pgx.Conn) (map[string]string, error) {
	rows, err := db.Query(ctx, `SELECT name, coalesce(installed_version, version) FROM public.iasql_modules WHERE installed_at IS NOT NULL`)
	if err != nil {
		return nil, fmt.Errorf("read installed module versions: %w", err)
	}
	out := map[string]string{}
	var name, version string
	if _, err := pgx.ForEachRow(rows, []any{&name, &version}, func() error {
		out[name] = version
		return nil
	}); err != nil {
		return nil, fmt.Errorf("read installed module versions: %w", err)
	}
	return out, nil
}

// UpgradeModule runs an installed module's upgrade SQL (in tx, with the
// install lock the core's upgrades take), records the version its tables
// now have and registers its tables as they now are: new ones captured,
// dropped ones forgotten.
func UpgradeModule(ctx context.Context, tx pgx.Tx, name, version string, sqls []string, tables []string) error {
	if _, err := tx.Exec(ctx, `SELECT 1 FROM iasql_private.iasql_locks WHERE lock_id = 5 FOR UPDATE`); err != nil {
		return fmt.Errorf("upgrade %s: take the install lock: %w", name, err)
	}
	for _, s := range sqls {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("upgrade %s to %s: %w", name, version, err)
		}
	}
	for _, t := range tables {
		if _, err := tx.Exec(ctx, `INSERT INTO public.iasql_tables (table_name, module) VALUES ($1, $2) ON CONFLICT DO NOTHING`, t, name); err != nil {
			return fmt.Errorf("upgrade %s: register table %s: %w", name, t, err)
		}
	}
	if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_tables WHERE module = $1 AND NOT (table_name = ANY ($2))`, name, tables); err != nil {
		return fmt.Errorf("upgrade %s: forget dropped tables: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET installed_version = $2 WHERE name = $1`, name, version); err != nil {
		return fmt.Errorf("upgrade %s: record version %s: %w", name, version, err)
	}
	return nil
}

// UninstallModule drops a module's tables and what else it installed
// (sql: module.UninstallSQL), forgets the engine's state of their records
// (tables) and marks it not installed. The cloud is not touched.
func UninstallModule(ctx context.Context, tx pgx.Tx, name, sql string, tables []string) error {
	for _, t := range tables {
		if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_tables WHERE table_name = $1`, t); err != nil {
			return fmt.Errorf("unregister %s: %w", t, err)
		}
		for _, state := range []string{"iasql_records", "iasql_replacements", "iasql_operations"} {
			if _, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{"public", state}.Sanitize()+` WHERE table_name = $1`, t); err != nil {
				return fmt.Errorf("forget %s of %s: %w", state, t, err)
			}
		}
	}
	if _, err := tx.Exec(ctx, sql); err != nil {
		return fmt.Errorf("drop what %s installed: %w", name, err)
	}
	if _, err := tx.Exec(ctx, `UPDATE public.iasql_modules SET installed_at = NULL, installed_version = NULL WHERE name = $1`, name); err != nil {
		return fmt.Errorf("mark %s uninstalled: %w", name, err)
	}
	return nil
}

// HasCron reports whether pg_cron is installed in the database.
func HasCron(ctx context.Context, db Querier) bool {
	var has bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = 'cron' AND p.proname = 'schedule')`).Scan(&has)
	return err == nil && has
}

// ScheduleCron makes pg_cron call iasql_cycle_tick() on schedule (a cron
// spec), as the job iasql_cycle.
func ScheduleCron(ctx context.Context, db Execer, schedule string) error {
	if _, err := db.Exec(ctx, `SELECT cron.schedule('iasql_cycle', $1, 'SELECT public.iasql_cycle_tick()')`, schedule); err != nil {
		return fmt.Errorf("schedule the pg_cron job: %w", err)
	}
	return nil
}

// Account is the cloud account a database is bound to (iasql_account).
type Account struct {
	Account, Arn, Endpoint string
}

// ReadAccount reads the database's account binding (false when it has
// none yet).
func ReadAccount(ctx context.Context, db Querier) (Account, bool, error) {
	var a Account
	var endpoint *string
	err := db.QueryRow(ctx, `SELECT account_id, coalesce(arn, ''), endpoint FROM public.iasql_account`).Scan(&a.Account, &a.Arn, &endpoint)
	if errors.Is(err, pgx.ErrNoRows) {
		return Account{}, false, nil
	}
	if err != nil {
		return Account{}, false, fmt.Errorf("read the database's account: %w", err)
	}
	if endpoint != nil {
		a.Endpoint = *endpoint
	}
	return a, true, nil
}

// BindAccount binds a database that has no binding to an account.
func BindAccount(ctx context.Context, db Execer, a Account) error {
	if _, err := db.Exec(ctx, `INSERT INTO public.iasql_account (account_id, arn, endpoint) VALUES ($1, $2, nullif($3, ''))`, a.Account, a.Arn, a.Endpoint); err != nil {
		return fmt.Errorf("record the database's account: %w", err)
	}
	return nil
}

// MayExecute reports whether role may execute the function (a signature
// such as 'public.iasql_rebind_account()').
func MayExecute(ctx context.Context, db Querier, role, function string) (bool, error) {
	var ok bool
	if err := db.QueryRow(ctx, `SELECT pg_catalog.has_function_privilege($1, $2, 'EXECUTE')`, role, function).Scan(&ok); err != nil {
		return false, fmt.Errorf("check the privileges of role %q: %w", role, err)
	}
	return ok, nil
}

// CountDeprecated counts n calls of a deprecated function.
func CountDeprecated(ctx context.Context, db Execer, name string, n int) error {
	_, err := db.Exec(ctx, `INSERT INTO public.iasql_deprecated_calls AS d (function_name, calls, last_called) VALUES ($1, $2, pg_catalog.clock_timestamp())
		ON CONFLICT (function_name) DO UPDATE SET calls = d.calls + excluded.calls, last_called = excluded.last_called`, name, n)
	if err != nil {
		return fmt.Errorf("count a call of %s: %w", name, err)
	}
	return nil
}

// RebindAccount binds the database to a, keeping the binding it replaces
// as the previous one (returned, zero when there was none).
func RebindAccount(ctx context.Context, db Querier, a Account) (Account, error) {
	was, _, err := ReadAccount(ctx, db)
	if err != nil {
		return Account{}, err
	}
	_, err = db.Exec(ctx, `INSERT INTO public.iasql_account (account_id, arn, endpoint, previous_account_id, previous_endpoint)
		VALUES ($1, $2, nullif($3, ''), nullif($4, ''), nullif($5, ''))
		ON CONFLICT (singleton) DO UPDATE SET account_id = EXCLUDED.account_id, arn = EXCLUDED.arn, endpoint = EXCLUDED.endpoint,
			bound_at = pg_catalog.clock_timestamp(), previous_account_id = EXCLUDED.previous_account_id, previous_endpoint = EXCLUDED.previous_endpoint`,
		a.Account, a.Arn, a.Endpoint, was.Account, was.Endpoint)
	if err != nil {
		return Account{}, fmt.Errorf("record the database's account: %w", err)
	}
	return was, nil
}

// EngineRunning reports whether a sidecar's engine runs on the database
// (a session holds the service lock) and has registered the modules
// offered (name -> version) at those versions, the installed ones upgraded
// to them: what tests and benchmarks wait for after starting one.
func EngineRunning(ctx context.Context, db Querier, offered map[string]string) (bool, error) {
	names, versions := make([]string, 0, len(offered)), make([]string, 0, len(offered))
	for n, v := range offered {
		names, versions = append(names, n), append(versions, v)
	}
	var ok bool
	err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM public.iasql_lock_holders h WHERE h.lock_id = $1)
		AND (SELECT count(*) FROM public.iasql_modules m JOIN unnest($2::text[], $3::text[]) AS o(name, version)
		      ON m.name = o.name AND m.version = o.version AND (m.installed_at IS NULL OR m.installed_version = o.version)) = $4`,
		LockService, names, versions, len(offered)).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("check whether the engine runs: %w", err)
	}
	return ok, nil
}
