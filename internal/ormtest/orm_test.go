package ormtest_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"

	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/launch"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_s3"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is a database with aws_s3 and aws_security_group (and what
// newEnv's caller adds) installed, a sidecar, the emulator, and an
// application role (a member of iasql_writer) that the tools connect as.
type env struct {
	*enginetest.Env
	s3  *s3.Client
	ec2 *ec2.Client
	// app is the environment of the tools' processes: libpq's variables
	// naming the database and the application role.
	app []string
	// owner is the same for the role that owns the module tables.
	owner []string
	// appURL is the application role's connection URL.
	appURL string
}

func newEnv(t *testing.T, install ...string) *env {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_s3.Module(), aws_ec2.Module()},
		Install: append([]string{"aws_s3", "aws_security_group"}, install...),
	})
	cfg, err := pgx.ParseConfig(e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	role := "orm_app_" + cfg.Database
	pgtest.Exec(t, srv.AdminDSN(), `CREATE ROLE `+role+` LOGIN`, `GRANT iasql_writer TO `+role)
	t.Cleanup(func() { pgtest.Exec(t, srv.AdminDSN(), `DROP ROLE `+role) })
	base := []string{"PGHOST=" + cfg.Host, "PGPORT=" + strconv.Itoa(int(cfg.Port)), "PGDATABASE=" + cfg.Database, "PGSSLMODE=disable"}
	for _, v := range os.Environ() {
		if !strings.HasPrefix(v, "PG") {
			base = append(base, v)
		}
	}
	return &env{Env: e,
		s3:     s3.NewFromConfig(e.AWS, testkit.PathStyle),
		ec2:    ec2.NewFromConfig(e.AWS),
		app:    append(slices.Clone(base), "PGUSER="+role),
		owner:  append(slices.Clone(base), "PGUSER="+cfg.User),
		appURL: "postgres://" + role + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database + "?sslmode=disable",
	}
}

// run runs a tool's command in dir with environment env, failing the test
// with its output when it fails.
func (e *env) run(dir string, env []string, name string, args ...string) string {
	e.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The tools reach no cloud: only the database.
	cmd := launch.Command(ctx, launch.NoCloud, name, args...)
	cmd.Dir, cmd.Env = dir, launch.Env(env, launch.NoCloud)
	out, err := cmd.CombinedOutput()
	if err != nil {
		e.T.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// cloudBucket says whether the bucket exists and whether versioning is on.
func (e *env) cloudBucket(name string) (exists, versioned bool) {
	e.T.Helper()
	out, err := e.s3.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(name)})
	if err != nil {
		var nf *s3types.NoSuchBucket
		if errors.As(err, &nf) || strings.Contains(err.Error(), "NoSuchBucket") {
			return false, false
		}
		e.T.Fatalf("versioning of bucket %s: %v", name, err)
	}
	return true, out.Status == s3types.BucketVersioningStatusEnabled
}

// cloudGroup returns the group of that name (its tags as k=v, sorted, and
// its inbound rules as "tcp 443 0.0.0.0/0"), false when there is none.
func (e *env) cloudGroup(name string) (tags, rules []string, ok bool) {
	e.T.Helper()
	ctx := context.Background()
	out, err := e.ec2.DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{
		Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{name}}}})
	if err != nil {
		e.T.Fatalf("describe group %s: %v", name, err)
	}
	if len(out.SecurityGroups) != 1 {
		if len(out.SecurityGroups) > 1 {
			e.T.Fatalf("%d groups named %s", len(out.SecurityGroups), name)
		}
		return nil, nil, false
	}
	g := out.SecurityGroups[0]
	for _, tag := range g.Tags {
		if !strings.HasPrefix(aws.ToString(tag.Key), "iasql:") {
			tags = append(tags, aws.ToString(tag.Key)+"="+aws.ToString(tag.Value))
		}
	}
	for _, p := range g.IpPermissions {
		for _, r := range p.IpRanges {
			rules = append(rules, aws.ToString(p.IpProtocol)+" "+strconv.Itoa(int(aws.ToInt32(p.FromPort)))+" "+aws.ToString(r.CidrIp))
		}
	}
	slices.Sort(tags)
	slices.Sort(rules)
	return tags, rules, true
}

// check compares what the cloud has of the bucket and group name after a
// phase with what the phase made.
func (e *env) check(phase, name string, exists, versioned bool, tags, rules []string) {
	e.T.Helper()
	be, bv := e.cloudBucket(name)
	gt, gr, ge := e.cloudGroup(name)
	if be != exists || bv != versioned {
		e.T.Errorf("after %s: bucket %s exists %v, versioned %v; want %v, %v", phase, name, be, bv, exists, versioned)
	}
	if ge != exists || !slices.Equal(gt, tags) || !slices.Equal(gr, rules) {
		e.T.Errorf("after %s: group %s exists %v with tags %v and rules %v; want %v, %v, %v", phase, name, ge, gt, gr, exists, tags, rules)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		e.T.Errorf("after %s: %d records not in sync", phase, n)
	}
}

