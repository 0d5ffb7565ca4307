package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/cmd/iasql/sidecar"
	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/pgcluster"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

func cmdDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("demo", "Start a throwaway PostgreSQL cluster (from the installed server binaries), the AWS emulator\nand the sidecar, install aws_s3 and aws_elb (with the modules it needs: VPCs, security\ngroups, instances), print how to connect and what to try (a bucket, and a web tier of two\ninstances behind a load balancer), and stay up until Ctrl-C. With --scenario, run a scripted\nwalkthrough instead and exit 0 only when every step checked out. Everything is removed on exit.",
		"  iasql demo\n  iasql demo --scenario", stderr)
	scenario := f.Bool("scenario", "IASQL_DEMO_SCENARIO", false, "run the scripted walkthrough and exit")
	logger := logFlags(f, stderr)
	f.environment = "  PATH                     where the PostgreSQL server binaries are found (pg_config, else /usr/lib/postgresql/*/bin)\n" + envModules
	if err := f.parse(args); err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	// Everything below is removed on every way out: Ctrl-C (SIGINT reaches
	// the whole process group: the server programs run in groups of their
	// own, so that they are not killed halfway), SIGTERM, a closed terminal
	// (SIGHUP), and a reader of stdout that went away (make run | tee, tee
	// killed by the same Ctrl-C): with SIGPIPE ignored, a write to it fails
	// instead of killing the process before it removes the cluster.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stopHUP := signal.NotifyContext(ctx, syscall.SIGHUP)
	defer stopHUP()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fmt.Fprintln(stdout, "starting a throwaway PostgreSQL cluster and the AWS emulator...")
	c, err := pgcluster.Start(ctx, pgcluster.Options{Durable: true})
	if err != nil {
		return err
	}
	defer c.Destroy()
	admin, err := sidecar.Connect(ctx, c.DSN("postgres"))
	if err != nil {
		return err
	}
	_, err = admin.Exec(ctx, "CREATE DATABASE iasql")
	admin.Close(context.Background())
	if err != nil {
		return fmt.Errorf("create demo database: %w", err)
	}
	// Launches and load balancers take a while, as on AWS (minutes there):
	// the commit of the web tier waits for them.
	emu := emulator.New(emulator.Options{Logger: log, InstanceStartDelay: 2 * time.Second, InstanceStopDelay: 2 * time.Second,
		LoadBalancerActiveDelay: 5 * time.Second})
	es, err := emu.Start(ctx, "127.0.0.1:0")
	if err != nil {
		return err
	}
	awsCfg := emulator.ClientConfig(es.URL)
	dsn := c.DSN("iasql")
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		var once sync.Once
		errc <- sidecar.Run(ctx, sidecar.Config{DSN: dsn, Logger: log, AWS: &awsCfg, Modules: modules.All(), Catalogs: modules.Catalogs(), OnReady: func() { once.Do(func() { close(ready) }) }})
	}()
	select {
	case err := <-errc:
		return err
	case <-ready:
	}
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	if err := waitModules(ctx, conn); err != nil {
		return err
	}
	for _, m := range []string{"aws_s3", "aws_elb"} {
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('`+m+`')`); err != nil {
			return fmt.Errorf("install %s: %w", m, err)
		}
	}
	if *scenario {
		cloud := s3.NewFromConfig(awsCfg, func(o *s3.Options) { o.UsePathStyle = true })
		err := runScenario(ctx, conn, cloud, awsCfg, stdout)
		cancel()
		<-errc
		return err
	}
	fmt.Fprintf(stdout, `
iasql is running with the aws_s3 and aws_elb modules (and aws_vpc, aws_security_group and
aws_ec2, which aws_elb needs) against the emulator. Connect with:

  psql "%s"

and try:

  INSERT INTO bucket (name) VALUES ('my-first-bucket');
  CALL iasql_commit();
  SELECT name, region, created_at FROM bucket;

Then a web tier in one transaction: a VPC, two subnets, a security group open on port 80, two
instances behind an application load balancer (the commit returns once the instances run and
the load balancer is active):

%s
  SELECT name, dns_name, state FROM load_balancer;
  SELECT instance_id, private_ip_address, observed_state FROM instance;

The emulator speaks S3 at %s (AWS_ENDPOINT_URL=%s AWS_ACCESS_KEY_ID=test
AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1): a bucket you create there shows up as a row.
Status: bin/iasql status --dsn "%s"
Press Ctrl-C to stop (everything is removed).
`, dsn, indent(webtier.Default().Script(), "  "), es.URL, es.URL, dsn)
	err = <-errc
	fmt.Fprintln(stdout, "stopped; removing the cluster")
	return err
}

// indent puts prefix before every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return prefix + strings.Join(lines, "\n"+prefix) + "\n"
}

func waitModules(ctx context.Context, conn *pgx.Conn) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_modules`).Scan(&n); err == nil && n > 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("the sidecar did not register its modules within 30 seconds")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runScenario walks through the product and checks each step as a user
// would, printing one line per step and a summary.
func runScenario(ctx context.Context, conn *pgx.Conn, cloud *s3.Client, cfg aws.Config, w io.Writer) error {
	exec := func(sqls ...string) error {
		for _, q := range sqls {
			if _, err := conn.Exec(ctx, q); err != nil {
				return fmt.Errorf("%s: %w", q, err)
			}
		}
		return nil
	}
	count := func(q string) (int, error) {
		var n int
		err := conn.QueryRow(ctx, q).Scan(&n)
		return n, err
	}
	inCloud := func(name string) (bool, error) {
		out, err := cloud.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			return false, err
		}
		for _, b := range out.Buckets {
			if aws.ToString(b.Name) == name {
				return true, nil
			}
		}
		return false, nil
	}
	expect := func(what string, ok bool, err error) error {
		if err != nil {
			return err
		}
		if !ok {
			return errors.New(what)
		}
		return nil
	}
	steps := []step{
		{"create a bucket with SQL, commit, see it in the cloud with its feedback", func() error {
			if err := exec(`INSERT INTO bucket (name) VALUES ('demo-logs')`, `CALL iasql_commit()`); err != nil {
				return err
			}
			ok, err := inCloud("demo-logs")
			if err := expect("demo-logs is not in the cloud", ok, err); err != nil {
				return err
			}
			n, err := count(`SELECT count(*) FROM bucket WHERE name = 'demo-logs' AND created_at IS NOT NULL`)
			return expect("the row has no created_at", n == 1, err)
		}},
		{"a bucket created behind iasql's back appears as a row", func() error {
			if _, err := cloud.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("demo-made-elsewhere")}); err != nil {
				return err
			}
			// A commit acts on what the database asks for; a refresh reads
			// the whole cloud now (automatic cycles would, on schedule).
			if err := exec(`CALL iasql_refresh()`); err != nil {
				return err
			}
			n, err := count(`SELECT count(*) FROM bucket WHERE name = 'demo-made-elsewhere'`)
			return expect("demo-made-elsewhere was not imported", n == 1, err)
		}},
		{"delete a bucket with SQL, commit, it is gone from the cloud", func() error {
			if err := exec(`DELETE FROM bucket WHERE name = 'demo-made-elsewhere'`, `CALL iasql_commit()`); err != nil {
				return err
			}
			ok, err := inCloud("demo-made-elsewhere")
			return expect("demo-made-elsewhere is still in the cloud", !ok, err)
		}},
		{"begin, insert, preview shows the create, rollback undoes it", func() error {
			if err := exec(`CALL iasql_begin()`, `INSERT INTO bucket (name) VALUES ('demo-maybe')`); err != nil {
				return err
			}
			n, err := count(`SELECT count(*) FROM iasql_preview() WHERE action = 'create' AND direction = 'cloud' AND cloud_id = 'demo-maybe'`)
			if err := expect("preview does not show the create", n == 1, err); err != nil {
				return err
			}
			if err := exec(`CALL iasql_rollback()`); err != nil {
				return err
			}
			n, err = count(`SELECT count(*) FROM bucket WHERE name = 'demo-maybe'`)
			if err := expect("the row is still there after rollback", n == 0, err); err != nil {
				return err
			}
			ok, err := inCloud("demo-maybe")
			return expect("rollback created the bucket", !ok, err)
		}},
		{"begin, insert, commit: the bucket is created", func() error {
			if err := exec(`CALL iasql_begin()`, `INSERT INTO bucket (name, versioning) VALUES ('demo-sure', true)`, `CALL iasql_commit()`); err != nil {
				return err
			}
			ok, err := inCloud("demo-sure")
			return expect("demo-sure is not in the cloud", ok, err)
		}},
	}
	steps = append(steps, tierSteps(ctx, conn, cfg, exec)...)
	passed := 0
	for i, s := range steps {
		if err := s.run(); err != nil {
			fmt.Fprintf(w, "step %d FAILED: %s: %s\n", i+1, s.name, oneLine(err.Error()))
			continue
		}
		passed++
		fmt.Fprintf(w, "step %d ok: %s\n", i+1, s.name)
	}
	fmt.Fprintf(w, "%d of %d steps checked out\n", passed, len(steps))
	if passed != len(steps) {
		return fmt.Errorf("%d of %d demo steps failed", len(steps)-passed, len(steps))
	}
	return nil
}

