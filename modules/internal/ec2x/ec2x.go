// Package ec2x is what the EC2-based modules (aws_vpc, aws_security_group,
// aws_ec2) share: an EC2 client per region (reading every region of a
// call's scope: regional.Clients), EC2 tags as a tags column (package
// tags), and EC2's terminal error codes.
package ec2x

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/internal/tags"
	"github.com/iasql/iasql/modules/module"
)

// PageSize is the MaxResults of describe pages (EC2's maximum).
const PageSize = 1000

// Clients holds an EC2 client per region for one SDK configuration.
type Clients struct {
	*regional.Clients[*ec2.Client]
}

// NewClients returns clients for cfg.
func NewClients(cfg aws.Config) *Clients {
	return &Clients{Clients: regional.NewClients(cfg, func(region string) *ec2.Client {
		return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
	})}
}

// tag reads an EC2 tag.
func tag(t types.Tag) tags.Tag {
	return tags.Tag{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value)}
}

// ec2Tags are tags as EC2 takes them (nil for none).
func ec2Tags(ts []tags.Tag) []types.Tag {
	var out []types.Tag
	for _, t := range ts {
		out = append(out, types.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)})
	}
	return out
}

// Tags renders EC2 tags as a tags column value (tags.Record: without the
// client-token tag and AWS's own aws: tags).
func Tags(ts []types.Tag) map[string]any { return tags.Record(ts, tag) }

// TokenOf is the client token a resource was tagged with at creation (""
// when none).
func TokenOf(ts []types.Tag) string { return tags.Token(ts, tag) }

// TagSpec is the TagSpecifications of a create call for a record's tags
// column and a create's client token ("" for none; nil when there are
// neither).
// EC2 applies tags given at creation atomically with the create: a
// resource never exists without its token tag.
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html (tag on creation)
func TagSpec(resource types.ResourceType, v any, token string) []types.TagSpecification {
	ts := ec2Tags(tags.List(v, token))
	if len(ts) == 0 {
		return nil
	}
	return []types.TagSpecification{{ResourceType: resource, Tags: ts}}
}

// NoRetry is the option of a create call that takes no idempotency token:
// the SDK must not repeat it (AWS may have acted on the attempt whose
// answer was lost); the engine retries it once Find says it made nothing.
func NoRetry(o *ec2.Options) { o.RetryMaxAttempts = 1 }

// TokenFilter selects the resources a client token's create made.
func TokenFilter(token string) []types.Filter {
	return []types.Filter{{Name: aws.String("tag:" + module.TokenTag), Values: []string{token}}}
}

// SyncTags makes the resource's tags want (from have): CreateTags for new
// and changed ones, DeleteTags for the ones gone (tags.Diff).
func SyncTags(ctx context.Context, cl *ec2.Client, id string, want, have any) error {
	set, remove := tags.Diff(want, have)
	if len(set) > 0 {
		if _, err := cl.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: ec2Tags(set)}); err != nil {
			return fmt.Errorf("tag %s: %w", id, err)
		}
	}
	if len(remove) > 0 {
		del := make([]types.Tag, len(remove))
		for i, k := range remove {
			del[i] = types.Tag{Key: aws.String(k)}
		}
		if _, err := cl.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: del}); err != nil {
			return fmt.Errorf("untag %s: %w", id, err)
		}
	}
	return nil
}

// Code returns the AWS error code of err ("" when it has none).
func Code(err error) string { return module.ErrorCode(err) }

// Terminal are EC2 errors that retrying cannot fix: bad input the database
// could not catch, missing permissions (a module adds its own: With).
var Terminal = module.TerminalCodes("InvalidParameterValue", "InvalidParameterCombination", "InvalidVpc.Range", "InvalidSubnet.Range",
	"InvalidSubnet.Conflict", "UnauthorizedOperation", "InvalidPermission.Malformed")
