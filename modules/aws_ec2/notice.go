package aws_ec2

import (
	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

var _ module.Noticer = (*instanceMapper)(nil)

// Noticed names the instances an EC2 call launched, started, stopped,
// terminated, modified or tagged, by instance id (the table's identity).
// CloudTrail logs EC2's lists as sets, as its XML names them
// (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/monitor-with-cloudtrail.html,
// whose examples are RunInstances, StopInstances, CreateTags...):
//   - RunInstances: responseElements.instancesSet.items[].instanceId
//     (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html);
//   - StartInstances, StopInstances, TerminateInstances:
//     requestParameters.instancesSet.items[].instanceId (InstanceId.N);
//   - ModifyInstanceAttribute (instance type, user data, security
//     groups): requestParameters.instanceId
//     (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ModifyInstanceAttribute.html);
//   - CreateTags, DeleteTags: requestParameters.resourcesSet.items[].resourceId
//     that are instances' (i-).
func (m *instanceMapper) Noticed(ev module.Event) []string {
	switch {
	case trail.Is(ev, trail.EC2, "RunInstances"):
		return trail.Strings(ev.Response, "instancesSet", "items", "instanceId")
	case trail.Is(ev, trail.EC2, "StartInstances", "StopInstances", "TerminateInstances"):
		return trail.Unique(append(trail.Strings(ev.Request, "instancesSet", "items", "instanceId"),
			trail.Strings(ev.Response, "instancesSet", "items", "instanceId")...))
	case trail.Is(ev, trail.EC2, "ModifyInstanceAttribute"):
		return trail.Strings(ev.Request, "instanceId")
	}
	return trail.EC2Tagged(ev, "i-")
}
