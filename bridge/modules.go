package bridge

// The modules an engine offers: those built into the sidecar, and those
// its catalogs make on demand from a definition the cloud describes (a
// Cloud Control resource type from its schema), stored at the first
// install in iasql_modules.definition and made again from there at every
// start.

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/modules/module"
)

// module returns an offered module by name.
func (e *Engine) module(name string) (module.Module, bool) {
	e.modMu.RLock()
	defer e.modMu.RUnlock()
	m, ok := e.modules[name]
	return m, ok
}

// offer adds a module made by a catalog.
func (e *Engine) offer(m module.Module) {
	e.modMu.Lock()
	defer e.modMu.Unlock()
	e.modules[m.Name] = m.Declared()
}

// offered is every offered module.
func (e *Engine) offered() []module.Module {
	e.modMu.RLock()
	defer e.modMu.RUnlock()
	out := make([]module.Module, 0, len(e.modules))
	for _, m := range e.modules {
		out = append(out, m)
	}
	return out
}

// catalogOf is the catalog that offers name (nil when none does).
func (e *Engine) catalogOf(name string) module.Catalog {
	for _, c := range e.catalogs {
		if c.Offers(name) {
			return c
		}
	}
	return nil
}

// registerModules makes again the modules stored definitions describe,
// upgrades the installed modules whose SQL is older than this sidecar's,
// and offers every module in iasql_modules. The modules made from stored
// definitions come first, so that every start checks them alike: the
// first of a process, and those after a lost session, when the engine
// still offers what the last one made.
func (e *Engine) registerModules(ctx context.Context, c *pgx.Conn) error {
	defs, err := store.ModuleDefinitions(ctx, c)
	if err != nil {
		return err
	}
	for name, def := range defs {
		cat := e.catalogOf(name)
		if cat == nil {
			e.log.Warn("a module made from a definition is registered, but this sidecar has no catalog for it", "module", name)
			continue
		}
		m, err := cat.Module(name, def)
		if err != nil {
			e.log.Warn("cannot make a module from its stored definition", "module", name, "err", err)
			continue
		}
		e.offer(m)
	}
	if err := e.upgradeModules(ctx, c, defs); err != nil {
		return err
	}
	if err := e.completeMade(ctx, c, defs); err != nil {
		return err
	}
	for _, m := range e.offered() {
		if err := store.RegisterModule(ctx, c, &m, nil); err != nil {
			return err
		}
	}
	return nil
}

// upgradeModules applies, for each installed module this sidecar offers at
// a newer version, the module's upgrades from the installed version, each
// module in one transaction, a module after those it depends on. A module
// installed at a version its upgrades do not lead from (a newer one, or a
// gap) stops the engine with one line: cycles over tables whose shape the
// sidecar does not know could do harm.
//
// A module made from a stored definition (defs) is made from the very
// definition its tables were made from (it is stored once, at the first
// install, and kept), so another version there is not an upgrade: it is
// another digest of the same schema. Sidecars before SchemaVersion took
// the digest of DescribeType's bytes at the install and of the stored
// jsonb's text afterwards; such an install is recorded at this sidecar's
// version.
func (e *Engine) upgradeModules(ctx context.Context, c *pgx.Conn, defs map[string][]byte) error {
	installed, err := store.InstalledVersions(ctx, c)
	if err != nil {
		return err
	}
	// In dependency order: a module's upgrade may use what the upgrade of
	// a module it depends on adds (aws_account's aws_tags_check()).
	var names []string
	for _, m := range e.offered() {
		names = append(names, m.Name)
	}
	for _, n := range e.dependencyOrder(names) {
		m, _ := e.module(n)
		from, ok := installed[m.Name]
		if !ok || from == m.Version {
			continue
		}
		var steps []module.Upgrade
		_, made := defs[m.Name]
		if !made {
			if steps, err = m.UpgradePath(from); err != nil {
				return err
			}
		} else {
			// A made module's upgrades bring a table made by any earlier
			// sidecar from the same definition to the module's declaration
			// (the Cloud Control tables' region column): they run from any
			// other version, and do nothing to a table that has it.
			for _, u := range m.Upgrades {
				if u.To == m.Version {
					steps = append(steps, u)
				}
			}
		}
		sqls := make([]string, len(steps))
		for i, u := range steps {
			sqls[i] = u.SQL
		}
		if err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			// The module row must say the new version before it is upgraded
			// (RegisterModule runs after, for every module).
			if err := store.RegisterModule(ctx, tx, &m, nil); err != nil {
				return err
			}
			return store.UpgradeModule(ctx, tx, m.Name, m.Version, sqls, tableNames(m))
		}); err != nil {
			return err
		}
		if made {
			e.log.Info("module made from its stored definition: its version recorded anew (the same schema, digested otherwise, or a table of an older shape)", "module", m.Name, "from", from, "to", m.Version, "steps", len(steps))
			continue
		}
		e.log.Info("module upgraded", "module", m.Name, "from", from, "to", m.Version, "steps", len(steps))
	}
	return nil
}

