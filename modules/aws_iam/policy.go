package aws_iam

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// Policy is a row of iam_policy: a customer managed policy (API Reference,
// Policy: https://docs.aws.amazon.com/IAM/latest/APIReference/API_Policy.html)
// with its default version's document. Its fields declare the columns.
type Policy struct {
	Name             string         `iasql:"policy_name,id,notnull" comment:"Policy name: 1 to 128 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the policy."`
	Path             string         `iasql:"path,notnull,createonly,default='/'" comment:"Path of the policy: / (the default) or /a/b/, up to 512 characters from ! to DEL but *. IAM cannot change it: changing it replaces the policy."`
	Description      *string        `iasql:"description,createonly" comment:"Description of the policy, up to 1000 characters; NULL and the empty string both mean none. IAM cannot change it: changing it replaces the policy."`
	Document         any            `iasql:"document,notnull" comment:"The policy document (its default version) as a JSON object. Compared by meaning: key order and whitespace do not matter, values do. Changing it makes a new default version."`
	Tags             map[string]any `iasql:"tags,notnull,default='{}'" comment:"Tags as a JSON object of key to value (AWS's own aws:* tags are left out)."`
	ARN              string         `iasql:"arn,feedback" comment:"ARN of the policy, arn:aws:iam::<account>:policy<path><name> (from the cloud; not written to it)."`
	PolicyID         string         `iasql:"policy_id,feedback" comment:"Stable unique id IAM gave the policy, beginning with ANPA (from the cloud; not written to it)."`
	DefaultVersionID string         `iasql:"default_version_id,feedback" comment:"Id of the default version: v1 when created, a higher one after each change of document (from the cloud; not written to it)."`
}

// policies is the iam_policy table, declared by Policy: the account's own
// (customer managed) policies, under every path. IAM is global: no region.
var policies = module.Declare[Policy](module.Table{
	Name: "iam_policy",
	Comment: "Customer managed IAM policies of the account, under every path (IAM is global). Insert a row to create a policy; update document to make a new default version " +
		"(when the policy has five versions, its oldest other version is deleted first); update tags to retag it; delete the row to delete the policy and its versions " +
		"(a policy something outside this table still uses is deleted once that lets go of it). Roles use policies through iam_role.policy_ids. " +
		"Changing policy_name, path or description replaces the policy.",
})

// PolicyTable is the iam_policy table's declaration.
func PolicyTable() module.Table { return policies.Table() }

// policyMapper maps iam_policy.
type policyMapper struct {
	iamClients
	// details: each policy's description, tags and document as last read,
	// by name, of the policy with an id and default version.
	details *detail.Cache[policyDetail]
}

// policyDetail is what ListPolicies does not say of a policy (its
// description and tags: GetPolicy; its document: GetPolicyVersion).
type policyDetail struct {
	policy   types.Policy
	document any
}

// Read lists the account's policies (ListPolicies, Scope Local, paginated)
// and completes each one, 8 at a time, with what GetPolicy and
// GetPolicyVersion tell, reused from a read of the same default version
// when the context allows it.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_ListPolicies.html
func (m *policyMapper) Read(ctx context.Context, call module.Call) ([]Policy, error) {
	cl := m.client(call)
	ps, err := listPolicies(ctx, cl)
	if err != nil {
		return nil, err
	}
	due := m.details.Due()
	return regional.Gather(ctx, concurrency, len(ps), func(ctx context.Context, i int) ([]Policy, error) {
		p, err := m.get(ctx, call.Fresh, cl, ps[i], due)
		if err != nil {
			return nil, module.Deleted(err, "NoSuchEntity") // none when deleted since it was listed
		}
		return []Policy{p}, nil
	})
}

// get completes a policy IAM named (listed, or just made: its ARN is
// enough) into its row: GetPolicy, then GetPolicyVersion of its default.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetPolicy.html
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetPolicyVersion.html
func (m *policyMapper) get(ctx context.Context, fresh module.Fresh, cl *iam.Client, p types.Policy, due map[string]bool) (Policy, error) {
	d, ok := m.details.Get(fresh, aws.ToString(p.PolicyName), versionKey(p), due)
	if !ok {
		got, err := cl.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: p.Arn})
		if err != nil {
			return Policy{}, terminal.Classify(err, "get policy %s", aws.ToString(p.Arn))
		}
		v, err := cl.GetPolicyVersion(ctx, &iam.GetPolicyVersionInput{PolicyArn: p.Arn, VersionId: got.Policy.DefaultVersionId})
		if err != nil {
			return Policy{}, terminal.Classify(err, "get the default version of policy %s", aws.ToString(p.Arn))
		}
		d = policyDetail{policy: *got.Policy, document: parseDoc(aws.ToString(v.PolicyVersion.Document))}
		m.details.Put(aws.ToString(d.policy.PolicyName), versionKey(d.policy), d)
	}
	return Policy{Name: aws.ToString(d.policy.PolicyName), Path: aws.ToString(d.policy.Path), Description: optional(aws.ToString(d.policy.Description)),
		Document: d.document, Tags: tagRecord(d.policy.Tags), ARN: aws.ToString(d.policy.Arn), PolicyID: aws.ToString(d.policy.PolicyId),
		DefaultVersionID: aws.ToString(d.policy.DefaultVersionId)}, nil
}

