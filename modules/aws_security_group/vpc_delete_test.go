package aws_security_group_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// TestDeleteVpcWithItsDefaultGroup: a VPC created from SQL brings its
// default security group (and that group's rules) in as rows. Deleting the
// VPC's row (the group rows go with it, ON DELETE CASCADE) deletes the VPC
// in the cloud: the default group cannot be deleted on its own
// (CannotDelete) but goes with its VPC, so it is neither imported back
// under the deleted VPC nor left failing every later commit.
func TestDeleteVpcWithItsDefaultGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(`INSERT INTO vpc (cidr_block) VALUES ('10.77.0.0/16')`)
	e.Commit()
	vpcID := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.77.0.0/16'`)
	if n := e.Count(`SELECT count(*) FROM security_group g JOIN vpc v ON v.id = g.vpc_id WHERE v.vpc_id = $1 AND g.group_name = 'default'`, vpcID); n != 1 {
		t.Fatalf("the new VPC's default group was not imported (%d rows)", n)
	}

	e.Exec(`DELETE FROM vpc WHERE vpc_id = '` + vpcID + `'`)
	e.Commit()
	out, err := e.ec2.DescribeVpcs(context.Background(), &ec2.DescribeVpcsInput{VpcIds: []string{vpcID}})
	if err == nil && len(out.Vpcs) > 0 {
		t.Errorf("VPC %s is still in the cloud after its row was deleted", vpcID)
	}
	if n := e.Count(`SELECT count(*) FROM security_group g LEFT JOIN vpc v ON v.id = g.vpc_id WHERE v.id IS NULL OR v.vpc_id = $1`, vpcID); n != 0 {
		t.Errorf("%d security group rows of the deleted VPC came back", n)
	}
	groups, err := e.ec2.DescribeSecurityGroups(context.Background(), &ec2.DescribeSecurityGroupsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range groups.SecurityGroups {
		if aws.ToString(g.VpcId) == vpcID {
			t.Errorf("group %s of the deleted VPC is still in the cloud", aws.ToString(g.GroupId))
		}
	}
	// Later commits are clean.
	e.Emu.Reset()
	e.Refresh() // reads everything, acts on nothing
	if m := e.Mutations(); len(m) != 0 {
		t.Errorf("a commit after the delete made %v", m)
	}
}
