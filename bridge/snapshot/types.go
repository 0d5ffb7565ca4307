// Package snapshot is what one cycle read of both sides: the module rows
// (as stored and in cloud form), the engine's state of each record
// (iasql_records, iasql_operations, iasql_replacements), the modes, and
// the cloud's resources. Its methods derive what follows from the read
// alone (a create's resource adopted by its client token, a replacement's
// stand-in, the parts a failed read leaves unverified); the cloud is read
// through the tables' mappers, and nothing here writes the database.
package snapshot

import (
	"time"
	"unicode/utf8"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/iasql/iasql/bridge/replace"
	"github.com/iasql/iasql/modules/module"
	"github.com/jackc/pglogrepl"
)

// CloudForms puts the table's rows in cloud form and works out its
// replacements in progress: while the old resource of a replacement with a
// temporary stand-in exists, the row stands for the temporary resource (so
// that what references it moves there); the old and temporary resources
// are retired (deleted) once the row no longer stands for them.
func (ts *Table) CloudForms(snap *Snapshot) error {
	for id, r := range ts.Rows {
		cf, err := ToCloud(ts.Spec, r.DB, snap)
		if err != nil {
			if errors.Is(err, ErrNoParent) {
				continue
			}
			return err
		}
		cid := module.CloudIDOf(ts.Spec, cf)
		if Generated(ts.Spec) && cf[ts.Spec.CloudID[0]] == nil {
			// To be created (the cloud gives it its identity), unless an
			// earlier create made it and its identity was never written back.
			cf, cid = ts.AdoptByToken(id, cf)
			r.Adopted = cid != ""
		}
		if rp := ts.Repl[id]; rp != nil && Generated(ts.Spec) && cid == rp.Old {
			// The new resource was made, its identity not written back.
			if acf, acid := ts.adoptReplacement(id, cf, rp); acid != "" {
				cf, cid, r.Adopted = acf, acid, true
			}
		}
		if rp := ts.Repl[id]; rp != nil {
			_, oldThere := ts.Cloud[rp.Old]
			if stand := rp.Observe(oldThere); stand != "" {
				cf, cid = WithIdentity(ts.Spec, cf, stand), stand
			}
		}
		r.Cloud, r.CloudID = cf, cid
		if cid != "" {
			ts.ByCloud[cid] = r
		}
		if ts.Repl[id] != nil || ts.Ops[id].Action == "replace" || ts.Ops[id].Relaunches(ts.Spec, cid) {
			// Being replaced (a replacement under way, or one that deleted
			// first and has not yet been read in sync, or a relaunch under
			// way): what references the record is pushed to the new
			// resource, whatever its intent.
			ts.Forced[id] = true
		}
		for _, ref := range module.RefsOf(ts.Spec) {
			if p := snap.ByName[ref.Table]; p != nil && slices.ContainsFunc(ref.Values(r.DB), func(v string) bool { return p.Forced[v] }) {
				ts.Forced[id] = true
			}
		}
	}
	for id, rp := range ts.Repl {
		current := ""
		if r := ts.Rows[id]; r != nil {
			current = r.CloudID
		}
		for _, cid := range rp.Retiring(current) {
			ts.Retired[cid] = rp
		}
	}
	return nil
}

// ReadCloud reads the table's resources from the cloud, by identity.
func (ts *Table) ReadCloud(ctx context.Context, call module.Call) error {
	recs, err := ts.Mapper.Read(ctx, call)
	if err != nil {
		// What cannot be read is unverified; the rest goes on (unverified.go).
		if recs, err = ts.readFailed(ctx, recs, err); err != nil {
			return fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
		}
	}
	if recs, err = ts.canonicalAll(recs); err != nil {
		return fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
	}
	ts.AddCloud(recs)
	return nil
}

// AddCloud records resources read from the cloud, by identity (and by
// client token).
func (ts *Table) AddCloud(recs []module.Record) {
	for _, r := range recs {
		if cid := module.CloudIDOf(ts.Spec, r); cid != "" {
			ts.Cloud[cid] = r
			if tok := r.String(module.TokenTag); tok != "" {
				ts.ByToken[tok] = append(ts.ByToken[tok], cid)
			}
		}
	}
}

