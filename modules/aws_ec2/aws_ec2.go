// Package aws_ec2 is the aws_ec2 module: EC2 instances (table instance) in
// the subnets and security groups of aws_vpc and aws_security_group. AWS
// generates an instance's identity (i-…): a row without one is an instance
// to launch, and the engine writes the identity back once it exists.
// Launching, stopping, starting and terminating take a while: the mapper
// answers them with a module.Pending whose handle says what is left to do,
// and its Poll carries on.
package aws_ec2

import (
	"context"
	"embed"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/aws_security_group"
	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_ec2.sql
var installSQL string

// checksSQL is 0.2.0's step (tag restrictions, key name), also run at install: one
// source for both.
//
//go:embed upgrades/0.1.0--0.2.0.sql
var checksSQL string

//go:embed aws_ec2_uninstall.sql
var uninstallSQL string

//go:embed upgrades
var upgrades embed.FS

// Instance is a row of the instance table: an EC2 instance (API
// Reference, Instance:
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Instance.html).
// Its fields declare the table's columns (module.Typed); a column AWS may
// leave empty is a pointer (NULL, not "").
type Instance struct {
	AMI            string         `iasql:"ami,createonly,notnull" comment:"Image (AMI) id the instance is launched from, ami- and 8 or 17 hex digits. Fixed at launch: changing it replaces the instance."`
	Type           string         `iasql:"instance_type,notnull" comment:"Instance type, e.g. t3.micro. Changing it stops the instance, modifies it and starts it again."`
	Subnet         *string        `iasql:"subnet_id,createonly,ref=subnet,type=bigint" comment:"The subnet (subnet.id) the instance is launched in; NULL: a default subnet of AWS's choice, whose row the engine writes here once the instance is launched. Fixed at launch: changing it replaces the instance."`
	SecurityGroups []string       `iasql:"security_group_ids,notnull,ref=security_group,default='{}'" comment:"Security groups (security_group.id) of the instance, in any order; empty: the VPC's default group, AWS's choice at launch, whose row the engine writes here once the instance is launched. Changed in place."`
	KeyName        *string        `iasql:"key_name,createonly" comment:"Name of the key pair for SSH; NULL for none. Fixed at launch: changing it replaces the instance."`
	UserData       *string        `iasql:"user_data" comment:"User data (the text, not base64), at most 16 KB. Changing it stops the instance, modifies it and starts it again; by default cloud-init runs it only at the first boot."`
	Tags           map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value (AWS's own aws:* tags are left out)."`
	State          string         `iasql:"state,notnull,default='running'" comment:"Desired state: running or stopped. A pending instance counts as running and a stopping one as stopped."`
	Region         string         `iasql:"region,createonly,notnull,default=public.default_aws_region()" comment:"Region of the instance: its subnet's (default: default_aws_region()). Fixed at launch: changing it replaces the instance."`
	ID             string         `iasql:"instance_id,id,feedback" comment:"The instance's id (i-…), given by AWS at launch (from the cloud; changes when the instance is replaced)."`
	PrivateIP      *string        `iasql:"private_ip_address,feedback,type=inet" comment:"Primary private IPv4 address (from the cloud)."`
	PublicIP       *string        `iasql:"public_ip_address,feedback,type=inet" comment:"Public IPv4 address, if any (from the cloud; changes when the instance is stopped and started)."`
	LaunchTime     time.Time      `iasql:"launch_time,feedback" comment:"When the instance was last launched or started (from the cloud)."`
	ObservedState  string         `iasql:"observed_state,feedback" comment:"The state AWS reports: pending, running, stopping or stopped (from the cloud)."`
	Token          string         `iasql:",token"`
}

// instances is the instance table, declared by Instance.
var instances = module.Declare[Instance](module.Table{
	Name: "instance",
	Comment: "EC2 instances of the enabled regions (terminated ones are left out). Insert a row (ami, instance_type, and usually subnet_id and security_group_ids) to launch an instance; " +
		"instance_id is filled in once AWS has launched it. Changing ami, subnet_id, key_name or region replaces the instance; changing instance_type or user_data stops it, " +
		"modifies it and starts it again (when state is running); security groups and tags change in place; state stops or starts it. Delete the row to terminate the instance.",
	Region: "region",
	// Of two instances one launch's token made, the first launched is kept.
	Created: "launch_time",
})

// InstanceTable is the instance table's declaration.
func InstanceTable() module.Table { return instances.Table() }

// Module returns the aws_ec2 module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_ec2",
		Version:   "0.3.0",
		DependsOn: []string{"aws_account", "aws_vpc", "aws_security_group"},
		SQL:       installSQL + "\n" + checksSQL,
		Uninstall: uninstallSQL,
		Upgrades:  module.UpgradesFrom(upgrades, "upgrades"),
		Tables:    []module.Table{InstanceTable()},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"instance": NewMapper(cfg, Options{})}, nil
		},
	}
}

// Options tune an instance mapper.
type Options struct {
	// PollAfter is the RetryAfter of the mapper's Pending answers; 0 lets
	// the engine choose (soon at first, then less often: instances usually
	// leave pending or stopping within tens of seconds).
	PollAfter time.Duration
	// UserDataTTL is how long a read may reuse an instance's user data
	// (one DescribeInstanceAttribute per instance); 0: IASQL_EC2_DETAIL_TTL,
	// else 5 minutes. Negative turns reuse off.
	UserDataTTL time.Duration
}

// NewMapper returns the instance mapper for cfg, as the engine calls it
// (module.PartsOf says what it answers).
func NewMapper(cfg aws.Config, o Options) module.Reader {
	ttl := o.UserDataTTL
	if ttl == 0 {
		ttl = detailTTL()
	} else if ttl < 0 {
		ttl = 0
	}
	return instances.Mapper(&instanceMapper{c: ec2x.NewClients(cfg), groups: aws_security_group.GroupTable(), pollAfter: o.PollAfter, userData: detail.NewCache[string](ttl)})
}

// detailTTL is IASQL_EC2_DETAIL_TTL (a duration; 0 turns reuse off),
// default 5 minutes, as for the other modules' details.
func detailTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IASQL_EC2_DETAIL_TTL")); err == nil && d >= 0 {
		return d
	}
	return 5 * time.Minute
}
