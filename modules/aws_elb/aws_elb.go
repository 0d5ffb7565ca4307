// Package aws_elb is the aws_elb module: Elastic Load Balancing v2's
// application load balancers (table load_balancer), their target groups
// (target_group) and registered instances (target), and their listeners
// (listener), in every enabled region.
//
// Load balancers and target groups are known by their name in their region
// (AWS: "unique per region per account"), so a retried create finds the
// name. A listener's identity is its ARN, which AWS generates: a row
// without one is a listener to create. A target is known by what it is:
// its group, its instance and its port. A new load balancer is
// provisioning for a while: its create answers a module.Pending that Poll
// carries on until it is active.
//
// AWS's reference: https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/Welcome.html
package aws_elb

import (
	"context"
	"embed"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_elb.sql
var installSQL string

// checksSQL is 0.2.0's step (tag restrictions), also run at install: one
// source for both.
//
//go:embed upgrades/0.1.0--0.2.0.sql
var checksSQL string

//go:embed aws_elb_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// LoadBalancer is a row of the load_balancer table: an application load
// balancer (API Reference, LoadBalancer:
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_LoadBalancer.html).
// Its fields declare the table's columns (module.Typed).
type LoadBalancer struct {
	Name           string         `iasql:"name,id,createonly,notnull" comment:"Name, unique per region: 1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen nor beginning with internal-. Fixed at creation."`
	Scheme         string         `iasql:"scheme,createonly,notnull,default='internet-facing'" comment:"internet-facing (public addresses) or internal. Fixed at creation: changing it replaces the load balancer."`
	Subnets        []string       `iasql:"subnets,notnull,ref=subnet" comment:"Subnets (subnet.id) of one VPC, at least two in two availability zones, one per zone, in any order. Changed in place (SetSubnets)."`
	SecurityGroups []string       `iasql:"security_groups,notnull,ref=security_group,default='{}'" comment:"Security groups (security_group.id) of the subnets' VPC, in any order; empty: the VPC's default group, AWS's choice at creation, whose row the engine writes here once the load balancer exists. Changed in place (SetSecurityGroups)."`
	Region         string         `iasql:"region,id,createonly,notnull,default=public.default_aws_region()" comment:"Region of the load balancer: its subnets' (default: default_aws_region()). Fixed at creation."`
	Tags           map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value."`
	ARN            string         `iasql:"load_balancer_arn,feedback" comment:"The load balancer's ARN (from the cloud)."`
	DNSName        string         `iasql:"dns_name,feedback" comment:"The load balancer's DNS name (from the cloud)."`
	State          string         `iasql:"state,feedback" comment:"provisioning, active, active_impaired or failed (from the cloud)."`
}

// loadBalancersTable is the load_balancer table, declared by LoadBalancer.
var loadBalancersTable = module.Declare[LoadBalancer](module.Table{
	Name: "load_balancer",
	Comment: "Application load balancers of the enabled regions. Insert a row (name, subnets, and usually security_groups) to create one; it is provisioning for a while, then active. " +
		"Changing name, scheme or region replaces the load balancer (and AWS deletes its listeners with the old one); subnets, security groups and tags change in place. Delete the row to delete it.",
	Region: "region",
})

// LoadBalancerTable is the load_balancer table's declaration.
func LoadBalancerTable() module.Table { return loadBalancersTable.Table() }

// TargetGroup is a row of the target_group table: a target group of
// instances (API Reference, TargetGroup:
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetGroup.html).
// Its fields declare the table's columns (module.Typed).
type TargetGroup struct {
	Name                       string         `iasql:"name,id,createonly,notnull" comment:"Name, unique per region: 1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen. Fixed at creation."`
	Protocol                   string         `iasql:"protocol,createonly,notnull,default='HTTP'" comment:"Protocol to the targets: HTTP or HTTPS. Fixed at creation."`
	Port                       int32          `iasql:"port,createonly,notnull" comment:"Port the targets receive traffic on (1 to 65535), unless a target says otherwise. Fixed at creation."`
	VpcID                      string         `iasql:"vpc_id,createonly,notnull,ref=vpc" comment:"The VPC (vpc.id) of the group's instances. Fixed at creation."`
	HealthCheckProtocol        string         `iasql:"health_check_protocol,notnull,default='HTTP'" comment:"Protocol of the health checks: HTTP or HTTPS."`
	HealthCheckPort            string         `iasql:"health_check_port,notnull,default='traffic-port'" comment:"Port of the health checks: traffic-port (each target's own) or a port number."`
	HealthCheckPath            string         `iasql:"health_check_path,notnull,default='/'" comment:"Path the health checks request, beginning with /."`
	HealthCheckIntervalSeconds int32          `iasql:"health_check_interval_seconds,notnull,default=30" comment:"Seconds between health checks of a target, 5 to 300."`
	HealthCheckTimeoutSeconds  int32          `iasql:"health_check_timeout_seconds,notnull,default=5" comment:"Seconds without an answer that fail a health check, 2 to 120, less than the interval."`
	HealthyThresholdCount      int32          `iasql:"healthy_threshold_count,notnull,default=5" comment:"Consecutive successful checks that make an unhealthy target healthy, 2 to 10."`
	UnhealthyThresholdCount    int32          `iasql:"unhealthy_threshold_count,notnull,default=2" comment:"Consecutive failed checks that make a target unhealthy, 2 to 10."`
	Matcher                    string         `iasql:"matcher,notnull,default='200'" comment:"HTTP codes of a successful check: a code, a list (200,202) or a range (200-299)."`
	Region                     string         `iasql:"region,id,createonly,notnull,default=public.default_aws_region()" comment:"Region of the target group: its VPC's (default: default_aws_region()). Fixed at creation."`
	Tags                       map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value."`
	ARN                        string         `iasql:"target_group_arn,feedback" comment:"The target group's ARN (from the cloud)."`
}

