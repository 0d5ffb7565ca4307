package aws_vpc_test

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/pgtest"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

var srv *pgtest.Server

func TestMain(m *testing.M) { pgtest.Main(m, &srv) }

// env is a database with aws_vpc (and aws_account) installed, and an
// out-of-band EC2 client for the default region (us-east-1).
type env struct {
	*enginetest.Env
	ec2 *ec2.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules: []module.Module{aws_account.Module(), aws_vpc.Module()},
		Install: []string{"aws_vpc"},
	})
	return &env{Env: e, ec2: ec2.NewFromConfig(e.AWS)}
}

// tx runs statements as the user in one transaction.
func (e *env) tx(stmts ...string) {
	e.T.Helper()
	ctx := context.Background()
	tx, err := e.DB.Begin(ctx)
	if err != nil {
		e.T.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	for _, q := range stmts {
		if _, err := tx.Exec(ctx, q); err != nil {
			e.T.Fatalf("%s: %v", q, err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		e.T.Fatal(err)
	}
}

// cloudRes is a VPC or subnet as the cloud has it.
type cloudRes struct {
	cidr, zone, vpc string // zone and vpc: subnets only
	tags            map[string]string
}

// tagMap is a resource's tags but the engine's client-token tag (which a
// create adds and the tables do not show).
func tagMap(ts []types.Tag) map[string]string {
	out := map[string]string{}
	for _, t := range ts {
		if k := aws.ToString(t.Key); k != module.TokenTag {
			out[k] = aws.ToString(t.Value)
		}
	}
	return out
}

// notFound reports whether err is EC2's "no such resource" (…NotFound).
func notFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.HasSuffix(ae.ErrorCode(), ".NotFound")
}

func (e *env) cloudVpc(id string) (cloudRes, bool) {
	e.T.Helper()
	out, err := e.ec2.DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{VpcIds: []string{id}})
	if notFound(err) {
		return cloudRes{}, false
	}
	if err != nil {
		e.T.Fatalf("describe VPC %s: %v", id, err)
	}
	if len(out.Vpcs) != 1 {
		return cloudRes{}, false
	}
	v := out.Vpcs[0]
	return cloudRes{cidr: aws.ToString(v.CidrBlock), tags: tagMap(v.Tags)}, true
}

func (e *env) cloudSubnet(id string) (cloudRes, bool) {
	e.T.Helper()
	out, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{SubnetIds: []string{id}})
	if notFound(err) {
		return cloudRes{}, false
	}
	if err != nil {
		e.T.Fatalf("describe subnet %s: %v", id, err)
	}
	if len(out.Subnets) != 1 {
		return cloudRes{}, false
	}
	s := out.Subnets[0]
	return cloudRes{cidr: aws.ToString(s.CidrBlock), zone: aws.ToString(s.AvailabilityZone), vpc: aws.ToString(s.VpcId), tags: tagMap(s.Tags)}, true
}

// rowTags returns the tags of the row whose cloud id column is id.
func (e *env) rowTags(table, col, id string) map[string]string {
	e.T.Helper()
	js := e.String(`SELECT tags::text FROM `+table+` WHERE `+col+` = $1`, id)
	out := map[string]string{}
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		e.T.Fatalf("tags of %s %s: %q: %v", table, id, js, err)
	}
	return out
}

// resource is what the lifecycle test needs to know of vpc or subnet.
type resource struct {
	table, idCol, prefix string
	// setup runs (and is committed) first: a VPC to put subnets in.
	setup []string
	// insert makes a row with the tags {"a":"1","b":"2"}; where selects it.
	insert, where string
	// want is what the cloud must have for the inserted row (tags aside).
	want func(e *env) cloudRes
	// create, describe and remove act in the cloud out of band; create
	// gives the resource the tag made=elsewhere and returns its id and
	// what the row must hold.
	create   func(e *env) (id string, want cloudRes)
	describe func(e *env, id string) (cloudRes, bool)
	remove   func(e *env, id string) error
}