// FreshNames are the identity values of the records a cycle acts on:
// those with pending intent, work in progress or a replacement, as their
// rows say and as their records last knew them, and their parents'. A
// scoped read is fresh for them (module.Fresh's Names).
func FreshNames(snap *Snapshot) map[string]bool {
	names := map[string]bool{}
	addCID := func(cid string) {
		if cid == "" {
			return
		}
		names[cid] = true
		var parts []string
		if json.Unmarshal([]byte(cid), &parts) == nil {
			for _, p := range parts {
				names[p] = true
			}
		}
	}
	addRow := func(spec module.Table, r *Row) {
		for _, col := range spec.CloudID {
			if v := r.DB.String(col); v != "" {
				names[v] = true
			}
		}
	}
	for _, ts := range snap.Tables {
		acting := map[string]bool{}
		for id := range ts.Intent {
			acting[id] = true
		}
		for key := range ts.Ops {
			acting[key] = true
		}
		for id := range ts.Repl {
			acting[id] = true
		}
		for id := range acting {
			if cid, ok := strings.CutPrefix(id, "cloud "); ok {
				addCID(cid)
				continue
			}
			addCID(ts.Records[id].CloudID)
			r := ts.Rows[id]
			if r == nil {
				continue
			}
			addRow(ts.Spec, r)
			for _, ref := range module.RefsOf(ts.Spec) {
				if p := snap.ByName[ref.Table]; p != nil {
					for _, v := range ref.Values(r.DB) {
						if pr := p.Rows[v]; pr != nil {
							addRow(p.Spec, pr)
							addCID(p.Records[pr.ID].CloudID)
						}
					}
				}
			}
		}
	}
	return names
}

// Prepare makes the Call of the snapshot's mapper calls (Snapshot.Call):
// what each module's Prepare hook derives from the module's tables as read
// (aws_account's regions in scope). A hook sees the rows as read and, for
// a read-only table, the cloud's resources the database lacks (they are
// restored by this cycle); for another table, also the identities
// (module.IdentityOf) of the resources the engine still knows that no row
// holds: a deleted row's, a replaced one's. A mapper that reads what its
// rows name (a Cloud Control type without a list handler, one listed per
// parent) then still reads those, so their delete is seen and done.
func (s *Snapshot) Prepare() {
	rows := map[string][]module.Record{}
	for _, ts := range s.Tables {
		if ts.Module == nil || ts.Module.Prepare == nil {
			continue
		}
		recs := make([]module.Record, 0, len(ts.Rows))
		have := map[string]bool{}
		for _, r := range ts.Rows {
			recs = append(recs, r.DB)
			have[module.CloudIDOf(ts.Spec, r.DB)] = true
		}
		if ts.Spec.ReadOnly {
			for cid, c := range ts.Cloud {
				if !have[cid] {
					recs = append(recs, c)
				}
			}
		} else {
			known := func(cid string) {
				if r, ok := module.IdentityOf(ts.Spec, cid); ok && cid != "" && !have[cid] {
					have[cid] = true
					recs = append(recs, r)
				}
			}
			for _, rec := range ts.Records {
				known(rec.CloudID)
			}
			for _, rp := range ts.Repl {
				known(rp.Old)
				known(rp.Temp)
			}
		}
		rows[ts.Spec.Name] = recs
	}
	var call module.Call
	var done []*module.Module
	for _, ts := range s.Tables {
		if m := ts.Module; m != nil && m.Prepare != nil && !slices.Contains(done, m) {
			byTable := map[string][]module.Record{}
			for _, t := range m.Tables {
				byTable[t.Name] = rows[t.Name]
			}
			m.Prepare(byTable, &call)
			done = append(done, m)
		}
	}
	s.Call = call
}

// Row is a module-table row as the cycle read it.
type Row struct {
	ID      string
	Xmin    uint32        // the row version (xid) the read saw: writes are conditional on it
	DB      module.Record // as stored (refs are ids)
	Cloud   module.Record // in cloud form (refs are the referenced resources' cloud ids)
	CloudID string
	// Chosen: columns the row leaves NULL whose values the cloud chose
	// (TakeChoices; Cloud holds them already); Fill: those of them to be
	// written into the row.
	Chosen, Fill []string
	// Taken: columns whose cloud values the row takes because a column
	// rule gives them to the cloud (Owned; Cloud holds them, Fill writes
	// them into the row).
	Taken []string
	// Adopted: the identity in Cloud is not the row's own but that of the
	// resource its create's client token made (AdoptByToken,
	// adoptReplacement): the row does not hold it yet, so the record is
	// not in sync until it is written back.
	Adopted bool
}

// Own is the row's cloud form without the cloud's choices: what a new
// resource for it is made from (a replacement), so that the cloud chooses
// again where the row leaves it to the cloud.
func (r *Row) Own() module.Record {
	if len(r.Chosen) == 0 {
		return r.Cloud
	}
	out := maps.Clone(r.Cloud)
	for _, col := range r.Chosen {
		out[col] = nil
	}
	return out
}

// RecordState is what iasql_records says of one record.
type RecordState struct {
	CloudID string
	Enacted pglogrepl.LSN
}

