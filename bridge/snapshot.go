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
	var vis visibility
	var rows map[string]map[string]*row
	var modes modeRules
	var reading *readScope
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
			acting, err := readActing(ctx, c.conn, names, c.e.intentLow())
			if err != nil {
				return err
			}
			if modes, err = readModes(ctx, c.conn); err != nil {
				return err
			}
			reading = c.scopeFor(acting, modes)
			return nil
		}); err != nil {
			return err
		}
	}
	if err := c.withConn(func() (err error) {
		lsn, vis, rows, err = readDB(ctx, c.conn, specs, reading)
		return err
	}); err != nil {
		return err
	}
	if err := c.e.capture.WaitCovered(ctx, lsn); err != nil {
		return err
	}
	var (
		recs         map[string]map[string]record
		intent, seen map[string]map[string]pglogrepl.LSN
		next         pglogrepl.LSN
		repls        map[string]map[string]*replacement
		ops          map[string]map[string]op
	)
	if err := c.withConn(func() (err error) {
		if recs, err = readRecords(ctx, c.conn, names, reading); err != nil {
			return err
		}
		if intent, seen, next, err = readIntent(ctx, c.conn, names, c.e.intentLow(), lsn, vis, recs); err != nil {
			return err
		}
		if reading == nil {
			if modes, err = readModes(ctx, c.conn); err != nil {
				return err
			}
		}
		if repls, err = readReplacements(ctx, c.conn, names); err != nil {
			return err
		}
		ops, err = readOps(ctx, c.conn, names)
		return err
	}); err != nil {
		return err
	}
	snap := &snapshot{lsn: lsn, vis: vis, low: next, modes: modes, reading: reading, byName: map[string]*tableState{}}
	for _, t := range c.tables {
		ts := &tableState{spec: t.spec, mapper: t.mapper, mod: t.mod, rows: rows[t.spec.Name], byCloud: map[string]*row{},
			records: recs[t.spec.Name], recBy: map[string]string{}, intent: intent[t.spec.Name], seen: seen[t.spec.Name],
			cloud: map[string]module.Record{}, repl: repls[t.spec.Name], retired: map[string]*replacement{}, forced: map[string]bool{},
			ops: ops[t.spec.Name], byToken: map[string][]string{}, strays: map[string]string{}}
		if ts.records == nil {
			ts.records = map[string]record{}
		}
		if ts.repl == nil {
			ts.repl = map[string]*replacement{}
		}
		for id, r := range ts.records {
			if r.cloudID != "" {
				ts.recBy[r.cloudID] = id
			}
		}
		snap.tables = append(snap.tables, ts)
		snap.byName[t.spec.Name] = ts
	}
	var fresh map[string]bool
	if c.scoped() {
		fresh = freshNames(snap)
	}
	// Read-only tables first: what modules derive from their tables (the
	// regions in scope) comes from them, and a row a user deleted from one
	// is restored from the cloud in this cycle, so it counts meanwhile.
	for _, ts := range snap.tables {
		if ts.spec.ReadOnly {
			if err := c.readCloud(c.freshness(ctx, snap, ts, fresh), ts); err != nil {
				return err
			}
		}
	}
	snap.context = contextRecords(snap)
	ctx = snap.scope(ctx)
	// The rest of the cloud, one mapper at a time (each may page and fan
	// out itself), with every mapper call of this snapshot in that scope;
	// and the rows in cloud form, parents before children (a child's
	// references are its parents' cloud ids, as the parents stand now). A
	// table read by record is asked for the identities its rows have in
	// cloud form.
	for _, ts := range snap.tables {
		byRecord := reading.byRecord(ts.spec.Name)
		if !ts.spec.ReadOnly && !byRecord {
			if err := c.readCloud(c.freshness(ctx, snap, ts, fresh), ts); err != nil {
				return err
			}
		}
		if err := ts.cloudForms(snap); err != nil {
			return err
		}
		if byRecord {
			if err := ts.getCloud(ctx, reading); err != nil {
				return err
			}
		}
	}
	c.snap = snap
	c.reads, c.touched = snap.byName, nil
	return nil
}

// readCloud reads a table's cloud, or takes it from the previous pass of
// this cycle when the cycle has not changed it in the cloud since (touch).
func (c *cycle) readCloud(ctx context.Context, ts *tableState) error {
	if prev := c.reads[ts.spec.Name]; prev != nil && !c.touched[ts.spec.Name] && prev.cloudWhole {
		ts.cloud, ts.byToken, ts.unverified, ts.cloudWhole = prev.cloud, prev.byToken, prev.unverified, true
		return nil
	}
	ts.cloudWhole = true
	return ts.readCloud(ctx)
}

