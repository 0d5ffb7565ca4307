package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// cycle is one read-diff-execute run, on a connection that holds the cycle
// lock for its whole length.
type cycle struct {
	e      *Engine
	conn   *pgx.Conn
	id     string
	reason string
	opt    options
	snap   *snapshot
	tables []installedTable

	// batch, while open, holds the database writes of database-only
	// actions: one transaction per batchSize actions, a savepoint each.
	// It is never open across a cloud call.
	batch   pgx.Tx
	inBatch []*Action
	// dbMu is held by every use of conn (Engine.workMu): the write-backs of
	// concurrent cloud actions and the session's keep-alive share it.
	dbMu *sync.Mutex
	// pushed: records whose declarative state this cycle pushed to the
	// cloud (the cloud said yes), with the newest user change the push
	// carried. Only a later read that shows it enacts the intent.
	pushed map[string]pglogrepl.LSN
	// polledFailures: operations that ran long and failed, found by poll.
	polledFailures []string
	// scoped: someone waits for this cycle. Its reads are fresh for the
	// records it acts on (pending intent, work in progress, replacements,
	// and their parents), and may reuse recent reads of the rest
	// (freshNames).
	scoped bool
}

const batchSize = 200

type installedTable struct {
	spec   module.Table
	mapper module.Mapper
	mod    *module.Module // the module the table belongs to
}

// Outcome is how a cycle ended.
type Outcome struct {
	Cycle    string   `json:"cycle"`
	Actions  []Action `json:"actions"`
	Failures []string `json:"failures,omitempty"`
	Summary  string   `json:"summary"`
	// Unverified: the parts of the cloud whose reads failed, one line each
	// (table, region, error); nothing was done there (unverified.go).
	Unverified []string `json:"unverified,omitempty"`
	// PollAfter: operations run on in the cloud; the engine asks about
	// them from then on (zero when none does).
	PollAfter time.Time `json:"-"`
}

const maxPasses = 10

// run is the double loop of the walkthrough: read both sides, diff,
// execute (retrying failed tasks while the set of failures keeps changing),
// and repeat until a pass finds nothing to do. A pass's creates and updates
// are enacted only by the next pass's read, when it shows them; so a pass
// with failures is followed by one more read that enacts what did succeed,
// and the cycle then ends failed.
func (c *cycle) run(ctx context.Context) (*Outcome, error) {
	out := &Outcome{Cycle: c.id}
	c.pushed = map[string]pglogrepl.LSN{}
	var lastSig string
	var lastSeen map[string]pglogrepl.LSN
	repeats := 0
	for pass := 1; ; pass++ {
		if err := c.read(ctx); err != nil {
			return out, err
		}
		if ended, err := c.poll(ctx); err != nil {
			return out, err
		} else if ended {
			if err := c.read(ctx); err != nil { // the operations' results are in
				return out, err
			}
		}
		p, err := diff(c.snap, c.opt)
		if err != nil {
			return out, err
		}
		if err := c.enact(ctx, p.enact); err != nil {
			return out, err
		}
		if err := c.settle(ctx, p); err != nil {
			return out, err
		}
		failures := append(c.notTaken(p), c.polledFailures...)
		c.polledFailures = nil
		if failures, err = c.noteUnverified(ctx, out, failures); err != nil {
			return out, err
		}
		p.actions = c.dueOnly(p.actions)
		if len(out.Failures) > 0 {
			// The read after a failed pass: it enacted what the cloud shows.
			for _, f := range failures {
				if !slices.Contains(out.Failures, f) {
					out.Failures = append(out.Failures, f)
				}
			}
			out.Summary = summarize(out)
			return out, &CycleError{Failures: out.Failures}
		}
		if len(p.actions) == 0 && len(failures) == 0 {
			at, what := c.snap.nextPoll()
			if !at.IsZero() && c.waited() {
				// Someone waits for this cycle: it returns once what it
				// started has settled (or at its timeout).
				c.progress(ctx, fmt.Sprintf("waiting for %d operation(s) in the cloud: %s", len(what), strings.Join(what, ", ")))
				select {
				case <-ctx.Done():
					return out, fmt.Errorf("waiting for %d operation(s) in the cloud: %w", len(what), ctx.Err())
				case <-time.After(time.Until(at)):
				}
				pass--
				continue
			}
			out.PollAfter = at
			c.keepPending(p)
			out.Summary = summarize(out)
			if len(what) > 0 {
				out.Summary += fmt.Sprintf("; %d operation(s) still running in the cloud", len(what))
			}
			return out, nil
		}
		sig := signature(p.actions)
		if sig == lastSig {
			repeats++
		} else {
			repeats = 0
		}
		if repeats >= 2 || (pass > maxPasses && !c.userWrites(p, lastSeen)) {
			return out, fmt.Errorf("the cycle is not converging: it keeps planning the same work: %s", sig)
		}
		if pass > maxPasses {
			// Users keep changing the records this cycle works on: each pass
			// enacts what it saw, and what they write meanwhile is left,
			// pending, to the next cycle. Not a loop, not a failure.
			c.keepPending(p)
			out.Summary = summarize(out) + fmt.Sprintf("; %d change(s) left for the next cycle: their records kept changing while it ran", len(p.actions))
			return out, nil
		}
		lastSig, lastSeen = sig, c.seenOf(p)
		failures = append(failures, c.executeAll(c.snap.scope(ctx), p.actions)...)
		for _, a := range p.actions {
			out.Actions = append(out.Actions, *a)
		}
		if len(failures) > 0 {
			out.Failures = failures
			if len(p.actions) == 0 {
				out.Summary = summarize(out)
				return out, &CycleError{Failures: failures}
			}
		}
		if c.opt.discard {
			// A rollback restores once; the next pass runs as usual.
			c.opt.discard = false
		}
	}
}

