package main_test

import (
	"context"
	"io"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/internal/webtier"
	"github.com/iasql/iasql/modules"
)

// readmeTier is the web tier of the README's "Using it", as Observe
// looks for it (the demo prints webtier.Default(), named web).
func readmeTier() webtier.Tier {
	t := webtier.Default()
	t.Name, t.Octet = "shop", 30
	return t
}

// TestReadmeAfterMakeRun does what a user does after `make run`: it starts
// the demo (what make run runs), pastes what the demo prints to try, then
// every SQL block of the README's "Using it", in order, into the demo's
// database, and checks after each what the text says it does, in the
// database and in the cloud (the demo's emulator).
func TestReadmeAfterMakeRun(t *testing.T) {
	t.Parallel()
	blocks := readmeSQL(t, "## Using it")
	if len(blocks) != 6 {
		t.Fatalf("README's Using it has %d sql blocks; the test knows 6 (buckets, groups and instances, a web tier, Cloud Control, references, who owns a column)", len(blocks))
	}
	dsn, endpoint, try := startDemo(t)
	ctx, cancel := context.WithTimeout(t.Context(), 8*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	cfg := emulator.ClientConfig(endpoint)
	bucket := s3.NewFromConfig(cfg, testkit.PathStyle)
	ec2In := func(region string) *ec2.Client {
		return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
	}
	one := func(q string, args ...any) string {
		t.Helper()
		var s *string
		if err := conn.QueryRow(ctx, q, args...).Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if s == nil {
			return "<null>"
		}
		return *s
	}
	inCloud := func(name string) bool {
		out, err := bucket.ListBuckets(ctx, &s3.ListBucketsInput{})
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range out.Buckets {
			if aws.ToString(b.Name) == name {
				return true
			}
		}
		return false
	}
	groups := func(region, name string) []ec2types.SecurityGroup {
		out, err := ec2In(region).DescribeSecurityGroups(ctx, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{name}}}})
		if err != nil {
			t.Fatal(err)
		}
		return out.SecurityGroups
	}
	instance := func(region, id string) ec2types.Instance {
		out, err := ec2In(region).DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
		if err != nil || len(out.Reservations) != 1 || len(out.Reservations[0].Instances) != 1 {
			t.Fatalf("describe instance %s in %s: %v", id, region, err)
		}
		return out.Reservations[0].Instances[0]
	}
	tierComplete := func(tier webtier.Tier) {
		t.Helper()
		c, err := tier.Observe(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if bad := c.Complete(tier.Instances); bad != "" {
			t.Errorf("tier %s: %s", tier.Name, bad)
		}
	}

	steps := []struct {
		what  string
		sql   string
		check func()
	}{
		{"what the demo prints to try", try, func() {
			if !inCloud("my-first-bucket") {
				t.Error("my-first-bucket is not in the cloud")
			}
			tierComplete(webtier.Default())
		}},
		{"buckets", blocks[0], func() {
			if !inCloud("logs") {
				t.Error("logs is not in the cloud")
			}
			if got := one(`SELECT (created_at IS NOT NULL AND NOT versioning)::text FROM bucket WHERE name = 'logs'`); got != "true" {
				t.Errorf("bucket logs: created_at came back and the rolled-back versioning is off: %s", got)
			}
			if got := one(`SELECT count(*)::text FROM iasql_transaction`); got != "0" {
				t.Errorf("an iasql transaction is still open after the rollback")
			}
		}},
		{"groups and instances", blocks[1], func() {
			api := groups("us-east-1", "api")
			if len(api) != 1 || aws.ToString(api[0].Description) != "api tier" || len(api[0].IpPermissions) != 1 || aws.ToInt32(api[0].IpPermissions[0].FromPort) != 443 {
				t.Errorf("group api in the cloud: %+v; want one, replaced with the description 'api tier' and its rule on 443", api)
			} else if got := one(`SELECT group_id FROM security_group WHERE group_name = 'api'`); got != aws.ToString(api[0].GroupId) {
				t.Errorf("the row of group api has group_id %s, the cloud's is %s", got, aws.ToString(api[0].GroupId))
			}
			if web := groups("us-east-1", "web"); len(web) != 1 || aws.ToString(web[0].Description) != "web tier: HTTP from anywhere" {
				t.Errorf("the demo's group web was touched: %+v", web)
			}
			if i := instance("us-east-1", one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'api-1'`)); i.InstanceType != "t3.small" || i.State.Name != ec2types.InstanceStateNameRunning {
				t.Errorf("api-1 is a %s %s, want a running t3.small", i.State.Name, i.InstanceType)
			}
			if got := one(`SELECT string_agg(DISTINCT instance_type, ',') FROM instance WHERE tags->>'Name' LIKE 'web-%'`); got != "t3.micro" {
				t.Errorf("the demo's instances are %s now, want t3.micro still", got)
			}
			if got := one(`SELECT region || ' ' || (subnet_id IS NOT NULL AND cardinality(security_group_ids) = 1)::text FROM instance WHERE tags->>'Name' = 'api-2'`); got != "eu-west-1 true" {
				t.Errorf("api-2: %s; want in eu-west-1 (the new default), its subnet and group named", got)
			}
			if i := instance("eu-west-1", one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'api-2'`)); i.State.Name != ec2types.InstanceStateNameRunning {
				t.Errorf("api-2 is %s", i.State.Name)
			}
		}},
		{"a web tier", blocks[2], func() {
			tierComplete(readmeTier())
			tierComplete(webtier.Default())
			if i := instance("us-east-1", one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'shop-2'`)); aws.ToString(i.ImageId) != "ami-0fedcba9876543210" {
				t.Errorf("shop-2 runs %s, want the new AMI", aws.ToString(i.ImageId))
			}
			if got := one(`SELECT (dns_name IS NOT NULL AND state = 'active')::text FROM load_balancer WHERE name = 'shop'`); got != "true" {
				t.Errorf("load balancer shop has no dns_name or is not active: %s", got)
			}
		}},
		{"Cloud Control", blocks[3], func() {
			// Cloud Control tables default to aws_account's default region,
			// which an earlier block made eu-west-1.
			if got := one(`SELECT string_agg(DISTINCT region, ',') FROM (SELECT region FROM aws_logs_log_group UNION ALL SELECT region FROM aws_sqs_queue) r`); got != "eu-west-1" {
				t.Errorf("the Cloud Control rows are in %s, want the default region eu-west-1", got)
			}
			cc := cloudcontrol.NewFromConfig(cfg, func(o *cloudcontrol.Options) { o.Region = "eu-west-1" })
			if _, err := cc.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String("app")}); err != nil {
				t.Errorf("log group app: %v", err)
			}
			if got := one(`SELECT arn FROM aws_logs_log_group WHERE log_group_name = 'app'`); got == "<null>" {
				t.Error("the arn of log group app did not come back")
			}
			name := one(`SELECT queue_name FROM aws_sqs_queue`)
			if name == "<null>" {
				t.Fatal("the queue's generated name was not written into queue_name")
			}
			if _, err := cc.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::SQS::Queue"), Identifier: aws.String(one(`SELECT queue_url FROM aws_sqs_queue`))}); err != nil {
				t.Errorf("queue %s: %v", name, err)
			}
		}},
		{"references", blocks[4], func() {
			if got := one(`SELECT (g.kms_key_id = k.arn)::text FROM aws_logs_log_group g JOIN aws_kms_key k ON k.id = g.kms_key_id_ref`); got != "true" {
				t.Errorf("log group app is not encrypted by the key its kms_key_id_ref names: %s", got)
			}
			out, err := cloudcontrol.NewFromConfig(cfg, func(o *cloudcontrol.Options) {
				o.Region = one(`SELECT region FROM aws_logs_log_group WHERE log_group_name = 'app'`)
			}).
				GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String("app")})
			if err != nil || !strings.Contains(aws.ToString(out.ResourceDescription.Properties), one(`SELECT arn FROM aws_kms_key`)) {
				t.Errorf("log group app in the cloud does not name the key's ARN: %v", err)
			}
		}},
	}
	// Who owns a column: between the block's rules and its commit, another
	// tool tags an instance and stops another in the cloud.
	var shop1, shop2 string
	steps = append(steps, struct {
		what  string
		sql   string
		check func()
	}{"who owns a column", blocks[5], func() {
		if got := one(`SELECT (tags->>'cost-center')::text FROM instance WHERE instance_id = $1`, shop1); got != "42" {
			t.Errorf("shop-1's row has cost-center %s; want the cloud's tag 42 (TRACK column)", got)
		}
		tagged := false
		for _, tag := range instance("us-east-1", shop1).Tags {
			tagged = tagged || aws.ToString(tag.Key) == "cost-center"
		}
		if !tagged {
			t.Error("shop-1's cost-center tag was removed from the cloud; a TRACK column is never reverted")
		}
		// The stop may still be under way at the commit: the start follows
		// once the instance is stopped (a later cycle polls it).
		defer func() {
			if t.Failed() {
				t.Logf("status: %s", one(`SELECT coalesce(string_agg(s::text, E'\n'), '') FROM iasql_status s`))
				t.Logf("cycles: %s", one(`SELECT string_agg(message, E'\n' ORDER BY id) FROM (SELECT id, message FROM iasql_audit_log WHERE change_type = 'CYCLE_END' ORDER BY id DESC LIMIT 4) x`))
				t.Logf("row: %s", one(`SELECT row_to_json(i)::text FROM instance i WHERE instance_id = $1`, shop2))
			}
		}()
		testkit.Until(t, time.Minute, "shop-2 started again (the ENFORCE table reverts the stop)", func() bool {
			st := instance("us-east-1", shop2).State.Name
			return st == ec2types.InstanceStateNameRunning || st == ec2types.InstanceStateNamePending
		})
		if _, err := conn.Exec(ctx, `UPDATE instance SET tags = tags || '{"owner": "me"}' WHERE instance_id = $1`, shop1); err == nil || !strings.Contains(err.Error(), "column rule") {
			t.Errorf("a user update of a TRACK column: %v; want it refused naming the column rule", err)
		}
	}})
	for _, s := range steps {
		qs := statements(s.sql)
		for n, q := range qs {
			if s.what == "who owns a column" && n == len(qs)-1 {
				// The rules in place, another tool tags one instance and
				// stops another in the cloud; the commit comes next.
				shop1, shop2 = one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'shop-1'`), one(`SELECT instance_id FROM instance WHERE tags->>'Name' = 'shop-2'`)
				if _, err := ec2In("us-east-1").CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{shop1}, Tags: []ec2types.Tag{{Key: aws.String("cost-center"), Value: aws.String("42")}}}); err != nil {
					t.Fatal(err)
				}
				if _, err := ec2In("us-east-1").StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{shop2}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %s: %v", s.what, q, err)
			}
		}
		s.check()
		if t.Failed() {
			t.Fatalf("after %s, the README does not hold", s.what)
		}
	}
}