// Create creates the policy (its document is version v1, the default) and
// reads it back. A policy of that name that exists already (a retried
// create) is read back as it is: the engine then updates it to the row.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicy.html
func (m *policyMapper) Create(ctx context.Context, call module.Call, want Policy) (Policy, error) {
	name, cl := want.Name, m.client(call)
	doc, err := docText(want.Document)
	if err != nil {
		return Policy{}, &module.TerminalError{Err: fmt.Errorf("create policy %s: document: %w", name, err)}
	}
	out, err := cl.CreatePolicy(ctx, &iam.CreatePolicyInput{PolicyName: &name, Path: optional(want.Path), PolicyDocument: &doc,
		Description: optional(aws.ToString(want.Description)), Tags: iamTags(want.Tags)})
	if module.IsCode(err, "EntityAlreadyExists") {
		arns, err := policyArns(ctx, cl)
		if err != nil {
			return Policy{}, fmt.Errorf("create policy %s: %w", name, err)
		}
		if arns[name] == "" {
			// Names are unique regardless of case: another policy holds it.
			return Policy{}, &module.TerminalError{Err: fmt.Errorf("create policy %s: IAM has a policy of that name in another letter case (names are unique regardless of case): rename one of them", name)}
		}
		return m.get(ctx, module.Fresh{All: true}, cl, types.Policy{Arn: aws.String(arns[name])}, nil)
	}
	if err != nil {
		return Policy{}, terminal.Classify(err, "create policy %s", name)
	}
	return m.get(ctx, module.Fresh{All: true}, cl, types.Policy{Arn: out.Policy.Arn}, nil)
}

// Update makes a new default version of a changed document and retags.
// Another name, path or description needs a new policy: IAM changes
// neither (CreatePolicy: "The policy description is immutable").
func (m *policyMapper) Update(ctx context.Context, call module.Call, want, have Policy) (Policy, error) {
	if want.Name != have.Name || want.Path != have.Path || aws.ToString(want.Description) != aws.ToString(have.Description) {
		return Policy{}, module.ErrReplace
	}
	arn, cl := have.ARN, m.client(call)
	if !sameDoc(want.Document, have.Document) {
		if err := m.newVersion(ctx, cl, arn, want.Document); err != nil {
			return Policy{}, err
		}
	}
	if err := retag(ctx, cl, arn, want.Tags, have.Tags); err != nil {
		return Policy{}, err
	}
	return m.get(ctx, module.Fresh{All: true}, cl, types.Policy{Arn: &arn}, nil)
}

// Delete deletes the policy's versions but the default, then the policy
// (DeletePolicy's order). A policy something still uses (attached, or a
// permissions boundary: GetPolicy's counts) is left whole, versions
// included, with an error that is retried: detaching it is the role's
// business (or, outside the table, someone else's); DeleteConflict from a
// use made meanwhile is retried the same way.
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_DeletePolicy.html
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_Policy.html
func (m *policyMapper) Delete(ctx context.Context, call module.Call, have Policy) error {
	arn, cl := have.ARN, m.client(call)
	got, err := cl.GetPolicy(ctx, &iam.GetPolicyInput{PolicyArn: &arn})
	if err != nil {
		return terminal.Classify(module.Deleted(err, "NoSuchEntity"), "delete policy %s", arn)
	}
	if aws.ToInt32(got.Policy.AttachmentCount) > 0 || aws.ToInt32(got.Policy.PermissionsBoundaryUsageCount) > 0 {
		return fmt.Errorf("delete policy %s: still attached to a user, group or role, or a permissions boundary (it is deleted once no longer used)", arn)
	}
	vs, err := versions(ctx, cl, arn)
	if err != nil {
		return module.Deleted(err, "NoSuchEntity")
	}
	for _, v := range vs {
		if err := deleteVersion(ctx, cl, arn, v); err != nil {
			return err
		}
	}
	_, err = cl.DeletePolicy(ctx, &iam.DeletePolicyInput{PolicyArn: &arn})
	if module.IsCode(err, "DeleteConflict") {
		return fmt.Errorf("delete policy %s: still attached to a user, group or role (it is deleted once detached): %w", arn, err)
	}
	return terminal.Classify(module.Deleted(err, "NoSuchEntity"), "delete policy %s", arn)
}

// Equal compares name and path exactly, descriptions with NULL and ""
// alike, documents by meaning, tags by value.
func (m *policyMapper) Equal(db, cloud Policy) bool {
	return db.Name == cloud.Name && db.Path == cloud.Path && aws.ToString(db.Description) == aws.ToString(cloud.Description) &&
		sameDoc(db.Document, cloud.Document) && module.Same(db.Tags, cloud.Tags)
}

// Temporary is want under its stand-in's name while the policy is
// replaced under its name (names are unique in the account).
func (m *policyMapper) Temporary(want Policy, oldCloudID string) Policy {
	want.Name = module.StandInName(want.Name, oldCloudID, 128)
	return want
}

var (
	_ module.MapperOf[Policy]    = (*policyMapper)(nil)
	_ module.EqualerOf[Policy]   = (*policyMapper)(nil)
	_ module.TemporaryOf[Policy] = (*policyMapper)(nil)
)
