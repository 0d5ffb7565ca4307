package bridge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/jackc/pglogrepl"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/modules/module"
)

// Action is one planned step of a cycle, as iasql_preview shows it.
type Action struct {
	Action      string `json:"action"`    // create, update, replace, delete
	Direction   string `json:"direction"` // cloud or database
	Table       string `json:"table_name"`
	ID          string `json:"id"`       // the row's id ("" for a resource not yet imported)
	CloudID     string `json:"cloud_id"` // the resource's identity in the cloud
	Description string `json:"description"`
	Mode        string `json:"mode"` // the mode that decided it, and by which rule

	ts     *tableState
	row    *row
	cloud  module.Record // the resource as the cloud has it
	record string        // the record a cloud-only resource belonged to, if known
	kind   step
	retire *replacement // a cloud delete of a replacement's old or temporary resource
	// identified: a create whose resource's identity is written back;
	// retrying the create could make a second one, so a failure after it
	// is not retried in this pass (the next read sees the resource).
	identified bool
	// token: a create's idempotency token; attempts: the cloud calls made
	// for the action so far (persisted in iasql_operations); retried: an
	// earlier attempt may have made the resource.
	token    string
	attempts int
	retried  bool
}

type step int

const (
	cloudCreate step = iota
	cloudUpdate
	cloudDelete
	dbInsert
	dbUpdate
	dbDelete
	dbFeedback
)

// plan is the outcome of diffing one snapshot.
type plan struct {
	actions []*Action
	// enact: records in sync whose state must be recorded (first sighting,
	// or intent satisfied without a change).
	enact []enactment
	// promote: replacements whose old resource is gone (phase final now);
	// finished: replacements with nothing left to delete.
	promote, finished []*replacement
}

type enactment struct {
	table, id, cloudID string
}

// options change how a cycle decides directions.
type options struct {
	// discardAfter, when set, turns user intent newer than it into "no
	// intent" (iasql_rollback): those records are restored from the cloud.
	discardAfter pglogrepl.LSN
	discard      bool
}

