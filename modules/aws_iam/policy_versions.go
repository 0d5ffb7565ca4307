package aws_iam

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/module"
)

// A managed policy's versions: a change of document is a new default
// version, and a policy keeps at most five.

// maxVersions is how many versions a managed policy can have (API
// Reference, CreatePolicyVersion: "A managed policy can have up to five
// versions"; the sixth is LimitExceeded).
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicyVersion.html
const maxVersions = 5

// newVersion makes doc the policy's default version (CreatePolicyVersion,
// SetAsDefault). With five versions, the oldest that is not the default
// goes first (DeletePolicyVersion).
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_DeletePolicyVersion.html
func (m *policyMapper) newVersion(ctx context.Context, cl *iam.Client, arn string, doc any) error {
	text, err := docText(doc)
	if err != nil {
		return &module.TerminalError{Err: fmt.Errorf("update policy %s: document: %w", arn, err)}
	}
	vs, err := versions(ctx, cl, arn)
	if err != nil {
		return err
	}
	if len(vs)+1 >= maxVersions { // and the default
		if err := deleteVersion(ctx, cl, arn, vs[0]); err != nil {
			return err
		}
	}
	_, err = cl.CreatePolicyVersion(ctx, &iam.CreatePolicyVersionInput{PolicyArn: &arn, PolicyDocument: &text, SetAsDefault: true})
	return terminal.Classify(err, "create a version of policy %s", arn)
}

// versions lists a policy's versions but the default, oldest first (by
// the number in vN: IAM numbers them in order).
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListPolicyVersions.html
func versions(ctx context.Context, cl *iam.Client, arn string) ([]string, error) {
	out, err := cl.ListPolicyVersions(ctx, &iam.ListPolicyVersionsInput{PolicyArn: &arn})
	if err != nil {
		return nil, terminal.Classify(err, "list the versions of policy %s", arn)
	}
	var ids []string
	for _, v := range out.Versions {
		if !v.IsDefaultVersion {
			ids = append(ids, aws.ToString(v.VersionId))
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return versionNumber(a) - versionNumber(b) })
	return ids, nil
}

// versionNumber is N of a version id vN (or vN.suffix).
func versionNumber(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(id, ".", 2)[0], "v"))
	return n
}

func deleteVersion(ctx context.Context, cl *iam.Client, arn, id string) error {
	_, err := cl.DeletePolicyVersion(ctx, &iam.DeletePolicyVersionInput{PolicyArn: &arn, VersionId: &id})
	return terminal.Classify(module.Deleted(err, "NoSuchEntity"), "delete version %s of policy %s", id, arn)
}

// versionKey is what a policy's details are remembered by: its id (a
// policy made anew under the same name is read anew) and its default
// version (a new document is a new version).
func versionKey(p types.Policy) string {
	return aws.ToString(p.PolicyId) + "/" + aws.ToString(p.DefaultVersionId)
}
