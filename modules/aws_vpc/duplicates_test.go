package aws_vpc_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// cloudVpcIDs returns the ids of the VPCs in the default region with the
// CIDR block, sorted.
func (e *env) cloudVpcIDs(cidr string) []string {
	e.T.Helper()
	out, err := e.ec2.DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{})
	if err != nil {
		e.T.Fatal(err)
	}
	var ids []string
	for _, v := range out.Vpcs {
		if aws.ToString(v.CidrBlock) == cidr {
			ids = append(ids, aws.ToString(v.VpcId))
		}
	}
	slices.Sort(ids)
	return ids
}

// cloudSubnetIDs returns the ids of the subnets with the CIDR block.
func (e *env) cloudSubnetIDs(cidr string) []string {
	e.T.Helper()
	out, err := e.ec2.DescribeSubnets(context.Background(), &ec2.DescribeSubnetsInput{})
	if err != nil {
		e.T.Fatal(err)
	}
	var ids []string
	for _, s := range out.Subnets {
		if aws.ToString(s.CidrBlock) == cidr {
			ids = append(ids, aws.ToString(s.SubnetId))
		}
	}
	slices.Sort(ids)
	return ids
}

// wantOne checks that the cloud has exactly one resource and the table one
// row for it, with its id.
func (e *env) wantOne(what string, cloud []string, table, idCol, cidr string) {
	e.T.Helper()
	if len(cloud) != 1 {
		e.T.Fatalf("%d %ss with CIDR %s in the cloud (%v), want 1", len(cloud), what, cidr, cloud)
	}
	if n := e.Count(`SELECT count(*) FROM `+table+` WHERE cidr_block = $1`, cidr); n != 1 {
		e.T.Fatalf("%d %s rows with CIDR %s, want 1", n, table, cidr)
	}
	if id := e.String(`SELECT coalesce(`+idCol+`, '') FROM `+table+` WHERE cidr_block = $1`, cidr); id != cloud[0] {
		e.T.Errorf("the %s row's %s is %q, the cloud's %s is %s", table, idCol, id, what, cloud[0])
	}
}

// stopDuringCreateVpc commits, stops the sidecar while CreateVpc is in
// flight (EC2 is slowed to 2 s for the call) and waits until EC2 has made
// the VPC with that CIDR, which nobody writes back.
func (e *env) stopDuringCreateVpc(cidr string) {
	e.T.Helper()
	e.Emu.Inject(emulator.Fault{Op: "ec2:CreateVpc", Kind: emulator.Latency, Delay: 2 * time.Second, Times: 1})
	e.Emu.Reset()
	commit := make(chan error, 1)
	go func() {
		_, err := e.DB.Exec(context.Background(), `CALL iasql_commit()`)
		commit <- err
	}()
	testkit.Until(e.T, 30*time.Second, "CreateVpc called", func() bool { return e.Emu.Calls()["ec2:CreateVpc"] > 0 })
	e.Stop()
	<-commit // it fails or hangs up: the sidecar that took it is gone
	testkit.Until(e.T, 30*time.Second, "the VPC created in the cloud", func() bool { return len(e.cloudVpcIDs(cidr)) == 1 })
}

// TestCreateAnsweredWith500AfterActing: EC2 creates the VPC (and then the
// subnet) and answers 500, as when the connection is lost after AWS acted.
// CreateVpc takes no idempotency token, so the SDK must not repeat it; the
// engine retries only after looking the create's client token up, and
// adopts what the first attempt made. One VPC, one subnet, one row each.
func TestCreateAnsweredWith500AfterActing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Emu.Inject(emulator.Fault{Op: "ec2:CreateVpc", Kind: emulator.ServerErrorAfter, Times: 1})
	e.Emu.Inject(emulator.Fault{Op: "ec2:CreateSubnet", Kind: emulator.ServerErrorAfter, Times: 1})
	e.tx(`INSERT INTO vpc (cidr_block, tags) VALUES ('10.42.0.0/16', '{"Name": "five-hundred"}')`,
		`INSERT INTO subnet (vpc_id, cidr_block, availability_zone)
		 SELECT id, '10.42.1.0/24', 'us-east-1a' FROM vpc WHERE cidr_block = '10.42.0.0/16'`)
	e.Commit()
	e.wantOne("VPC", e.cloudVpcIDs("10.42.0.0/16"), "vpc", "vpc_id", "10.42.0.0/16")
	e.wantOne("subnet", e.cloudSubnetIDs("10.42.1.0/24"), "subnet", "subnet_id", "10.42.1.0/24")
	if tags := e.rowTags("vpc", "vpc_id", e.cloudVpcIDs("10.42.0.0/16")[0]); len(tags) != 1 || tags["Name"] != "five-hundred" {
		t.Errorf("the row's tags are %v: the client-token tag must not show, the user's must", tags)
	}
	// A cycle after it changes nothing.
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a cycle after the adoption made %v", m)
	}
}