// keepPending keeps the next cycle's intent query (which starts at
// snap.low) from passing a user change that this cycle saw and left
// pending: a failed action whose retry is not due yet, a child whose parent
// it waits for. Enacted or not, every record the final pass read with
// intent and did not enact keeps its newest change in view.
func (c *cycle) keepPending(p *plan) {
	enacted := map[string]bool{}
	for _, e := range p.enact {
		enacted[e.table+"\x00"+e.id] = true
	}
	for _, ts := range c.snap.tables {
		for id, lsn := range ts.intent {
			if !enacted[ts.spec.Name+"\x00"+id] && lsn < c.snap.low {
				c.snap.low = lsn
			}
		}
	}
}

// CycleError lists the records a cycle could not bring in sync.
type CycleError struct{ Failures []string }

func (e *CycleError) Error() string {
	return fmt.Sprintf("%d change(s) failed: %s", len(e.Failures), strings.Join(e.Failures, "; "))
}

func summarize(o *Outcome) string {
	counts := map[string]int{}
	for _, a := range o.Actions {
		counts[a.Action+" "+a.Direction]++
	}
	if len(counts) == 0 {
		return "in sync, nothing to do" + unverifiedSummary(o)
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, k))
	}
	sort.Strings(parts)
	s := strings.Join(parts, ", ")
	if len(o.Failures) > 0 {
		s += fmt.Sprintf("; %d failed", len(o.Failures))
	}
	return s + unverifiedSummary(o)
}

