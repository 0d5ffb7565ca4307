package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	elb "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/launch"
	"github.com/iasql/iasql/logical"
)

// The crash trials: each inserts crashBuckets buckets, crashVPCs VPCs with
// two subnets (zones a and b), one security group and one instance each,
// an application load balancer over the first VPC's subnets with a target
// group and a listener, crashRoles IAM roles and crashLogGroups log groups
// (AWS::Logs::LogGroup, a Cloud Control type), and SIGKILLs the sidecar
// while the commit creates them; every create call takes crashDelayMin to
// crashDelayMax in the emulator (drawn per trial and operation). In odd
// trials the emulator does not honour RunInstances' ClientToken (the
// IgnoreClientToken fault), before and after the kill: a launch repeated
// with its token makes a second instance, which the engine must delete.
const (
	crashTrials    = 50
	crashBuckets   = 4
	crashVPCs      = 2
	crashRoles     = 2
	crashLogGroups = 2
	crashDelayMin  = 50 * time.Millisecond
	crashDelayMax  = 300 * time.Millisecond
	// crashRecovery bounds the commits after a kill, until one succeeds;
	// when none does, the trials stop there (later commits would fail on
	// the same records) and the bench fails, after printing the figures
	// of the trials run.
	crashRecovery = 90 * time.Second
)

// crashCreates are the create operations of the trials, as the emulator
// names them.
var crashCreates = []string{"s3:CreateBucket", "ec2:CreateVpc", "ec2:CreateSubnet", "ec2:CreateSecurityGroup", "iam:CreateRole",
	"ec2:RunInstances", "elasticloadbalancing:CreateLoadBalancer", "elasticloadbalancing:CreateTargetGroup",
	"elasticloadbalancing:CreateListener", "cloudcontrolapi:CreateResource"}

const crashTrustPolicy = `{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}`

