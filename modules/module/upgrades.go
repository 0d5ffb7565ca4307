package module

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Upgrade is one step of a module's SQL from a version to the next, like
// the core's sql/upgrades: immutable once released.
type Upgrade struct {
	From, To string
	SQL      string
}

// UpgradesFrom reads a module's upgrades from the files of fsys's dir
// named FROM--TO.sql (a module embeds them: //go:embed upgrades).
func UpgradesFrom(fsys fs.FS, dir string) []Upgrade {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(fmt.Sprintf("read the module's upgrades in %s: %v", dir, err))
	}
	var out []Upgrade
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".sql")
		if !ok {
			continue
		}
		from, to, ok := strings.Cut(name, "--")
		if !ok {
			panic(fmt.Sprintf("module upgrade %s is not named FROM--TO.sql", e.Name()))
		}
		body, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			panic(fmt.Sprintf("read module upgrade %s: %v", e.Name(), err))
		}
		out = append(out, Upgrade{From: from, To: to, SQL: string(body)})
	}
	return out
}

// UpgradePath returns the upgrades that take m's SQL from version from to
// m.Version, in order; none when from is m.Version; an error in one line
// when its upgrades do not lead there.
func (m Module) UpgradePath(from string) ([]Upgrade, error) {
	var out []Upgrade
	seen := map[string]bool{}
	for v := from; v != m.Version; {
		if seen[v] {
			return nil, fmt.Errorf("module %s's upgrades go round in a circle at %s", m.Name, v)
		}
		seen[v] = true
		next := -1
		for i, u := range m.Upgrades {
			if u.From == v {
				next = i
				break
			}
		}
		if next < 0 {
			return nil, fmt.Errorf("module %s is installed at version %s and this sidecar has %s with no upgrade from %s: run a sidecar that has one (never an older sidecar than the one that installed it)",
				m.Name, from, m.Version, v)
		}
		out = append(out, m.Upgrades[next])
		v = m.Upgrades[next].To
	}
	return out, nil
}

// Versions maps each module's name to its version.
func Versions(ms []Module) map[string]string {
	out := make(map[string]string, len(ms))
	for _, m := range ms {
		out[m.Name] = m.Version
	}
	return out
}