// diff decides, for every difference between database and cloud, what to
// do, by the direction table of DESIGN.md (every record NORMAL until modes
// land): pending intent pushes to the cloud, its absence pulls from it.
func diff(snap *snapshot, opt options) (*plan, error) {
	p := &plan{}
	// restoring: rows (table, id) that take back the cloud identity their
	// record had (a rename undone); claimed: the cloud ids (table, cloud
	// id) they take back. What references either waits for the next pass.
	restoring, claimed := map[string]bool{}, map[string]bool{}
	for _, ts := range snap.tables {
		// Nothing at all is done in a part whose reads failed (unverified.go).
		unverified := snap.unverifiedParts(ts)
		intent := func(id string) bool {
			if ts.forced[id] {
				return true
			}
			lsn, ok := ts.intent[id]
			if !ok {
				return false
			}
			return !(opt.discard && lsn > opt.discardAfter)
		}
		// push decides the direction of a difference by the record's mode:
		// NORMAL follows pending intent, ENFORCE always pushes the database
		// to the cloud, TRACK always pulls the cloud into the database.
		push := func(id string) (toCloud bool, mode, label, note string) {
			if ts.spec.ReadOnly {
				if intent(id) {
					note = " (the table is read-only: the cloud's state is restored)"
				}
				return false, modeTrack, "TRACK (read-only table)", note
			}
			m, rule := snap.modes.of(ts.spec.Name, id)
			label = m + " (" + rule + ")"
			switch m {
			case modeEnforce:
				if !intent(id) {
					note = " (ENFORCE by " + rule + ": reverting a change made in the cloud)"
				}
				return true, m, label, note
			case modeTrack:
				if intent(id) {
					note = " (WARNING: TRACK by " + rule + ": the user's change is undone from the cloud)"
				}
				return false, m, label, note
			}
			return intent(id), m, label, ""
		}
		// Rows (in database, maybe in cloud).
		ids := make([]string, 0, len(ts.rows))
		for id := range ts.rows {
			ids = append(ids, id)
		}
		sort.Slice(ids, func(i, j int) bool { return numLess(ids[i], ids[j]) })
		for _, id := range ids {
			r := ts.rows[id]
			if ts.inFlight(id) {
				continue // its operation runs on in the cloud: asked about later
			}
			if r.cloud == nil || refersTo(ts.spec, r.db, restoring) {
				// A reference that cannot be resolved yet: its parent is
				// planned in this pass; the next pass handles the child.
				continue
			}
			if unverified.row(r) {
				continue
			}
			c, inCloud := ts.cloud[r.cloudID]
			equal := inCloud && ts.mapper.Equal(r.cloud, c)
			if equal && sameColumns(ts.spec.Feedback, r.cloud, c) {
				// In sync (the common case: no mode or action is worked out).
				if ts.standingIn(id) {
					continue // the stand-in is in sync, not the record
				}
				rec, known := ts.records[id]
				_, working := ts.ops[id]
				if !known || rec.cloudID != r.cloudID || intent(id) || working || (opt.discard && ts.intent[id] != 0) {
					p.enact = append(p.enact, enactment{ts.spec.Name, id, r.cloudID})
				}
				continue
			}
			toCloud, _, label, note := push(id)
			a := &Action{Table: ts.spec.Name, ID: id, CloudID: r.cloudID, Mode: label, ts: ts, row: r, cloud: c}
			switch {
			case !inCloud && toCloud:
				a.Action, a.Direction, a.kind = "create", "cloud", cloudCreate
				a.Description = "create " + describe(ts.spec, r.cloud) + " in the cloud" + note
			case !inCloud && restorable(ts, id, r):
				// The row's identity changed without intent (a rename rolled
				// back, or TRACK): the row takes back the resource its record
				// stood for, under its own id, and what references it stays.
				old := ts.records[id].cloudID
				a.Action, a.Direction, a.kind, a.cloud, a.CloudID = "update", "database", dbUpdate, ts.cloud[old], old
				a.Description = "restore the row from " + describe(ts.spec, a.cloud) + ": " + r.cloudID + " is not in the cloud" + note
				restoring[ts.spec.Name+"\x00"+id], claimed[ts.spec.Name+"\x00"+old] = true, true
			case !inCloud:
				a.Action, a.Direction, a.kind = "delete", "database", dbDelete
				a.Description = "delete the row: " + r.cloudID + " is not in the cloud" + note
			case !equal && toCloud:
				a.Action, a.Direction, a.kind = "update", "cloud", cloudUpdate
				a.Description = "update " + r.cloudID + " in the cloud"
				if why := changes(ts.spec.CreateOnly, c, r.cloud); why != "" {
					a.Action = "replace"
					a.Description = "replace " + r.cloudID + " with a new resource (create-only: " + why + ")" + dependents(snap, ts, id)
				}
				if intent(id) {
					a.Description += " (the user's change wins)"
				}
				a.Description += ": " + changes(ts.spec.Declarative, c, r.cloud) + note
			case !equal:
				a.Action, a.Direction, a.kind = "update", "database", dbUpdate
				a.Description = "update the row from the cloud: " + changes(ts.spec.Declarative, r.cloud, c) + note
			default:
				a.Action, a.Direction, a.kind = "update", "database", dbFeedback
				a.Description = "refresh " + strings.Join(ts.spec.Feedback, ", ") + " from the cloud"
			}
			p.actions = append(p.actions, a)
		}
		// Resources only in the cloud.
		cids := make([]string, 0, len(ts.cloud))
		for cid := range ts.cloud {
			if ts.byCloud[cid] == nil && !claimed[ts.spec.Name+"\x00"+cid] && !refersTo(ts.spec, ts.cloud[cid], claimed) {
				cids = append(cids, cid)
			}
		}
		sort.Strings(cids)
		for _, cid := range cids {
			c := ts.cloud[cid]
			if unverified.cloud(c) || ts.inFlight("cloud "+cid) || ts.inFlight(ts.recBy[cid]) {
				continue
			}
			if rp := ts.retired[cid]; rp != nil {
				if stillReferenced(snap, ts, cid) {
					continue // its children move first; a later pass deletes it
				}
				what := "the replaced"
				if cid == rp.temp {
					what = "the temporary"
				}
				p.actions = append(p.actions, &Action{Table: ts.spec.Name, ID: rp.record, CloudID: cid, Mode: "replacement", ts: ts, cloud: c,
					record: rp.record, kind: cloudDelete, retire: rp, Action: "delete", Direction: "cloud",
					Description: "delete " + what + " " + describe(ts.spec, c) + " (replacement of row " + rp.record + ")"})
				continue
			}
			if row := ts.strays[cid]; row != "" {
				p.actions = append(p.actions, &Action{Table: ts.spec.Name, ID: row, CloudID: cid, Mode: "client token", ts: ts, cloud: c,
					kind: cloudDelete, Action: "delete", Direction: "cloud",
					Description: "delete " + describe(ts.spec, c) + ": a second resource made for row " + row + " by a repeated create (same client token)"})
				continue
			}
			rid := ts.recBy[cid]
			toCloud, mode, label, note := push(rid)
			if rid == "" && mode == modeNormal {
				toCloud = false // never known here: imported
			}
			if parent := pushedParent(snap, ts.spec, c); parent != "" {
				// Not among the rows of a parent being replaced.
				toCloud, label, note = true, "replacement", " (not in the database for "+parent+")"
			}
			a := &Action{Table: ts.spec.Name, CloudID: cid, Mode: label, ts: ts, cloud: c, record: rid}
			if !toCloud && !parentsImported(snap, ts.spec, c) {
				continue // its parent is imported in this pass; it follows in the next
			}
			if toCloud {
				// The user deleted the row (or moved it to another identity),
				// or ENFORCE removes what the database does not have.
				a.Action, a.Direction, a.kind = "delete", "cloud", cloudDelete
				a.ID = rid
				a.Description = "delete " + describe(ts.spec, c) + " from the cloud" + note
			} else {
				a.Action, a.Direction, a.kind = "create", "database", dbInsert
				a.Description = "import " + describe(ts.spec, c) + " from the cloud" + note
			}
			p.actions = append(p.actions, a)
		}
		// Replacements: promoted by this read, or done.
		for id, rp := range ts.repl {
			if unverified.record(id) {
				continue // the old resource may only look gone
			}
			if rp.promote {
				p.promote = append(p.promote, rp)
			}
			left := false
			for cid, r := range ts.retired {
				if _, there := ts.cloud[cid]; there && r == rp {
					left = true
				}
			}
			if !left && (rp.phase == phaseFinal || ts.rows[id] == nil) {
				p.finished = append(p.finished, rp)
			}
		}
	}
	return p, nil
}

