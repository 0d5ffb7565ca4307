package bridge

// A resource type's new schema (iasql_refresh_schema): the module made
// from a stored definition is made again from the one the cloud describes
// now, and its tables are migrated to it.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/reconcile"
	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// refreshing reports whether an install request asks for refresh: the
// installed types' current schemas (iasql_refresh_schema).
func refreshing(raw json.RawMessage) bool {
	var a struct {
		Refresh bool `json:"refresh"`
	}
	return json.Unmarshal(raw, &a) == nil && a.Refresh
}

// goneMark starts the comment of a column whose property a type's schema
// no longer has.
const goneMark = "Its property is no longer in the type's schema"

// refreshSchemas fetches the current definition of each installed module
// made from one (a Cloud Control type's schema), and where it changed
// migrates the module's tables to the module made from it
// (store.MigrateTable), stores it and offers that module; then a cycle
// reads the cloud into the new columns. A module whose identity columns
// would change is refused in one line before anything changes: the rows
// and the engine's records are keyed by it.
func (e *Engine) refreshSchemas(ctx context.Context, requestID string, names []string) (any, error) {
	type next struct {
		m   module.Module
		def []byte
	}
	var results []moduleResult
	todo := map[string]next{}
	for _, n := range names {
		old, ok := e.module(n)
		if !ok {
			return nil, fmt.Errorf("%s is not installed; SELECT * FROM iasql_install('%s') installs it with its current schema", n, n)
		}
		cat := e.catalogOf(n)
		var def []byte
		var installed bool
		if err := e.service(ctx, func(c *pgx.Conn) (err error) {
			if def, err = store.ModuleDefinition(ctx, c, n); err != nil {
				return err
			}
			return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) (err error) {
				installed, err = store.ModuleInstalled(ctx, tx, n)
				return err
			})
		}); err != nil {
			return nil, err
		}
		switch {
		case cat == nil || def == nil:
			return nil, fmt.Errorf("%s is built into the sidecar: its tables change with the sidecar's version, not with a schema; only resource types (AWS::Logs::LogGroup) have a schema to refresh", n)
		case !installed:
			return nil, fmt.Errorf("%s is not installed; SELECT * FROM iasql_install('%s') installs it with its current schema", n, n)
		}
		d, err := cat.Describe(ctx, e.aws, n)
		if err != nil {
			return nil, fmt.Errorf("cannot refresh %s: %w", n, err)
		}
		m, err := cat.Module(n, d)
		if err != nil {
			return nil, fmt.Errorf("cannot refresh %s: %w", n, err)
		}
		m = m.Declared()
		if m.Version == old.Version {
			results = append(results, moduleResult{n, true, "the schema has not changed"})
			continue
		}
		if err := sameIdentity(old, m); err != nil {
			return nil, fmt.Errorf("cannot refresh %s: %w; uninstall it and install it again (its rows are dropped with its table)", n, err)
		}
		todo[n] = next{m, d}
	}
	if len(todo) == 0 {
		return map[string]any{"modules": results}, nil
	}
	// No cycle may run on tables whose shape changes.
	conn, err := e.lockCycles(ctx, true)
	if err != nil {
		return nil, err
	}
	migrated := map[string]string{}
	err = func() error {
		defer e.releaseWork(conn)
		return e.withWork(func() error {
			return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
				clear(migrated)
				for _, n := range names {
					nx, ok := todo[n]
					if !ok {
						continue
					}
					notes, err := migrateModule(ctx, tx, nx.m, func(col, comment string) string {
						if strings.HasPrefix(comment, goneMark) {
							return comment
						}
						return fmt.Sprintf("%s (since %s): column %s is kept with its values and no longer synced. It was: %s", goneMark, nx.m.Version, col, comment)
					})
					if err != nil {
						return err
					}
					if err := store.ReplaceDefinition(ctx, tx, n, nx.m.Version, nx.def); err != nil {
						return err
					}
					if err := store.RegisterModule(ctx, tx, &nx.m, nil); err != nil { // its columns' kinds
						return err
					}
					if len(notes) == 0 {
						notes = []string{"no column changed"}
					}
					migrated[n] = fmt.Sprintf("schema refreshed to %s: %s", nx.m.Version, strings.Join(notes, "; "))
				}
				return nil
			})
		})
	}()
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		if nx, ok := todo[n]; ok {
			e.offer(nx.m)
			e.forgetMappers(n)
			results = append(results, moduleResult{n, true, migrated[n]})
		}
	}
	// Read the cloud into the new columns.
	if _, err := e.cycle(ctx, reconcile.Request{Trigger: reconcile.Install, RequestID: requestID}, true); err != nil {
		return nil, fmt.Errorf("refreshed %s, but reading the cloud failed: %w", strings.Join(names, ", "), err)
	}
	return map[string]any{"modules": results}, nil
}

// sameIdentity refuses a module whose tables or identity columns differ
// from the installed one's.
func sameIdentity(old, m module.Module) error {
	if !slices.Equal(tableNames(old), tableNames(m)) {
		return fmt.Errorf("its tables would change from %v to %v", tableNames(old), tableNames(m))
	}
	for i, t := range m.Tables {
		if was := old.Tables[i].CloudID; !slices.Equal(was, t.CloudID) {
			return fmt.Errorf("its primary identifier changed (table %s: %s, now %s)", t.Name, strings.Join(was, ", "), strings.Join(t.CloudID, ", "))
		}
	}
	return nil
}

// migrateModule brings m's tables to its declaration (store.MigrateTable;
// gone says what the comment of a column the declaration lost becomes),
// then runs its idempotent checks for the columns added (Module.Checks),
// and returns what changed, table by table (migrationNote).
func migrateModule(ctx context.Context, tx pgx.Tx, m module.Module, gone func(col, comment string) string) ([]string, error) {
	var notes []string
	for _, t := range m.Tables {
		mig, err := store.MigrateTable(ctx, tx, t, gone)
		if err != nil {
			return nil, err
		}
		notes = append(notes, migrationNote(t.Name, mig)...)
	}
	if m.Checks != "" {
		if _, err := tx.Exec(ctx, m.Checks); err != nil {
			return nil, fmt.Errorf("checks of %s's new columns: %w", m.Name, err)
		}
	}
	return notes, nil
}

func migrationNote(table string, m store.Migration) []string {
	var out []string
	if len(m.Added) > 0 {
		out = append(out, fmt.Sprintf("%s: added %s", table, strings.Join(m.Added, ", ")))
	}
	if len(m.Nullable) > 0 {
		out = append(out, fmt.Sprintf("%s: %s required but nullable (the table has rows)", table, strings.Join(m.Nullable, ", ")))
	}
	if len(m.Gone) > 0 {
		out = append(out, fmt.Sprintf("%s: %s no longer in the schema (kept)", table, strings.Join(m.Gone, ", ")))
	}
	return out
}

// forgetMappers drops a module's mappers, made from its previous
// declaration: the next cycle makes them from the module offered now.
func (e *Engine) forgetMappers(name string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.mappers, name)
}