// signature names a pass's work: the actions, and for each record the
// newest user change the pass saw (a record a user changed again is new
// work, not a repeat).
func signature(actions []*Action) string {
	parts := make([]string, 0, len(actions))
	for _, a := range actions {
		part := fmt.Sprintf("%s %s %s %s", a.Action, a.Direction, a.Table, firstNonEmpty(a.ID, a.CloudID))
		if lsn := a.ts.seen[a.ID]; a.ID != "" && lsn != 0 {
			part += " @" + lsn.String()
		}
		parts = append(parts, part)
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// seenOf is the newest user change the pass saw for each record it acts on.
func (c *cycle) seenOf(p *plan) map[string]pglogrepl.LSN {
	out := map[string]pglogrepl.LSN{}
	for _, a := range p.actions {
		if a.ID != "" {
			out[actionKey(a)] = a.ts.seen[a.ID]
		}
	}
	return out
}

// userWrites reports whether users changed, since the previous pass, a
// record this pass acts on.
func (c *cycle) userWrites(p *plan, before map[string]pglogrepl.LSN) bool {
	for k, lsn := range c.seenOf(p) {
		if old, ok := before[k]; ok && lsn > old {
			return true
		}
	}
	return false
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// actionKey names what an action acts on: a row by its id, a resource only
// in the cloud by its cloud id.
func actionKey(a *Action) string {
	if a.row != nil {
		return a.Table + "\x00#" + a.ID
	}
	return a.Table + "\x00" + a.CloudID
}

// dependencies maps each action to the keys of the actions it must wait
// for: a create or update waits for its parents' creates and updates; a
// delete of a parent waits for the deletes of its children.
func dependencies(actions []*Action) map[*Action][]string {
	byKey := map[string]*Action{}
	for _, a := range actions {
		byKey[actionKey(a)] = a
	}
	out := map[*Action][]string{}
	for _, a := range actions {
		for col, parent := range a.ts.spec.Refs {
			switch {
			case a.row != nil && !isDelete(a) && a.row.db[col] != nil:
				if k := parent + "\x00#" + a.row.db.String(col); byKey[k] != nil {
					out[a] = append(out[a], k)
				}
			case a.row == nil && a.cloud != nil && a.cloud[col] != nil:
				// A child's delete: the parent's delete waits for it.
				if p := byKey[parent+"\x00"+a.cloud.String(col)]; p != nil && isDelete(p) {
					out[p] = append(out[p], actionKey(a))
				}
			}
		}
	}
	return out
}

// heldBy returns the first of keys that did not happen ("" when none).
func heldBy(keys []string, down map[string]string) string {
	for _, k := range keys {
		if why, ok := down[k]; ok {
			table, id, _ := strings.Cut(k, "\x00")
			return table + " " + strings.TrimPrefix(id, "#") + " (" + why + ")"
		}
	}
	return ""
}

// enact records records that are in sync: first sightings and intent that
// needed no change.
func (c *cycle) enact(ctx context.Context, es []enactment) error {
	if len(es) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		tables, ids, cids, lsns := make([]string, len(es)), make([]string, len(es)), make([]string, len(es)), make([]string, len(es))
		for i, e := range es {
			tables[i], ids[i], cids[i] = e.table, e.id, e.cloudID
			lsns[i] = c.snap.byName[e.table].seen[e.id].String()
		}
		_, err := tx.Exec(ctx, `
			INSERT INTO public.iasql_records AS r (table_name, record_id, cloud_id, enacted_lsn)
			SELECT t, i, c, l::pg_lsn FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(t, i, c, l)
			ON CONFLICT (table_name, record_id) DO UPDATE SET cloud_id = excluded.cloud_id,
			  enacted_lsn = greatest(r.enacted_lsn, excluded.enacted_lsn), enacted_at = pg_catalog.clock_timestamp()`,
			tables, ids, cids, lsns)
		if err != nil {
			return fmt.Errorf("record %d records in sync: %w", len(es), err)
		}
		return forgetOps(ctx, tx, tables, ids)
	})
}

// settle records what the read found of replacements in progress: old
// resources gone (the final phase begins) and replacements finished.
func (c *cycle) settle(ctx context.Context, p *plan) error {
	if len(p.promote) == 0 && len(p.finished) == 0 {
		return nil
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		for _, rp := range p.promote {
			if err := setPhase(ctx, tx, rp, phaseFinal); err != nil {
				return err
			}
		}
		for _, rp := range p.finished {
			if _, err := tx.Exec(ctx, `DELETE FROM public.iasql_replacements WHERE table_name = $1 AND record_id = $2`, rp.table, rp.record); err != nil {
				return fmt.Errorf("finish the replacement of %s %s: %w", rp.table, rp.record, err)
			}
			c.e.log.Info("replacement finished", "table", rp.table, "id", rp.record)
		}
		return nil
	})
}

// withConn runs fn while holding the cycle's connection.
func (c *cycle) withConn(fn func() error) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	return fn()
}

// dbTx runs fn in a transaction marked as the engine's (a savepoint of
// the open batch, when there is one).
func (c *cycle) dbTx(ctx context.Context, fn func(pgx.Tx) error) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	if c.batch != nil {
		return pgx.BeginFunc(ctx, c.batch, fn) // a savepoint: a failure undoes this action only
	}
	return pgx.BeginFunc(ctx, c.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT public.iasql_engine_mark($1)`, "cycle "+c.id); err != nil {
			return fmt.Errorf("mark engine transaction: %w", err)
		}
		return fn(tx)
	})
}

func (c *cycle) openBatch(ctx context.Context) error {
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	tx, err := c.conn.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin a batch of writes: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT public.iasql_engine_mark($1)`, "cycle "+c.id); err != nil {
		_ = tx.Rollback(ctx)
		return fmt.Errorf("mark engine transaction: %w", err)
	}
	c.batch, c.inBatch = tx, c.inBatch[:0]
	return nil
}