// cloudInstances counts the instances tagged Name=name that are not
// terminated, and those of them in group name.
func (e *env) cloudInstances(name string) (live, inGroup int) {
	e.T.Helper()
	out, err := e.ec2.DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:Name"), Values: []string{name}}}})
	if err != nil {
		e.T.Fatalf("describe instances %s: %v", name, err)
	}
	for _, r := range out.Reservations {
		for _, i := range r.Instances {
			if i.State == nil || i.State.Name == ec2types.InstanceStateNameTerminated || i.State.Name == ec2types.InstanceStateNameShuttingDown {
				continue
			}
			live++
			for _, g := range i.SecurityGroups {
				if aws.ToString(g.GroupName) == name {
					inGroup++
				}
			}
		}
	}
	return live, inGroup
}

// toolsDir is tools/orm of the repository.
func toolsDir(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "tools", "orm")
}

// debianPython is the interpreter of Debian's python3-django (the PATH's
// python3 may be another one, a pyenv's or a virtualenv's, without it).
const debianPython = "/usr/bin/python3"

// TestDjango: Django's inspectdb of the module tables, as the application
// role, gives models that pass `check` with the README's two edits (a
// related_name on security_group_rule's second foreign key to
// security_group, ArrayField for the array security_group_ids), and
// that create, update and delete a bucket, a security group with its rule,
// and an instance in the group, with only the fields a user sets; after each
// iasql_commit the cloud has the change. The group is created without a
// VPC and the same model object saved again (it holds None for what the
// database filled in).
func TestDjango(t *testing.T) {
	if out, err := launch.Command(context.Background(), launch.NoCloud, debianPython, "-c", "import django, psycopg2; print(django.get_version())").CombinedOutput(); err != nil {
		t.Fatalf("Debian's python3-django and python3-psycopg2 are needed (%s: %v: %s): run make orm-deps as root, or apt-get install python3-django python3-psycopg2",
			debianPython, err, strings.TrimSpace(string(out)))
	}
	t.Parallel()
	e := newEnv(t, "aws_ec2")
	dir, script := t.TempDir(), filepath.Join(toolsDir(t), "django_crud.py")
	const name = "orm-django"
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			b, _ := os.ReadFile(filepath.Join(dir, "ormapp", "models.py.inspectdb"))
			t.Logf("inspectdb wrote:\n%s", b)
		}
	})
	e.run(dir, e.app, debianPython, script, dir, "inspect")
	e.run(dir, e.app, debianPython, script, dir, "check")
	e.run(dir, e.app, debianPython, script, dir, "create")
	e.check("create", name, true, false, []string{"made-by=django"}, []string{"tcp 443 0.0.0.0/0"})
	if live, inGroup := e.cloudInstances(name); live != 1 || inGroup != 1 {
		t.Errorf("after create: %d instances tagged %s, %d of them in the group; want 1, 1", live, name, inGroup)
	}
	e.run(dir, e.app, debianPython, script, dir, "update")
	e.check("update", name, true, true, []string{"made-by=django", "team=web"}, []string{"tcp 443 0.0.0.0/0"})
	e.run(dir, e.app, debianPython, script, dir, "delete")
	e.check("delete", name, false, false, nil, nil)
	if live, _ := e.cloudInstances(name); live != 0 {
		t.Errorf("after delete: %d instances tagged %s are not terminated", live, name)
	}
}

// TestSQLAlchemy: SQLAlchemy's automap (Debian's python3-sqlalchemy), as
// the application role, with relationships named after their foreign keys
// as the README says, puts security_group_rule's two relationships to
// security_group on the right columns, and creates (a rule through its
// relationship to its new group), updates (in an iasql transaction on one
// connection) and deletes; after each iasql_commit the cloud has the change.
func TestSQLAlchemy(t *testing.T) {
	if out, err := launch.Command(context.Background(), launch.NoCloud, debianPython, "-c", "import sqlalchemy, psycopg2").CombinedOutput(); err != nil {
		t.Fatalf("Debian's python3-sqlalchemy and python3-psycopg2 are needed (%s: %v: %s): run make orm-deps as root, or apt-get install python3-sqlalchemy python3-psycopg2",
			debianPython, err, strings.TrimSpace(string(out)))
	}
	t.Parallel()
	e := newEnv(t)
	dir, script := t.TempDir(), filepath.Join(toolsDir(t), "sqlalchemy_crud.py")
	const name = "orm-sqlalchemy"
	e.run(dir, e.app, debianPython, script, "create")
	e.check("create", name, true, false, nil, []string{"tcp 8080 0.0.0.0/0"})
	e.run(dir, e.app, debianPython, script, "update")
	e.check("update", name, true, true, []string{"made-by=sqlalchemy", "team=web"}, []string{"tcp 8080 0.0.0.0/0"})
	e.run(dir, e.app, debianPython, script, "delete")
	e.check("delete", name, false, false, nil, nil)
}

