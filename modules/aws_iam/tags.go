package aws_iam

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/module"
)

// tagRecord is IAM tags as a tags column's value ({} when none), without
// AWS's own aws: tags (module.ReservedTag), which no one may set or delete.
func tagRecord(tags []types.Tag) map[string]any {
	out := make(map[string]any, len(tags))
	for _, t := range tags {
		if k := aws.ToString(t.Key); !module.ReservedTag(k) {
			out[k] = aws.ToString(t.Value)
		}
	}
	return out
}

// iamTags is a tags column's value as IAM tags, sorted by key.
func iamTags(v any) []types.Tag {
	m, _ := v.(map[string]any)
	out := make([]types.Tag, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, types.Tag{Key: aws.String(k), Value: aws.String(fmt.Sprint(m[k]))})
	}
	return out
}

// retag makes a policy's tags want (from have): TagPolicy for new and
// changed ones, UntagPolicy for those gone; nothing when they are the same.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_TagPolicy.html
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_UntagPolicy.html
func retag(ctx context.Context, cl *iam.Client, arn string, want, have any) error {
	h, _ := have.(map[string]any)
	var set []types.Tag
	for _, t := range iamTags(want) {
		if old, ok := h[*t.Key]; !ok || fmt.Sprint(old) != *t.Value {
			set = append(set, t)
		}
	}
	w, _ := want.(map[string]any)
	var del []string
	for _, k := range slices.Sorted(maps.Keys(h)) {
		if _, ok := w[k]; !ok {
			del = append(del, k)
		}
	}
	if len(del) > 0 {
		if _, err := cl.UntagPolicy(ctx, &iam.UntagPolicyInput{PolicyArn: &arn, TagKeys: del}); err != nil {
			return classify(err, "untag policy %s", arn)
		}
	}
	if len(set) > 0 {
		if _, err := cl.TagPolicy(ctx, &iam.TagPolicyInput{PolicyArn: &arn, Tags: set}); err != nil {
			return classify(err, "tag policy %s", arn)
		}
	}
	return nil
}
