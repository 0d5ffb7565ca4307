package aws_iam

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/internal/tags"
)

// iamTag is an IAM tag as package tags has it.
func iamTag(t types.Tag) tags.Tag {
	return tags.Tag{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value)}
}

// tagRecord is IAM tags as a tags column's value ({} when none), without
// AWS's own aws: tags (module.ReservedTag), which no one may set or delete.
func tagRecord(ts []types.Tag) map[string]any { return tags.Record(ts, iamTag) }

// iamTags is a tags column's value as IAM tags, sorted by key.
func iamTags(v any) []types.Tag { return toIAM(tags.List(v, "")) }

func toIAM(ts []tags.Tag) []types.Tag {
	out := make([]types.Tag, len(ts))
	for i, t := range ts {
		out[i] = types.Tag{Key: aws.String(t.Key), Value: aws.String(t.Value)}
	}
	return out
}

// retag makes a policy's tags want (from have): TagPolicy for new and
// changed ones, UntagPolicy for those gone; nothing when they are the same.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_TagPolicy.html
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_UntagPolicy.html
func retag(ctx context.Context, cl *iam.Client, arn string, want, have any) error {
	set, del := tags.Diff(want, have)
	if len(del) > 0 {
		if _, err := cl.UntagPolicy(ctx, &iam.UntagPolicyInput{PolicyArn: &arn, TagKeys: del}); err != nil {
			return terminal.Classify(err, "untag policy %s", arn)
		}
	}
	if len(set) > 0 {
		if _, err := cl.TagPolicy(ctx, &iam.TagPolicyInput{PolicyArn: &arn, Tags: toIAM(set)}); err != nil {
			return terminal.Classify(err, "tag policy %s", arn)
		}
	}
	return nil
}
