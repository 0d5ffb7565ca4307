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

// InstanceTable is the instance table's declaration.
func InstanceTable() module.Table {
	return module.Table{
		Name: "instance",
		Comment: "EC2 instances of the enabled regions (terminated ones are left out). Insert a row (ami, instance_type, and usually subnet_id and security_group_ids) to launch an instance; " +
			"instance_id is filled in once AWS has launched it. Changing ami, subnet_id, key_name or region replaces the instance; changing instance_type or user_data stops it, " +
			"modifies it and starts it again (when state is running); security groups and tags change in place; state stops or starts it. Delete the row to terminate the instance.",
		Columns: []module.Column{
			{Name: "ami", Type: "text", NotNull: true, CreateOnly: true,
				Comment: "Image (AMI) id the instance is launched from, ami- and 8 or 17 hex digits. Fixed at launch: changing it replaces the instance."},
			{Name: "instance_type", Type: "text", NotNull: true,
				Comment: "Instance type, e.g. t3.micro. Changing it stops the instance, modifies it and starts it again."},
			{Name: "subnet_id", Type: "bigint", CreateOnly: true, Ref: "subnet",
				Comment: "The subnet (subnet.id) the instance is launched in; NULL: a default subnet of AWS's choice, whose row the engine writes here once the instance is launched. Fixed at launch: changing it replaces the instance."},
			{Name: "security_group_ids", Type: "bigint[]", NotNull: true, Default: "'{}'", Ref: "security_group",
				Comment: "Security groups (security_group.id) of the instance, in any order; empty: the VPC's default group, AWS's choice at launch, whose row the engine writes here once the instance is launched. Changed in place."},
			{Name: "key_name", Type: "text", CreateOnly: true,
				Comment: "Name of the key pair for SSH; NULL for none. Fixed at launch: changing it replaces the instance."},
			{Name: "user_data", Type: "text",
				Comment: "User data (the text, not base64), at most 16 KB. Changing it stops the instance, modifies it and starts it again; by default cloud-init runs it only at the first boot."},
			{Name: "tags", Type: "jsonb", NotNull: true, Default: "'{}'", Comment: "Tags as a JSON object of key to value (AWS's own aws:* tags are left out)."},
			{Name: "state", Type: "text", NotNull: true, Default: "'running'",
				Comment: "Desired state: running or stopped. A pending instance counts as running and a stopping one as stopped."},
			{Name: "region", Type: "text", NotNull: true, Default: "public.default_aws_region()", CreateOnly: true,
				Comment: "Region of the instance: its subnet's (default: default_aws_region()). Fixed at launch: changing it replaces the instance."},
			{Name: "instance_id", Type: "text", Kind: module.Feedback, CloudID: true,
				Comment: "The instance's id (i-…), given by AWS at launch (from the cloud; changes when the instance is replaced)."},
			{Name: "private_ip_address", Type: "inet", Kind: module.Feedback, Comment: "Primary private IPv4 address (from the cloud)."},
			{Name: "public_ip_address", Type: "inet", Kind: module.Feedback,
				Comment: "Public IPv4 address, if any (from the cloud; changes when the instance is stopped and started)."},
			{Name: "launch_time", Type: "timestamp with time zone", Kind: module.Feedback,
				Comment: "When the instance was last launched or started (from the cloud)."},
			{Name: "observed_state", Type: "text", Kind: module.Feedback,
				Comment: "The state AWS reports: pending, running, stopping or stopped (from the cloud)."},
		},
		Region: "region",
		// Of two instances one launch's token made, the first launched is kept.
		Created: "launch_time",
	}.Declare()
}

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

// NewMapper returns the instance mapper for cfg.
func NewMapper(cfg aws.Config, o Options) module.Mapper {
	ttl := o.UserDataTTL
	if ttl == 0 {
		ttl = detailTTL()
	} else if ttl < 0 {
		ttl = 0
	}
	return &instanceMapper{c: ec2x.NewClients(cfg), t: InstanceTable(), groups: aws_security_group.GroupTable(), pollAfter: o.PollAfter, userData: detail.NewCache[string](ttl)}
}

// detailTTL is IASQL_EC2_DETAIL_TTL (a duration; 0 turns reuse off),
// default 5 minutes, as for the other modules' details.
func detailTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IASQL_EC2_DETAIL_TTL")); err == nil && d >= 0 {
		return d
	}
	return 5 * time.Minute
}
