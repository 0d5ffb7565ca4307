package bridge

// Reading a snapshot of both sides: the rows, the engine's state and the
// cloud (fresh for what a scoped cycle acts on), and the rows in cloud form.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/jackc/pglogrepl"

	"github.com/iasql/iasql/modules/module"
)

// read takes a snapshot of both sides: the database rows at one point, the
// intent committed before it (once capture has recorded all of it), the
// engine's record state, and the cloud.
func (c *cycle) read(ctx context.Context) error {
	specs := make([]module.Table, len(c.tables))
	names := make([]string, len(c.tables))
	for i, t := range c.tables {
		specs[i], names[i] = t.spec, t.spec.Name
	}
	var lsn pglogrepl.LSN
	var vis Visibility
	var rows map[string]map[string]*Row
	var modes Modes
	var reading *Scope
	if c.scoped() {
		// What to read by record is known from the engine's state once
		// every change committed before now is in the audit trail.
		if err := c.withConn(func() (err error) {
			if err = c.conn.QueryRow(ctx, `SELECT pg_catalog.pg_current_wal_insert_lsn()::text`).Scan(&lsn); err != nil {
				return fmt.Errorf("read WAL position: %w", err)
			}
			return nil
		}); err != nil {
			return err
		}
		if err := c.e.capture.WaitCovered(ctx, lsn); err != nil {
			return err
		}
		if err := c.withConn(func() (err error) {
			acting, err := ReadActing(ctx, c.conn, names, c.e.intentLow())
			if err != nil {
				return err
			}
			if modes, err = ReadModes(ctx, c.conn); err != nil {
				return err
			}
			reading = c.scopeFor(acting, modes)
			return nil
		}); err != nil {
			return err
		}
	}
	if err := c.withConn(func() (err error) {
		lsn, vis, rows, err = ReadDB(ctx, c.conn, specs, reading)
		return err
	}); err != nil {
		return err
	}
	if err := c.e.capture.WaitCovered(ctx, lsn); err != nil {
		return err
	}
	var (
		recs         map[string]map[string]RecordState
		intent, seen map[string]map[string]pglogrepl.LSN
		next         pglogrepl.LSN
		repls        map[string]map[string]*Replacement
		ops          map[string]map[string]Op
	)
	if err := c.withConn(func() (err error) {
		if recs, err = ReadRecords(ctx, c.conn, names, reading); err != nil {
			return err
		}
		if intent, seen, next, err = ReadIntent(ctx, c.conn, names, c.e.intentLow(), lsn, vis, recs); err != nil {
			return err
		}
		if reading == nil {
			if modes, err = ReadModes(ctx, c.conn); err != nil {
				return err
			}
		}
		if repls, err = ReadReplacements(ctx, c.conn, names); err != nil {
			return err
		}
		ops, err = ReadOps(ctx, c.conn, names)
		return err
	}); err != nil {
		return err
	}
	snap := &Snapshot{LSN: lsn, Vis: vis, Low: next, Modes: modes, Reading: reading, ByName: map[string]*Table{}}
	for _, t := range c.tables {
		ts := &Table{Spec: t.spec, Mapper: t.mapper, Module: t.mod, Rows: rows[t.spec.Name], ByCloud: map[string]*Row{},
			Records: recs[t.spec.Name], RecBy: map[string]string{}, Intent: intent[t.spec.Name], Seen: seen[t.spec.Name],
			Cloud: map[string]module.Record{}, Repl: repls[t.spec.Name], Retired: map[string]*Replacement{}, Forced: map[string]bool{},
			Ops: ops[t.spec.Name], ByToken: map[string][]string{}, Strays: map[string]string{}}
		if ts.Records == nil {
			ts.Records = map[string]RecordState{}
		}
		if ts.Repl == nil {
			ts.Repl = map[string]*Replacement{}
		}
		for id, r := range ts.Records {
			if r.CloudID != "" {
				ts.RecBy[r.CloudID] = id
			}
		}
		snap.Tables = append(snap.Tables, ts)
		snap.ByName[t.spec.Name] = ts
	}
	var fresh map[string]bool
	if c.scoped() {
		fresh = FreshNames(snap)
	}
	// Read-only tables first: what modules derive from their tables (the
	// regions in scope) comes from them, and a row a user deleted from one
	// is restored from the cloud in this cycle, so it counts meanwhile.
	for _, ts := range snap.Tables {
		if ts.Spec.ReadOnly {
			if err := c.readCloud(c.freshness(ctx, snap, ts, fresh), ts); err != nil {
				return err
			}
		}
	}
	snap.Context = ContextRecords(snap)
	ctx = snap.Scope(ctx)
	// The rest of the cloud, one mapper at a time (each may page and fan
	// out itself), with every mapper call of this snapshot in that scope;
	// and the rows in cloud form, parents before children (a child's
	// references are its parents' cloud ids, as the parents stand now). A
	// table read by record is asked for the identities its rows have in
	// cloud form.
	for _, ts := range snap.Tables {
		byRecord := reading.ByRecord(ts.Spec.Name)
		if !ts.Spec.ReadOnly && !byRecord {
			if err := c.readCloud(c.freshness(ctx, snap, ts, fresh), ts); err != nil {
				return err
			}
		}
		if err := ts.CloudForms(snap); err != nil {
			return err
		}
		if byRecord {
			if err := ts.GetCloud(ctx, reading); err != nil {
				return err
			}
		}
	}
	c.snap = snap
	c.reads, c.touched = snap.ByName, nil
	return nil
}