// cloudForms puts the table's rows in cloud form and works out its
// replacements in progress: while the old resource of a replacement with a
// temporary stand-in exists, the row stands for the temporary resource (so
// that what references it moves there); the old and temporary resources
// are retired (deleted) once the row no longer stands for them.
func (ts *tableState) cloudForms(snap *snapshot) error {
	for id, r := range ts.rows {
		cf, err := toCloud(ts.spec, r.db, snap)
		if err != nil {
			if errors.Is(err, errNoParent) {
				continue
			}
			return err
		}
		cid := module.CloudIDOf(ts.spec, cf)
		if generated(ts.spec) && cf[ts.spec.CloudID[0]] == nil {
			// To be created (the cloud gives it its identity), unless an
			// earlier create made it and its identity was never written back.
			cf, cid = ts.adoptByToken(id, cf)
		}
		if rp := ts.repl[id]; rp != nil && generated(ts.spec) && cid == rp.old {
			// The new resource was made, its identity not written back.
			if acf, acid := ts.adoptReplacement(id, cf, rp); acid != "" {
				cf, cid = acf, acid
			}
		}
		if rp := ts.repl[id]; rp != nil && rp.phase == phaseTemporary {
			if _, oldThere := ts.cloud[rp.old]; oldThere && rp.temp != "" {
				cf, cid = withIdentity(ts.spec, cf, rp.temp), rp.temp
			} else {
				rp.phase, rp.promote = phaseFinal, true
			}
		}
		r.cloud, r.cloudID = cf, cid
		if cid != "" {
			ts.byCloud[cid] = r
		}
		if ts.repl[id] != nil {
			ts.forced[id] = true
		}
		for col, parent := range ts.spec.Refs {
			if p := snap.byName[parent]; p != nil && r.db[col] != nil && p.forced[r.db.String(col)] {
				ts.forced[id] = true
			}
		}
	}
	for id, rp := range ts.repl {
		current := ""
		if r := ts.rows[id]; r != nil {
			current = r.cloudID
		}
		for _, cid := range []string{rp.old, rp.temp} {
			if cid != "" && cid != current {
				ts.retired[cid] = rp
			}
		}
	}
	return nil
}

// readCloud reads the table's resources from the cloud, by identity.
func (ts *tableState) readCloud(ctx context.Context) error {
	recs, err := ts.mapper.Read(ctx)
	if err != nil {
		// What cannot be read is unverified; the rest goes on (unverified.go).
		if recs, err = ts.readFailed(ctx, recs, err); err != nil {
			return fmt.Errorf("read %s from the cloud: %w", ts.spec.Name, err)
		}
	}
	ts.addCloud(recs)
	return nil
}

// addCloud records resources read from the cloud, by identity (and by
// client token).
func (ts *tableState) addCloud(recs []module.Record) {
	for _, r := range recs {
		if cid := module.CloudIDOf(ts.spec, r); cid != "" {
			ts.cloud[cid] = r
			if tok := r.String(module.TokenTag); tok != "" {
				ts.byToken[tok] = append(ts.byToken[tok], cid)
			}
		}
	}
}