// Table is everything a cycle knows of one table.
type Table struct {
	Spec    module.Table
	Mapper  module.Reader
	Module  *module.Module           // the module the table belongs to
	Rows    map[string]*Row          // by id
	ByCloud map[string]*Row          // by cloud id
	Cloud   map[string]module.Record // by cloud id
	Records map[string]RecordState   // by record id
	RecBy   map[string]string        // cloud id -> record id
	Intent  map[string]pglogrepl.LSN // record id -> newest pending user change
	// seen: record id -> the newest user change the read's snapshot sees;
	// acting on the record enacts it up to there, and no further.
	Seen map[string]pglogrepl.LSN
	// repl: record id -> its replacement in progress; retired: cloud id ->
	// the replacement whose old or temporary resource it is (to delete).
	Repl    map[string]*replace.Replacement
	Retired map[string]*replace.Replacement
	// forced: records pushed to the cloud whatever their intent: those
	// being replaced and those that reference them.
	Forced map[string]bool
	// ops: record key -> the engine's work under way or failed for it;
	// ByToken: client token -> the cloud ids of resources tagged with it;
	// strays: cloud id -> a resource a create's token made beyond the one
	// kept (MarkStrays), to delete.
	Ops     map[string]Op
	ByToken map[string][]string
	Strays  map[string]Stray
	// unverified: region ("" for the whole table) -> why the table's read
	// failed there (unverified.go).
	Unverified map[string]error
	// CloudWhole: cloud holds the whole table's resources (not only those
	// of the records a scoped read asked for), so a later pass may reuse it.
	CloudWhole bool
	// Causes: cloud id -> who changed the resource in AWS, when AWS said
	// (an event, or CloudTrail's LookupEvents): recorded with the rows the
	// cycle pulls from the cloud.
	Causes map[string]*Attribution
}

// Attribution is what AWS says of a change made in the cloud (a CloudTrail
// record): who made it, which call, when, from where.
type Attribution struct {
	Actor   string `json:"actor"`              // userIdentity's ARN (or the AWS service for a change AWS made)
	Event   string `json:"event,omitempty"`    // the call: eventName
	At      string `json:"at,omitempty"`       // eventTime (RFC 3339)
	Source  string `json:"source,omitempty"`   // sourceIPAddress, or the service it was invoked by
	EventID string `json:"event_id,omitempty"` // CloudTrail's eventID
}

// Bounds on what AWS's records give the audit trail (bytes): a field
// longer is cut to its bound, ending with CutMark (Bound). ARNs are at
// most 2048 characters (IAM's limit on a principal's ARN); the others are
// bounded well above what AWS sends: an event name, a source address or
// service, an event id or time. An event is anyone's text: bounded, the
// engine's marker stays far below what capture reads of a message.
const (
	MaxARN       = 2048
	MaxEventName = 128
	MaxSource    = 256
	MaxEventID   = 64
	MaxEventTime = 64
	CutMark      = "…"
)

// Bound is s cut to at most n bytes (on a rune boundary), ending with
// CutMark when cut.
func Bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len(CutMark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + CutMark
}

// Bounded is a with each field bounded (Bound).
func (a Attribution) Bounded() *Attribution {
	return &Attribution{Actor: Bound(a.Actor, MaxARN), Event: Bound(a.Event, MaxEventName), At: Bound(a.At, MaxEventTime),
		Source: Bound(a.Source, MaxSource), EventID: Bound(a.EventID, MaxEventID)}
}

// Generated reports whether the table's identity is generated by the cloud
// (a feedback column), so that a row without it is yet to be created.
func Generated(spec module.Table) bool {
	return len(spec.CloudID) == 1 && slices.Contains(spec.Feedback, spec.CloudID[0])
}

// WithIdentity returns r with its identity columns set from cid (the form
// CloudID renders).
func WithIdentity(spec module.Table, r module.Record, cid string) module.Record {
	out := maps.Clone(r)
	if id, ok := module.IdentityOf(spec, cid); ok {
		maps.Copy(out, id)
	}
	return out
}

// Snapshot is the state of every installed table at one point.
type Snapshot struct {
	// LeaderSince is when the engine's leadership began (the database's
	// clock): operations older and unanswered were cut short.
	LeaderSince time.Time
	LSN         pglogrepl.LSN // every change the read saw committed before it
	Vis         Visibility    // which transactions the read saw
	Low         pglogrepl.LSN // where the next cycle's intent query may start
	Modes       Modes
	// reading: which tables were read by record, and which rows were read
	// for reference only (nil: every table read whole).
	Reading *Scope
	// Call is what every mapper call of the snapshot is given (the scope,
	// the parents of listings: Prepare); a read adds its freshness and a
	// create its client token.
	Call   module.Call
	Tables []*Table // in dependency order
	ByName map[string]*Table
}