// dependents says what a replacement of row id cascades to: the rows that
// reference it move to the new resource.
func dependents(snap *snapshot, ts *tableState, id string) string {
	var parts []string
	for _, cts := range snap.tables {
		n := 0
		for col, parent := range cts.spec.Refs {
			if parent != ts.spec.Name {
				continue
			}
			for _, r := range cts.rows {
				if r.db.String(col) == id {
					n++
				}
			}
		}
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, cts.spec.Name))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "; what references it moves to the new one: " + strings.Join(parts, ", ")
}

// restorable reports whether a row whose resource is not in the cloud can
// take back the resource its record stood for: that resource is in the
// cloud and no other row stands for it.
func restorable(ts *tableState, id string, r *row) bool {
	old := ts.records[id].cloudID
	if old == "" || old == r.cloudID || ts.byCloud[old] != nil {
		return false
	}
	_, there := ts.cloud[old]
	return there
}

// refersTo reports whether a record references one of keys (table, id of
// a row for a database record; table, cloud id for a cloud record: the
// form its reference columns hold).
func refersTo(spec module.Table, r module.Record, keys map[string]bool) bool {
	for col, parent := range spec.Refs {
		if r[col] != nil && keys[parent+"\x00"+r.String(col)] {
			return true
		}
	}
	return false
}

// parentRetired reports whether a resource's parent is the old resource of
// a replacement, to be deleted.
func parentRetired(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if p := snap.byName[parent]; p != nil && c[col] != nil && p.retired[c.String(col)] != nil {
			return true
		}
	}
	return false
}