// TestPgxPool: with a pgx pool, as the README says, an iasql transaction
// runs on one connection taken with pool.Acquire; a write through the pool
// meanwhile goes to another session and is refused, naming the transaction;
// the commit on the acquired connection takes the change to the cloud.
func TestPgxPool(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pcfg, err := pgxpool.ParseConfig(e.appURL + "&pool_max_conns=4")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	conn, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('orm-pgx')`} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO bucket (name) VALUES ('orm-pgx-other')`); err == nil || !strings.Contains(err.Error(), "an iasql transaction is open") {
		t.Errorf("a write through the pool while the acquired connection's iasql transaction is open: %v; want it refused", err)
	}
	if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
		t.Fatalf("iasql_commit on the acquired connection: %v", err)
	}
	conn.Release()
	if exists, _ := e.cloudBucket("orm-pgx"); !exists {
		t.Error("the bucket written in the iasql transaction is not in the cloud after its commit")
	}
	if exists, _ := e.cloudBucket("orm-pgx-other"); exists {
		t.Error("the refused write reached the cloud")
	}
}

// TestDrizzle: drizzle-kit pull of the module tables, as the role that
// owns them (information_schema shows primary keys and unique constraints
// to their owner only: pulled as the application role, the schema has no
// primary key), writes a schema that imports and that drizzle-orm,
// as the application role, creates, updates (in an iasql transaction on
// one pooled connection) and deletes with; after each iasql_commit the
// cloud has the change.
func TestDrizzle(t *testing.T) {
	tools := toolsDir(t)
	kit, tsx := filepath.Join(tools, "node_modules", ".bin", "drizzle-kit"), filepath.Join(tools, "node_modules", ".bin", "tsx")
	for _, bin := range []string{kit, tsx} {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("%s is missing: run make orm-deps (npm ci in tools/orm)", bin)
		}
	}
	t.Parallel()
	e := newEnv(t)
	// The schema goes beside node_modules, where its imports resolve.
	var b [6]byte
	_, _ = rand.Read(b[:])
	out := filepath.Join(tools, ".pulled-"+hex.EncodeToString(b[:]))
	t.Cleanup(func() { os.RemoveAll(out) })
	cfg, err := pgx.ParseConfig(e.DSN)
	if err != nil {
		t.Fatal(err)
	}
	url := "postgres://" + cfg.User + "@" + cfg.Host + ":" + strconv.Itoa(int(cfg.Port)) + "/" + cfg.Database + "?sslmode=disable"
	e.run(tools, e.owner, kit, "pull", "--dialect=postgresql", "--url="+url, "--out="+out, "--tablesFilter=!iasql_*")
	schema, err := os.ReadFile(filepath.Join(out, "schema.ts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() || testing.Verbose() {
			t.Logf("drizzle-kit pull wrote:\n%s", schema)
		}
	})
	// What the pull must have seen: the tables' primary keys and a unique
	// constraint.
	for _, want := range []string{`id: serial().primaryKey().notNull()`, `unique("bucket_name_unique")`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("the pulled schema has no %s:\n%s", want, schema)
		}
	}
	if m := regexp.MustCompile(`\.default\([a-z_]+\(`).FindString(string(schema)); m != "" {
		t.Errorf("the pulled schema has a function default as a bare identifier (%s...)", m)
	}
	// As the README says: pulled as the application role, the schema has
	// no primary key (information_schema shows it to the owner only).
	appOut := out + "-app"
	t.Cleanup(func() { os.RemoveAll(appOut) })
	e.run(tools, e.app, kit, "pull", "--dialect=postgresql", "--url="+e.appURL, "--out="+appOut, "--tablesFilter=!iasql_*")
	if b, err := os.ReadFile(filepath.Join(appOut, "schema.ts")); err != nil || strings.Contains(string(b), "primaryKey()") {
		t.Errorf("drizzle-kit pull as the application role (%v): primary keys seen; the README says to pull as the owner because they are not: update it", err)
	}
	const name = "orm-drizzle"
	script := filepath.Join(tools, "drizzle_crud.ts")
	e.run(tools, e.app, tsx, script, out, "create")
	e.check("create", name, true, false, nil, []string{"tcp 80 0.0.0.0/0"})
	e.run(tools, e.app, tsx, script, out, "update")
	e.check("update", name, true, true, []string{"made-by=drizzle", "team=web"}, []string{"tcp 80 0.0.0.0/0"})
	e.run(tools, e.app, tsx, script, out, "delete")
	e.check("delete", name, false, false, nil, nil)
}