// startDemo starts `iasql demo` (what make run runs) and returns its
// database, the emulator's endpoint and the SQL it prints to try. The demo
// is interrupted (and removes its cluster) when the test ends.
func startDemo(t *testing.T) (dsn, endpoint, try string) {
	t.Helper()
	d := launchDemo(t)
	cmd, stdout, errs := d.cmd, d.stdout, d.errs
	copied := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stdout); close(copied) }()
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGINT)
		done := make(chan error, 1)
		go func() { <-copied; done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	text := d.printed
	m := regexp.MustCompile(`(?m)^\s*psql "([^"]+)"$`).FindStringSubmatch(text)
	e := regexp.MustCompile(`The emulator speaks S3 at (\S+) `).FindStringSubmatch(text)
	_, rest, ok := strings.Cut(text, "and try:\n")
	rest, _, ok2 := strings.Cut(rest, "\nThe emulator speaks")
	if m == nil || e == nil || !ok || !ok2 {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Fatalf("the demo did not print how to connect and what to try:\n%s\n%s", text, <-errs)
	}
	var sql []string
	for _, l := range strings.Split(rest, "\n") {
		if strings.HasPrefix(l, "  ") { // the SQL is indented, the prose is not
			sql = append(sql, strings.TrimSpace(l))
		}
	}
	return m[1], e[1], strings.Join(sql, "\n")
}