// completeMade migrates the tables of installed modules made from stored
// definitions that lack columns their module now declares: a sidecar
// that declares more of the same definition than the one that installed
// it (a Cloud Control type's reference columns) adds them, with their
// checks (Module.Checks), before any cycle reads the tables. Nothing else
// changes (store.MigrateTable keeps every column and value).
func (e *Engine) completeMade(ctx context.Context, c *pgx.Conn, defs map[string][]byte) error {
	installed, err := store.InstalledVersions(ctx, c)
	if err != nil {
		return err
	}
	for name := range defs {
		m, ok := e.module(name)
		if _, inst := installed[name]; !ok || !inst {
			continue
		}
		var missing []string
		for _, t := range m.Tables {
			cols, err := store.MissingColumns(ctx, c, t)
			if err != nil {
				return err
			}
			missing = append(missing, cols...)
		}
		if len(missing) == 0 {
			continue
		}
		if err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			_, err := migrateModule(ctx, tx, m, func(_, comment string) string { return comment })
			return err
		}); err != nil {
			return fmt.Errorf("add the columns %v this sidecar declares to %s's table: %w", missing, name, err)
		}
		e.log.Info("module made from its stored definition: columns this sidecar declares added to its table", "module", name, "columns", missing)
	}
	return nil
}

// made is a module a catalog made for an install, with the definition it
// was made from: it is stored (and offered) only with a successful
// install, so a failed one leaves nothing that a later install would
// reuse instead of describing the type again.
type made struct {
	m   module.Module
	def []byte
}

// resolve makes sure every name is an offered module or one a catalog
// offers, which it makes: from its stored definition, or (at its first
// install) from the one the cloud describes now. It returns the modules it
// made, by name; install registers them in its transaction.
func (e *Engine) resolve(ctx context.Context, names []string) (map[string]made, error) {
	out := map[string]made{}
	for _, n := range names {
		if _, ok := e.module(n); ok {
			continue
		}
		cat := e.catalogOf(n)
		if cat == nil {
			return nil, fmt.Errorf("unknown module %q; SELECT * FROM iasql_modules_list() lists the modules, and a resource type name (AWS::Logs::LogGroup) installs that type", n)
		}
		var def []byte
		if err := e.service(ctx, func(c *pgx.Conn) (err error) {
			def, err = store.ModuleDefinition(ctx, c, n)
			return err
		}); err != nil {
			return nil, err
		}
		if def == nil {
			d, err := cat.Describe(ctx, e.aws, n)
			if err != nil {
				return nil, fmt.Errorf("cannot install %s: %w", n, err)
			}
			def = d
		}
		m, err := cat.Module(n, def)
		if err != nil {
			return nil, fmt.Errorf("cannot install %s: %w", n, err)
		}
		out[n] = made{m.Declared(), def}
	}
	return out, nil
}

func tableNames(m module.Module) []string {
	out := make([]string, len(m.Tables))
	for i, t := range m.Tables {
		out[i] = t.Name
	}
	return out
}
