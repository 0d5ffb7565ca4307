package store_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/bridge/store"
	"github.com/iasql/iasql/internal/pgtest"
)

// version writes a captured change of thing with its rows, as capture
// does, committed at ts (kind TRUNCATE with id "").
func (d *db) version(origin, actor, id, kind string, lsn uint64, ts time.Time, oldRow, newRow string) {
	d.t.Helper()
	d.seq++
	d.exec(`INSERT INTO public.iasql_audit_log (lsn, seq, ts, table_name, record_id, change_type, origin, actor, old_row, new_row)
		VALUES ($1::text::pg_lsn, $2, $3, 'thing', nullif($4, ''), $5, $6, nullif($7, ''), nullif($8, '')::jsonb, nullif($9, '')::jsonb)`,
		fmt.Sprintf("0/%X", lsn), d.seq, ts, id, kind, origin, actor, oldRow, newRow)
}

// asOf is iasql_as_of(thing, at) as the ids of its rows and their names.
func asOf(d *db, at time.Time) (string, error) {
	var got string
	err := d.conn.QueryRow(d.ctx, `SELECT coalesce(string_agg((r->>'id') || '=' || (r->>'name'), ',' ORDER BY (r->>'id')::int), '')
		FROM public.iasql_as_of('thing', $1) r`, at).Scan(&got)
	return got, err
}