// targetGroupsTable is the target_group table, declared by TargetGroup.
var targetGroupsTable = module.Declare[TargetGroup](module.Table{
	Name: "target_group",
	Comment: "Target groups of instances for application load balancers (protocol HTTP or HTTPS), in the enabled regions. Insert a row (name, port, vpc_id) to create one. " +
		"Changing name, protocol, port, vpc_id or region replaces the group (its listeners and targets move to the new one); health check settings and tags change in place.",
	Region: "region",
})

// TargetGroupTable is the target_group table's declaration.
func TargetGroupTable() module.Table { return targetGroupsTable.Table() }

// Target is a row of the target table: an instance registered with a
// target group (API Reference, TargetDescription and TargetHealth:
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetDescription.html
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_TargetHealth.html).
// Its fields declare the table's columns (module.Typed); Region, no
// column, is the region key its cloud records say (Typed.WithRegionKey).
type Target struct {
	TargetGroupID string `iasql:"target_group_id,id,notnull,ref=target_group" comment:"The target group (target_group.id)."`
	InstanceID    string `iasql:"instance_id,id,notnull,ref=instance" comment:"The instance (instance.id), in the target group's VPC and region."`
	Port          *int32 `iasql:"port,id" comment:"Port the instance receives traffic on; left NULL, the target group's port is filled in."`
	HealthState   string `iasql:"health_state,feedback" comment:"initial, healthy, unhealthy, unused, draining or unavailable, as AWS last reported it (from the cloud)."`
	Region        string `iasql:"-"`
}

// targetsTable is the target table, declared by Target.
var targetsTable = module.Declare[Target](module.Table{
	Name: "target",
	Comment: "Instances registered with target groups. Insert a row (target_group_id, instance_id) to register an instance; delete it to deregister the instance " +
		"(it drains first while a load balancer uses the group). A target is known by its group, instance and port: changing any of them deregisters it and registers the new one.",
	// Rows are in their group's region; cloud records say it.
	Region: "region",
}).WithRegionKey("Region")

// TargetTable is the target table's declaration.
func TargetTable() module.Table { return targetsTable.Table() }

// Listener is a row of the listener table: a listener whose default
// action forwards to one target group (API Reference, Listener:
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Listener.html).
// Its fields declare the table's columns (module.Typed); Token is the
// client token a create tags it with (Find), Region, no column, the region
// key its cloud records say (Typed.WithRegionKey).
type Listener struct {
	LoadBalancerID string  `iasql:"load_balancer_id,createonly,notnull,ref=load_balancer" comment:"The load balancer (load_balancer.id). Fixed at creation: changing it replaces the listener."`
	Protocol       string  `iasql:"protocol,notnull,default='HTTP'" comment:"HTTP or HTTPS (which needs certificate_arn)."`
	Port           int32   `iasql:"port,notnull" comment:"Port the load balancer listens on, 1 to 65535, one listener per port."`
	CertificateARN *string `iasql:"certificate_arn" comment:"ARN of the server certificate of an HTTPS listener; NULL for HTTP."`
	TargetGroupID  string  `iasql:"target_group_id,notnull,ref=target_group" comment:"The target group (target_group.id) the default action forwards to, in the load balancer's VPC."`
	ARN            string  `iasql:"listener_arn,feedback,id" comment:"The listener's ARN, given by AWS at creation (from the cloud)."`
	Token          string  `iasql:",token"`
	Region         string  `iasql:"-"`
}

// listenersTable is the listener table, declared by Listener.
var listenersTable = module.Declare[Listener](module.Table{
	Name: "listener",
	Comment: "Listeners of the load balancers, each forwarding to a target group by default. Insert a row (load_balancer_id, port, target_group_id) to create one; listener_arn is filled in once AWS has created it. " +
		"Protocol, port, certificate and target group change in place; moving a listener to another load balancer replaces it.",
	// Rows are in their load balancer's region; cloud records say it.
	Region: "region",
}).WithRegionKey("Region")

// ListenerTable is the listener table's declaration.
func ListenerTable() module.Table { return listenersTable.Table() }

// Module returns the aws_elb module.
func Module() module.Module { return ModuleWith(Options{}) }

// ModuleWith returns the aws_elb module with its mappers tuned by o.
func ModuleWith(o Options) module.Module {
	return module.Module{
		Name:      "aws_elb",
		Version:   "0.3.0",
		DependsOn: []string{"aws_account", "aws_vpc", "aws_security_group", "aws_ec2"},
		SQL:       installSQL + "\n" + checksSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{LoadBalancerTable(), TargetGroupTable(), TargetTable(), ListenerTable()},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			return Mappers(cfg, o), nil
		},
	}
}