// step is one step of the scenario.
type step struct {
	name string
	run  func() error
}

// tierSteps walk a web tier through its life: created in one commit,
// an instance type changed, an instance replaced by a new AMI (its target
// moves to the new instance), deleted; the cloud is checked after each.
func tierSteps(ctx context.Context, conn *pgx.Conn, cfg aws.Config, exec func(...string) error) []step {
	t := webtier.Default()
	observe := func() (webtier.Cloud, error) { return t.Observe(ctx, cfg) }
	return []step{
		{"a web tier in one commit: VPC, subnets, group, two instances behind a load balancer", func() error {
			if err := exec(append(append([]string{`CALL iasql_begin()`}, t.Statements()...), `CALL iasql_commit()`)...); err != nil {
				return err
			}
			c, err := observe()
			if err != nil {
				return err
			}
			if bad := c.Complete(t.Instances); bad != "" {
				return errors.New(bad)
			}
			var n int
			err = conn.QueryRow(ctx, `SELECT count(*) FROM load_balancer WHERE name = $1 AND dns_name IS NOT NULL AND state = 'active'`, t.Name).Scan(&n)
			if err == nil && n != 1 {
				err = errors.New("the load_balancer row has no DNS name or is not active")
			}
			return err
		}},
		{"change an instance's type: it is stopped, modified and started again", func() error {
			if err := exec(`UPDATE instance SET instance_type = 't3.small' WHERE tags->>'Name' = 'web-1'`, `CALL iasql_commit()`); err != nil {
				return err
			}
			var id string
			if err := conn.QueryRow(ctx, `SELECT instance_id FROM instance WHERE tags->>'Name' = 'web-1'`).Scan(&id); err != nil {
				return err
			}
			c, err := observe()
			if err != nil {
				return err
			}
			if c.Types[id] != "t3.small" || c.Instances[id] != "running" {
				return fmt.Errorf("instance %s is %s %s, want a running t3.small", id, c.Instances[id], c.Types[id])
			}
			if bad := c.Complete(t.Instances); bad != "" {
				return errors.New(bad)
			}
			return nil
		}},
		{"change an instance's AMI: a new instance replaces it and takes its place behind the load balancer", func() error {
			var old string
			if err := conn.QueryRow(ctx, `SELECT instance_id FROM instance WHERE tags->>'Name' = 'web-2'`).Scan(&old); err != nil {
				return err
			}
			if err := exec(`UPDATE instance SET ami = 'ami-0fedcba9876543210' WHERE tags->>'Name' = 'web-2'`, `CALL iasql_commit()`); err != nil {
				return err
			}
			var now string
			if err := conn.QueryRow(ctx, `SELECT instance_id FROM instance WHERE tags->>'Name' = 'web-2'`).Scan(&now); err != nil {
				return err
			}
			c, err := observe()
			if err != nil {
				return err
			}
			switch {
			case now == old:
				return fmt.Errorf("the row still names the old instance %s", old)
			case c.AMIs[now] != "ami-0fedcba9876543210":
				return fmt.Errorf("the new instance %s runs %q", now, c.AMIs[now])
			case slices.Contains(c.Targets, old) || !slices.Contains(c.Targets, now):
				return fmt.Errorf("targets %v: want the new instance %s, not the old %s", c.Targets, now, old)
			}
			if bad := c.Complete(t.Instances); bad != "" {
				return errors.New(bad)
			}
			return nil
		}},
		{"delete the tier with SQL, commit: nothing of it is left in the cloud", func() error {
			if err := exec(append(append([]string{`CALL iasql_begin()`}, t.Delete()...), `CALL iasql_commit()`)...); err != nil {
				return err
			}
			c, err := observe()
			if err != nil {
				return err
			}
			if left := c.Empty(); left != "" {
				return errors.New(left)
			}
			return nil
		}},
	}
}
