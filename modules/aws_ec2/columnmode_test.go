package aws_ec2_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_ec2"
	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// TestColumnModes: column rules in iasql_mode give one column of an
// instance to the cloud (TRACK) or to the database (ENFORCE) whatever its
// record's mode, and the most specific rule wins: column of a record,
// column of a table, record, table. The cloud's changes are made with
// another client, as a tool beside this product would (a cost tool's tags,
// a scheduler that stops instances).
func TestColumnModes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		rules string // run after the instance is launched; %d is its row id
		// want: the outcome after a commit, in the cloud and in the row.
		wantTag    bool   // the cloud's new tag stays (and the row has it)
		wantState  string // the instance's state in the cloud and the row
		refuseTags string // the rule a user UPDATE of tags is refused by ("" for none)
		preview    string // what preview says of the action it plans (mode and description)
	}{
		{
			name: "ENFORCE table, TRACK column: the cloud's tags stay and the row follows; its stop is reverted",
			rules: `INSERT INTO iasql_mode (table_name, mode) VALUES ('instance', 'ENFORCE');
			        INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'tags', 'TRACK')`,
			wantTag: true, wantState: "running", refuseTags: "column rule", preview: "keeps the cloud's tags (TRACK by column rule 2 (instance.tags))",
		},
		{
			name:    "NORMAL table, ENFORCE column: the cloud's stop is reverted, its tags follow into the row",
			rules:   `INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'state', 'ENFORCE')`,
			wantTag: true, wantState: "running", preview: "ENFORCE by column rule 1 (instance.state): reverting a change made in the cloud to state",
		},
		{
			name:    "no column rule: an ENFORCE table reverts both",
			rules:   `INSERT INTO iasql_mode (table_name, mode) VALUES ('instance', 'ENFORCE')`,
			wantTag: false, wantState: "running", preview: "ENFORCE by table rule",
		},
		{
			name: "column of a record beats record, which beats table",
			rules: `INSERT INTO iasql_mode (table_name, mode) VALUES ('instance', 'ENFORCE');
			        INSERT INTO iasql_mode (table_name, record_id, mode) VALUES ('instance', %d, 'TRACK');
			        INSERT INTO iasql_mode (table_name, record_id, column_name, mode) VALUES ('instance', %d, 'state', 'ENFORCE')`,
			// TRACK (record) beats ENFORCE (table): the tags follow the
			// cloud; ENFORCE (the record's column) beats TRACK (record):
			// the stop is reverted.
			wantTag: true, wantState: "running", refuseTags: "record rule", preview: "ENFORCE by column rule 3 (instance.state id 1)",
		},
		{
			name: "column of a table beats record",
			rules: `INSERT INTO iasql_mode (table_name, record_id, mode) VALUES ('instance', %d, 'ENFORCE');
			        INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'tags', 'TRACK')`,
			wantTag: true, wantState: "running", refuseTags: "column rule", preview: "ENFORCE by record rule",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := enginetest.New(t, srv, enginetest.Options{
				Modules:  []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
				Install:  []string{"aws_ec2"},
				Emulator: emulator.Options{InstanceStartDelay: time.Second, InstanceStopDelay: time.Second},
			})
			ctx := context.Background()
			client := ec2.NewFromConfig(e.AWS)
			e.Exec(`INSERT INTO instance (ami, instance_type, tags) VALUES ('ami-0123456789abcdef0', 't3.micro', '{"team": "web"}')`)
			e.Commit()
			iid, rid := e.String(`SELECT instance_id FROM instance`), e.String(`SELECT id::text FROM instance`)
			e.Exec(`CALL iasql_begin()`) // no automatic cycle between the cloud's change and the check
			e.Exec(strings.ReplaceAll(tc.rules, "%d", rid))

			// Another tool changes the instance in the cloud.
			if _, err := client.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{iid}, Tags: []types.Tag{{Key: aws.String("cost-center"), Value: aws.String("42")}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{iid}}); err != nil {
				t.Fatal(err)
			}
			if got := e.String(`SELECT string_agg(mode || ': ' || description, '; ') FROM iasql_preview() WHERE table_name = 'instance'`); !strings.Contains(got, tc.preview) {
				t.Errorf("preview: %q; want it to say %q", got, tc.preview)
			}
			e.Commit()

			describe := func() types.Instance {
				out, err := client.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{iid}})
				if err != nil {
					t.Fatal(err)
				}
				return out.Reservations[0].Instances[0]
			}
			// The stop is still under way at the commit: the start follows
			// once the instance is stopped (the cycles that poll it).
			testkit.Until(t, 30*time.Second, "the instance "+tc.wantState+" in the cloud", func() bool {
				return string(describe().State.Name) == tc.wantState
			})
			cloudTag := false
			for _, tag := range describe().Tags {
				cloudTag = cloudTag || aws.ToString(tag.Key) == "cost-center"
			}
			if cloudTag != tc.wantTag {
				t.Errorf("in the cloud: the new tag kept %v; want %v", cloudTag, tc.wantTag)
			}
			if n := e.Count(`SELECT count(*) FROM instance WHERE (tags ? 'cost-center') = $1 AND tags->>'team' = 'web' AND state = $2`, tc.wantTag, tc.wantState); n != 1 {
				t.Errorf("the row: %s; want the new tag %v and state %s", e.String(`SELECT tags::text || ' ' || state FROM instance`), tc.wantTag, tc.wantState)
			}
			_, err := e.DB.Exec(ctx, `UPDATE instance SET tags = tags || '{"owner": "me"}'`)
			switch {
			case tc.refuseTags != "" && (err == nil || !strings.Contains(err.Error(), "is refused: "+tc.refuseTags)):
				t.Errorf("a user update of tags: %v; want it refused by a %s", err, tc.refuseTags)
			case tc.refuseTags == "" && err != nil:
				t.Errorf("a user update of tags: %v", err)
			}
		})
	}
}