// parentLeaving reports whether a resource's parent has no row: the
// parent is being deleted from the cloud (a child of a parent that is
// imported is imported too, never deleted).
func parentLeaving(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if p := snap.byName[parent]; p != nil && c[col] != nil && p.cloud[c.String(col)] != nil && p.byCloud[c.String(col)] == nil {
			return true
		}
	}
	return false
}

// stillReferenced reports whether a row of a child table still stands for
// a cloud resource that references cid.
func stillReferenced(snap *snapshot, ts *tableState, cid string) bool {
	for _, cts := range snap.tables {
		for col, parent := range cts.spec.Refs {
			if parent != ts.spec.Name {
				continue
			}
			for ccid, cc := range cts.cloud {
				if cc.String(col) == cid && cts.byCloud[ccid] != nil {
					return true
				}
			}
		}
	}
	return false
}

// parentsImported reports whether every resource a cloud record
// references is a row already (so that it can be imported).
func parentsImported(snap *snapshot, spec module.Table, c module.Record) bool {
	for col, parent := range spec.Refs {
		if c[col] == nil {
			continue
		}
		if p := snap.byName[parent]; p != nil && p.byCloud[c.String(col)] == nil {
			return false
		}
	}
	return true
}

// pushedParent names the parent of a cloud-only resource when that parent
// is being replaced ("" otherwise): the new resource's children are exactly
// the rows that reference the record (what the cloud adds to a new resource
// of its own accord, like a security group's default egress rule, is
// removed). A resource the user creates keeps what the cloud adds: it is
// imported, for the user to keep or delete.
func pushedParent(snap *snapshot, spec module.Table, c module.Record) string {
	for col, parent := range spec.Refs {
		p := snap.byName[parent]
		if p == nil || c[col] == nil {
			continue
		}
		pr := p.byCloud[c.String(col)]
		if pr != nil && p.forced[pr.id] {
			return parent + " " + pr.id
		}
	}
	return ""
}

// Modes, as iasql_mode spells them.
const (
	modeNormal  = "NORMAL"
	modeEnforce = "ENFORCE"
	modeTrack   = "TRACK"
)

// modeRules are the iasql_mode rules a cycle read.
type modeRules struct {
	database string            // "" when there is no database rule
	tables   map[string]string // table -> mode
	records  map[string]string // table + "\x00" + id -> mode
	ids      map[string]string // the same keys ("" for the database) -> rule id
}

// of resolves a record's mode as iasql_effective_mode does: record rule,
// else table rule, else database rule, else NORMAL. It returns the mode and
// the rule that gave it.
func (m modeRules) of(table, id string) (string, string) {
	if id != "" {
		if mode, ok := m.records[table+"\x00"+id]; ok {
			return mode, "record rule " + m.ids[table+"\x00"+id]
		}
	}
	if mode, ok := m.tables[table]; ok {
		return mode, "table rule " + m.ids[table]
	}
	if m.database != "" {
		return m.database, "database rule " + m.ids[""]
	}
	return modeNormal, "no rule"
}

// drifty reports whether an ENFORCE or TRACK rule covers any record of
// the table (the database's, the table's, or one of its records').
func (m modeRules) drifty(table string) bool {
	watch := func(mode string) bool { return mode == modeEnforce || mode == modeTrack }
	if watch(m.database) || watch(m.tables[table]) {
		return true
	}
	for k, mode := range m.records {
		if strings.HasPrefix(k, table+"\x00") && watch(mode) {
			return true
		}
	}
	return false
}

// tieRank orders modes for ties: TRACK first (never break things), then
// NORMAL, then ENFORCE; no mode last.
func tieRank(mode string) int {
	switch mode {
	case modeTrack:
		return 0
	case modeNormal:
		return 1
	case modeEnforce:
		return 2
	}
	return 3
}