var resources = []resource{
	{
		table: "vpc", idCol: "vpc_id", prefix: "vpc-",
		insert: `INSERT INTO vpc (cidr_block, tags) VALUES ('10.0.0.0/16', '{"a":"1","b":"2"}')`,
		where:  `cidr_block = '10.0.0.0/16'`,
		want:   func(*env) cloudRes { return cloudRes{cidr: "10.0.0.0/16"} },
		create: func(e *env) (string, cloudRes) {
			out, err := e.ec2.CreateVpc(context.Background(), &ec2.CreateVpcInput{CidrBlock: aws.String("10.9.0.0/16"),
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeVpc,
					Tags: []types.Tag{{Key: aws.String("made"), Value: aws.String("elsewhere")}}}}})
			if err != nil {
				e.T.Fatal(err)
			}
			return aws.ToString(out.Vpc.VpcId), cloudRes{cidr: "10.9.0.0/16"}
		},
		describe: (*env).cloudVpc,
		remove: func(e *env, id string) error {
			_, err := e.ec2.DeleteVpc(context.Background(), &ec2.DeleteVpcInput{VpcId: aws.String(id)})
			return err
		},
	},
	{
		table: "subnet", idCol: "subnet_id", prefix: "subnet-",
		setup:  []string{`INSERT INTO vpc (cidr_block) VALUES ('10.0.0.0/16')`},
		insert: `INSERT INTO subnet (vpc_id, cidr_block, availability_zone, tags) SELECT id, '10.0.1.0/24', 'us-east-1a', '{"a":"1","b":"2"}' FROM vpc WHERE cidr_block = '10.0.0.0/16'`,
		where:  `cidr_block = '10.0.1.0/24'`,
		want: func(e *env) cloudRes {
			return cloudRes{cidr: "10.0.1.0/24", zone: "us-east-1a", vpc: e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.0.0.0/16'`)}
		},
		create: func(e *env) (string, cloudRes) {
			vpc := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.0.0.0/16'`)
			out, err := e.ec2.CreateSubnet(context.Background(), &ec2.CreateSubnetInput{VpcId: aws.String(vpc),
				CidrBlock: aws.String("10.0.9.0/24"), AvailabilityZone: aws.String("us-east-1b"),
				TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeSubnet,
					Tags: []types.Tag{{Key: aws.String("made"), Value: aws.String("elsewhere")}}}}})
			if err != nil {
				e.T.Fatal(err)
			}
			return aws.ToString(out.Subnet.SubnetId), cloudRes{cidr: "10.0.9.0/24", zone: "us-east-1b", vpc: vpc}
		},
		describe: (*env).cloudSubnet,
		remove: func(e *env, id string) error {
			_, err := e.ec2.DeleteSubnet(context.Background(), &ec2.DeleteSubnetInput{SubnetId: aws.String(id)})
			return err
		},
	},
}

// sameRes compares a cloud resource with what it should be (tags aside).
func sameRes(got, want cloudRes) bool {
	return got.cidr == want.cidr && got.zone == want.zone && got.vpc == want.vpc
}

