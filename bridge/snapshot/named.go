package snapshot

import (
	"slices"

	"github.com/iasql/iasql/modules/module"
)

// Named references (module.Naming). A resource that names another in a
// column of its own (a Cloud Control property holding a role's ARN) has a
// reference column beside it, the database's way to say which row: the
// engine fills the naming column from the referenced row (ToCloud), finds
// the reference from the naming column in what the cloud reads (Link),
// and writes the name the cloud has into a row whose reference is set
// (TakeChoices). A name no row holds leaves the reference NULL: the
// resource names something the database does not manage.

// nameOf is the name of the resource row pr stands for, as a resource
// that references it writes it: its cloud identity (by ""), else its
// column by, as the cloud has it (as the row has it before the cloud
// read it); nil when not known yet.
func (p *Table) nameOf(pr *Row, by string) any {
	if by == "" {
		return pr.CloudID
	}
	if c, ok := p.Cloud[pr.CloudID]; ok && c[by] != nil {
		return c[by]
	}
	if pr.Cloud != nil && pr.Cloud[by] != nil {
		return pr.Cloud[by]
	}
	return pr.DB[by]
}

// names are the values of a naming column (or a reference column): one,
// or a list of them; none for NULL or an empty list.
func names(v any) []string {
	if list, ok := v.([]any); ok {
		out := make([]string, 0, len(list))
		for _, e := range list {
			if e != nil {
				out = append(out, module.Record{"v": e}.String("v"))
			}
		}
		return out
	}
	if v == nil {
		return nil
	}
	return []string{module.Record{"v": v}.String("v")}
}

// Link sets, in each of the table's cloud records, every named reference
// from its naming column: the cloud ids of the referenced resources the
// names are of, when the referenced table has them all (read before this
// one: the read goes in dependency order), else NULL.
func (ts *Table) Link(snap *Snapshot) {
	for _, ref := range module.RefsOf(ts.Spec) {
		if ref.Named.Column == "" {
			continue
		}
		p := snap.ByName[ref.Table]
		var byName map[string][]string
		if p != nil {
			byName = make(map[string][]string, len(p.Cloud))
			for cid, pc := range p.Cloud {
				if ref.Named.By == "" {
					byName[cid] = append(byName[cid], cid)
				} else if n := names(pc[ref.Named.By]); len(n) == 1 {
					byName[n[0]] = append(byName[n[0]], cid)
				}
			}
		}
		for _, c := range ts.Cloud {
			ns := names(c[ref.Named.Column])
			cids := make([]any, 0, len(ns))
			for _, n := range ns {
				if cid, ok := p.named(byName[n], ts.Spec.Region, c); ok {
					cids = append(cids, cid)
				}
			}
			switch {
			case len(ns) == 0 || len(cids) < len(ns):
				c[ref.Column] = nil
			case ref.Many:
				c[ref.Column] = cids
			default:
				c[ref.Column] = cids[0]
			}
		}
	}
}

// fillNames marks the naming columns of a row whose named reference is
// set, that the cloud already has as the reference says, and that the
// row holds otherwise (NULL, or a name from before the reference): the
// engine writes the cloud's name in (Row.Fill).
func (ts *Table) fillNames(r *Row, c module.Record) {
	for col, n := range ts.Spec.Named {
		if r.DB[col] == nil || r.Cloud == nil || slices.Contains(r.Fill, n.Column) {
			continue
		}
		if module.Same(r.Cloud[n.Column], c[n.Column]) && !module.Same(r.DB[n.Column], c[n.Column]) {
			r.Fill = append(r.Fill, n.Column)
		}
	}
}

// named is which of cids (resources of p that bear one name) a resource c
// of a table whose region column is region names: the only one, else the
// one in c's region when both tables have regions (a name may be used in
// several regions, and a resource names one of its own region: another
// region's is not it); none when that does not tell.
func (p *Table) named(cids []string, region string, c module.Record) (string, bool) {
	if p == nil || len(cids) == 0 {
		return "", false // the referenced table is not installed, or has no such resource
	}
	if region == "" || p.Spec.Region == "" {
		if len(cids) == 1 {
			return cids[0], true
		}
		return "", false
	}
	var found []string
	for _, cid := range cids {
		if p.Cloud[cid].String(p.Spec.Region) == c.String(region) {
			found = append(found, cid)
		}
	}
	if len(found) == 1 {
		return found[0], true
	}
	return "", false
}