// TestColumnRuleRefused: a column rule names a declarative column of a
// module table, or it is refused in one line saying why.
func TestColumnRuleRefused(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install: []string{"aws_ec2"},
	})
	for _, tc := range []struct{ rule, want string }{
		{`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'observed_state', 'TRACK')`, "it is a feedback column"},
		{`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'instance_id', 'ENFORCE')`, "identity"},
		{`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'no_such', 'TRACK')`, "the table has no such column"},
		{`INSERT INTO iasql_mode (column_name, mode) VALUES ('tags', 'TRACK')`, "needs its table_name"},
		{`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('aws_regions', 'is_default', 'TRACK')`, "the database's own"},
	} {
		_, err := e.DB.Exec(context.Background(), tc.rule)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: %v; want one line saying %q", tc.rule, err, tc.want)
		}
	}
	e.Exec(`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'tags', 'TRACK')`)
	if _, err := e.DB.Exec(context.Background(), `INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'tags', 'ENFORCE')`); err == nil || !strings.Contains(err.Error(), "already a mode rule for column tags of table instance") {
		t.Errorf("a second rule for one column: %v", err)
	}
}

// TestTrackColumnAtInsert: a column the cloud owns (TRACK) still takes its
// value from the INSERT that creates the resource.
func TestTrackColumnAtInsert(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module(), aws_security_group.Module(), aws_ec2.Module()},
		Install: []string{"aws_ec2"},
	})
	e.Exec(`INSERT INTO iasql_mode (table_name, mode) VALUES ('instance', 'ENFORCE')`,
		`INSERT INTO iasql_mode (table_name, column_name, mode) VALUES ('instance', 'tags', 'TRACK')`,
		`INSERT INTO instance (ami, instance_type, tags) VALUES ('ami-0123456789abcdef0', 't3.micro', '{"team": "web"}')`)
	e.Commit()
	out, err := ec2.NewFromConfig(e.AWS).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{InstanceIds: []string{e.String(`SELECT instance_id FROM instance`)}})
	if err != nil {
		t.Fatal(err)
	}
	team := ""
	for _, tag := range out.Reservations[0].Instances[0].Tags {
		if aws.ToString(tag.Key) == "team" {
			team = aws.ToString(tag.Value)
		}
	}
	if team != "web" {
		t.Errorf("the instance was launched with team %q; want the INSERT's web (a TRACK column is used at create)", team)
	}
}
