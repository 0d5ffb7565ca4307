package aws_ec2_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// wantRefused fails t unless err is the foreign-key violation of
// security_group_ids (instance_security_group_ids_fk, SQLSTATE 23503) whose
// message has each of message and whose hint has hint.
func wantRefused(t *testing.T, err error, hint string, message ...string) {
	t.Helper()
	pgtest.WantRefused(t, err, "instance_security_group_ids_fk", hint, message...)
}

// TestSQLSecurityGroupIdsReference: security_group_ids holds security_group
// ids, checked both ways as a foreign key without a cascade would: an
// instance row cannot list an id that is not a group row (of its region),
// and a group row that an instance row lists cannot be deleted, neither by
// name nor by the cascade from its VPC row, until the instance rows are
// deleted or leave it (earlier in the same transaction is enough).
func TestSQLSecurityGroupIdsReference(t *testing.T) {
	t.Parallel()
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_vpc.Module().InstallSQL(),
		aws_security_group.Module().InstallSQL(), aws_ec2.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`,
		`INSERT INTO aws_regions (region, is_enabled) VALUES ('eu-west-1', true)`,
		`INSERT INTO vpc (vpc_id, cidr_block, is_default) VALUES ('vpc-1', '172.31.0.0/16', true)`,
		`INSERT INTO vpc (vpc_id, cidr_block, region) VALUES ('vpc-2', '10.0.0.0/16', 'eu-west-1')`,
		`INSERT INTO security_group (group_name, description) VALUES ('web', 'web'), ('db', 'db'), ('spare', 'spare')`,
		`INSERT INTO security_group (group_name, description, vpc_id, region) SELECT 'far', 'far', id, 'eu-west-1' FROM vpc WHERE vpc_id = 'vpc-2'`)
	ctx := t.Context()
	id := func(name string) int64 {
		t.Helper()
		var n int64
		if err := conn.QueryRow(ctx, `SELECT id FROM security_group WHERE group_name = $1`, name).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	web, db, far := id("web"), id("db"), id("far")

	// Writes naming an id that is not a group row are refused.
	_, err := conn.Exec(ctx, `INSERT INTO instance (ami, instance_type, security_group_ids) VALUES ('ami-0123456789abcdef0', 't3.micro', ARRAY[$1, 424242]::bigint[])`, web)
	wantRefused(t, err, "create the group first", "security group 424242 is not a security_group row")
	_, err = conn.Exec(ctx, `INSERT INTO instance (ami, instance_type, security_group_ids) VALUES ('ami-0123456789abcdef0', 't3.micro', ARRAY[$1]::bigint[])`, far)
	wantRefused(t, err, "of the instance's region", "is in region eu-west-1, the instance in us-east-1")
	var inst int64
	if err := conn.QueryRow(ctx, `INSERT INTO instance (ami, instance_type, security_group_ids) VALUES ('ami-0123456789abcdef0', 't3.micro', ARRAY[$1, $2]::bigint[]) RETURNING id`, web, db).Scan(&inst); err != nil {
		t.Fatalf("an instance listing two group rows: %v", err)
	}
	_, err = conn.Exec(ctx, `UPDATE instance SET security_group_ids = security_group_ids || 424242::bigint`)
	wantRefused(t, err, "create the group first", "424242")

	// A group row an instance lists cannot be deleted, directly or by the
	// cascade from its VPC row; one no instance lists can.
	_, err = conn.Exec(ctx, `DELETE FROM security_group WHERE group_name = 'web'`)
	wantRefused(t, err, "delete those instance rows", "security group", "(web) is still used by instance row(s) "+itoa(inst))
	_, err = conn.Exec(ctx, `DELETE FROM vpc WHERE vpc_id = 'vpc-1'`)
	wantRefused(t, err, "delete those instance rows", "still used by instance row(s) "+itoa(inst))
	if _, err := conn.Exec(ctx, `DELETE FROM security_group WHERE group_name = 'spare'`); err != nil {
		t.Errorf("delete a group no instance lists: %v", err)
	}

	// Leaving the group first, or deleting the instance first, in the same
	// transaction: the group goes.
	if err := pgtest.RolledBack(ctx, conn, `UPDATE instance SET security_group_ids = array_remove(security_group_ids, `+itoa(web)+`)`,
		`DELETE FROM security_group WHERE group_name = 'web'`); err != nil {
		t.Errorf("leave the group, then delete it: %v", err)
	}
	if err := pgtest.RolledBack(ctx, conn, `DELETE FROM instance`, `DELETE FROM security_group WHERE group_name IN ('web', 'db')`); err != nil {
		t.Errorf("delete the instance, then its groups: %v", err)
	}
	if err := pgtest.RolledBack(ctx, conn, `DELETE FROM instance`, `DELETE FROM vpc WHERE vpc_id = 'vpc-1'`); err != nil {
		t.Errorf("delete the instance, then the VPC of its groups: %v", err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// TestUninstallLeavesGroupsUsable: aws_ec2's trigger on security_group
// (security_group_in_use) goes with aws_ec2's uninstall (its Uninstall
// SQL); group rows can be deleted then, and aws_ec2 installs again,
// checking again.
func TestUninstallLeavesGroupsUsable(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install: []string{"aws_ec2"},
	})
	e.Exec(`INSERT INTO security_group (group_name, description) VALUES ('web', 'web'), ('db', 'db')`,
		`INSERT INTO instance (ami, instance_type, security_group_ids)
		 SELECT 'ami-0123456789abcdef0', 't3.micro', ARRAY(SELECT id FROM security_group WHERE group_name = 'web')`)
	_, err := e.DB.Exec(context.Background(), `DELETE FROM security_group WHERE group_name = 'web'`)
	wantRefused(t, err, "delete those instance rows", "(web) is still used by instance row(s)")

	e.Exec(`SELECT * FROM iasql_uninstall('aws_ec2')`)
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_class WHERE oid = 'public.security_group'::regclass AND to_regclass('public.instance') IS NULL`); n != 1 {
		t.Fatal("aws_ec2 uninstalled, the instance table is still there")
	}
	if n := e.Count(`SELECT count(*) FROM pg_catalog.pg_trigger WHERE tgrelid = 'public.security_group'::regclass AND tgname = 'security_group_in_use'`); n != 0 {
		t.Error("aws_ec2 uninstalled, its trigger on security_group is still there")
	}
	e.Exec(`DELETE FROM security_group WHERE group_name = 'web'`)

	e.Exec(`SELECT * FROM iasql_install('aws_ec2')`,
		`INSERT INTO instance (ami, instance_type, security_group_ids)
		 SELECT 'ami-0123456789abcdef0', 't3.micro', ARRAY(SELECT id FROM security_group WHERE group_name = 'db')`)
	_, err = e.DB.Exec(context.Background(), `DELETE FROM security_group WHERE group_name = 'db'`)
	wantRefused(t, err, "delete those instance rows", "(db) is still used by instance row(s)")
}