func readModes(ctx context.Context, conn *pgx.Conn) (modeRules, error) {
	m := modeRules{tables: map[string]string{}, records: map[string]string{}, ids: map[string]string{}}
	rows, err := conn.Query(ctx, `SELECT coalesce(table_name, ''), coalesce(record_id::text, ''), mode::text, id::text FROM public.iasql_mode`)
	if err != nil {
		return m, fmt.Errorf("read mode rules: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var table, id, mode, rule string
		if err := rows.Scan(&table, &id, &mode, &rule); err != nil {
			return m, fmt.Errorf("read mode rules: %w", err)
		}
		// Were two rules at one level ever to exist, the tie resolves
		// TRACK > NORMAL > ENFORCE (as iasql_effective_mode does).
		switch {
		case table == "":
			if tieRank(mode) < tieRank(m.database) {
				m.database, m.ids[""] = mode, rule
			}
		case id == "":
			if old, ok := m.tables[table]; !ok || tieRank(mode) < tieRank(old) {
				m.tables[table], m.ids[table] = mode, rule
			}
		default:
			k := table + "\x00" + id
			if old, ok := m.records[k]; !ok || tieRank(mode) < tieRank(old) {
				m.records[k], m.ids[k] = mode, rule
			}
		}
	}
	return m, rows.Err()
}

func numLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}

func describe(spec module.Table, r module.Record) string {
	return strings.TrimSuffix(spec.Name, "s") + " " + module.CloudIDOf(spec, r)
}

func sameColumns(cols []string, a, b module.Record) bool {
	for _, c := range cols {
		if !module.Same(a[c], b[c]) {
			return false
		}
	}
	return true
}

// changes describes the columns in which to differs from from.
func changes(cols []string, from, to module.Record) string {
	var out []string
	for _, c := range cols {
		if !module.Same(from[c], to[c]) {
			out = append(out, fmt.Sprintf("%s %s -> %s", c, show(from[c]), show(to[c])))
		}
	}
	return strings.Join(out, ", ")
}

func show(v any) string {
	if v == nil {
		return "NULL"
	}
	js, _ := json.Marshal(v)
	return string(js)
}

// order sorts actions for execution: creates and updates parents first,
// deletes children first.
func order(actions []*Action, tableIndex map[string]int) {
	sort.SliceStable(actions, func(i, j int) bool {
		di, dj := isDelete(actions[i]), isDelete(actions[j])
		if di != dj {
			return !di
		}
		ti, tj := tableIndex[actions[i].Table], tableIndex[actions[j].Table]
		if di {
			return ti > tj
		}
		return ti < tj
	})
}

func isDelete(a *Action) bool { return a.kind == cloudDelete || a.kind == dbDelete }

// errConflict means a conditional write found the row changed since the
// cycle read it: the user's change wins and the record is planned again.
var errConflict = errors.New("row changed since it was read")

