package snapshot

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/modules/module"
)

// Op is a row of iasql_operations: cloud work under way or failed for one
// record.
type Op struct {
	Action, State, Token string
	Attempts             int
	NextRetry            time.Time
	LastError            string
	Handle               string    // a long operation's handle, while it runs
	PollAfter            time.Time // when to ask about it
	Since                time.Time // when it began (the handle's, once it has one)
	CloudID              string    // the resource it works on, when known
	Updated              time.Time // when it last changed
	// Changed: a user changed the record since (new intent, which a
	// record failed as not converging is planned for again at once).
	Changed bool
}

// NotConverging is how the last error of a record failed for not
// converging begins (bridge's cycle.notConverging).
const NotConverging = "not converging: "

// BackingOff reports whether the record's operation failed for not
// converging, its retry is not due at now, and no user changed the record
// since: every cycle leaves it alone (iasql_commit too), so that it does
// not fail commits that are not about it.
func (o Op) BackingOff(now time.Time) bool {
	return o.State == OpFailed && strings.HasPrefix(o.LastError, NotConverging) && o.NextRetry.After(now) && !o.Changed
}

// Operation states, as iasql_operations spells them.
const (
	OpInProgress = "in progress"
	OpFailed     = "failed"
	OpWaiting    = "waiting"
)

// AdoptByToken matches rows yet to be created, whose create has a persisted
// client token, with the resources that token made (module.TokenTag): a
// crash after the cloud acted and before the write-back leaves the row
// without its identity, and the resource is its own, not one to import.
// Of several (a create repeated by something that ignored the token) it
// takes the oldest (Keeper); MarkStrays deletes the others.
func (ts *Table) AdoptByToken(id string, cf module.Record) (module.Record, string) {
	o, ok := ts.Ops[id]
	if !ok || o.Token == "" {
		return cf, ""
	}
	return ts.adopt(cf, ts.ByToken[o.Token])
}

// adopt gives a row the oldest of the resources its token made (cids).
func (ts *Table) adopt(cf module.Record, cids []string) (module.Record, string) {
	if len(cids) == 0 {
		return cf, ""
	}
	keep := ts.Keeper(cids)
	return WithIdentity(ts.Spec, cf, keep), keep
}

// adoptReplacement is AdoptByToken for a row being replaced by a resource
// whose identity the cloud generates: the row still names the old resource
// when a crash (or a 500 after the cloud acted) came between the new
// resource's create and its write-back; the resource the replacement's
// token made is the row's, and any other it made is a stray.
func (ts *Table) adoptReplacement(id string, cf module.Record, rp *replace.Replacement) (module.Record, string) {
	o, ok := ts.Ops[id]
	if !ok || o.Token == "" || o.Action != "replace" {
		return cf, ""
	}
	var cids []string
	for _, cid := range ts.ByToken[o.Token] {
		if cid != rp.Old {
			cids = append(cids, cid)
		}
	}
	return ts.adopt(cf, cids)
}

