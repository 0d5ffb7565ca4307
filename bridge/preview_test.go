package bridge_test

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
	iasqlsql "github.com/iasql/iasql/sql"
)

// TestPreviewShowsTheWholePlan: inside one iasql transaction that inserts
// a VPC, a subnet and a security group in it, and an instance using both,
// iasql_preview() lists every action the commit takes, in order, each with
// what it waits for, the identities the cloud has not given yet marked as
// not known; the preview makes no change in the cloud; the commit then
// does exactly those actions, as its cycle's record says and the cloud's
// calls show (what the cloud's answers bring back to the rows, feedback and
// the new VPC's default group, comes on top, towards the database only).
func TestPreviewShowsTheWholePlan(t *testing.T) {
	t.Parallel()
	// The SQL of this tree, as plain SQL: the server's iasql extension may
	// be another build's until it is installed again.
	dsn := srv.NewDB(t)
	if _, err := iasqlsql.InstallPlain(context.Background(), pgtest.Connect(t, dsn)); err != nil {
		t.Fatal(err)
	}
	e := enginetest.New(t, srv, enginetest.Options{DSN: dsn, Install: []string{"aws_ec2"},
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()}})
	e.Exec(append([]string{`CALL iasql_begin()`}, stack("pv", 41)...)...)
	vpc := e.String(`SELECT id::text FROM vpc WHERE tags->>'Name' = 'pv'`)
	subnet := e.String(`SELECT id::text FROM subnet WHERE tags->>'Name' = 'pv'`)
	group := e.String(`SELECT id::text FROM security_group WHERE group_name = 'pv-sg'`)
	instance := e.String(`SELECT id::text FROM instance WHERE tags->>'Name' = 'pv'`)
	notKnown := "(not known yet: vpc " + vpc + ")"

	e.Emu.Reset()
	rows, err := e.DB.Query(context.Background(), `SELECT coalesce(step, 0), action || ' ' || direction || ' ' || table_name || ' ' || id, cloud_id, description, waits_for FROM iasql_preview()`)
	if err != nil {
		t.Fatal(err)
	}
	type previewed struct {
		step                       int
		what, cloudID, description string
		waitsFor                   []string
	}
	preview, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (p previewed, err error) {
		return p, r.Scan(&p.step, &p.what, &p.cloudID, &p.description, &p.waitsFor)
	})
	if err != nil {
		t.Fatal(err)
	}
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the preview changed the cloud: %v", m)
	}
	want := []previewed{
		{1, "create cloud vpc " + vpc, "", "create vpc  in the cloud", nil},
		{2, "create cloud subnet " + subnet, "", "create subnet  in the cloud; not known yet: vpc_id (vpc " + vpc + ")",
			[]string{"create vpc " + vpc}},
		{2, "create cloud security_group " + group, `["pv-sg","` + notKnown + `"]`,
			`create security_group ["pv-sg","` + notKnown + `"] in the cloud; not known yet: vpc_id (vpc ` + vpc + `)`,
			[]string{"create vpc " + vpc}},
		{3, "create cloud instance " + instance, "", "create instance  in the cloud; not known yet: security_group_ids (security_group " + group + "), subnet_id (subnet " + subnet + ")",
			[]string{"create security_group " + group, "create subnet " + subnet}},
	}
	show := func(ps []previewed) string {
		var out []string
		for _, p := range ps {
			out = append(out, fmt.Sprintf("%d | %s | %s | %s | waits for %v", p.step, p.what, p.cloudID, p.description, p.waitsFor))
		}
		return strings.Join(out, "\n")
	}
	if got, want := show(preview), show(want); got != want {
		t.Fatalf("the preview:\n%s\nwant:\n%s", got, want)
	}

	e.Commit()
	// What the commit's cycle says it did, in order.
	rows, err = e.DB.Query(context.Background(), `SELECT split_part(a, ':', 1)
		FROM iasql_audit_log l, jsonb_array_elements_text(l.message::jsonb->'actions') WITH ORDINALITY AS x(a, n)
		WHERE l.change_type = 'CYCLE_END' AND l.message::jsonb->>'reason' = 'commit' ORDER BY l.id, x.n`)
	if err != nil {
		t.Fatal(err)
	}
	did, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var towardsCloud []string
	for _, a := range did {
		if strings.Contains(a, " cloud ") {
			towardsCloud = append(towardsCloud, a)
		} else if !strings.HasPrefix(a, "update database ") && !strings.HasPrefix(a, "create database ") {
			t.Errorf("the commit did %q, which is neither previewed nor the cloud's answer brought back", a)
		}
	}
	var previewedWhat []string
	for _, p := range preview {
		previewedWhat = append(previewedWhat, p.what)
	}
	if got, want := strings.Join(towardsCloud, "\n"), strings.Join(previewedWhat, "\n"); got != want {
		t.Errorf("towards the cloud the commit did:\n%s\nthe preview said:\n%s", got, want)
	}
	if m, want := e.Mutations(), map[string]int{"ec2:CreateVpc": 1, "ec2:CreateSubnet": 1, "ec2:CreateSecurityGroup": 1, "ec2:RunInstances": 1}; !maps.Equal(m, want) {
		t.Errorf("the commit's calls that change the cloud: %v, want %v", m, want)
	}
	if n := e.Count(`SELECT count(*) FROM instance i JOIN subnet s ON s.id = i.subnet_id JOIN vpc v ON v.id = s.vpc_id
		WHERE i.instance_id IS NOT NULL AND s.subnet_id IS NOT NULL AND v.vpc_id IS NOT NULL AND v.tags->>'Name' = 'pv'`); n != 1 {
		t.Error("after the commit the rows do not show the cloud's identities")
	}
}
