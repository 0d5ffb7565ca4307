package aws_vpc

import (
	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

var (
	_ module.Noticer = (*vpcMapper)(nil)
	_ module.Noticer = (*subnetMapper)(nil)
)

// Noticed names the VPCs an EC2 call created, deleted or tagged, by VPC
// id (the table's identity), as CloudTrail logs EC2's calls
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html):
// CreateVpc's responseElements.vpc.vpcId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html),
// DeleteVpc's requestParameters.vpcId, CreateDefaultVpc's
// responseElements.vpc.vpcId, and the vpc- ids of CreateTags and
// DeleteTags.
func (m *vpcMapper) Noticed(ev module.Event) []string {
	switch {
	case trail.Is(ev, trail.EC2, "CreateVpc", "CreateDefaultVpc"):
		return trail.Strings(ev.Response, "vpc", "vpcId")
	case trail.Is(ev, trail.EC2, "DeleteVpc"):
		return trail.Strings(ev.Request, "vpcId")
	}
	return trail.EC2Tagged(ev, "vpc-")
}

// Noticed names the subnets an EC2 call created, deleted or tagged, by
// subnet id (the table's identity): CreateSubnet's and
// CreateDefaultSubnet's responseElements.subnet.subnetId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html),
// DeleteSubnet's requestParameters.subnetId, and the subnet- ids of
// CreateTags and DeleteTags. (ModifySubnetAttribute changes nothing the
// table holds.)
func (m *subnetMapper) Noticed(ev module.Event) []string {
	switch {
	case trail.Is(ev, trail.EC2, "CreateSubnet", "CreateDefaultSubnet"):
		return trail.Strings(ev.Response, "subnet", "subnetId")
	case trail.Is(ev, trail.EC2, "DeleteSubnet"):
		return trail.Strings(ev.Request, "subnetId")
	}
	return trail.EC2Tagged(ev, "subnet-")
}