// TestLifecycle: for vpc and subnet, create, update and delete from the
// database; import, update and delete made in the cloud by others.
func TestLifecycle(t *testing.T) {
	t.Parallel()
	for _, r := range resources {
		t.Run(r.table, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			e.Exec(r.setup...)
			e.Commit()

			// Create from the database.
			e.Exec(r.insert)
			e.Commit()
			id := e.String(`SELECT ` + r.idCol + ` FROM ` + r.table + ` WHERE ` + r.where)
			if !strings.HasPrefix(id, r.prefix) {
				t.Fatalf("created row's %s = %q, want an id from the cloud", r.idCol, id)
			}
			got, ok := r.describe(e, id)
			if want := r.want(e); !ok || !sameRes(got, want) || !maps.Equal(got.tags, map[string]string{"a": "1", "b": "2"}) {
				t.Fatalf("%s %s in the cloud: %v %+v, want %+v with tags a=1 b=2", r.table, id, ok, got, want)
			}

			// Update tags from the database: tag calls only, no replacement.
			e.Emu.Reset()
			e.Exec(`UPDATE ` + r.table + ` SET tags = '{"a":"1","c":"3"}' WHERE ` + r.idCol + ` = '` + id + `'`)
			e.Commit()
			if m := e.Mutations(); !maps.Equal(m, map[string]int{"ec2:CreateTags": 1, "ec2:DeleteTags": 1}) {
				t.Errorf("a tag change made these calls: %v, want one CreateTags and one DeleteTags", m)
			}
			if got, _ := r.describe(e, id); !maps.Equal(got.tags, map[string]string{"a": "1", "c": "3"}) {
				t.Errorf("tags in the cloud after the update: %v", got.tags)
			}
			if now := e.String(`SELECT ` + r.idCol + ` FROM ` + r.table + ` WHERE ` + r.where); now != id {
				t.Errorf("a tag change replaced %s: %s -> %s", r.table, id, now)
			}

			// Others change the tags: the row follows.
			if _, err := e.ec2.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id},
				Tags: []types.Tag{{Key: aws.String("d"), Value: aws.String("4")}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := e.ec2.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id},
				Tags: []types.Tag{{Key: aws.String("a")}}}); err != nil {
				t.Fatal(err)
			}
			e.Emu.Reset()
			e.Refresh() // a commit leaves what it does not act on as last read
			if got := e.rowTags(r.table, r.idCol, id); !maps.Equal(got, map[string]string{"c": "3", "d": "4"}) {
				t.Errorf("row's tags after the out-of-band change: %v, want c=3 d=4", got)
			}
			if m := e.Mutations(); len(m) != 0 {
				t.Errorf("pulling a change from the cloud changed the cloud: %v", m)
			}

			// Others create one: it is imported.
			oob, want := r.create(e)
			e.Refresh() // a commit leaves what it does not act on as last read
			if n := e.Count(`SELECT count(*) FROM `+r.table+` WHERE `+r.idCol+` = $1 AND cidr_block = $2::cidr`, oob, want.cidr); n != 1 {
				t.Fatalf("%s %s made out of band was not imported (%d rows)", r.table, oob, n)
			}
			if want.zone != "" {
				if z := e.String(`SELECT availability_zone FROM subnet WHERE subnet_id = $1`, oob); z != want.zone {
					t.Errorf("imported subnet's zone %q, want %q", z, want.zone)
				}
				if v := e.String(`SELECT v.vpc_id FROM subnet s JOIN vpc v ON v.id = s.vpc_id WHERE s.subnet_id = $1`, oob); v != want.vpc {
					t.Errorf("imported subnet's VPC %q, want %q", v, want.vpc)
				}
			}
			if got := e.rowTags(r.table, r.idCol, oob); !maps.Equal(got, map[string]string{"made": "elsewhere"}) {
				t.Errorf("imported row's tags: %v", got)
			}

			// Others delete it: the row goes.
			if err := r.remove(e, oob); err != nil {
				t.Fatal(err)
			}
			e.Refresh() // a commit leaves what it does not act on as last read
			if n := e.Count(`SELECT count(*) FROM `+r.table+` WHERE `+r.idCol+` = $1`, oob); n != 0 {
				t.Errorf("%s %s deleted in the cloud kept its row", r.table, oob)
			}

			// The user deletes the row: the resource goes.
			e.Exec(`DELETE FROM ` + r.table + ` WHERE ` + r.idCol + ` = '` + id + `'`)
			e.Commit()
			if _, ok := r.describe(e, id); ok {
				t.Errorf("%s %s still in the cloud after its row was deleted", r.table, id)
			}
			if n := e.Count(`SELECT count(*) FROM ` + r.table + ` WHERE ` + r.where); n != 0 {
				t.Errorf("the deleted %s came back: %d rows", r.table, n)
			}

			// Nothing left to do.
			e.Emu.Reset()
			e.Refresh() // reads everything, acts on nothing
			if m := e.Mutations(); len(m) != 0 {
				t.Errorf("a cycle with nothing to do changed the cloud: %v", m)
			}
		})
	}
}

// TestVpcAndSubnetInOneTransaction: a VPC and a subnet in it, inserted
// together, are both created by one commit (the subnet waits for the VPC's
// id).
func TestVpcAndSubnetInOneTransaction(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.tx(`INSERT INTO vpc (cidr_block, tags) VALUES ('10.2.0.0/16', '{"name":"together"}')`,
		`INSERT INTO subnet (vpc_id, cidr_block, availability_zone) SELECT id, '10.2.3.0/24', 'us-east-1c' FROM vpc WHERE cidr_block = '10.2.0.0/16'`)
	e.Commit()
	vpc := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.2.0.0/16'`)
	sub := e.String(`SELECT subnet_id FROM subnet WHERE cidr_block = '10.2.3.0/24'`)
	if vpc == "" || sub == "" {
		t.Fatalf("after one commit: vpc_id %q, subnet_id %q", vpc, sub)
	}
	if got, ok := e.cloudVpc(vpc); !ok || got.cidr != "10.2.0.0/16" || got.tags["name"] != "together" {
		t.Errorf("VPC %s in the cloud: %v %+v", vpc, ok, got)
	}
	if got, ok := e.cloudSubnet(sub); !ok || got.vpc != vpc || got.cidr != "10.2.3.0/24" || got.zone != "us-east-1c" {
		t.Errorf("subnet %s in the cloud: %v %+v, want in %s", sub, ok, got, vpc)
	}
	if n := e.Count(`SELECT count(*) FROM iasql_audit_log WHERE change_type = 'CYCLE_END' AND message::jsonb->>'outcome' <> 'done'`); n != 0 {
		t.Errorf("%d cycles did not end done", n)
	}
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("the next cycle changed the cloud: %v", m)
	}
}