// TestCrashBetweenCreateAndWriteBack: the sidecar stops while CreateVpc is
// in flight; EC2 goes on and creates the VPC, and nobody writes its id
// back. The next sidecar finds the VPC by the persisted client token and
// adopts it into the row: no second VPC, no second row.
func TestCrashBetweenCreateAndWriteBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO vpc (cidr_block) VALUES ('10.43.0.0/16')`)
	e.stopDuringCreateVpc("10.43.0.0/16")
	if id := e.String(`SELECT coalesce(vpc_id, '') FROM vpc WHERE cidr_block = '10.43.0.0/16'`); id != "" {
		t.Fatalf("the VPC's id %s was written back: the crash came too late to test anything", id)
	}
	e.StartSidecar(true)
	e.Commit()
	e.wantOne("VPC", e.cloudVpcIDs("10.43.0.0/16"), "vpc", "vpc_id", "10.43.0.0/16")
	if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'vpc'`); n != 0 {
		t.Errorf("%d vpc records still out of sync in iasql_status", n)
	}
}

// TestReplacementCreateIsIdempotent: a CIDR change replaces the VPC; its
// new VPC's create carries a client token like any create. Whether EC2
// answers 500 after acting or the sidecar stops while CreateVpc is in
// flight (so nobody writes the new id back), the end is one new VPC, in
// the row, and the old one gone: never a second new VPC or a second row.
func TestReplacementCreateIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		crash bool
	}{{"500 after acting", false}, {"crash before the write-back", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.Exec(`INSERT INTO vpc (cidr_block) VALUES ('10.44.0.0/16')`)
			e.Commit()
			old := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.44.0.0/16'`)
			row := e.String(`SELECT id::text FROM vpc WHERE cidr_block = '10.44.0.0/16'`)
			e.Exec(`UPDATE vpc SET cidr_block = '10.45.0.0/16' WHERE cidr_block = '10.44.0.0/16'`)
			if !tc.crash {
				e.Emu.Inject(emulator.Fault{Op: "ec2:CreateVpc", Kind: emulator.ServerErrorAfter, Times: 1})
				e.Commit()
			} else {
				e.stopDuringCreateVpc("10.45.0.0/16")
				if id := e.String(`SELECT vpc_id FROM vpc WHERE id = $1::int`, row); id != old {
					t.Fatalf("the new VPC's id %s was written back: the crash came too late to test anything", id)
				}
				e.StartSidecar(true)
				e.Commit()
			}
			e.wantOne("VPC", e.cloudVpcIDs("10.45.0.0/16"), "vpc", "vpc_id", "10.45.0.0/16")
			if ids := e.cloudVpcIDs("10.44.0.0/16"); len(ids) != 0 {
				t.Errorf("the replaced VPC is still in the cloud: %v", ids)
			}
			if id := e.String(`SELECT id::text FROM vpc WHERE cidr_block = '10.45.0.0/16'`); id != row {
				t.Errorf("the VPC is row %s now, want row %s", id, row)
			}
			if n := e.Count(`SELECT count(*) FROM iasql_status WHERE table_name = 'vpc'`); n != 0 {
				t.Errorf("%d vpc records still out of sync in iasql_status: %s", n,
					e.String(`SELECT string_agg(concat_ws(' ', state, action, last_error), '; ') FROM iasql_status WHERE table_name = 'vpc'`))
			}
		})
	}
}