// crashPart measures whether a sidecar killed during creates leaves
// duplicates or orphans once a new sidecar has committed:
//
//   - crash_duplicates: over all trials, copies beyond the one each
//     inserted row asked for: per row, the cloud resources with its key
//     (name or CIDR) beyond one, or the rows with that key beyond one,
//     whichever is more (two VPCs with one row's CIDR; one subnet held by
//     a second, imported row while the user's row has none);
//   - crash_orphans: over all trials, cloud resources the trial made that
//     no row stands for (no row holds their id).
//
// Instances count while not shutting down or terminated (AWS lists
// terminated ones for an hour): a duplicate the engine terminated is gone.
//
// One database (aws_s3, aws_security_group with aws_vpc and aws_account,
// aws_iam, aws_ec2, aws_elb, AWS::Logs::LogGroup) and one in-process
// emulator serve every trial; the sidecar is a
// child process (iasql run, IASQL_BIN) pointed at the emulator with
// AWS_ENDPOINT_URL. A trial inserts its rows (names and CIDRs of its own),
// calls CALL iasql_commit() in the background, SIGKILLs the sidecar at a
// random moment after the first create call reached the emulator, starts a
// new sidecar and commits until a commit succeeds, then compares the
// cloud with the tables. The sidecars' logs are kept (and their directory
// named on stderr) when a trial finds a duplicate, an orphan or a row left
// without its resource.
func (b *bench) crashPart(ctx context.Context) error {
	const db = "bench_crash"
	var total crashTally
	var trials int
	var stuck *stuckError // the trial after which no commit succeeded
	err := b.withDB(ctx, db, func(conn *pgx.Conn) error {
		// The emulator, behind a count of the requests it is serving.
		emu := emulator.New(emulator.Options{})
		busy := &activeCounter{h: emu}
		es := httptest.NewServer(busy)
		defer es.Close()
		logDir, err := os.MkdirTemp("", "iasql-bench-crash-")
		if err != nil {
			return err
		}
		cfg := emulator.ClientConfig(es.URL)
		r := &crashRun{b: b, db: db, conn: conn, emu: emu, busy: busy, url: es.URL, logDir: logDir,
			ec2: ec2.NewFromConfig(cfg), iam: iam.NewFromConfig(cfg), elb: elb.NewFromConfig(cfg), cc: cloudcontrol.NewFromConfig(cfg),
			s3: s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })}
		defer func() {
			if r.cur != nil {
				r.cur.kill()
			}
			if r.keepLogs {
				b.logf("crash: the sidecars' logs are in %s", logDir)
			} else {
				os.RemoveAll(logDir)
			}
		}()
		if err := r.start(ctx); err != nil {
			return err
		}
		// The sidecar installs the SQL objects, then streams its slot, then
		// registers the modules.
		if _, err := waitActive(ctx, conn, r.cur.slot, 50*time.Millisecond, time.Minute, r.cur); err != nil {
			return fmt.Errorf("crash: %w", err)
		}
		if err := waitFor(ctx, time.Minute, func() (bool, error) {
			var k int
			err := conn.QueryRow(ctx, `SELECT count(*) FROM iasql_modules`).Scan(&k)
			return k > 0, err
		}); err != nil {
			return fmt.Errorf("crash: modules never registered: %w", err)
		}
		if _, err := conn.Exec(ctx, `SELECT * FROM iasql_install('aws_s3', 'aws_security_group', 'aws_iam', 'aws_ec2', 'aws_elb', 'AWS::Logs::LogGroup')`); err != nil {
			return fmt.Errorf("crash: install modules: %w", err)
		}
		started := time.Now()
		for ; trials < crashTrials && stuck == nil; trials++ {
			tally, err := r.trial(ctx, trials)
			if errors.As(err, &stuck) {
				err = nil
			}
			if err != nil {
				r.keepLogs = true
				return fmt.Errorf("crash trial %d: %w", trials, err)
			}
			total.add(tally)
		}
		b.logf("crash: %d trials in %s; kills with cloud calls in flight: %d; create requests made before the kill (of %d per trial): %s; "+
			"resources made whose row had no feedback yet when the sidecar died: %d (%s); the interrupted commit: %s; "+
			"from the kill to the first successful commit: median %.1f s, max %.1f s (%d trials); "+
			"trials with RunInstances' ClientToken not honoured: %d, duplicate instances launched and terminated by the engine: %d",
			trials, time.Since(started).Round(time.Second), r.killedInFlight, crashRowsPerTrial, histogram(r.killedAfter),
			r.unrecorded, histogram(r.unrecordedBy), histogram(r.firstCommit),
			percentile(r.recoveries, 0.5), percentile(r.recoveries, 1), len(r.recoveries), r.ignoredTokens, r.strays)
		return r.cur.stop()
	})
	if err != nil {
		return err
	}
	b.figure("crash_duplicates", "%.0f", float64(total.duplicates))
	b.figure("crash_orphans", "%.0f", float64(total.orphans))
	fmt.Fprintf(b.log, "# crash: by type: %s; rows beyond one per resource %d; rows left without their resource %d\n",
		total.byKind(), total.extraRows, total.missing)
	fmt.Fprintf(b.log, "# goal: crash_duplicates = %d and crash_orphans = %d over %d SIGKILLs during creates, both 0: %s\n",
		total.duplicates, total.orphans, trials, met(total.duplicates == 0 && total.orphans == 0 && stuck == nil))
	if stuck != nil {
		return fmt.Errorf("crash: trials stopped after %d of %d: %w", trials, crashTrials, stuck)
	}
	return nil
}

// stuckError says that no commit succeeded after a kill.
type stuckError struct{ msg string }

func (e *stuckError) Error() string { return e.msg }

// crashRowsPerTrial is how many rows (resources to create) a trial inserts:
// per VPC the VPC, two subnets, a group and an instance; a load balancer,
// a target group and a listener.
const crashRowsPerTrial = crashBuckets + 5*crashVPCs + 3 + crashRoles + crashLogGroups

type crashRun struct {
	b        *bench
	db       string
	conn     *pgx.Conn
	emu      *emulator.Emulator
	busy     *activeCounter
	url      string
	ec2      *ec2.Client
	iam      *iam.Client
	elb      *elb.Client
	cc       *cloudcontrol.Client
	s3       *s3.Client
	logDir   string
	keepLogs bool
	cur      *sidecar // the running sidecar
	started  int      // sidecars started so far

	killedAfter    map[string]int // trials by create requests made before the kill
	killedInFlight int            // trials killed while the emulator served a request
	unrecorded     int            // resources in the cloud whose row showed no feedback once the killed sidecar's calls ended
	unrecordedBy   map[string]int // the same by type
	firstCommit    map[string]int // trials by what the killed sidecar's commit returned
	recoveries     []float64      // seconds from each kill to the first successful commit
	ignoredTokens  int            // trials whose endpoint did not honour RunInstances' ClientToken
	strays         int            // instances of those trials terminated (launched twice with one token)
}