// execute performs one action; writes to the database are conditional on
// the row being as read, and carry the engine marker.
func (c *cycle) execute(ctx context.Context, a *Action) error {
	ts := a.ts
	switch a.kind {
	case cloudCreate:
		want := a.row.cloud
		got, err := c.create(ctx, a, want)
		if err != nil {
			return err
		}
		if ts.standingIn(a.ID) {
			return c.writeFeedback(ctx, a, got) // the stand-in, not the record
		}
		if err := c.writeBack(ctx, a, got); err != nil {
			return err
		}
		a.identified = generated(ts.spec)
		if ts.mapper.Equal(want, got) {
			return nil
		}
		// The resource exists but is not as the row says: a retried create
		// found the one an earlier attempt half made (its later steps,
		// attach or tag, failed), or the cloud chose otherwise. Finish it
		// with an update; the next read says whether the cloud took it.
		if generated(ts.spec) {
			want = withIdentity(ts.spec, want, module.CloudIDOf(ts.spec, got))
		}
		fixed, err := ts.mapper.Update(ctx, want, got)
		if errors.Is(err, module.ErrReplace) {
			return nil // the next read reports the difference
		} else if err != nil {
			return fmt.Errorf("the resource was created, but finishing it failed: %w", err)
		}
		return c.writeBack(ctx, a, fixed)
	case cloudUpdate:
		got, err := ts.mapper.Update(ctx, a.row.cloud, a.cloud)
		if errors.Is(err, module.ErrReplace) {
			a.Action = "replace"
			return c.replace(ctx, a)
		} else if err != nil {
			return err
		}
		return c.writeBack(ctx, a, got)
	case cloudDelete:
		if a.retire != nil {
			if err := ts.mapper.Delete(ctx, a.cloud); err != nil {
				return err
			}
			if a.CloudID != a.retire.old || a.retire.phase != phaseTemporary {
				return nil
			}
			// The old resource is gone: the record's own new resource comes next.
			return c.dbTx(ctx, func(tx pgx.Tx) error {
				return setPhase(ctx, tx, a.retire, phaseFinal)
			})
		}
		if err := ts.mapper.Delete(ctx, a.cloud); errors.Is(err, module.ErrKeep) && (parentRetired(c.snap, ts.spec, a.cloud) || parentLeaving(c.snap, ts.spec, a.cloud)) {
			// It goes with its parent (the old resource of a replacement, or
			// a resource whose row was deleted): AWS deletes a VPC's default
			// security group with the VPC.
			return nil
		} else if errors.Is(err, module.ErrKeep) {
			// The cloud keeps it: the row comes back instead.
			a.Action, a.Direction, a.kind = "create", "database", dbInsert
			a.Description = "import " + describe(ts.spec, a.cloud) + " back: " + err.Error()
			return c.execute(ctx, a)
		} else if err != nil {
			return err
		}
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2 AND cloud_id = $3`, ts.spec.Name, a.record, a.CloudID)
			if err != nil {
				return err
			}
			// The row may still exist under another identity: its intent
			// is enacted only once its own resource is created.
			return forgetOps(ctx, tx, []string{ts.spec.Name}, []string{opKey(a)})
		})
	case dbDelete:
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			tag, err := tx.Exec(ctx, `DELETE FROM `+pgx.Identifier{ts.spec.Name}.Sanitize()+` WHERE id = $1 AND xmin = $2::text::xid`, a.ID, a.row.xmin)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return errConflict
			}
			_, err = tx.Exec(ctx, `DELETE FROM public.iasql_records WHERE table_name = $1 AND record_id = $2`, ts.spec.Name, a.ID)
			if err != nil {
				return err
			}
			return forgetOps(ctx, tx, []string{ts.spec.Name}, []string{a.ID})
		})
	case dbInsert:
		rec, err := toDB(ts.spec, a.cloud, c.snap)
		if err != nil {
			return err
		}
		for _, col := range ts.spec.Initial {
			rec[col] = a.cloud[col]
		}
		onConflict := ""
		if a.record != "" && ts.rows[a.record] == nil {
			// Restore the record under the id it had, if it is still free.
			rec["id"] = json.Number(a.record)
			onConflict = " ON CONFLICT (id) DO NOTHING"
		}
		return c.dbTx(ctx, func(tx pgx.Tx) error {
			cols, t := columnList(rec), pgx.Identifier{ts.spec.Name}.Sanitize()
			q := `INSERT INTO ` + t + ` (` + cols + `) SELECT ` + cols + ` FROM jsonb_populate_record(NULL::` + t + `, $1::jsonb)` +
				onConflict + ` RETURNING id::text`
			var id string
			if err := tx.QueryRow(ctx, q, string(encodeRecord(rec))).Scan(&id); err != nil {
				if errors.Is(err, pgx.ErrNoRows) {
					return errConflict
				}
				return err
			}
			a.ID = id
			return upsertRecord(ctx, tx, ts.spec.Name, id, a.CloudID, ts.seen[id])
		})
	case dbUpdate, dbFeedback:
		rec, err := toDB(ts.spec, a.cloud, c.snap)
		if err != nil {
			return err
		}
		if a.kind == dbFeedback {
			rec = only(rec, ts.spec.Feedback)
		}
		return c.updateRow(ctx, a, rec)
	}
	return fmt.Errorf("unknown step %d", a.kind)
}

// create makes the resource for a create action, carrying the action's
// client token. When an earlier attempt may have made it (a failed call,
// or a crash before the write-back) and the mapper can look a token up,
// the resource that attempt made is adopted instead of making another.
func (c *cycle) create(ctx context.Context, a *Action, want module.Record) (module.Record, error) {
	mapper := a.ts.mapper
	if f, ok := mapper.(module.Finder); ok && a.retried {
		got, err := f.Find(ctx, want, a.token)
		if err != nil {
			return nil, fmt.Errorf("look for what an earlier attempt made: %w", err)
		}
		if got != nil {
			c.e.log.Info("adopting the resource an earlier create made", "table", a.Table, "id", a.ID, "cloud_id", module.CloudIDOf(a.ts.spec, got))
			return got, nil
		}
	}
	return mapper.Create(module.WithClientToken(ctx, a.token), want)
}

// writeBack stores what the cloud returned after a create or update: the
// feedback columns into the row, and the resource's identity in the
// record's state. It does not enact the intent: only a later read that
// shows the user's values does (the cloud may have said yes and not taken
// the change).
func (c *cycle) writeBack(ctx context.Context, a *Action, got module.Record) error {
	ts := a.ts
	cid := a.row.cloudID
	if cid == "" || generated(ts.spec) {
		cid = module.CloudIDOf(ts.spec, got) // the identity the cloud gave it
	}
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if err := feedbackTx(ctx, tx, ts.spec, a.ID, a.row.db, got); err != nil {
			return err
		}
		return upsertRecord(ctx, tx, ts.spec.Name, a.ID, cid, 0)
	})
}

// writeFeedback stores the feedback columns only.
func (c *cycle) writeFeedback(ctx context.Context, a *Action, got module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		return feedbackTx(ctx, tx, a.ts.spec, a.ID, a.row.db, got)
	})
}

// feedbackTx writes the feedback columns of got into the row, on condition
// that they are still as the cycle read them (was): users do not own them,
// so a user's concurrent change to other columns does not stop the write
// (a generated identity written back must never be lost: the resource would
// be created again). A user's change to a feedback column wins.
func feedbackTx(ctx context.Context, tx pgx.Tx, spec module.Table, id string, was, got module.Record) error {
	if len(spec.Feedback) == 0 || sameColumns(spec.Feedback, was, got) {
		return nil
	}
	rec := only(got, spec.Feedback)
	cols := columnList(rec)
	_, err := updateColumns(ctx, tx, spec.Name, id, rec,
		`ROW(`+cols+`) IS NOT DISTINCT FROM (SELECT ROW(`+cols+`) FROM jsonb_populate_record(NULL::`+pgx.Identifier{spec.Name}.Sanitize()+`, $3::jsonb))`,
		string(encodeRecord(only(was, spec.Feedback))))
	return err
}

// replace makes a change that needs a new resource. The new resource is
// created before the old one is deleted, so that what depends on the old
// one can move over (the walkthrough's dance): where the identity must stay
// unique (module.Temporary), a temporary stand-in is created first and the
// record's own new resource once the old one is gone; where the cloud
// generates identities, the new resource is created at once. The
// replacement is recorded (iasql_replacements) before anything is created,
// so that a restart finishes it. Other resources are deleted, then created.
func (c *cycle) replace(ctx context.Context, a *Action) error {
	ts := a.ts
	tm, unique := ts.mapper.(module.Temporary)
	if !unique && !generated(ts.spec) {
		if err := ts.mapper.Delete(ctx, a.cloud); err != nil {
			return fmt.Errorf("replace: delete the old resource: %w", err)
		}
		got, err := ts.mapper.Create(ctx, a.row.cloud)
		if err != nil {
			return fmt.Errorf("replace: create the new resource: %w", err)
		}
		return c.writeBack(ctx, a, got)
	}
	rp := &replacement{table: ts.spec.Name, record: a.ID, old: a.CloudID, phase: phaseFinal}
	want := a.row.cloud
	if unique {
		want = tm.Temporary(a.row.cloud, a.CloudID)
		rp.temp, rp.phase = module.CloudIDOf(ts.spec, want), phaseTemporary
	} else {
		want = maps.Clone(want)
		want[ts.spec.CloudID[0]] = nil
	}
	if err := c.e.service(ctx, func(conn *pgx.Conn) error {
		_, err := conn.Exec(ctx, `
			INSERT INTO public.iasql_replacements (table_name, record_id, old_cloud_id, temp_cloud_id, phase)
			VALUES ($1, $2, $3, nullif($4, ''), $5)
			ON CONFLICT (table_name, record_id) DO UPDATE SET old_cloud_id = excluded.old_cloud_id,
			  temp_cloud_id = excluded.temp_cloud_id, phase = excluded.phase, started_at = pg_catalog.clock_timestamp()`,
			rp.table, rp.record, rp.old, rp.temp, rp.phase)
		return err
	}); err != nil {
		return fmt.Errorf("replace: record the replacement: %w", err)
	}
	got, err := ts.mapper.Create(ctx, want)
	if err != nil {
		return fmt.Errorf("replace: create the new resource: %w", err)
	}
	if unique {
		a.Description += " (through a temporary " + rp.temp + ")"
		return c.writeFeedback(ctx, a, got)
	}
	return c.writeBack(ctx, a, got)
}

func setPhase(ctx context.Context, tx pgx.Tx, rp *replacement, phase string) error {
	_, err := tx.Exec(ctx, `UPDATE public.iasql_replacements SET phase = $3 WHERE table_name = $1 AND record_id = $2`, rp.table, rp.record, phase)
	if err != nil {
		return fmt.Errorf("record the replacement of %s %s as %s: %w", rp.table, rp.record, phase, err)
	}
	return nil
}

func (c *cycle) updateRow(ctx context.Context, a *Action, rec module.Record) error {
	return c.dbTx(ctx, func(tx pgx.Tx) error {
		if err := updateRowTx(ctx, tx, a.ts.spec.Name, a.ID, a.row.xmin, rec); err != nil {
			return err
		}
		return upsertRecord(ctx, tx, a.ts.spec.Name, a.ID, a.CloudID, a.ts.seen[a.ID])
	})
}

// updateRowTx writes rec's columns into the row, on condition that it is
// the version the cycle read (xmin); errConflict when it is not.
func updateRowTx(ctx context.Context, tx pgx.Tx, table, id, xmin string, rec module.Record) error {
	ok, err := updateColumns(ctx, tx, table, id, rec, `xmin = $3::text::xid`, xmin)
	if err == nil && !ok {
		return errConflict
	}
	return err
}

// updateColumns sets rec's columns of row id where cond (an SQL condition
// on the row whose parameter is $3) holds, and reports whether it did.
func updateColumns(ctx context.Context, tx pgx.Tx, table, id string, rec module.Record, cond string, arg any) (bool, error) {
	cols := columnList(rec)
	t := pgx.Identifier{table}.Sanitize()
	tag, err := tx.Exec(ctx, `UPDATE `+t+` SET (`+cols+`) = (SELECT `+cols+` FROM jsonb_populate_record(NULL::`+t+`, $1::jsonb))
		WHERE id = $2 AND `+cond, string(encodeRecord(rec)), id, arg)
	if err != nil {
		return false, err
	}
	return tag.RowsAffected() > 0, nil
}

func upsertRecord(ctx context.Context, tx pgx.Tx, table, id, cid string, lsn pglogrepl.LSN) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO public.iasql_records AS r (table_name, record_id, cloud_id, enacted_lsn)
		VALUES ($1, $2, $3, $4::text::pg_lsn)
		ON CONFLICT (table_name, record_id) DO UPDATE SET cloud_id = excluded.cloud_id,
		  enacted_lsn = greatest(r.enacted_lsn, excluded.enacted_lsn), enacted_at = pg_catalog.clock_timestamp()`,
		table, id, cid, lsn.String())
	return err
}

func only(r module.Record, cols []string) module.Record {
	out := module.Record{}
	for _, c := range cols {
		out[c] = r[c]
	}
	return out
}

func columnList(r module.Record) string {
	cols := make([]string, 0, len(r))
	for c := range r {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	for i, c := range cols {
		cols[i] = pgx.Identifier{c}.Sanitize()
	}
	return strings.Join(cols, ", ")
}