// TestSQLKeyName: an instance's key_name is refused when it is written if
// no key pair can have it (CreateKeyPair, ImportKeyPair: up to 255 ASCII
// characters, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateKeyPair.html),
// with SQLSTATE 23514, the constraint instance_key_name_255 and a one-line
// message saying what to do; NULL (no key pair) and 1 to 255 characters
// pass.
func TestSQLKeyName(t *testing.T) {
	t.Parallel()
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_vpc.Module().InstallSQL(),
		aws_security_group.Module().InstallSQL(), aws_ec2.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`)
	ctx := t.Context()
	insert := `INSERT INTO instance (ami, instance_type, key_name) VALUES ('ami-0123456789abcdef0', 't3.micro', $1)`
	for _, c := range []struct {
		name    string
		key     string
		message string
	}{
		{"256 characters", strings.Repeat("k", 256), "instance key_name is 256 characters long, a key pair's name is 1 to 255: give the name of an existing key pair, or NULL for none"},
		{"empty", "", "instance key_name is 0 characters long, a key pair's name is 1 to 255: give the name of an existing key pair, or NULL for none"},
	} {
		_, err := conn.Exec(ctx, insert, c.key)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != "23514" || pe.ConstraintName != "instance_key_name_255" || pe.Message != c.message {
			t.Errorf("%s: %v; want SQLSTATE 23514, constraint instance_key_name_255, message %q", c.name, err, c.message)
		}
	}
	for _, ok := range []any{strings.Repeat("k", 255), "deploy", nil} {
		if _, err := conn.Exec(ctx, insert, ok); err != nil {
			t.Errorf("key_name %v: %v", ok, err)
		}
	}
	_, err := conn.Exec(ctx, `UPDATE instance SET key_name = repeat('k', 256) WHERE key_name = 'deploy'`)
	pgtest.WantViolation(t, err, "instance_key_name_255")
}