// activeCounter counts the requests h is serving.
type activeCounter struct {
	h      http.Handler
	active atomic.Int64
}

func (a *activeCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.active.Add(1)
	defer a.active.Add(-1)
	a.h.ServeHTTP(w, r)
}

// start starts a new sidecar (iasql run) as a child process against the
// emulator, its log in logDir.
func (r *crashRun) start(ctx context.Context) error {
	r.started++
	path := filepath.Join(r.logDir, fmt.Sprintf("sidecar-%03d.log", r.started))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	cmd := launch.Command(ctx, r.url, r.b.iasqlBin, "run", "--dsn", r.b.cluster.DSN(r.db), "--log-level", "debug", "--interval", "1h")
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 15 * time.Second
	cmd.Stdout, cmd.Stderr = f, f
	s := &sidecar{cmd: cmd, name: "sidecar", what: fmt.Sprintf("the sidecar (log %s)", path), stopSig: syscall.SIGTERM, slot: logical.SlotName(r.db)}
	err = s.start()
	f.Close() // the child has its own descriptor
	if err != nil {
		return fmt.Errorf("start sidecar %s: %w", r.b.iasqlBin, err)
	}
	r.cur = s
	return nil
}

// trial runs trial t and counts what it left.
func (r *crashRun) trial(ctx context.Context, t int) (crashTally, error) {
	if r.killedAfter == nil {
		r.killedAfter, r.firstCommit, r.unrecordedBy = map[string]int{}, map[string]int{}, map[string]int{}
	}
	r.emu.ClearFaults()
	delays := map[string]time.Duration{}
	for _, op := range crashCreates {
		delays[op] = crashDelayMin + rand.N(crashDelayMax-crashDelayMin+1)
		r.emu.Inject(emulator.Fault{Op: op, Kind: emulator.Latency, Delay: delays[op]})
	}
	ignoreTokens := t%2 == 1
	if ignoreTokens {
		r.ignoredTokens++
		r.emu.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.IgnoreClientToken})
	}
	if err := r.insert(ctx, t); err != nil {
		return crashTally{}, err
	}
	r.emu.Reset()
	creates := func() int {
		calls, n := r.emu.Calls(), 0
		for _, op := range crashCreates {
			n += calls[op]
		}
		return n
	}

	// The commit the kill interrupts, on a session of its own.
	cconn, err := pgx.Connect(ctx, r.b.cluster.DSN(r.db))
	if err != nil {
		return crashTally{}, err
	}
	defer cconn.Close(context.Background())
	cctx, cancelCommit := context.WithCancel(ctx)
	defer cancelCommit()
	first := make(chan error, 1)
	go func() {
		_, err := cconn.Exec(cctx, `CALL iasql_commit()`)
		first <- err
	}()
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		select {
		case err := <-first:
			return false, fmt.Errorf("the commit ended before any create call: %v", err)
		default:
		}
		return creates() > 0, r.cur.exited()
	}); err != nil {
		return crashTally{}, fmt.Errorf("wait for the first create call: %w", err)
	}
	// The creates take a pass for the VPCs (buckets, roles and log groups
	// alongside), one for their subnets, groups and the target group, one
	// for the instances and the load balancer, and the listener once the
	// load balancer is active (asked about after a second): kill within
	// that.
	window := delays["ec2:CreateVpc"] + max(delays["ec2:CreateSubnet"], delays["ec2:CreateSecurityGroup"], delays["elasticloadbalancing:CreateTargetGroup"]) +
		max(delays["ec2:RunInstances"], delays["elasticloadbalancing:CreateLoadBalancer"]) + time.Second + delays["elasticloadbalancing:CreateListener"] + 200*time.Millisecond
	if err := sleep(ctx, rand.N(window)); err != nil {
		return crashTally{}, err
	}
	inFlight := r.busy.active.Load()
	if err := r.cur.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		return crashTally{}, fmt.Errorf("SIGKILL the sidecar: %w", err)
	}
	<-r.cur.done
	r.killedAfter[bucketOf(creates())]++
	if inFlight > 0 {
		r.killedInFlight++
	}
	killedLog := r.started
	// What the dead sidecar left for the next one to adopt: once the
	// emulator has finished the calls it had under way, the resources
	// whose row does not show the cloud's answer (no generated id; for
	// buckets and roles, known by name, no created_at or arn).
	if err := waitFor(ctx, 30*time.Second, func() (bool, error) { return r.busy.active.Load() == 0, nil }); err != nil {
		return crashTally{}, fmt.Errorf("wait for the killed sidecar's calls to end: %w", err)
	}
	kinds, err := r.kinds(ctx, t)
	if err != nil {
		return crashTally{}, err
	}
	for _, k := range kinds {
		for _, ids := range k.cloud {
			for _, id := range ids {
				if !k.fedIDs[id] {
					r.unrecorded++
					r.unrecordedBy[k.name]++
				}
			}
		}
	}

	// A new sidecar; commit until a commit succeeds. (An endpoint that
	// ignores client tokens goes on ignoring them.)
	r.emu.ClearFaults()
	if ignoreTokens {
		r.emu.Inject(emulator.Fault{Op: "ec2:RunInstances", Kind: emulator.IgnoreClientToken})
	}
	if err := r.start(ctx); err != nil {
		return crashTally{}, err
	}
	killedAt := time.Now()
	deadline := killedAt.Add(crashRecovery)
	attempts, failed := 0, 0
	var stuck error
	for {
		attempts++
		rctx, cancel := context.WithDeadline(ctx, deadline)
		_, err := r.conn.Exec(rctx, `CALL iasql_commit()`)
		cancel()
		if err == nil {
			r.recoveries = append(r.recoveries, time.Since(killedAt).Seconds())
			break
		}
		if ctx.Err() != nil {
			return crashTally{}, ctx.Err()
		}
		if err := r.cur.exited(); err != nil {
			return crashTally{}, err
		}
		if time.Now().After(deadline) {
			r.keepLogs = true
			stuck = &stuckError{fmt.Sprintf("trial %d: no commit succeeded within %s of the kill (%d attempts; sidecar logs in %s): %s",
				t, crashRecovery, attempts, r.logDir, firstLine(err.Error()))}
			break
		}
		// Until the new sidecar is up, commits fail at once for want of it.
		if !strings.Contains(err.Error(), "none is connected") {
			if failed++; failed == 1 {
				r.b.logf("crash trial %d: a commit after the kill failed (retrying): %s", t, firstLine(err.Error()))
			}
		}
		if err := sleep(ctx, 300*time.Millisecond); err != nil {
			return crashTally{}, err
		}
	}
	// What the interrupted commit told its caller.
	select {
	case err := <-first:
		if err == nil {
			r.firstCommit["succeeded"]++
		} else {
			r.firstCommit["failed"]++
		}
	case <-time.After(10 * time.Second):
		r.firstCommit["still waiting 10 s after recovery"]++
		cancelCommit()
		<-first
	}

	tally, err := r.count(ctx, t)
	if err != nil {
		return crashTally{}, err
	}
	r.strays += tally.terminated
	if failed > 1 {
		r.b.logf("crash trial %d: %d commits after the kill failed", t, failed)
	}
	if tally.duplicates+tally.orphans+tally.missing+tally.extraRows > 0 {
		r.keepLogs = true
		r.b.logf("crash trial %d: %s (killed sidecar's log sidecar-%03d.log, the next sidecar's sidecar-%03d.log)",
			t, tally.detail, killedLog, killedLog+1)
	}
	return tally, stuck
}

