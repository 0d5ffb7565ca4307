package aws_vpc

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
)

// CloudTrail records of EC2 calls on VPCs and subnets, shaped as AWS logs
// them (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html).
const (
	createVpc = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateVpc","awsRegion":"eu-west-1",
		"requestParameters":{"cidrBlock":"10.0.0.0/16","instanceTenancy":"default","amazonProvidedIpv6CidrBlock":false},
		"responseElements":{"requestId":"c3d4e5f6-7890-abcd-ef12-EXAMPLE33333","vpc":{"vpcId":"vpc-0a1b2c3d4e5f67890","state":"pending",
			"ownerId":"111122223333","cidrBlock":"10.0.0.0/16","cidrBlockAssociationSet":{"items":[{"cidrBlock":"10.0.0.0/16","associationId":"vpc-cidr-assoc-0a1b2c3d4e5f67890"}]},"isDefault":false}}}`
	deleteVpc = `{"eventSource":"ec2.amazonaws.com","eventName":"DeleteVpc","awsRegion":"eu-west-1",
		"requestParameters":{"vpcId":"vpc-0a1b2c3d4e5f67890"},"responseElements":{"requestId":"d4e5f6a7-890a-bcde-f123-EXAMPLE44444","_return":true}}`
	createSubnet = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateSubnet","awsRegion":"eu-west-1",
		"requestParameters":{"vpcId":"vpc-0a1b2c3d4e5f67890","cidrBlock":"10.0.1.0/24","availabilityZone":"eu-west-1a"},
		"responseElements":{"requestId":"e5f6a7b8-90ab-cdef-1234-EXAMPLE55555","subnet":{"subnetId":"subnet-0123456789abcdef0","state":"available",
			"vpcId":"vpc-0a1b2c3d4e5f67890","cidrBlock":"10.0.1.0/24","availabilityZone":"eu-west-1a","defaultForAz":false}}}`
	deleteSubnet = `{"eventSource":"ec2.amazonaws.com","eventName":"DeleteSubnet","awsRegion":"eu-west-1",
		"requestParameters":{"subnetId":"subnet-0123456789abcdef0"},"responseElements":{"_return":true}}`
	tagBoth = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateTags","awsRegion":"eu-west-1",
		"requestParameters":{"resourcesSet":{"items":[{"resourceId":"vpc-0a1b2c3d4e5f67890"},{"resourceId":"subnet-0123456789abcdef0"}]},
			"tagSet":{"items":[{"key":"team","value":"web"}]}},"responseElements":{"_return":true}}`
	untagInstance = `{"eventSource":"ec2.amazonaws.com","eventName":"DeleteTags","awsRegion":"eu-west-1",
		"requestParameters":{"resourcesSet":{"items":[{"resourceId":"i-0a1b2c3d4e5f67890"}]},"tagSet":{"items":[{"key":"team"}]}}}`
	createSG = `{"eventSource":"ec2.amazonaws.com","eventName":"CreateSecurityGroup","awsRegion":"eu-west-1",
		"requestParameters":{"groupName":"web","groupDescription":"web servers","vpcId":"vpc-0a1b2c3d4e5f67890"},
		"responseElements":{"_return":true,"groupId":"sg-0123456789abcdef0"}}`
)

// TestVPCNoticed: the VPCs a record names; records about subnets,
// instances and groups name none.
func TestVPCNoticed(t *testing.T) {
	trailtest.Run(t, &vpcMapper{}, []trailtest.Case{
		{"CreateVpc", createVpc, []string{"vpc-0a1b2c3d4e5f67890"}},
		{"DeleteVpc", deleteVpc, []string{"vpc-0a1b2c3d4e5f67890"}},
		{"CreateTags", tagBoth, []string{"vpc-0a1b2c3d4e5f67890"}},
		{"CreateSubnet in it", createSubnet, nil},
		{"DeleteSubnet", deleteSubnet, nil},
		{"DeleteTags of an instance", untagInstance, nil},
		{"CreateSecurityGroup in it", createSG, nil},
	})
}

// TestSubnetNoticed: the subnets a record names; records about VPCs,
// instances and groups name none.
func TestSubnetNoticed(t *testing.T) {
	trailtest.Run(t, &subnetMapper{}, []trailtest.Case{
		{"CreateSubnet", createSubnet, []string{"subnet-0123456789abcdef0"}},
		{"DeleteSubnet", deleteSubnet, []string{"subnet-0123456789abcdef0"}},
		{"CreateTags", tagBoth, []string{"subnet-0123456789abcdef0"}},
		{"CreateVpc", createVpc, nil},
		{"DeleteVpc", deleteVpc, nil},
		{"DeleteTags of an instance", untagInstance, nil},
		{"CreateSecurityGroup", createSG, nil},
	})
}
