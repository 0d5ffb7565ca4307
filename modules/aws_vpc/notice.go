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
// CreateVpc's and CreateDefaultVpc's responseElements.vpc.vpcId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateVpc.html),
// DeleteVpc's requestParameters.vpcId, and the vpc- ids of CreateTags and
// DeleteTags.
func (m *vpcMapper) Noticed(ev module.Event) []string { return noticed(ev, "Vpc", "vpc") }

// Noticed names the subnets an EC2 call created, deleted or tagged, by
// subnet id (the table's identity): CreateSubnet's and
// CreateDefaultSubnet's responseElements.subnet.subnetId
// (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html),
// DeleteSubnet's requestParameters.subnetId, and the subnet- ids of
// CreateTags and DeleteTags. (ModifySubnetAttribute changes nothing the
// table holds.)
func (m *subnetMapper) Noticed(ev module.Event) []string { return noticed(ev, "Subnet", "subnet") }

// noticed names the resources of a kind (Vpc, Subnet) whose member is
// named member (vpc, subnet; its id memberId, beginning with member-)
// that Create<kind>, CreateDefault<kind>, Delete<kind>, CreateTags or
// DeleteTags named.
func noticed(ev module.Event, kind, member string) []string {
	switch {
	case trail.Is(ev, trail.EC2, "Create"+kind, "CreateDefault"+kind):
		return trail.Strings(ev.Response, member, member+"Id")
	case trail.Is(ev, trail.EC2, "Delete"+kind):
		return trail.Strings(ev.Request, member+"Id")
	}
	return trail.EC2Tagged(ev, member+"-")
}