// bucketOf groups create request counts for the histogram.
func bucketOf(n int) string {
	switch {
	case n < crashRowsPerTrial:
		return fmt.Sprintf("%02d", n)
	default:
		return fmt.Sprintf(">=%d", crashRowsPerTrial)
	}
}

func histogram(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func containsEmpty(ids []string) bool {
	for _, id := range ids {
		if id == "" {
			return true
		}
	}
	return false
}

// Names and CIDRs of trial t.
func crashName(t int, kind string, i int) string { return fmt.Sprintf("crash-t%03d-%s%d", t, kind, i) }
func crashVPCCidr(t, k int) string               { return fmt.Sprintf("10.%d.%d.0/24", t, k) }
func crashSubnetCidr(t, k int) string            { return fmt.Sprintf("10.%d.%d.0/26", t, k) }
func crashSubnetBCidr(t, k int) string           { return fmt.Sprintf("10.%d.%d.64/26", t, k) }
func crashCidrPrefix(t int) string               { return fmt.Sprintf("10.%d.", t) }

// insert writes trial t's rows in one transaction.
func (r *crashRun) insert(ctx context.Context, t int) error {
	return pgx.BeginFunc(ctx, r.conn, func(tx pgx.Tx) error {
		for i := 0; i < crashBuckets; i++ {
			if _, err := tx.Exec(ctx, `INSERT INTO bucket (name) VALUES ($1)`, crashName(t, "b", i)); err != nil {
				return fmt.Errorf("insert bucket: %w", err)
			}
		}
		for k := 0; k < crashVPCs; k++ {
			var vpc int
			if err := tx.QueryRow(ctx, `INSERT INTO vpc (cidr_block) VALUES ($1) RETURNING id`, crashVPCCidr(t, k)).Scan(&vpc); err != nil {
				return fmt.Errorf("insert vpc: %w", err)
			}
			var subnet, group int
			if err := tx.QueryRow(ctx, `INSERT INTO subnet (vpc_id, cidr_block, availability_zone) VALUES ($1, $2, 'us-east-1a') RETURNING id`, vpc, crashSubnetCidr(t, k)).Scan(&subnet); err != nil {
				return fmt.Errorf("insert subnet: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO subnet (vpc_id, cidr_block, availability_zone) VALUES ($1, $2, 'us-east-1b')`, vpc, crashSubnetBCidr(t, k)); err != nil {
				return fmt.Errorf("insert subnet: %w", err)
			}
			if err := tx.QueryRow(ctx, `INSERT INTO security_group (group_name, description, vpc_id) VALUES ($1, 'bench crash trial', $2) RETURNING id`, crashName(t, "g", k), vpc).Scan(&group); err != nil {
				return fmt.Errorf("insert security group: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO instance (ami, instance_type, subnet_id, security_group_ids, tags) VALUES ('ami-0123456789abcdef0', 't3.micro', $1, ARRAY[$2]::bigint[], jsonb_build_object('Name', $3::text))`,
				subnet, group, crashName(t, "i", k)); err != nil {
				return fmt.Errorf("insert instance: %w", err)
			}
			if k > 0 {
				continue
			}
			// The load balancer over both subnets, its target group and a listener.
			var lb, tg int
			if err := tx.QueryRow(ctx, `INSERT INTO load_balancer (name, subnets, security_groups) VALUES ($1, ARRAY(SELECT id FROM subnet WHERE vpc_id = $2 ORDER BY cidr_block), ARRAY[$3]::bigint[]) RETURNING id`,
				crashName(t, "lb", k), vpc, group).Scan(&lb); err != nil {
				return fmt.Errorf("insert load balancer: %w", err)
			}
			if err := tx.QueryRow(ctx, `INSERT INTO target_group (name, port, vpc_id) VALUES ($1, 80, $2) RETURNING id`, crashName(t, "tg", k), vpc).Scan(&tg); err != nil {
				return fmt.Errorf("insert target group: %w", err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO listener (load_balancer_id, port, target_group_id) VALUES ($1, 80, $2)`, lb, tg); err != nil {
				return fmt.Errorf("insert listener: %w", err)
			}
		}
		for i := 0; i < crashLogGroups; i++ {
			if _, err := tx.Exec(ctx, `INSERT INTO aws_logs_log_group (log_group_name) VALUES ($1)`, crashName(t, "c", i)); err != nil {
				return fmt.Errorf("insert log group: %w", err)
			}
		}
		for i := 0; i < crashRoles; i++ {
			if _, err := tx.Exec(ctx, `INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ($1, $2)`, crashName(t, "r", i), crashTrustPolicy); err != nil {
				return fmt.Errorf("insert role: %w", err)
			}
		}
		return nil
	})
}

// crashTally is what trials left, in total and per resource type.
type crashTally struct {
	duplicates, orphans int
	extraRows, missing  int
	terminated          int               // instances of the trial terminated (the engine's duplicates)
	kinds               map[string][2]int // type: duplicates, orphans
	detail              string
}

func (c *crashTally) add(o crashTally) {
	c.duplicates += o.duplicates
	c.orphans += o.orphans
	c.extraRows += o.extraRows
	c.missing += o.missing
	if c.kinds == nil {
		c.kinds = map[string][2]int{}
	}
	for k, v := range o.kinds {
		w := c.kinds[k]
		c.kinds[k] = [2]int{w[0] + v[0], w[1] + v[1]}
	}
}

func (c *crashTally) byKind() string {
	var parts []string
	for _, k := range crashKindNames {
		v := c.kinds[k]
		parts = append(parts, fmt.Sprintf("%s %d duplicates %d orphans", k, v[0], v[1]))
	}
	return strings.Join(parts, ", ")
}

// crashKindNames are the resource types of a trial, in the order kinds
// returns them.
var crashKindNames = []string{"bucket", "vpc", "subnet", "security_group", "iam_role", "instance", "load_balancer", "target_group", "listener", "log_group"}

// crashKind is one resource type of a trial: the cloud's resources of the
// trial and the table's rows, each by key (name or CIDR) with the cloud
// id, and the keys the trial inserted.
type crashKind struct {
	name   string
	cloud  map[string][]string // key -> cloud ids of the trial's resources
	rows   map[string][]string // key -> the ids rows of the trial hold ("" when none yet)
	rowIDs map[string]bool     // every cloud id any row of the table holds
	fedIDs map[string]bool     // those of rows that show the cloud's answer (feedback written)
	want   []string            // keys the trial inserted
	gone   int                 // resources of the trial terminated (instances)
}

// count compares trial t's resources in the cloud with the tables.
func (r *crashRun) count(ctx context.Context, t int) (crashTally, error) {
	kinds, err := r.kinds(ctx, t)
	if err != nil {
		return crashTally{}, err
	}
	tally := crashTally{kinds: map[string][2]int{}}
	var notes []string
	for _, k := range kinds {
		var dup, orph int
		for _, key := range k.want {
			// Copies beyond the one asked for, in the cloud or as rows (a
			// second VPC imported as a second row counts once).
			dup += max(0, len(k.cloud[key])-1, len(k.rows[key])-1)
		}
		for key, ids := range k.cloud {
			if len(ids) > 1 {
				notes = append(notes, fmt.Sprintf("%s %s: %d in the cloud (%s)", k.name, key, len(ids), strings.Join(ids, ", ")))
			}
			for _, id := range ids {
				if !k.rowIDs[id] {
					orph++
					notes = append(notes, fmt.Sprintf("%s %s: %s in the cloud, no row holds it", k.name, key, id))
				}
			}
		}
		for key, ids := range k.rows {
			if len(ids) > 1 {
				tally.extraRows += len(ids) - 1
				notes = append(notes, fmt.Sprintf("%s %s: %d rows (%s)", k.name, key, len(ids), strings.Join(ids, ", ")))
			}
		}
		for _, key := range k.want {
			ids := k.rows[key]
			if len(ids) == 0 || containsEmpty(ids) || len(k.cloud[key]) == 0 {
				tally.missing++
				notes = append(notes, fmt.Sprintf("%s %s: inserted, but rows %q and %d in the cloud", k.name, key, ids, len(k.cloud[key])))
			}
		}
		tally.duplicates += dup
		tally.orphans += orph
		tally.terminated += k.gone
		tally.kinds[k.name] = [2]int{dup, orph}
	}
	sort.Strings(notes)
	tally.detail = strings.Join(notes, "; ")
	return tally, nil
}

// kinds reads trial t's resources of every type from the cloud and the
// tables.
func (r *crashRun) kinds(ctx context.Context, t int) ([]*crashKind, error) {
	namePrefix := fmt.Sprintf("crash-t%03d-", t)
	cidrPrefix := crashCidrPrefix(t)
	newKind := func(name string) *crashKind {
		return &crashKind{name: name, cloud: map[string][]string{}, rows: map[string][]string{}, rowIDs: map[string]bool{}, fedIDs: map[string]bool{}}
	}
	bucket, vpc, subnet, group, role := newKind("bucket"), newKind("vpc"), newKind("subnet"), newKind("security_group"), newKind("iam_role")
	inst, lb, tg, listener, logGroup := newKind("instance"), newKind("load_balancer"), newKind("target_group"), newKind("listener"), newKind("log_group")
	for k := 0; k < crashVPCs; k++ {
		vpc.want = append(vpc.want, crashVPCCidr(t, k))
		subnet.want = append(subnet.want, crashSubnetCidr(t, k), crashSubnetBCidr(t, k))
		group.want = append(group.want, crashName(t, "g", k))
		inst.want = append(inst.want, crashName(t, "i", k))
	}
	lb.want, tg.want, listener.want = []string{crashName(t, "lb", 0)}, []string{crashName(t, "tg", 0)}, []string{crashName(t, "lb", 0) + ":80"}
	for i := 0; i < crashLogGroups; i++ {
		logGroup.want = append(logGroup.want, crashName(t, "c", i))
	}
	for i := 0; i < crashBuckets; i++ {
		bucket.want = append(bucket.want, crashName(t, "b", i))
	}
	for i := 0; i < crashRoles; i++ {
		role.want = append(role.want, crashName(t, "r", i))
	}

	// The cloud.
	bp := s3.NewListBucketsPaginator(r.s3, &s3.ListBucketsInput{Prefix: aws.String(namePrefix)})
	for bp.HasMorePages() {
		out, err := bp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list buckets: %w", err)
		}
		for _, x := range out.Buckets {
			if n := aws.ToString(x.Name); strings.HasPrefix(n, namePrefix) {
				bucket.cloud[n] = append(bucket.cloud[n], n)
			}
		}
	}
	vp := ec2.NewDescribeVpcsPaginator(r.ec2, &ec2.DescribeVpcsInput{})
	for vp.HasMorePages() {
		out, err := vp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe VPCs: %w", err)
		}
		for _, x := range out.Vpcs {
			if c := aws.ToString(x.CidrBlock); strings.HasPrefix(c, cidrPrefix) {
				vpc.cloud[c] = append(vpc.cloud[c], aws.ToString(x.VpcId))
			}
		}
	}
	sp := ec2.NewDescribeSubnetsPaginator(r.ec2, &ec2.DescribeSubnetsInput{})
	for sp.HasMorePages() {
		out, err := sp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe subnets: %w", err)
		}
		for _, x := range out.Subnets {
			if c := aws.ToString(x.CidrBlock); strings.HasPrefix(c, cidrPrefix) {
				subnet.cloud[c] = append(subnet.cloud[c], aws.ToString(x.SubnetId))
			}
		}
	}
	gp := ec2.NewDescribeSecurityGroupsPaginator(r.ec2, &ec2.DescribeSecurityGroupsInput{})
	for gp.HasMorePages() {
		out, err := gp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe security groups: %w", err)
		}
		for _, x := range out.SecurityGroups {
			if n := aws.ToString(x.GroupName); strings.HasPrefix(n, namePrefix) {
				group.cloud[n] = append(group.cloud[n], aws.ToString(x.GroupId))
			}
		}
	}
	rp := iam.NewListRolesPaginator(r.iam, &iam.ListRolesInput{})
	for rp.HasMorePages() {
		out, err := rp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list roles: %w", err)
		}
		for _, x := range out.Roles {
			if n := aws.ToString(x.RoleName); strings.HasPrefix(n, namePrefix) {
				role.cloud[n] = append(role.cloud[n], n)
			}
		}
	}

	ip := ec2.NewDescribeInstancesPaginator(r.ec2, &ec2.DescribeInstancesInput{})
	for ip.HasMorePages() {
		out, err := ip.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe instances: %w", err)
		}
		for _, res := range out.Reservations {
			for _, x := range res.Instances {
				name := ""
				for _, tag := range x.Tags {
					if aws.ToString(tag.Key) == "Name" {
						name = aws.ToString(tag.Value)
					}
				}
				if !strings.HasPrefix(name, namePrefix) {
					continue
				}
				if s := x.State.Name; s == ec2types.InstanceStateNameShuttingDown || s == ec2types.InstanceStateNameTerminated {
					inst.gone++
					continue
				}
				inst.cloud[name] = append(inst.cloud[name], aws.ToString(x.InstanceId))
			}
		}
	}
	lp := elb.NewDescribeLoadBalancersPaginator(r.elb, &elb.DescribeLoadBalancersInput{})
	for lp.HasMorePages() {
		out, err := lp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe load balancers: %w", err)
		}
		for _, x := range out.LoadBalancers {
			n := aws.ToString(x.LoadBalancerName)
			if !strings.HasPrefix(n, namePrefix) {
				continue
			}
			lb.cloud[n] = append(lb.cloud[n], n)
			ls := elb.NewDescribeListenersPaginator(r.elb, &elb.DescribeListenersInput{LoadBalancerArn: x.LoadBalancerArn})
			for ls.HasMorePages() {
				page, err := ls.NextPage(ctx)
				if err != nil {
					return nil, fmt.Errorf("describe listeners of %s: %w", n, err)
				}
				for _, l := range page.Listeners {
					key := fmt.Sprintf("%s:%d", n, aws.ToInt32(l.Port))
					listener.cloud[key] = append(listener.cloud[key], aws.ToString(l.ListenerArn))
				}
			}
		}
	}
	tp := elb.NewDescribeTargetGroupsPaginator(r.elb, &elb.DescribeTargetGroupsInput{})
	for tp.HasMorePages() {
		out, err := tp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe target groups: %w", err)
		}
		for _, x := range out.TargetGroups {
			if n := aws.ToString(x.TargetGroupName); strings.HasPrefix(n, namePrefix) {
				tg.cloud[n] = append(tg.cloud[n], n)
			}
		}
	}
	cp := cloudcontrol.NewListResourcesPaginator(r.cc, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::Logs::LogGroup")})
	for cp.HasMorePages() {
		out, err := cp.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list log groups: %w", err)
		}
		for _, x := range out.ResourceDescriptions {
			if n := aws.ToString(x.Identifier); strings.HasPrefix(n, namePrefix) {
				logGroup.cloud[n] = append(logGroup.cloud[n], n)
			}
		}
	}

	// The tables: every row's cloud id, and the trial's rows by key.
	for _, q := range []struct {
		k      *crashKind
		sql    string
		prefix string
	}{
		{bucket, `SELECT name, name, CASE WHEN created_at IS NOT NULL THEN name ELSE '' END FROM bucket`, namePrefix},
		{vpc, `SELECT cidr_block::text, coalesce(vpc_id, ''), coalesce(vpc_id, '') FROM vpc`, cidrPrefix},
		{subnet, `SELECT cidr_block::text, coalesce(subnet_id, ''), coalesce(subnet_id, '') FROM subnet`, cidrPrefix},
		{group, `SELECT group_name, coalesce(group_id, ''), coalesce(group_id, '') FROM security_group`, namePrefix},
		{role, `SELECT role_name, role_name, CASE WHEN arn IS NOT NULL THEN role_name ELSE '' END FROM iam_role`, namePrefix},
		{inst, `SELECT coalesce(tags->>'Name', ''), coalesce(instance_id, ''), coalesce(instance_id, '') FROM instance`, namePrefix},
		{lb, `SELECT name, name, CASE WHEN load_balancer_arn IS NOT NULL THEN name ELSE '' END FROM load_balancer`, namePrefix},
		{tg, `SELECT name, name, CASE WHEN target_group_arn IS NOT NULL THEN name ELSE '' END FROM target_group`, namePrefix},
		{listener, `SELECT lb.name || ':' || l.port, coalesce(l.listener_arn, ''), coalesce(l.listener_arn, '')
			FROM listener l JOIN load_balancer lb ON lb.id = l.load_balancer_id`, namePrefix},
		{logGroup, `SELECT log_group_name, log_group_name, CASE WHEN arn IS NOT NULL THEN log_group_name ELSE '' END FROM aws_logs_log_group`, namePrefix},
	} {
		rows, err := r.conn.Query(ctx, q.sql)
		if err != nil {
			return nil, fmt.Errorf("read %s rows: %w", q.k.name, err)
		}
		var key, id, fed string
		_, err = pgx.ForEachRow(rows, []any{&key, &id, &fed}, func() error {
			if id != "" {
				q.k.rowIDs[id] = true
			}
			if fed != "" {
				q.k.fedIDs[fed] = true
			}
			if strings.HasPrefix(key, q.prefix) {
				q.k.rows[key] = append(q.k.rows[key], id)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read %s rows: %w", q.k.name, err)
		}
	}
	return []*crashKind{bucket, vpc, subnet, group, role, inst, lb, tg, listener, logGroup}, nil
}