// TestVpcCidrReplaces: a new cidr_block replaces the VPC (new vpc_id, the
// old one deleted, the row keeps its id) and its subnet moves with it,
// either as it is (its block still fits) or with the block the user gave
// it in the same transaction.
func TestVpcCidrReplaces(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		change     []string
		vpc, sub   string // the blocks after the change
		subChanged bool
	}{
		{"subnet still fits", []string{`UPDATE vpc SET cidr_block = '10.0.0.0/17' WHERE cidr_block = '10.0.0.0/16'`},
			"10.0.0.0/17", "10.0.1.0/24", false},
		{"subnet moved by the user", []string{
			`UPDATE vpc SET cidr_block = '10.1.0.0/16' WHERE cidr_block = '10.0.0.0/16'`,
			`UPDATE subnet SET cidr_block = '10.1.1.0/24' WHERE cidr_block = '10.0.1.0/24'`},
			"10.1.0.0/16", "10.1.1.0/24", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			ctx := context.Background()
			e.tx(`INSERT INTO vpc (cidr_block, tags) VALUES ('10.0.0.0/16', '{"name":"moving"}')`,
				`INSERT INTO subnet (vpc_id, cidr_block, availability_zone, tags) SELECT id, '10.0.1.0/24', 'us-east-1a', '{"tier":"app"}' FROM vpc WHERE cidr_block = '10.0.0.0/16'`)
			e.Commit()
			vpcRow := e.String(`SELECT id::text FROM vpc WHERE cidr_block = '10.0.0.0/16'`)
			subRow := e.String(`SELECT id::text FROM subnet WHERE cidr_block = '10.0.1.0/24'`)
			oldVpc := e.String(`SELECT vpc_id FROM vpc WHERE id = $1::int`, vpcRow)
			oldSub := e.String(`SELECT subnet_id FROM subnet WHERE id = $1::int`, subRow)
			if oldVpc == "" || oldSub == "" {
				t.Fatalf("not created: vpc %q subnet %q", oldVpc, oldSub)
			}

			e.Exec(`CALL iasql_begin()`) // no automatic cycle acts before the preview
			e.tx(c.change...)
			// Preview tells the replacement apart, with its reason and what it
			// cascades to, before anything is done.
			if n := e.Count(`SELECT count(*) FROM iasql_preview() WHERE action = 'replace' AND table_name = 'vpc' AND id = $1
				AND description LIKE '%create-only: cidr_block%' AND description LIKE '%1 subnet%'`, vpcRow); n != 1 {
				t.Errorf("preview does not show the VPC's replacement with its reason and cascade")
			}
			e.Commit()

			newVpc := e.String(`SELECT vpc_id FROM vpc WHERE id = $1::int`, vpcRow)
			newSub := e.String(`SELECT subnet_id FROM subnet WHERE id = $1::int`, subRow)
			if newVpc == "" || newVpc == oldVpc {
				t.Fatalf("the VPC row's vpc_id after the change: %q (was %q), want a new VPC", newVpc, oldVpc)
			}
			if got, ok := e.cloudVpc(newVpc); !ok || got.cidr != c.vpc || got.tags["name"] != "moving" {
				t.Errorf("new VPC %s: %v %+v, want %s with its tags", newVpc, ok, got, c.vpc)
			}
			if _, ok := e.cloudVpc(oldVpc); ok {
				t.Errorf("the old VPC %s still exists", oldVpc)
			}
			if newSub == "" || newSub == oldSub {
				t.Errorf("the subnet row's subnet_id after the change: %q (was %q), want a new subnet", newSub, oldSub)
			}
			if got, ok := e.cloudSubnet(newSub); !ok || got.vpc != newVpc || got.cidr != c.sub || got.zone != "us-east-1a" || got.tags["tier"] != "app" {
				t.Errorf("subnet %s: %v %+v, want %s in %s with its tags", newSub, ok, got, c.sub, newVpc)
			}
			if _, ok := e.cloudSubnet(oldSub); ok {
				t.Errorf("the old subnet %s still exists", oldSub)
			}
			// Nothing else in the cloud: the default VPC and the new one.
			vpcs, err := e.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
			if err != nil {
				t.Fatal(err)
			}
			if len(vpcs.Vpcs) != 2 {
				var ids []string
				for _, v := range vpcs.Vpcs {
					ids = append(ids, aws.ToString(v.VpcId)+" "+aws.ToString(v.CidrBlock))
				}
				t.Errorf("VPCs in us-east-1: %v, want the default one and %s", ids, newVpc)
			}
			if n := e.Count(`SELECT count(*) FROM vpc WHERE region = 'us-east-1'`); n != 2 {
				t.Errorf("%d VPC rows in us-east-1, want 2", n)
			}
			if n := e.Count(`SELECT count(*) FROM subnet WHERE vpc_id = $1::int`, vpcRow); n != 1 {
				t.Errorf("%d subnet rows in the VPC, want 1", n)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_replacements`); n != 0 {
				t.Errorf("%d replacements left unfinished", n)
			}
			e.Emu.Reset()
			e.Refresh() // reads everything, acts on nothing
			if m := e.Mutations(); len(m) != 0 {
				t.Errorf("the cycle after the replacement still changes the cloud: %v", m)
			}
		})
	}
}
