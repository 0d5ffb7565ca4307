package aws_vpc_test

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_vpc"
)

var errRollback = errors.New("rolled back on purpose")

// TestSQLSubnetBlocks: a user's transaction that leaves a subnet outside
// its VPC's block, or overlapping another subnet of its VPC, is refused when
// it commits (before anything reaches the cloud, where CreateSubnet would
// answer InvalidSubnet.Range or InvalidSubnet.Conflict:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html),
// with the SQLSTATE of a check (23514) or of an exclusion (23P01), the rule
// as the constraint and a one-line message naming the rows and what to do.
// Within the transaction the blocks may pass through such states: blocks
// swapped, a VPC's block changed with its subnets'.
func TestSQLSubnetBlocks(t *testing.T) {
	t.Parallel()
	conn := srv.Installed(t, []string{aws_account.Module().InstallSQL(), aws_vpc.Module().InstallSQL()},
		`INSERT INTO aws_regions (region, is_default) VALUES ('us-east-1', true)`,
		`INSERT INTO vpc (id, vpc_id, cidr_block) VALUES (1, 'vpc-1', '10.0.0.0/16'), (2, 'vpc-2', '10.1.0.0/16'), (3, 'vpc-3', '10.0.0.0/16')`,
		`INSERT INTO subnet (id, subnet_id, vpc_id, cidr_block, availability_zone) VALUES
		   (1, 'subnet-a', 1, '10.0.1.0/24', 'us-east-1a'), (2, NULL, 1, '10.0.2.0/24', 'us-east-1b')`)
	ctx := t.Context()
	// run runs the statements in one transaction; rollback: roll it back
	// once they all worked (the state stays for the next case).
	run := func(rollback bool, sqls ...string) error {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			for _, q := range sqls {
				if _, err := tx.Exec(ctx, q); err != nil {
					return err
				}
			}
			if rollback {
				return errRollback
			}
			return nil
		})
		if errors.Is(err, errRollback) {
			return nil
		}
		return err
	}
	outside, overlap := "subnet_cidr_in_vpc", "subnet_cidr_no_overlap"
	for _, c := range []struct {
		name                string
		sqls                []string
		code, cons, message string
	}{
		{"outside its VPC", []string{`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (10, 1, '10.1.0.0/24', 'us-east-1a')`},
			"23514", outside, "subnet row 10 (10.1.0.0/24) is outside its VPC's block 10.0.0.0/16: choose a block inside it"},
		{"the same block as another", []string{`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (11, 1, '10.0.1.0/24', 'us-east-1a')`},
			"23P01", overlap, "subnet row 11 (10.0.1.0/24) overlaps subnet row 1 (10.0.1.0/24, subnet-a) in the same VPC: choose a block that overlaps no other subnet of the VPC"},
		{"a block holding another", []string{`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (12, 1, '10.0.0.0/23', 'us-east-1a')`},
			"23P01", overlap, "subnet row 12 (10.0.0.0/23) overlaps subnet row 1 (10.0.1.0/24, subnet-a) in the same VPC: choose a block that overlaps no other subnet of the VPC"},
		{"changed into another's", []string{`UPDATE subnet SET cidr_block = '10.0.1.128/25' WHERE id = 2`},
			"23P01", overlap, "subnet row 2 (10.0.1.128/25) overlaps subnet row 1 (10.0.1.0/24, subnet-a) in the same VPC: choose a block that overlaps no other subnet of the VPC"},
		{"moved to a VPC it is outside of", []string{`UPDATE subnet SET vpc_id = 2 WHERE id = 2`},
			"23514", outside, "subnet row 2 (10.0.2.0/24) is outside its VPC's block 10.1.0.0/16: choose a block inside it"},
		{"its VPC's block changed under it", []string{`UPDATE vpc SET cidr_block = '10.0.128.0/17' WHERE id = 1`},
			"23514", outside, "subnet row 1 (10.0.1.0/24) is outside its VPC's block 10.0.128.0/17: choose a block inside it"},
		{"two new ones overlapping", []string{
			`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (13, 1, '10.0.8.0/24', 'us-east-1a')`,
			`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (14, 1, '10.0.8.0/25', 'us-east-1a')`},
			"23P01", overlap, "subnet row 13 (10.0.8.0/24) overlaps subnet row 14 (10.0.8.0/25) in the same VPC: choose a block that overlaps no other subnet of the VPC"},
	} {
		err := run(false, c.sqls...)
		var pe *pgconn.PgError
		if !errors.As(err, &pe) || pe.Code != c.code || pe.ConstraintName != c.cons || pe.Message != c.message {
			t.Errorf("%s: %v; want SQLSTATE %s, constraint %s, message %q", c.name, err, c.code, c.cons, c.message)
		}
	}
	for _, c := range []struct {
		name string
		sqls []string
	}{
		{"the same block in another VPC", []string{`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (20, 3, '10.0.1.0/24', 'us-east-1a')`}},
		{"next to another", []string{`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (21, 1, '10.0.3.0/24', 'us-east-1a')`}},
		{"blocks swapped", []string{`UPDATE subnet SET cidr_block = CASE id WHEN 1 THEN '10.0.2.0/24'::cidr ELSE '10.0.1.0/24'::cidr END WHERE id IN (1, 2)`}},
		{"swapped in two statements", []string{`UPDATE subnet SET cidr_block = '10.0.2.0/24' WHERE id = 1`, `UPDATE subnet SET cidr_block = '10.0.1.0/24' WHERE id = 2`}},
		{"a VPC moved with its subnets", []string{`UPDATE vpc SET cidr_block = '10.5.0.0/16' WHERE id = 1`,
			`UPDATE subnet SET cidr_block = '10.5.1.0/24' WHERE id = 1`, `UPDATE subnet SET cidr_block = '10.5.2.0/24' WHERE id = 2`}},
		{"an overlapping one deleted in the same transaction", []string{
			`INSERT INTO subnet (id, vpc_id, cidr_block, availability_zone) VALUES (15, 1, '10.0.1.0/24', 'us-east-1a')`,
			`DELETE FROM subnet WHERE id = 1`}},
	} {
		if err := run(true, c.sqls...); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