// Keeper is which of the resources one client token made a record keeps
// when no row holds any: the oldest by the table's creation time
// (module.Table.Created; unknown times last), then the least identity.
func (ts *Table) Keeper(cids []string) string {
	created := func(cid string) (time.Time, bool) {
		if ts.Spec.Created == "" {
			return time.Time{}, false
		}
		t, err := time.Parse(time.RFC3339Nano, ts.Cloud[cid].String(ts.Spec.Created))
		return t, err == nil
	}
	return slices.MinFunc(cids, func(a, b string) int {
		ta, oka := created(a)
		tb, okb := created(b)
		switch {
		case oka && okb && !ta.Equal(tb):
			return ta.Compare(tb)
		case oka != okb:
			if oka {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
}

// Stray is a resource that a create's client token made beyond the one
// its record keeps: the create was repeated by something that ignored the
// token (an endpoint that does not honour ClientToken, a retry that did not
// find the first resource). The engine made it and no row wants it, so it
// is deleted, never imported.
type Stray struct {
	Token string
	Kept  []string // the resources of the token that are kept (held by rows, or the record's)
	Row   string   // the record the token's create was for ("" when unknown)
	All   []string // every resource of the token deleted as a stray, this one among them
}

// Describe says what a stray is, for the plan and the audit trail: the
// token, what is kept, what is deleted.
func (s Stray) Describe() string {
	row := ""
	if s.Row != "" {
		row = " for row " + s.Row
	}
	return fmt.Sprintf("client token %s made more than one resource%s (a create repeated where the token was not honoured); kept %s, deleting %s",
		s.Token, row, strings.Join(s.Kept, ", "), strings.Join(s.All, ", "))
}

// MarkStrays finds the resources that one client token made more than once
// (module.TokenTag, read back from the cloud) and marks all but one
// strays, to be deleted. Kept are the resources that rows stand for
// (after AdoptByToken: a row whose identity was never written back holds
// the oldest); when no row holds any, the one its record knew (a row the
// user deleted: the direction table settles it, as any resource of a
// deleted row); else the oldest (Keeper), which the direction table then
// settles as a resource only in the cloud. A replacement's old or
// temporary resource is the replacement's to retire, never a stray.
func (ts *Table) MarkStrays() {
	for tok, made := range ts.ByToken {
		if len(made) < 2 {
			continue // the common case: one resource per token
		}
		var cids []string
		for _, cid := range made {
			if _, there := ts.Cloud[cid]; there && ts.Retired[cid] == nil && !slices.Contains(cids, cid) {
				cids = append(cids, cid)
			}
		}
		if len(cids) < 2 {
			continue
		}
		slices.Sort(cids)
		var kept []string
		row := ""
		for _, cid := range cids {
			if r := ts.ByCloud[cid]; r != nil {
				kept = append(kept, cid)
				row = cmp.Or(row, r.ID)
			}
		}
		if len(kept) == 0 {
			for _, cid := range cids {
				if id := ts.RecBy[cid]; id != "" {
					kept = append(kept, cid)
					row = cmp.Or(row, id)
				}
			}
		}
		if len(kept) == 0 {
			kept = []string{ts.Keeper(cids)}
		}
		if row == "" {
			for _, key := range slices.Sorted(maps.Keys(ts.Ops)) {
				if ts.Ops[key].Token == tok && !strings.HasPrefix(key, "cloud ") {
					row = key
					break
				}
			}
		}
		var strays []string
		for _, cid := range cids {
			if !slices.Contains(kept, cid) {
				strays = append(strays, cid)
			}
		}
		for _, cid := range strays {
			ts.Strays[cid] = Stray{Token: tok, Kept: kept, Row: row, All: strays}
		}
	}
}

// Relaunches reports whether o is the create of a resource that replaces
// one the record had (cid is the record's identity now): a record whose
// identity the cloud generates, whose resource was gone from the cloud
// (an instance terminated elsewhere, under ENFORCE), created anew. What
// references the record moves to the new resource (Table.Forced).
func (o Op) Relaunches(spec module.Table, cid string) bool {
	return o.Action == "create" && Generated(spec) && o.CloudID != "" && cid != "" && o.CloudID != cid
}

// InFlight reports whether a record has an operation running in the cloud.
func (ts *Table) InFlight(key string) bool {
	o, ok := ts.Ops[key]
	return ok && o.Handle != ""
}

// CreateCutShort reports whether a record's create is a long operation
// (the mapper is a module.Poller) that a previous leader began (its token
// persisted before leaderSince) and left without a handle: it stopped
// between the call and recording the answer, so the resource may still be
// on its way. (A create that ended at once, also without a handle, is
// this only when its leader stopped before the read that enacts it:
// asking again costs one idempotent call.)
func (ts *Table) CreateCutShort(id string, leaderSince time.Time) bool {
	o, ok := ts.Ops[id]
	if !ok || o.Action != "create" || o.State != OpInProgress || o.Handle != "" || o.Token == "" || !o.Updated.Before(leaderSince) {
		return false
	}
	return module.PartsOf(ts.Mapper).Poller != nil
}

// NextPoll is the earliest time an operation in flight is to be asked
// about (zero when none is in flight), and what runs.
func (s *Snapshot) NextPoll() (time.Time, []string) {
	var at time.Time
	var what []string
	for _, ts := range s.Tables {
		for key, o := range ts.Ops {
			if o.Handle == "" {
				continue
			}
			what = append(what, fmt.Sprintf("%s %s (%s, %s)", ts.Spec.Name, key, o.Action, o.Handle))
			if at.IsZero() || o.PollAfter.Before(at) {
				at = o.PollAfter
			}
		}
	}
	sort.Strings(what)
	return at, what
}

// CreateUnsettled reports whether a row of the table, whose identity the
// cloud generates, may own a resource the read could not attribute to it:
// its create (or its replacement's) carried a client token and is still
// in progress (running on
// in the cloud, or cut short by a crash before its answer was recorded),
// and the mapper cannot find resources by token (module.Finder: a token
// tag). A resource only
// in the cloud may then be that row's, so it is not imported until the
// create is retried (with the same token: Cloud Control and RunInstances
// answer with what the first call made) and its identity written back.
func (ts *Table) CreateUnsettled() bool {
	if !Generated(ts.Spec) {
		return false
	}
	if module.PartsOf(ts.Mapper).Finder != nil {
		return false
	}
	for id, o := range ts.Ops {
		if r := ts.Rows[id]; r != nil && (r.CloudID == "" || o.Action == "replace") && o.Token != "" && o.State == OpInProgress {
			return true
		}
	}
	return false
}

// Forgotten are the records of the table that outlived their rows: the row
// is gone (read, not there), and the resource the record stands for is not
// in the cloud, or another row stands for it now; so nothing is left to do
// for them, and their state and operations (a create that failed before
// the user deleted the row) are forgotten. So is the work on a resource
// with no row ("cloud " and its id) that a whole read no longer finds. A record is kept while an
// operation of it runs in the cloud, while a create cut short may yet be
// found by its token (in progress, with one), while a replacement of it
// is under way, and where the cloud could not be read.
func (ts *Table) Forgotten(snap *Snapshot) []string {
	unverified := snap.UnverifiedParts(ts)
	var out []string
	consider := func(id string) {
		if ts.Rows[id] != nil || ts.Repl[id] != nil || slices.Contains(out, id) {
			return
		}
		if snap.Reading.ByRecord(ts.Spec.Name) && !snap.Reading.Acting[ts.Spec.Name][id] {
			return // not read: whether the row is there is not known
		}
		if o, ok := ts.Ops[id]; ok && (o.Handle != "" || (o.State == OpInProgress && o.Token != "")) {
			return
		}
		if cid := ts.Records[id].CloudID; cid != "" {
			if _, there := ts.Cloud[cid]; there && ts.ByCloud[cid] == nil {
				return // the resource is deleted from the cloud first (Diff)
			}
		}
		if unverified.Record(id) {
			return
		}
		out = append(out, id)
	}
	for key, o := range ts.Ops {
		cid, rowless := strings.CutPrefix(key, "cloud ")
		if !rowless {
			consider(key)
			continue
		}
		// Work on a resource with no row (a delete that failed) whose
		// resource is gone meanwhile: nothing is left to do either.
		if _, there := ts.Cloud[cid]; !there && ts.CloudWhole && o.Handle == "" && unverified == nil {
			out = append(out, key)
		}
	}
	for id := range ts.Records {
		consider(id)
	}
	sort.Slice(out, func(i, j int) bool { return NumLess(out[i], out[j]) })
	return out
}
