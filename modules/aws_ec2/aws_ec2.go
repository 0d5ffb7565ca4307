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
	_ "embed"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/ec2x"
	"github.com/iasql/iasql/modules/module"
)

//go:embed aws_ec2.sql
var installSQL string

// Table is the instance table's declaration.
var Table = module.Table{
	Name:    "instance",
	CloudID: []string{"instance_id"},
	Declarative: []string{"ami", "instance_type", "subnet_id", "security_group_ids", "key_name", "user_data",
		"tags", "state", "region"},
	Feedback:   []string{"instance_id", "private_ip_address", "public_ip_address", "launch_time", "observed_state"},
	CreateOnly: []string{"ami", "subnet_id", "key_name", "region"},
	Refs:       map[string]string{"subnet_id": "subnet"},
	RefsMany:   map[string]string{"security_group_ids": "security_group"},
	Region:     "region",
}

// Module returns the aws_ec2 module.
func Module() module.Module {
	return module.Module{
		Name:      "aws_ec2",
		Version:   "0.1.0",
		DependsOn: []string{"aws_account", "aws_vpc", "aws_security_group"},
		SQL:       installSQL,
		Tables:    []module.Table{Table},
		Mappers: func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"instance": NewMapper(cfg, Options{})}, nil
		},
	}
}

// Options tune an instance mapper.
type Options struct {
	// PollAfter is the RetryAfter of the mapper's Pending answers; 0: 5 s
	// (instances usually leave pending or stopping within tens of seconds).
	PollAfter time.Duration
	// UserDataTTL is how long a read may reuse an instance's user data
	// (one DescribeInstanceAttribute per instance); 0: IASQL_EC2_DETAIL_TTL,
	// else 5 minutes. Negative turns reuse off.
	UserDataTTL time.Duration
}

// NewMapper returns the instance mapper for cfg.
func NewMapper(cfg aws.Config, o Options) module.Mapper {
	if o.PollAfter == 0 {
		o.PollAfter = 5 * time.Second
	}
	ttl := o.UserDataTTL
	if ttl == 0 {
		ttl = detailTTL()
	} else if ttl < 0 {
		ttl = 0
	}
	return &instanceMapper{c: ec2x.NewClients(cfg), cfg: cfg, pollAfter: o.PollAfter, userData: detail.NewCache[string](ttl)}
}

// detailTTL is IASQL_EC2_DETAIL_TTL (a duration; 0 turns reuse off),
// default 5 minutes, as for the other modules' details.
func detailTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IASQL_EC2_DETAIL_TTL")); err == nil && d >= 0 {
		return d
	}
	return 5 * time.Minute
}
