package reconcile

// Partial outage: a region, service or table whose reads fail is
// unverified. The cycle goes on for everything else; in an unverified part
// nothing is done on the strength of the failed read: no row is deleted or
// imported, nothing is created, changed or deleted in the cloud, no intent
// is enacted. Unverified parts are reported in the cycle's end record (its
// summary), in iasql_unverified (and so in iasql_status), and to the
// caller of iasql_commit.
//
// What a table's read leaves unverified (Table.unverified) is by
// region, from a mapper's module.PartialError, or the whole table ("")
// when its Read failed as a whole. A row or resource is in an unverified
// part when its table, or a table it references (its parent, recursively),
// is unverified in its region: a child cannot be synced without its parent
// (a subnet whose VPCs could not be read, the rules of groups that could
// not be read). Its region is the table's Region column of the row or
// record, else its parent's; where that cannot be told, it is unverified
// as soon as its table or a parent table has any unverified part.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/bridge/store"
)

// noteUnverified records what the cycle's last read left unverified: in
// the outcome (the union over the cycle's passes, for the end record and
// the caller) and in iasql_unverified (what is unverified now, for
// iasql_status). It returns failures with those of the records it holds
// (held) added.
func (c *cycle) noteUnverified(ctx context.Context, out *Outcome, failures []string) ([]string, error) {
	for _, ts := range c.snap.Tables {
		for _, region := range slices.Sorted(maps.Keys(ts.Unverified)) {
			table := ts.Spec.Name
			if region == snapshot.WholeTable && c.unread[table] != nil {
				if !slices.Contains(out.Unread, table) {
					out.Unread = append(out.Unread, table)
				}
				continue // left for a later cycle, not failed
			}
			part := snapshot.UnverifiedPart(table, region)
			l := part + ": " + snapshot.OneLine(ts.Unverified[region].Error())
			i := slices.IndexFunc(out.Unverified, func(o string) bool { return strings.HasPrefix(o, part+": ") })
			if i < 0 {
				out.Unverified = append(out.Unverified, l)
				c.log().Warn("unverified: reads failed; nothing is done there this cycle", "cycle", c.id, "part", l)
			} else {
				out.Unverified[i] = l
			}
		}
	}
	var parts []store.Unverified
	var installed []string
	for _, ts := range c.snap.Tables {
		if ts.CloudWhole {
			// Only a whole read says what is verified now; a table read by
			// record (scope.go) keeps what the last whole read found.
			installed = append(installed, ts.Spec.Name)
		}
		for _, region := range slices.Sorted(maps.Keys(ts.Unverified)) {
			parts = append(parts, store.Unverified{Table: ts.Spec.Name, Region: region, Error: snapshot.OneLine(ts.Unverified[region].Error())})
		}
	}
	// One statement (iasql_unverified is not captured: no engine marker),
	// on the cycle's session under its mutex; none when the table is known
	// empty and nothing is unverified (every pass of every cycle, as a rule).
	if len(parts) == 0 && c.st.UnverifiedClear {
		return append(failures, c.snap.Held()...), nil
	}
	if err := c.withConn(func() error { return store.SetUnverified(ctx, c.conn, parts, installed) }); err != nil {
		return nil, err
	}
	c.st.UnverifiedClear = len(parts) == 0
	return append(failures, c.snap.Held()...), nil
}

// unverifiedSummary is what a cycle's summary says of its unverified parts
// ("" when there were none).
func unverifiedSummary(o *Outcome) string {
	s := ""
	if len(o.Unread) > 0 {
		s = fmt.Sprintf("; %d table(s) not read (their list budget went to others; iasql_status says since when): %s",
			len(o.Unread), strings.Join(o.Unread, ", "))
	}
	if len(o.Unverified) == 0 {
		return s
	}
	return s + fmt.Sprintf("; %d part(s) unverified (their reads failed; nothing was done there): %s",
		len(o.Unverified), strings.Join(o.Unverified, "; "))
}