// readCloud reads a table's cloud, or takes it from the previous pass of
// this cycle when the cycle has not changed it in the cloud since (touch).
func (c *cycle) readCloud(ctx context.Context, ts *Table) error {
	if prev := c.reads[ts.Spec.Name]; prev != nil && !c.touched[ts.Spec.Name] && prev.CloudWhole {
		ts.Cloud, ts.ByToken, ts.Unverified, ts.CloudWhole = prev.Cloud, prev.ByToken, prev.Unverified, true
		return nil
	}
	ts.CloudWhole = true
	return ts.ReadCloud(ctx)
}

// cloudForms puts the table's rows in cloud form and works out its
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
		}
		if rp := ts.Repl[id]; rp != nil && Generated(ts.Spec) && cid == rp.Old {
			// The new resource was made, its identity not written back.
			if acf, acid := ts.adoptReplacement(id, cf, rp); acid != "" {
				cf, cid = acf, acid
			}
		}
		if rp := ts.Repl[id]; rp != nil && rp.Phase == PhaseTemporary {
			if _, oldThere := ts.Cloud[rp.Old]; oldThere && rp.Temp != "" {
				cf, cid = WithIdentity(ts.Spec, cf, rp.Temp), rp.Temp
			} else {
				rp.Phase, rp.Promote = PhaseFinal, true
			}
		}
		r.Cloud, r.CloudID = cf, cid
		if cid != "" {
			ts.ByCloud[cid] = r
		}
		if ts.Repl[id] != nil {
			ts.Forced[id] = true
		}
		for col, parent := range ts.Spec.Refs {
			if p := snap.ByName[parent]; p != nil && r.DB[col] != nil && p.Forced[r.DB.String(col)] {
				ts.Forced[id] = true
			}
		}
	}
	for id, rp := range ts.Repl {
		current := ""
		if r := ts.Rows[id]; r != nil {
			current = r.CloudID
		}
		for _, cid := range []string{rp.Old, rp.Temp} {
			if cid != "" && cid != current {
				ts.Retired[cid] = rp
			}
		}
	}
	return nil
}

// readCloud reads the table's resources from the cloud, by identity.
func (ts *Table) ReadCloud(ctx context.Context) error {
	recs, err := ts.Mapper.Read(ctx)
	if err != nil {
		// What cannot be read is unverified; the rest goes on (unverified.go).
		if recs, err = ts.readFailed(ctx, recs, err); err != nil {
			return fmt.Errorf("read %s from the cloud: %w", ts.Spec.Name, err)
		}
	}
	ts.AddCloud(recs)
	return nil
}

// addCloud records resources read from the cloud, by identity (and by
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

// freshness is how a cycle reads a table: full reads all fresh; a scoped
// cycle fresh for what it acts on (names), unless an ENFORCE or TRACK rule
// covers the table (those modes are about drift: the whole table is read
// as the cloud has it now); automatic cycles may reuse recent reads.
func (c *cycle) freshness(ctx context.Context, snap *Snapshot, ts *Table, names map[string]bool) context.Context {
	switch {
	case c.fullRead() || (c.scoped() && snap.Modes.Drifty(ts.Spec.Name)):
		return module.WithFreshRead(ctx)
	case c.scoped():
		return module.WithFreshOnly(ctx, names)
	}
	return ctx
}

// freshNames are the identity values of the records a cycle acts on:
// those with pending intent, work in progress or a replacement, as their
// rows say and as their records last knew them, and their parents'. A
// scoped read is fresh for them (module.WithFreshOnly).
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
			for col, parent := range ts.Spec.Refs {
				if p := snap.ByName[parent]; p != nil && r.DB[col] != nil {
					if pr := p.Rows[r.DB.String(col)]; pr != nil {
						addRow(p.Spec, pr)
						addCID(p.Records[pr.ID].CloudID)
					}
				}
			}
		}
	}
	return names
}

// contextRecords are the records each module's Context hook sees, by table
// of the modules that have one: the rows as read and, for a read-only
// table, the cloud's resources the database lacks (they are restored by
// this cycle).
func ContextRecords(snap *Snapshot) map[string][]module.Record {
	out := map[string][]module.Record{}
	for _, ts := range snap.Tables {
		if ts.Module == nil || ts.Module.Context == nil {
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
		}
		out[ts.Spec.Name] = recs
	}
	return out
}