// readmeSQL returns the ```sql blocks of the README's section (a "## "
// heading, up to the next one).
func readmeSQL(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %s", heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	var blocks []string
	for {
		_, after, ok := strings.Cut(section, "```sql\n")
		if !ok {
			return blocks
		}
		block, rest, ok := strings.Cut(after, "```\n")
		if !ok {
			t.Fatalf("an sql block of %s is not closed", heading)
		}
		blocks, section = append(blocks, block), rest
	}
}

// statements splits SQL into its statements: at semicolons outside
// quotes, with -- comments dropped.
func statements(sql string) []string {
	var out []string
	var cur strings.Builder
	quoted := false
	for i := 0; i < len(sql); i++ {
		c := sql[i]
		switch {
		case c == '\'':
			quoted = !quoted
		case !quoted && c == '-' && i+1 < len(sql) && sql[i+1] == '-':
			for i < len(sql) && sql[i] != '\n' {
				i++
			}
			c = '\n'
		case !quoted && c == ';':
			if s := strings.TrimSpace(cur.String()); s != "" {
				out = append(out, s)
			}
			cur.Reset()
			continue
		}
		cur.WriteByte(c)
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// TestReadmeSaysWhatHolds: the README's introduction names every module
// the sidecar offers; its list of commands names each once, with the role
// the recipe creates (iasql_sidecar); --help says what the demo installs
// and what the emulator serves.
func TestReadmeSaysWhatHolds(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	intro, _, _ := strings.Cut(readme, "\n## ")
	for _, m := range modules.All() {
		if !strings.Contains(intro, "`"+m.Name+"`") {
			t.Errorf("the README's introduction does not name the module %s", m.Name)
		}
	}
	_, sidecar, _ := strings.Cut(readme, "\n## The sidecar\n")
	sidecar, _, _ = strings.Cut(sidecar, "\n## ")
	for _, cmd := range []string{"install", "status", "demo --scenario", "emulator"} {
		if n := regexp.MustCompile(`(?m)^bin/iasql `+cmd+`\b`).FindAllStringIndex(sidecar, -1); len(n) != 1 {
			t.Errorf("The sidecar lists iasql %s %d times, want once", cmd, len(n))
		}
	}
	for _, text := range []string{sidecar, testkit.Run(t, 10*time.Second, "run", "--help").Stderr, testkit.Run(t, 10*time.Second, "status", "--help").Stderr} {
		if strings.Contains(text, "postgres://iasql@") {
			t.Errorf("an example connects as the role iasql, which the recipe does not create (iasql_sidecar):\n%s", text)
		}
	}
	usage := testkit.Run(t, 10*time.Second, "--help").Stdout
	demo, _, _ := strings.Cut(usage[strings.Index(usage, "  demo "):], "\n  emulator")
	for _, m := range []string{"aws_s3", "aws_elb", "aws_vpc", "aws_security_group", "aws_ec2"} {
		if !strings.Contains(demo, m) {
			t.Errorf("--help does not say the demo installs %s:\n%s", m, usage)
		}
	}
	emu := usage[strings.Index(usage, "  emulator "):]
	for _, s := range []string{"S3", "EC2", "ELBv2", "IAM", "ECR", "STS", "Cloud Control", "DescribeType"} {
		if !strings.Contains(emu, s) {
			t.Errorf("--help does not say the emulator serves %s:\n%s", s, usage)
		}
	}
}
