// Package ec2x is what the EC2-based modules (aws_vpc, aws_security_group)
// share: an EC2 client per region, reading every region of the cycle's
// scope concurrently, tags in record form, and the error codes they test.
package ec2x

import (
	"context"
	"fmt"
	"maps"
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// PageSize is the MaxResults of describe pages (EC2's maximum).
const PageSize = 1000

// Clients holds an EC2 client per region for one SDK configuration.
type Clients struct {
	cfg aws.Config
	*regional.Clients[*ec2.Client]
}

// NewClients returns clients for cfg.
func NewClients(cfg aws.Config) *Clients {
	return &Clients{cfg: cfg, Clients: regional.NewClients(func(region string) *ec2.Client {
		return ec2.NewFromConfig(cfg, func(o *ec2.Options) { o.Region = region })
	})}
}

// EachRegion runs read for every region of scope concurrently
// and returns the records in region order. A region whose read fails does
// not stop the others: the records of the regions that worked come with a
// *module.PartialError naming the ones that failed (a region the account
// has not enabled answers AuthFailure; see regional.GatherRegions).
func (c *Clients) EachRegion(ctx context.Context, scope module.Scope, read func(ctx context.Context, region string, cl *ec2.Client) ([]module.Record, error)) ([]module.Record, error) {
	regions := scope.Or(c.cfg).Regions
	return regional.GatherRegions(ctx, 0, len(regions), func(i int) string { return regions[i] },
		func(ctx context.Context, i int) ([]module.Record, error) {
			return read(ctx, regions[i], c.Region(regions[i]))
		})
}

// Tags renders EC2 tags as a record value: an object of key -> value
// ({} when there are none, as the tables' default is). The engine's
// client-token tag (module.TokenTag) is not among them (see TokenOf), nor
// AWS's own aws: tags (module.ReservedTag), which no one may set or delete.
func Tags(tags []types.Tag) map[string]any {
	out := make(map[string]any, len(tags))
	for _, t := range tags {
		if k := aws.ToString(t.Key); k != module.TokenTag && !module.ReservedTag(k) {
			out[k] = aws.ToString(t.Value)
		}
	}
	return out
}

// TokenOf is the client token a resource was tagged with at creation (""
// when none).
func TokenOf(tags []types.Tag) string {
	for _, t := range tags {
		if aws.ToString(t.Key) == module.TokenTag {
			return aws.ToString(t.Value)
		}
	}
	return ""
}

// TagSpec is the TagSpecifications of a create call for a record's tags
// column and a create's client token ("" for none; nil when there are
// neither).
// EC2 applies tags given at creation atomically with the create: a
// resource never exists without its token tag.
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html (tag on creation)
func TagSpec(resource types.ResourceType, tags any, token string) []types.TagSpecification {
	ts := toTags(tags)
	if token != "" {
		ts = append(ts, types.Tag{Key: aws.String(module.TokenTag), Value: aws.String(token)})
	}
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

func toTags(v any) []types.Tag {
	m, _ := v.(map[string]any)
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]types.Tag, 0, len(m))
	for _, k := range keys {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(fmt.Sprint(m[k]))})
	}
	return out
}

// SyncTags makes the resource's tags want (from have): CreateTags for new
// and changed ones, DeleteTags for the ones gone.
func SyncTags(ctx context.Context, cl *ec2.Client, id string, want, have any) error {
	w, _ := want.(map[string]any)
	h, _ := have.(map[string]any)
	var set []types.Tag
	for _, t := range toTags(w) {
		if old, ok := h[*t.Key]; !ok || fmt.Sprint(old) != *t.Value {
			set = append(set, t)
		}
	}
	var del []types.Tag
	for _, t := range toTags(h) {
		if _, ok := w[*t.Key]; !ok {
			del = append(del, types.Tag{Key: t.Key})
		}
	}
	if len(set) > 0 {
		if _, err := cl.CreateTags(ctx, &ec2.CreateTagsInput{Resources: []string{id}, Tags: set}); err != nil {
			return fmt.Errorf("tag %s: %w", id, err)
		}
	}
	if len(del) > 0 {
		if _, err := cl.DeleteTags(ctx, &ec2.DeleteTagsInput{Resources: []string{id}, Tags: del}); err != nil {
			return fmt.Errorf("untag %s: %w", id, err)
		}
	}
	return nil
}

// Code returns the AWS error code of err ("" when it has none).
func Code(err error) string { return module.ErrorCode(err) }

// terminalCodes are EC2 errors that retrying cannot fix: bad input the
// database could not catch, missing permissions.
var terminalCodes = map[string]bool{
	"InvalidParameterValue": true, "InvalidParameterCombination": true, "InvalidVpc.Range": true, "InvalidSubnet.Range": true,
	"InvalidSubnet.Conflict": true, "UnauthorizedOperation": true, "InvalidPermission.Malformed": true,
}

// Terminal wraps errors that retrying cannot fix (bad input the database
// could not catch) as module.TerminalError; others pass through.
func Terminal(err error) error {
	if terminalCodes[module.ErrorCode(err)] {
		return &module.TerminalError{Err: err}
	}
	return err
}

// UpdateTags is the Update of a resource whose tags are all that can
// change in place: any other difference among t's declarative columns
// needs a replacement (module.ErrReplace); otherwise the tags of the resource whose id is in
// column idCol are made want's, and have with want's tags is returned.
func (c *Clients) UpdateTags(ctx context.Context, t module.Table, idCol string, want, have module.Record) (module.Record, error) {
	for _, col := range t.Declarative {
		if col != "tags" && !module.Same(want[col], have[col]) {
			return nil, module.ErrReplace
		}
	}
	if err := SyncTags(ctx, c.Region(have.String("region")), have.String(idCol), want["tags"], have["tags"]); err != nil {
		return nil, err
	}
	got := maps.Clone(have)
	got["tags"] = want["tags"]
	return got, nil
}

// TerminalCodes are the codes Terminal treats as terminal, with a module's
// own (more): the terminal codes module.Classify takes.
func TerminalCodes(more ...string) map[string]bool {
	out := maps.Clone(terminalCodes)
	for _, c := range more {
		out[c] = true
	}
	return out
}