// ErrNoParent means a reference could not be translated yet.
var ErrNoParent = errors.New("referenced record not found")

// Parent is the table a reference points at.
func (snap *Snapshot) Parent(spec module.Table, ref module.Ref) (*Table, error) {
	p := snap.ByName[ref.Table]
	if p == nil {
		return nil, fmt.Errorf("%s.%s references %s, which is not installed", spec.Name, ref.Column, ref.Table)
	}
	return p, nil
}

// ToCloud translates a row's refs from ids to the referenced resources'
// cloud ids (a many-valued reference: a []any of them, in the order of the
// ids); a named reference (module.Naming) also fills its naming column
// with the referenced resources' names.
func ToCloud(spec module.Table, r module.Record, snap *Snapshot) (module.Record, error) {
	out := maps.Clone(r)
	for _, ref := range module.RefsOf(spec) {
		if r[ref.Column] == nil {
			continue
		}
		p, err := snap.Parent(spec, ref)
		if err != nil {
			return nil, err
		}
		var cids, names []any
		for _, v := range ref.Values(r) {
			pr := p.Rows[v]
			if pr == nil || pr.CloudID == "" {
				// Missing, or not created yet (its identity comes from the cloud).
				return nil, fmt.Errorf("%s.%s = %s: %w in %s", spec.Name, ref.Column, v, ErrNoParent, ref.Table)
			}
			cids = append(cids, pr.CloudID)
			if ref.Named.Column != "" {
				name := p.nameOf(pr, ref.Named.By)
				if name == nil {
					// Its name is the cloud's, not known yet (an ARN
					// before the create's write-back).
					return nil, fmt.Errorf("%s.%s = %s: %w in %s (its %s is not known yet)", spec.Name, ref.Column, v, ErrNoParent, ref.Table, ref.Named.By)
				}
				names = append(names, name)
			}
		}
		if !ref.Many {
			out[ref.Column] = cids[0]
			if ref.Named.Column != "" {
				out[ref.Named.Column] = names[0]
			}
			continue
		}
		if cids == nil {
			cids, names = []any{}, []any{}
		}
		out[ref.Column] = cids
		if ref.Named.Column != "" {
			out[ref.Named.Column] = names
		}
	}
	return out, nil
}

// ToDB translates a cloud record's refs to ids and keeps only the columns
// the engine writes (declarative and feedback).
func ToDB(spec module.Table, c module.Record, snap *Snapshot) (module.Record, error) {
	out := module.Record{}
	for _, col := range append(append([]string{}, spec.Declarative...), spec.Feedback...) {
		out[col] = c[col]
	}
	for _, ref := range module.RefsOf(spec) {
		if c[ref.Column] == nil {
			continue
		}
		p, err := snap.Parent(spec, ref)
		if err != nil {
			return nil, err
		}
		var ids []any
		for _, v := range ref.Values(c) {
			pr := p.ByCloud[v]
			if pr == nil && ref.Named.Column != "" {
				// A named resource no row holds yet: the reference stays
				// NULL, the naming column says which it is.
				ids = nil
				break
			}
			if pr == nil {
				return nil, fmt.Errorf("%s %s: %w (%s %s)", spec.Name, module.CloudIDOf(spec, c), ErrNoParent, ref.Table, v)
			}
			ids = append(ids, json.Number(pr.ID))
		}
		if ids == nil && ref.Named.Column != "" {
			out[ref.Column] = nil
			continue
		}
		if !ref.Many {
			out[ref.Column] = ids[0]
			continue
		}
		if ids == nil {
			ids = []any{}
		}
		out[ref.Column] = ids
	}
	return out, nil
}

// Gone reports whether a record is gone from both sides for good: the
// read looked for it (it was read whole, or it was among the records read)
// and found no row, no engine state, no work under way and no replacement.
// Its changes need nothing more (a row deleted before it was ever created,
// or a resource deleted and forgotten), so they do not hold the intent
// query back.
func (ts *Table) Gone(snap *Snapshot, id string) bool {
	if ts.Rows[id] != nil || ts.Repl[id] != nil {
		return false
	}
	if _, ok := ts.Records[id]; ok {
		return false
	}
	if _, ok := ts.Ops[id]; ok {
		return false
	}
	return !snap.Reading.ByRecord(ts.Spec.Name) || snap.Reading.Acting[ts.Spec.Name][id]
}

// StandingIn reports whether the row stands for the temporary stand-in of
// its replacement (CloudForms keeps the phase temporary only while it does).
func (ts *Table) StandingIn(id string) bool {
	rp := ts.Repl[id]
	return rp.StandingIn()
}

func NumLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