// scope adds what modules derive from their tables as read (module.Module
// Context: aws_account's regions in scope) to a context for mapper calls.
func (s *Snapshot) Scope(ctx context.Context) context.Context {
	var done []*module.Module
	for _, ts := range s.Tables {
		if m := ts.Module; m != nil && m.Context != nil && !slices.Contains(done, m) {
			byTable := map[string][]module.Record{}
			for _, t := range m.Tables {
				byTable[t.Name] = s.Context[t.Name]
			}
			ctx = m.Context(ctx, byTable)
			done = append(done, m)
		}
	}
	return ctx
}

// row is a module-table row as the cycle read it.
type Row struct {
	ID      string
	Xmin    string        // the row version the read saw: writes are conditional on it
	DB      module.Record // as stored (refs are ids)
	Cloud   module.Record // in cloud form (refs are the referenced resources' cloud ids)
	CloudID string
}

// record is what iasql_records says of one record.
type RecordState struct {
	CloudID string
	Enacted pglogrepl.LSN
}

// tableState is everything a cycle knows of one table.
type Table struct {
	Spec    module.Table
	Mapper  module.Mapper
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
	Repl    map[string]*Replacement
	Retired map[string]*Replacement
	// forced: records pushed to the cloud whatever their intent: those
	// being replaced and those that reference them.
	Forced map[string]bool
	// ops: record key -> the engine's work under way or failed for it;
	// byToken: client token -> the cloud ids of resources tagged with it;
	// strays: cloud id -> the row whose retried create made it a second time.
	Ops     map[string]Op
	ByToken map[string][]string
	Strays  map[string]string
	// unverified: region ("" for the whole table) -> why the table's read
	// failed there (unverified.go).
	Unverified map[string]error
	// cloudWhole: cloud holds the whole table's resources (not only those
	// of the records a scoped read asked for), so a later pass may reuse it.
	CloudWhole bool
}

// generated reports whether the table's identity is generated by the cloud
// (a feedback column), so that a row without it is yet to be created.
func Generated(spec module.Table) bool {
	return len(spec.CloudID) == 1 && slices.Contains(spec.Feedback, spec.CloudID[0])
}

// withIdentity returns r with its identity columns set from cid (the form
// cloudID renders).
func WithIdentity(spec module.Table, r module.Record, cid string) module.Record {
	out := maps.Clone(r)
	if len(spec.CloudID) == 1 {
		out[spec.CloudID[0]] = cid
		return out
	}
	var parts []string
	if err := json.Unmarshal([]byte(cid), &parts); err != nil || len(parts) != len(spec.CloudID) {
		return out
	}
	for i, c := range spec.CloudID {
		out[c] = parts[i]
	}
	return out
}

// snapshot is the state of every installed table at one point.
type Snapshot struct {
	LSN   pglogrepl.LSN // every change the read saw committed before it
	Vis   Visibility    // which transactions the read saw
	Low   pglogrepl.LSN // where the next cycle's intent query may start
	Modes Modes
	// reading: which tables were read by record, and which rows were read
	// for reference only (nil: every table read whole).
	Reading *Scope
	// context: the records modules' Context hooks see, by table (see scope).
	Context map[string][]module.Record
	Tables  []*Table // in dependency order
	ByName  map[string]*Table
}

// errNoParent means a reference could not be translated yet.
var ErrNoParent = errors.New("referenced record not found")

// parent is the table that spec's reference column col points at.
func (snap *Snapshot) Parent(spec module.Table, col string) (*Table, error) {
	p := snap.ByName[spec.Refs[col]]
	if p == nil {
		return nil, fmt.Errorf("%s.%s references %s, which is not installed", spec.Name, col, spec.Refs[col])
	}
	return p, nil
}

// toCloud translates a row's refs from ids to the referenced resources'
// cloud ids.
func ToCloud(spec module.Table, r module.Record, snap *Snapshot) (module.Record, error) {
	out := maps.Clone(r)
	for col, parent := range spec.Refs {
		if r[col] == nil {
			continue
		}
		p, err := snap.Parent(spec, col)
		if err != nil {
			return nil, err
		}
		pr := p.Rows[r.String(col)]
		if pr == nil || pr.CloudID == "" {
			// Missing, or not created yet (its identity comes from the cloud).
			return nil, fmt.Errorf("%s.%s = %s: %w in %s", spec.Name, col, r.String(col), ErrNoParent, parent)
		}
		out[col] = pr.CloudID
	}
	return out, nil
}

// toDB translates a cloud record's refs to ids and keeps only the columns
// the engine writes (declarative and feedback).
func ToDB(spec module.Table, c module.Record, snap *Snapshot) (module.Record, error) {
	out := module.Record{}
	for _, col := range append(append([]string{}, spec.Declarative...), spec.Feedback...) {
		out[col] = c[col]
	}
	for col, parent := range spec.Refs {
		if c[col] == nil {
			continue
		}
		p, err := snap.Parent(spec, col)
		if err != nil {
			return nil, err
		}
		pr := p.ByCloud[c.String(col)]
		if pr == nil {
			return nil, fmt.Errorf("%s %s: %w (%s %s)", spec.Name, module.CloudIDOf(spec, c), ErrNoParent, parent, c.String(col))
		}
		out[col] = json.Number(pr.ID)
	}
	return out, nil
}