// freshness is how a cycle reads a table: full reads all fresh; a scoped
// cycle fresh for what it acts on (names), unless an ENFORCE or TRACK rule
// covers the table (those modes are about drift: the whole table is read
// as the cloud has it now); automatic cycles may reuse recent reads.
func (c *cycle) freshness(ctx context.Context, snap *snapshot, ts *tableState, names map[string]bool) context.Context {
	switch {
	case c.fullRead() || (c.scoped() && snap.modes.drifty(ts.spec.Name)):
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
func freshNames(snap *snapshot) map[string]bool {
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
	addRow := func(spec module.Table, r *row) {
		for _, col := range spec.CloudID {
			if v := r.db.String(col); v != "" {
				names[v] = true
			}
		}
	}
	for _, ts := range snap.tables {
		acting := map[string]bool{}
		for id := range ts.intent {
			acting[id] = true
		}
		for key := range ts.ops {
			acting[key] = true
		}
		for id := range ts.repl {
			acting[id] = true
		}
		for id := range acting {
			if cid, ok := strings.CutPrefix(id, "cloud "); ok {
				addCID(cid)
				continue
			}
			addCID(ts.records[id].cloudID)
			r := ts.rows[id]
			if r == nil {
				continue
			}
			addRow(ts.spec, r)
			for col, parent := range ts.spec.Refs {
				if p := snap.byName[parent]; p != nil && r.db[col] != nil {
					if pr := p.rows[r.db.String(col)]; pr != nil {
						addRow(p.spec, pr)
						addCID(p.records[pr.id].cloudID)
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
func contextRecords(snap *snapshot) map[string][]module.Record {
	out := map[string][]module.Record{}
	for _, ts := range snap.tables {
		if ts.mod == nil || ts.mod.Context == nil {
			continue
		}
		recs := make([]module.Record, 0, len(ts.rows))
		have := map[string]bool{}
		for _, r := range ts.rows {
			recs = append(recs, r.db)
			have[module.CloudIDOf(ts.spec, r.db)] = true
		}
		if ts.spec.ReadOnly {
			for cid, c := range ts.cloud {
				if !have[cid] {
					recs = append(recs, c)
				}
			}
		}
		out[ts.spec.Name] = recs
	}
	return out
}

// scope adds what modules derive from their tables as read (module.Module
// Context: aws_account's regions in scope) to a context for mapper calls.
func (s *snapshot) scope(ctx context.Context) context.Context {
	var done []*module.Module
	for _, ts := range s.tables {
		if m := ts.mod; m != nil && m.Context != nil && !slices.Contains(done, m) {
			byTable := map[string][]module.Record{}
			for _, t := range m.Tables {
				byTable[t.Name] = s.context[t.Name]
			}
			ctx = m.Context(ctx, byTable)
			done = append(done, m)
		}
	}
	return ctx
}

// row is a module-table row as the cycle read it.
type row struct {
	id      string
	xmin    string        // the row version the read saw: writes are conditional on it
	db      module.Record // as stored (refs are ids)
	cloud   module.Record // in cloud form (refs are the referenced resources' cloud ids)
	cloudID string
}

// record is what iasql_records says of one record.
type record struct {
	cloudID string
	enacted pglogrepl.LSN
}

// tableState is everything a cycle knows of one table.
type tableState struct {
	spec    module.Table
	mapper  module.Mapper
	mod     *module.Module           // the module the table belongs to
	rows    map[string]*row          // by id
	byCloud map[string]*row          // by cloud id
	cloud   map[string]module.Record // by cloud id
	records map[string]record        // by record id
	recBy   map[string]string        // cloud id -> record id
	intent  map[string]pglogrepl.LSN // record id -> newest pending user change
	// seen: record id -> the newest user change the read's snapshot sees;
	// acting on the record enacts it up to there, and no further.
	seen map[string]pglogrepl.LSN
	// repl: record id -> its replacement in progress; retired: cloud id ->
	// the replacement whose old or temporary resource it is (to delete).
	repl    map[string]*replacement
	retired map[string]*replacement
	// forced: records pushed to the cloud whatever their intent: those
	// being replaced and those that reference them.
	forced map[string]bool
	// ops: record key -> the engine's work under way or failed for it;
	// byToken: client token -> the cloud ids of resources tagged with it;
	// strays: cloud id -> the row whose retried create made it a second time.
	ops     map[string]op
	byToken map[string][]string
	strays  map[string]string
	// unverified: region ("" for the whole table) -> why the table's read
	// failed there (unverified.go).
	unverified map[string]error
	// cloudWhole: cloud holds the whole table's resources (not only those
	// of the records a scoped read asked for), so a later pass may reuse it.
	cloudWhole bool
}

// generated reports whether the table's identity is generated by the cloud
// (a feedback column), so that a row without it is yet to be created.
func generated(spec module.Table) bool {
	return len(spec.CloudID) == 1 && slices.Contains(spec.Feedback, spec.CloudID[0])
}

// withIdentity returns r with its identity columns set from cid (the form
// cloudID renders).
func withIdentity(spec module.Table, r module.Record, cid string) module.Record {
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
type snapshot struct {
	lsn   pglogrepl.LSN // every change the read saw committed before it
	vis   visibility    // which transactions the read saw
	low   pglogrepl.LSN // where the next cycle's intent query may start
	modes modeRules
	// reading: which tables were read by record, and which rows were read
	// for reference only (nil: every table read whole).
	reading *readScope
	// context: the records modules' Context hooks see, by table (see scope).
	context map[string][]module.Record
	tables  []*tableState // in dependency order
	byName  map[string]*tableState
}

// errNoParent means a reference could not be translated yet.
var errNoParent = errors.New("referenced record not found")

// parent is the table that spec's reference column col points at.
func (snap *snapshot) parent(spec module.Table, col string) (*tableState, error) {
	p := snap.byName[spec.Refs[col]]
	if p == nil {
		return nil, fmt.Errorf("%s.%s references %s, which is not installed", spec.Name, col, spec.Refs[col])
	}
	return p, nil
}

// toCloud translates a row's refs from ids to the referenced resources'
// cloud ids.
func toCloud(spec module.Table, r module.Record, snap *snapshot) (module.Record, error) {
	out := maps.Clone(r)
	for col, parent := range spec.Refs {
		if r[col] == nil {
			continue
		}
		p, err := snap.parent(spec, col)
		if err != nil {
			return nil, err
		}
		pr := p.rows[r.String(col)]
		if pr == nil || pr.cloudID == "" {
			// Missing, or not created yet (its identity comes from the cloud).
			return nil, fmt.Errorf("%s.%s = %s: %w in %s", spec.Name, col, r.String(col), errNoParent, parent)
		}
		out[col] = pr.cloudID
	}
	return out, nil
}

// toDB translates a cloud record's refs to ids and keeps only the columns
// the engine writes (declarative and feedback).
func toDB(spec module.Table, c module.Record, snap *snapshot) (module.Record, error) {
	out := module.Record{}
	for _, col := range append(append([]string{}, spec.Declarative...), spec.Feedback...) {
		out[col] = c[col]
	}
	for col, parent := range spec.Refs {
		if c[col] == nil {
			continue
		}
		p, err := snap.parent(spec, col)
		if err != nil {
			return nil, err
		}
		pr := p.byCloud[c.String(col)]
		if pr == nil {
			return nil, fmt.Errorf("%s %s: %w (%s %s)", spec.Name, module.CloudIDOf(spec, c), errNoParent, parent, c.String(col))
		}
		out[col] = json.Number(pr.id)
	}
	return out, nil
}
