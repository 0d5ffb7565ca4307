package aws_elb

import (
	"testing"

	"github.com/iasql/iasql/modules/internal/trail/trailtest"
	"github.com/iasql/iasql/modules/module"
)

// CloudTrail records of ELBv2 calls, shaped as AWS logs them
// (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-cloudtrail-logs.html).
const (
	lbARN       = "arn:aws:elasticloadbalancing:us-west-2:123456789012:loadbalancer/app/my-load-balancer/ffcddace1759e1d0"
	tgARN       = "arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/my-targets/73e2d6bc24d8a067"
	listenerARN = "arn:aws:elasticloadbalancing:us-west-2:123456789012:listener/app/my-load-balancer/ffcddace1759e1d0/f0e4b4d1a6d6f9a2"

	createLB = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"CreateLoadBalancer","awsRegion":"us-west-2",
		"requestParameters":{"subnets":["subnet-8360a9e7","subnet-b7d581c0"],"securityGroups":["sg-5943793c"],"name":"my-load-balancer","scheme":"internet-facing"},
		"responseElements":{"loadBalancers":[{"type":"application","loadBalancerName":"my-load-balancer","vpcId":"vpc-3ac0fb5f","securityGroups":["sg-5943793c"],
			"state":{"code":"provisioning"},"availabilityZones":[{"subnetId":"subnet-8360a9e7","zoneName":"us-west-2a"},{"subnetId":"subnet-b7d581c0","zoneName":"us-west-2b"}],
			"dNSName":"my-load-balancer-1836718677.us-west-2.elb.amazonaws.com","canonicalHostedZoneId":"Z2P70J7HTTTPLU","createdTime":"Apr 11, 2016 5:23:50 PM",
			"loadBalancerArn":"` + lbARN + `","scheme":"internet-facing"}]}}`
	createNLB = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"CreateLoadBalancer","awsRegion":"us-west-2",
		"requestParameters":{"subnets":["subnet-8360a9e7"],"name":"my-network-lb","type":"network"},
		"responseElements":{"loadBalancers":[{"type":"network","loadBalancerName":"my-network-lb",
			"loadBalancerArn":"arn:aws:elasticloadbalancing:us-west-2:123456789012:loadbalancer/net/my-network-lb/a1b2c3d4e5f60718"}]}}`
	deleteLB = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"DeleteLoadBalancer","awsRegion":"us-west-2",
		"requestParameters":{"loadBalancerArn":"` + lbARN + `"},"responseElements":null}`
	createTG = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"CreateTargetGroup","awsRegion":"us-west-2",
		"requestParameters":{"name":"my-targets","protocol":"HTTP","port":80,"vpcId":"vpc-3ac0fb5f"},
		"responseElements":{"targetGroups":[{"targetGroupName":"my-targets","targetGroupArn":"` + tgARN + `","protocol":"HTTP","port":80,"vpcId":"vpc-3ac0fb5f",
			"healthCheckProtocol":"HTTP","healthCheckPort":"traffic-port","healthCheckIntervalSeconds":30,"healthCheckTimeoutSeconds":5,
			"healthyThresholdCount":5,"unhealthyThresholdCount":2,"healthCheckPath":"/","matcher":{"httpCode":"200"},"loadBalancerArns":[]}]}}`
	createIPTG = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"CreateTargetGroup","awsRegion":"us-west-2",
		"requestParameters":{"name":"my-ip-targets","protocol":"HTTP","port":80,"vpcId":"vpc-3ac0fb5f","targetType":"ip"},
		"responseElements":{"targetGroups":[{"targetGroupName":"my-ip-targets","targetGroupArn":"arn:aws:elasticloadbalancing:us-west-2:123456789012:targetgroup/my-ip-targets/0123456789abcdef"}]}}`
	modifyTG = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"ModifyTargetGroup","awsRegion":"us-west-2",
		"requestParameters":{"targetGroupArn":"` + tgARN + `","healthCheckPath":"/health"},"responseElements":{"targetGroups":[{"targetGroupArn":"` + tgARN + `"}]}}`
	register = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"RegisterTargets","awsRegion":"us-west-2",
		"requestParameters":{"targetGroupArn":"` + tgARN + `","targets":[{"id":"i-0123456789abcdef0","port":80},{"id":"i-0fedcba9876543210"}]},"responseElements":null}`
	deregister = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"DeregisterTargets","awsRegion":"us-west-2",
		"requestParameters":{"targetGroupArn":"` + tgARN + `","targets":[{"id":"i-0123456789abcdef0","port":"8080"}]},"responseElements":null}`
	createListener = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"CreateListener","awsRegion":"us-west-2",
		"requestParameters":{"loadBalancerArn":"` + lbARN + `","protocol":"HTTP","port":80,"defaultActions":[{"type":"forward","targetGroupArn":"` + tgARN + `"}]},
		"responseElements":{"listeners":[{"listenerArn":"` + listenerARN + `","loadBalancerArn":"` + lbARN + `","port":80,"protocol":"HTTP",
			"defaultActions":[{"type":"forward","targetGroupArn":"` + tgARN + `"}]}]}}`
	deleteListener = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"DeleteListener","awsRegion":"us-west-2",
		"requestParameters":{"listenerArn":"` + listenerARN + `"},"responseElements":null}`
	addTags = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"AddTags","awsRegion":"us-west-2",
		"requestParameters":{"resourceArns":["` + lbARN + `","` + tgARN + `","` + listenerARN + `"],"tags":[{"key":"team","value":"web"}]},"responseElements":null}`
	classic = `{"eventSource":"elasticloadbalancing.amazonaws.com","eventName":"DeleteLoadBalancer","awsRegion":"us-west-2",
		"requestParameters":{"loadBalancerName":"my-classic-lb"},"responseElements":null}`
)

// TestLoadBalancerNoticed: the application load balancer a record names,
// by name in its region; network load balancers, Classic ones and other
// resources are not named.
func TestLoadBalancerNoticed(t *testing.T) {
	lb := named(loadBalancersTable.Table(), "my-load-balancer", "us-west-2")
	trailtest.Run(t, &lbMapper{}, []trailtest.Case{
		{"CreateLoadBalancer", createLB, []string{lb}},
		{"DeleteLoadBalancer", deleteLB, []string{lb}},
		{"AddTags", addTags, []string{lb}},
		{"a network load balancer", createNLB, nil},
		{"a Classic load balancer", classic, nil},
		{"CreateTargetGroup", createTG, nil},
		{"CreateListener", createListener, nil},
	})
}

// TestTargetGroupNoticed: the instance target group a record names, by
// name in its region; ip target groups and other resources are not named.
func TestTargetGroupNoticed(t *testing.T) {
	tg := named(targetGroupsTable.Table(), "my-targets", "us-west-2")
	trailtest.Run(t, &tgMapper{}, []trailtest.Case{
		{"CreateTargetGroup", createTG, []string{tg}},
		{"ModifyTargetGroup", modifyTG, []string{tg}},
		{"AddTags", addTags, []string{tg}},
		{"an ip target group", createIPTG, nil},
		{"RegisterTargets", register, nil},
		{"CreateLoadBalancer", createLB, nil},
	})
}

// TestTargetNoticed: the targets a record registers or deregisters, by
// group, instance and port; a target whose port the call leaves to the
// group, and other resources, are not named.
func TestTargetNoticed(t *testing.T) {
	tg := named(targetGroupsTable.Table(), "my-targets", "us-west-2")
	target := func(instance string, port int32) string {
		rec, err := targetsTable.Record(Target{TargetGroupID: tg, InstanceID: instance, Port: &port})
		if err != nil {
			t.Fatal(err)
		}
		return module.CloudIDOf(targetsTable.Table(), rec)
	}
	trailtest.Run(t, &targetMapper{}, []trailtest.Case{
		{"RegisterTargets", register, []string{target("i-0123456789abcdef0", 80)}},
		{"DeregisterTargets, the port as a string", deregister, []string{target("i-0123456789abcdef0", 8080)}},
		{"CreateTargetGroup", createTG, nil},
		{"AddTags", addTags, nil},
	})
}

// TestListenerNoticed: the listener a record names, by ARN; other
// resources are not named.
func TestListenerNoticed(t *testing.T) {
	trailtest.Run(t, &listenerMapper{}, []trailtest.Case{
		{"CreateListener", createListener, []string{listenerARN}},
		{"DeleteListener", deleteListener, []string{listenerARN}},
		{"AddTags", addTags, []string{listenerARN}},
		{"CreateLoadBalancer", createLB, nil},
		{"DeleteLoadBalancer", deleteLB, nil},
		{"ModifyTargetGroup", modifyTG, nil},
	})
}
