package aws_vpc_test

import (
	"context"
	"maps"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// TestReservedTagsImported: AWS's own tags (aws:..., as CloudFormation puts
// on what a stack creates) are not in the tags column, whose constraint
// refuses such keys: a VPC and a subnet carrying them are imported with
// their other tags, and a tag change from the database leaves AWS's tags
// alone (no one may delete them: DeleteTags is refused).
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions
func TestReservedTagsImported(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	vpc, err := e.ec2.CreateVpc(ctx, &ec2.CreateVpcInput{CidrBlock: aws.String("10.8.0.0/16"),
		TagSpecifications: []types.TagSpecification{{ResourceType: types.ResourceTypeVpc,
			Tags: []types.Tag{{Key: aws.String("made"), Value: aws.String("by-a-stack")}}}}})
	if err != nil {
		t.Fatal(err)
	}
	vpcID := aws.ToString(vpc.Vpc.VpcId)
	sub, err := e.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.8.1.0/24"),
		AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	subID := aws.ToString(sub.Subnet.SubnetId)
	for _, id := range []string{vpcID, subID} {
		for k, v := range map[string]string{"aws:cloudformation:stack-name": "web", "AWS:CloudFormation:logical-id": "Net"} {
			if err := e.Emu.TagAsAWS("us-east-1", id, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.Refresh()
	if got := e.rowTags("vpc", "vpc_id", vpcID); !maps.Equal(got, map[string]string{"made": "by-a-stack"}) {
		t.Errorf("imported VPC's tags: %v, want made=by-a-stack (AWS's own aws: tags left out)", got)
	}
	if got := e.rowTags("subnet", "subnet_id", subID); !maps.Equal(got, map[string]string{}) {
		t.Errorf("imported subnet's tags: %v, want none (AWS's own aws: tags left out)", got)
	}

	e.Exec(`UPDATE vpc SET tags = '{"team": "web"}' WHERE vpc_id = '`+vpcID+`'`,
		`UPDATE subnet SET tags = '{"tier": "app"}' WHERE subnet_id = '`+subID+`'`)
	e.Commit()
	if n := e.Count(`SELECT count(*) FROM iasql_status`); n != 0 {
		t.Errorf("%d records not in sync after a tag change beside AWS's tags: %s", n,
			e.String(`SELECT string_agg(concat_ws(' ', table_name, record_id, state, last_error), '; ') FROM iasql_status`))
	}
	want := map[string]map[string]string{
		vpcID: {"team": "web", "aws:cloudformation:stack-name": "web", "AWS:CloudFormation:logical-id": "Net"},
		subID: {"tier": "app", "aws:cloudformation:stack-name": "web", "AWS:CloudFormation:logical-id": "Net"},
	}
	got := map[string]map[string]string{}
	if v, ok := e.cloudVpc(vpcID); ok {
		got[vpcID] = v.tags
	}
	if s, ok := e.cloudSubnet(subID); ok {
		got[subID] = s.tags
	}
	for id, w := range want {
		if !maps.Equal(got[id], w) {
			t.Errorf("%s's tags in the cloud: %v, want %v", id, got[id], w)
		}
	}
}

// TestSubnetImportBesideOverlappingRow: a subnet made in the cloud is
// imported even when a user's row, not yet created, overlaps it in the same
// VPC: the database checks users' writes (TestSQLSubnetBlocks), never what
// the cycle writes from the cloud. The user's row is the one that fails, as
// AWS answers (InvalidSubnet.Conflict).
func TestSubnetImportBesideOverlappingRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := context.Background()
	e.Exec(`INSERT INTO vpc (cidr_block) VALUES ('10.0.0.0/16')`)
	e.Commit()
	vpcID := e.String(`SELECT vpc_id FROM vpc WHERE cidr_block = '10.0.0.0/16'`)
	e.Exec(`CALL iasql_begin()`) // no automatic cycle imports the subnet before the user's row is in
	sub, err := e.ec2.CreateSubnet(ctx, &ec2.CreateSubnetInput{VpcId: aws.String(vpcID), CidrBlock: aws.String("10.0.1.0/24"),
		AvailabilityZone: aws.String("us-east-1a")})
	if err != nil {
		t.Fatal(err)
	}
	subID := aws.ToString(sub.Subnet.SubnetId)
	e.Exec(`INSERT INTO subnet (vpc_id, cidr_block, availability_zone) SELECT id, '10.0.1.0/25', 'us-east-1b' FROM vpc WHERE vpc_id = '` + vpcID + `'`)
	_, err = e.DB.Exec(ctx, `CALL iasql_commit()`)
	if err == nil || !strings.Contains(err.Error(), "InvalidSubnet.Conflict") {
		t.Errorf("commit of a subnet overlapping one in the cloud: %v, want InvalidSubnet.Conflict", err)
	}
	if n := e.Count(`SELECT count(*) FROM subnet WHERE subnet_id = $1 AND cidr_block = '10.0.1.0/24'`, subID); n != 1 {
		t.Errorf("the subnet made in the cloud was not imported beside the user's overlapping row (%d rows)", n)
	}
}