// commitBatch commits the open batch; when that fails, the actions in it
// are returned as failed (their cloud side effects are idempotent to redo).
func (c *cycle) commitBatch(ctx context.Context) ([]*Action, error) {
	if c.batch == nil {
		return nil, nil
	}
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	err := c.batch.Commit(ctx)
	c.batch = nil
	if err != nil {
		return append([]*Action{}, c.inBatch...), fmt.Errorf("commit a batch of %d writes: %w", len(c.inBatch), err)
	}
	return nil, nil
}

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
	if err := c.withConn(func() (err error) {
		lsn, vis, rows, err = readDB(ctx, c.conn, specs)
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
		modes        modeRules
		repls        map[string]map[string]*replacement
		ops          map[string]map[string]op
	)
	if err := c.withConn(func() (err error) {
		if recs, err = readRecords(ctx, c.conn, names); err != nil {
			return err
		}
		if intent, seen, next, err = readIntent(ctx, c.conn, names, c.e.intentLow(), lsn, vis, recs); err != nil {
			return err
		}
		if modes, err = readModes(ctx, c.conn); err != nil {
			return err
		}
		if repls, err = readReplacements(ctx, c.conn, names); err != nil {
			return err
		}
		ops, err = readOps(ctx, c.conn, names)
		return err
	}); err != nil {
		return err
	}
	snap := &snapshot{lsn: lsn, vis: vis, low: next, modes: modes, byName: map[string]*tableState{}}
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
	// Read-only tables first: what modules derive from their tables (the
	// regions in scope) comes from them, and a row a user deleted from one
	// is restored from the cloud in this cycle, so it counts meanwhile.
	for _, ts := range snap.tables {
		if ts.spec.ReadOnly {
			if err := ts.readCloud(ctx); err != nil {
				return err
			}
		}
	}
	var fresh map[string]bool
	if c.scoped {
		fresh = freshNames(snap)
	}
	snap.context = contextRecords(snap)
	ctx = snap.scope(ctx)
	// The rest of the cloud, one mapper at a time (each may page and fan
	// out itself), with every mapper call of this snapshot in that scope.
	for _, ts := range snap.tables {
		if !ts.spec.ReadOnly {
			if err := ts.readCloud(c.freshness(ctx, snap, ts, fresh)); err != nil {
				return err
			}
		}
	}
	// Rows in cloud form, parents before children (a child's references
	// are its parents' cloud ids, as the parents stand now).
	for _, ts := range snap.tables {
		if err := ts.cloudForms(snap); err != nil {
			return err
		}
	}
	c.snap = snap
	return nil
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
	for _, r := range recs {
		if cid := module.CloudIDOf(ts.spec, r); cid != "" {
			ts.cloud[cid] = r
			if tok := r.String(module.TokenTag); tok != "" {
				ts.byToken[tok] = append(ts.byToken[tok], cid)
			}
		}
	}
	return nil
}

// freshness is how a cycle reads a table. A scoped cycle (someone waits
// for it) reads fresh what it acts on (names) and may reuse recent reads of
// the rest, unless an ENFORCE or TRACK rule covers the table: those modes
// are about drift, so a commit under them reads the whole table as the
// cloud has it now. Other cycles read as the context says.
func (c *cycle) freshness(ctx context.Context, snap *snapshot, ts *tableState, names map[string]bool) context.Context {
	if !c.scoped {
		return ctx
	}
	if snap.modes.drifty(ts.spec.Name) {
		return module.WithFreshRead(ctx)
	}
	return module.WithFreshOnly(ctx, names)
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

// startRecord and endRecord write the cycle's lifecycle rows.
func (c *cycle) record(ctx context.Context, kind string, msg map[string]any) error {
	js, _ := json.Marshal(msg)
	c.dbMu.Lock()
	defer c.dbMu.Unlock()
	_, err := c.conn.Exec(ctx, `INSERT INTO public.iasql_audit_log (ts, change_type, origin, message) VALUES (pg_catalog.clock_timestamp(), $1, 'engine', $2)`, kind, string(js))
	if err != nil {
		return fmt.Errorf("write %s record: %w", kind, err)
	}
	return nil
}

func lsnOf(s string) pglogrepl.LSN {
	l, _ := pglogrepl.ParseLSN(s)
	return l
}