// TestHistoryVersions: iasql_history shows every version of a record,
// oldest first, with who made it and which columns changed, a deleted
// record included, and a TRUNCATE while it lived; iasql_as_of shows the
// table at each moment, a TRUNCATE forgetting the rows before it.
func TestHistoryVersions(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	t0 := now.Add(-time.Hour).Truncate(time.Second)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	d.version("user", "alice", "7", "INSERT", 0x10, at(1), "", `{"id": 7, "name": "a", "arn": null}`)
	d.version("user", "alice", "8", "INSERT", 0x11, at(1), "", `{"id": 8, "name": "x", "arn": null}`)
	d.version("engine", "iasql_sidecar", "7", "UPDATE", 0x12, at(2), `{"id": 7, "name": "a", "arn": null}`, `{"id": 7, "name": "a", "arn": "arn:7"}`)
	d.version("user", "bob", "7", "UPDATE", 0x13, at(3), `{"id": 7, "name": "a", "arn": "arn:7"}`, `{"id": 7, "name": "b", "arn": "arn:7"}`)
	d.version("cloud", "arn:aws:iam::1:user/carol", "7", "UPDATE", 0x14, at(4), `{"id": 7, "name": "b", "arn": "arn:7"}`, `{"id": 7, "name": "c", "arn": "arn:7"}`)
	d.version("cloud", "", "7", "DELETE", 0x15, at(5), `{"id": 7, "name": "c", "arn": "arn:7"}`, "")
	d.version("user", "alice", "7", "INSERT", 0x16, at(6), "", `{"id": 7, "name": "d", "arn": null}`)
	d.version("user", "alice", "", "TRUNCATE", 0x17, at(7), "", "")
	d.version("user", "alice", "9", "INSERT", 0x18, at(8), "", `{"id": 9, "name": "z", "arn": null}`)

	type version struct {
		At      time.Time
		Origin  string
		Actor   *string
		Changed []string
		Row     map[string]any
	}
	s := func(v string) *string { return &v }
	row := func(name string, arn any) map[string]any {
		return map[string]any{"id": float64(7), "name": name, "arn": arn}
	}
	want := []version{
		{at(1), "user", s("alice"), []string{"id", "name", "arn"}, row("a", nil)},
		{at(2), "engine", s("iasql_sidecar"), []string{"arn"}, row("a", "arn:7")},
		{at(3), "user", s("bob"), []string{"name"}, row("b", "arn:7")},
		{at(4), "cloud", s("arn:aws:iam::1:user/carol"), []string{"name"}, row("c", "arn:7")},
		{at(5), "cloud", nil, []string{"id", "name", "arn"}, nil},
		{at(6), "user", s("alice"), []string{"id", "name", "arn"}, row("d", nil)},
		{at(7), "user", s("alice"), []string{"id", "name", "arn"}, nil},
	}
	rows, err := d.conn.Query(d.ctx, `SELECT at, origin, actor, changed, "row" FROM public.iasql_history('thing', 7)`)
	if err != nil {
		t.Fatal(err)
	}
	var got []version
	for rows.Next() {
		var v version
		var r []byte
		if err := rows.Scan(&v.At, &v.Origin, &v.Actor, &v.Changed, &r); err != nil {
			t.Fatal(err)
		}
		if r != nil {
			if err := json.Unmarshal(r, &v.Row); err != nil {
				t.Fatal(err)
			}
		}
		got = append(got, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d versions, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		g, w := got[i], want[i]
		if !g.At.Equal(w.At) || g.Origin != w.Origin || (g.Actor == nil) != (w.Actor == nil) || (g.Actor != nil && *g.Actor != *w.Actor) ||
			!slices.Equal(g.Changed, w.Changed) || fmt.Sprint(g.Row) != fmt.Sprint(w.Row) {
			t.Errorf("version %d: %v %s %v %v %v; want %v %s %v %v %v", i+1, g.At, g.Origin, g.Actor, g.Changed, g.Row, w.At, w.Origin, w.Actor, w.Changed, w.Row)
		}
	}

	for _, tc := range []struct {
		at   time.Time
		want string
	}{
		{at(0), ""},
		{at(1), "7=a,8=x"},
		{at(3), "7=b,8=x"},
		{at(4), "7=c,8=x"},
		{at(5), "8=x"},
		{at(6), "7=d,8=x"},
		{at(7), ""}, // truncated
		{at(8), "9=z"},
	} {
		if got, err := asOf(d, tc.at); err != nil || got != tc.want {
			t.Errorf("iasql_as_of at minute %v: %q, %v; want %q", tc.at.Sub(t0).Minutes(), got, err, tc.want)
		}
	}
}

// TestHistoryRights: a role without SELECT on the table is refused in one
// line naming the table and the privilege; a role with SELECT on the
// table alone (not on the audit trail) reads its history, also through
// SET ROLE; SELECT on some columns is not enough; the view the functions
// read shows no other table's changes.
func TestHistoryRights(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	d.version("user", "alice", "7", "INSERT", 0x10, now.Add(-time.Minute), "", `{"id": 7, "name": "a", "arn": null}`)
	d.seq++
	d.exec(`INSERT INTO public.iasql_audit_log (lsn, seq, ts, table_name, record_id, change_type, origin, new_row)
		VALUES ('0/20', $1, now(), 'iasql_mode', '1', 'INSERT', 'user', '{}')`, d.seq)
	suffix := query[string](d, `SELECT current_database()`)
	reader, stranger, partial := "hr_reader_"+suffix, "hr_stranger_"+suffix, "hr_partial_"+suffix
	for _, r := range []string{reader, stranger, partial} {
		d.exec(`CREATE ROLE ` + r)
		t.Cleanup(func() { pgtest.Exec(t, d.dsn, `DROP OWNED BY `+r+` CASCADE`, `DROP ROLE `+r) })
	}
	d.exec(`GRANT SELECT ON public.thing TO ` + reader)
	d.exec(`GRANT SELECT (id, name) ON public.thing TO ` + partial)
	for _, tc := range []struct {
		role, query, want string
		code              string
	}{
		{reader, `SELECT count(*)::text FROM public.iasql_history('thing', 7)`, "1", ""},
		{reader, `SELECT count(*)::text FROM public.iasql_as_of('thing', now())`, "1", ""},
		{reader, `SELECT count(*)::text FROM public.iasql_audit_log`, "", "42501"},
		{stranger, `SELECT count(*)::text FROM public.iasql_history('thing', 7)`, "permission denied for table thing: iasql_history needs SELECT on it", "42501"},
		{stranger, `SELECT count(*)::text FROM public.iasql_as_of('thing', now())`, "permission denied for table thing: iasql_as_of needs SELECT on it", "42501"},
		// The reader named is checked against the session's login role (a
		// superuser's here, who could SET ROLE to it anyway); a login role
		// that is not a member is refused (bridge's TestHistoryRights).
		{stranger, `SELECT count(*)::text FROM public.iasql_as_of('thing', now(), '` + reader + `')`, "1", ""},
		{partial, `SELECT count(*)::text FROM public.iasql_history('thing', 7)`, "permission denied for table thing: iasql_history needs SELECT on it", "42501"},
		{reader, `SELECT count(*)::text FROM public.iasql_history('nothing', 7)`, `iasql_history: table "nothing" does not exist`, "42P01"},
	} {
		var got string
		_, err := d.conn.Exec(d.ctx, `SET ROLE `+tc.role)
		if err == nil {
			err = d.conn.QueryRow(d.ctx, tc.query).Scan(&got)
		}
		d.exec(`RESET ROLE`)
		var pgErr *pgconn.PgError
		switch {
		case tc.code == "" && (err != nil || got != tc.want):
			t.Errorf("%s: %s: %q, %v; want %q", tc.role, tc.query, got, err, tc.want)
		case tc.code != "" && (!errors.As(err, &pgErr) || pgErr.Code != tc.code || (tc.want != "" && pgErr.Message != tc.want)):
			t.Errorf("%s: %s: %q, %v; want error %s %q", tc.role, tc.query, got, err, tc.code, tc.want)
		}
	}
}

// TestPruneKeepsBaseline: pruning keeps, of what is older than the cutoff,
// the newest version of each record still alive then (and the newest
// TRUNCATE), so iasql_as_of answers as before for any time from the
// cutoff on; a time before it is refused, naming it.
func TestPruneKeepsBaseline(t *testing.T) {
	t.Parallel()
	d := newDB(t)
	cutoff := now.Add(-time.Hour).Truncate(time.Second)
	at := func(m int) time.Time { return cutoff.Add(time.Duration(m) * time.Minute) }
	r := func(id int, name string) string { return fmt.Sprintf(`{"id": %d, "name": %q, "arn": null}`, id, name) }
	d.version("user", "a", "", "TRUNCATE", 0x10, at(-30), "", "")                  // pruned: a newer TRUNCATE
	d.version("user", "a", "4", "INSERT", 0x11, at(-25), "", r(4, "a"))            // pruned: truncated
	d.version("user", "a", "", "TRUNCATE", 0x12, at(-24), "", "")                  // kept: the newest TRUNCATE
	d.version("user", "a", "1", "INSERT", 0x13, at(-20), "", r(1, "a"))            // pruned: a newer version
	d.version("user", "a", "1", "UPDATE", 0x14, at(-19), r(1, "a"), r(1, "b"))     // kept: record 1 then
	d.version("user", "a", "2", "INSERT", 0x15, at(-18), "", r(2, "a"))            // pruned: deleted
	d.version("cloud", "", "2", "DELETE", 0x16, at(-17), r(2, "a"), "")            // pruned
	d.version("user", "a", "3", "INSERT", 0x17, at(-16), "", r(3, "a"))            // kept: record 3 then
	d.version("user", "a", "5", "INSERT", 0x18, at(-13), "", r(5, "a"))            // kept
	d.version("user", "a", "3", "UPDATE", 0x19, at(10), r(3, "a"), r(3, "c"))      // kept: recent
	d.version("user", "a", "6", "INSERT", 0x1A, at(-12), "", r(6, "a"))            // kept: pending intent (above low)
	d.exec(`UPDATE public.iasql_audit_log SET lsn = '0/90' WHERE record_id = '6'`) // above the watermark

	before := map[time.Time]string{}
	for _, m := range []int{0, 5, 10, 20} {
		got, err := asOf(d, at(m))
		if err != nil {
			t.Fatal(err)
		}
		before[at(m)] = got
	}
	if err := store.SaveLow(d.ctx, d.conn, 0x80); err != nil {
		t.Fatal(err)
	}
	for {
		n, err := store.PruneAudit(d.ctx, d.conn, cutoff, 0x80, 2)
		if err != nil {
			t.Fatal(err)
		}
		if n < 2 {
			break
		}
	}
	if err := store.MarkPruned(d.ctx, d.conn, cutoff); err != nil {
		t.Fatal(err)
	}
	if got := query[string](d, `SELECT string_agg(coalesce(record_id, 'T') || change_type, ',' ORDER BY id) FROM public.iasql_audit_log`); got != "TTRUNCATE,1UPDATE,3INSERT,5INSERT,3UPDATE,6INSERT" {
		t.Errorf("audit rows kept: %s", got)
	}
	for at, want := range before {
		if got, err := asOf(d, at); err != nil || got != want {
			t.Errorf("iasql_as_of at %v after pruning: %q, %v; before it %q", at, got, err, want)
		}
	}
	if got := query[time.Time](d, `SELECT public.iasql_history_start()`); !got.Equal(cutoff) {
		t.Errorf("iasql_history_start() = %v, want the cutoff %v", got, cutoff)
	}
	_, err := asOf(d, at(-1))
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "22023" || !strings.Contains(pgErr.Message, "keeps history from "+query[string](d, `SELECT $1::timestamptz::text`, cutoff)) ||
		!strings.Contains(pgErr.Hint, "--audit-retention") {
		t.Errorf("iasql_as_of before the cutoff: %v; want one line naming %v, a hint on the retention", err, cutoff)
	}
	// The record's history starts at the version kept.
	if got := query[string](d, `SELECT string_agg(array_to_string(changed, '+') || ':' || ("row"->>'name'), ',' ORDER BY at) FROM public.iasql_history('thing', 1)`); got != "name:b" {
		t.Errorf("history of record 1 after pruning: %s, want name:b (the version kept)", got)
	}
}
