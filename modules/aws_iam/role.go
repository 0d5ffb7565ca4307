package aws_iam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/iam/types"

	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// rolePath is the only path the table manages: its roles have no path
// column, and roles under other paths (service roles, service-linked
// roles) are left alone.
const rolePath = "/"

// listPage is the MaxItems of IAM list calls.
const listPage = 1000

// concurrency bounds the per-role requests in flight during a Read.
const concurrency = 8

// Role is a row of iam_role: an IAM role under the path / with its
// attached managed policies and inline policies (API Reference, Role:
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_Role.html). Its
// fields declare the columns.
type Role struct {
	Name               string         `iasql:"role_name,id,notnull" comment:"Role name: 1 to 64 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the role."`
	Trust              any            `iasql:"assume_role_policy_document,notnull" comment:"Trust policy: who may assume the role, as a JSON policy document (an object). Compared by meaning: key order and whitespace do not matter, values do (a string and a list of one string differ)."`
	Description        *string        `iasql:"description" comment:"Description of the role, up to 1000 characters; NULL and the empty string both mean none."`
	MaxSessionDuration json.Number    `iasql:"max_session_duration,notnull,type=integer,default=3600" comment:"Maximum session duration in seconds for sessions that assume the role: 3600 (one hour, the default) to 43200 (12 hours)."`
	AttachedPolicyARNs []string       `iasql:"attached_policy_arns,notnull,default='{}'" comment:"ARNs of the AWS managed policies attached to the role, e.g. arn:aws:iam::aws:policy/ReadOnlyAccess (the account's own policies are in policy_ids; an ARN of one of them here is attached too). A set: order and repetition do not matter."`
	InlinePolicies     map[string]any `iasql:"inline_policies,notnull,default='{}'" comment:"Inline policies embedded in the role, as a JSON object from policy name (1 to 128 letters, digits and _+=,.@- characters) to policy document (an object). Documents are compared by meaning."`
	ARN                string         `iasql:"arn,feedback" comment:"ARN of the role, arn:aws:iam::<account>:role/<name> (from the cloud; not written to it)."`
	RoleID             string         `iasql:"role_id,feedback" comment:"Stable unique id IAM gave the role, beginning with AROA (from the cloud; not written to it)."`
	CreatedAt          time.Time      `iasql:"created_at,feedback" comment:"When IAM created the role (from the cloud; not written to it)."`
	PolicyIDs          []string       `iasql:"policy_ids,notnull,ref=iam_policy,default='{}'" comment:"The account's own managed policies (iam_policy.id) attached to the role, in any order; AWS managed policies are in attached_policy_arns."`
}

// roles is the iam_role table, declared by Role. IAM is global: the table
// has no region.
var roles = module.Declare[Role](module.Table{
	Name: "iam_role",
	Comment: "IAM roles of the account (IAM is global: one set of roles whatever the region). " +
		"Only roles with the path / are managed here; roles under other paths (service-role/, aws-service-role/ and the like) are neither listed nor touched. " +
		"Insert a row to create a role, update it to change its trust policy, description, maximum session, attached managed policies (policy_ids, attached_policy_arns) or inline policies, " +
		"delete it to delete the role (its policies are detached and deleted first). Changing role_name replaces the role.",
})

// RoleTable is the iam_role table's declaration.
func RoleTable() module.Table { return roles.Table() }

// session is r's maximum session in seconds, 3600 when it names none: a
// number, as records hold it (3600 and 3600.0 alike by module.Same).
func (r Role) session() json.Number {
	if r.MaxSessionDuration == "" {
		return "3600"
	}
	return r.MaxSessionDuration
}

// maxSession is r's maximum session for IAM. Numbers written with a
// fraction of zero (3600.0) are whole.
func (r Role) maxSession() int32 {
	if n, err := r.session().Int64(); err == nil {
		return int32(n)
	}
	if f, err := r.session().Float64(); err == nil && f == math.Trunc(f) {
		return int32(f)
	}
	return 0
}

// roleMapper maps the iam_role table.
type roleMapper struct {
	iamClients
	// details: each role's policies as last read, by role name, of the role
	// with a role id (a role made anew under the same name is read anew).
	details *detail.Cache[roleDetail]
}

// roleDetail is what ListRoles does not say about a role: its attached
// and inline policies.
type roleDetail struct {
	attached []string
	inline   map[string]any
}

func newRoleMapper(cfg aws.Config) *roleMapper {
	return &roleMapper{iamClients: newClients(cfg), details: detail.NewCache[roleDetail](detailTTL())}
}

// detailTTL is IASQL_IAM_DETAIL_TTL (a duration; 0 turns reuse off),
// default 5 minutes: an automatic cycle over unchanged roles and policies
// then makes ListRoles and ListPolicies calls only, and what changed
// outside iasql and those lists do not show (a role's policies, a policy's
// tags) is seen within the TTL (at once by iasql_commit, which reads
// fresh).
func detailTTL() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("IASQL_IAM_DETAIL_TTL")); err == nil && d >= 0 {
		return d
	}
	return 5 * time.Minute
}

// Read lists the roles under / (ListRoles, paginated) and reads each one's
// attached and inline policies, 8 roles at a time (reused from a recent
// read when the call allows it).
func (m *roleMapper) Read(ctx context.Context, call module.Call) ([]Role, error) {
	cl := m.client(call)
	// found leaves out those under other paths.
	listed, err := regional.Pages(ctx, iam.NewListRolesPaginator(cl, &iam.ListRolesInput{PathPrefix: aws.String(rolePath), MaxItems: aws.Int32(listPage)}),
		func(page *iam.ListRolesOutput) []types.Role { return page.Roles })
	if err != nil {
		return nil, terminal.Classify(err, "list roles")
	}
	due := m.details.Due()
	return regional.Gather(ctx, concurrency, len(listed), func(ctx context.Context, i int) ([]Role, error) {
		return m.found(ctx, call.Fresh, cl, listed[i], due)
	})
}

// found completes a role IAM has just named (listed or got) into its
// row, or none when the role is gone meanwhile or lies outside the table
// (a path other than /). Read and Get both make their rows here.
func (m *roleMapper) found(ctx context.Context, fresh module.Fresh, cl *iam.Client, r types.Role, due map[string]bool) ([]Role, error) {
	if aws.ToString(r.Path) != rolePath {
		return nil, nil
	}
	row, err := m.row(ctx, fresh, cl, r, due)
	switch {
	case module.IsCode(err, "NoSuchEntity"):
		return nil, nil // deleted since IAM named it
	case err != nil:
		return nil, err
	}
	return []Role{row}, nil
}

// Get reads the named roles, fresh, as Read would: each by GetRole (its
// NoSuchEntity means the role is absent) and then the same policy reads
// (ListAttachedRolePolicies, ListRolePolicies, GetRolePolicy), 8 roles at
// a time. A role under another path than / is absent, as Read leaves it
// out; so is a name IAM matches only regardless of case (role names are
// unique case-insensitively, but the table's identity is the exact name).
// The calls and their NoSuchEntity errors as in the IAM API Reference
// (https://docs.aws.amazon.com/IAM/latest/APIReference/API_GetRole.html,
// API_ListAttachedRolePolicies.html, API_ListRolePolicies.html,
// API_GetRolePolicy.html).
func (m *roleMapper) Get(ctx context.Context, call module.Call, names []string) ([]Role, error) {
	cl := m.client(call)
	return regional.Gather(ctx, concurrency, len(names), func(ctx context.Context, i int) ([]Role, error) {
		name := names[i]
		out, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
		if module.IsCode(err, "NoSuchEntity") {
			return nil, nil
		}
		if err != nil {
			return nil, terminal.Classify(err, "get role %s", name)
		}
		if aws.ToString(out.Role.RoleName) != name {
			return nil, nil
		}
		return m.found(ctx, module.Fresh{All: true}, cl, *out.Role, nil)
	})
}

// row completes a role with its policies.
func (m *roleMapper) row(ctx context.Context, fresh module.Fresh, cl *iam.Client, r types.Role, due map[string]bool) (Role, error) {
	id, name := aws.ToString(r.RoleId), aws.ToString(r.RoleName)
	d, ok := m.details.Get(fresh, name, id, due)
	if !ok {
		var err error
		if d, err = m.policies(ctx, cl, name); err != nil {
			return Role{}, err
		}
		if id != "" {
			m.details.Put(name, id, d)
		}
	}
	maxSession := int64(3600)
	if r.MaxSessionDuration != nil {
		maxSession = int64(*r.MaxSessionDuration)
	}
	inline := maps.Clone(d.inline)
	if inline == nil {
		inline = map[string]any{}
	}
	var managed, own []string
	for _, arn := range d.attached {
		if awsManaged(arn) {
			managed = append(managed, arn)
		} else {
			own = append(own, policyName(arn))
		}
	}
	return Role{
		Name:               aws.ToString(r.RoleName),
		Trust:              parseDoc(aws.ToString(r.AssumeRolePolicyDocument)),
		Description:        optional(aws.ToString(r.Description)),
		MaxSessionDuration: module.Number(maxSession),
		AttachedPolicyARNs: append([]string{}, managed...),
		PolicyIDs:          append([]string{}, own...),
		InlinePolicies:     inline,
		ARN:                aws.ToString(r.Arn),
		RoleID:             id,
		CreatedAt:          aws.ToTime(r.CreateDate),
	}, nil
}

// policies reads a role's attached managed policies and inline policies.
func (m *roleMapper) policies(ctx context.Context, cl *iam.Client, name string) (roleDetail, error) {
	var d roleDetail
	attached, err := regional.Pages(ctx, iam.NewListAttachedRolePoliciesPaginator(cl, &iam.ListAttachedRolePoliciesInput{RoleName: aws.String(name), MaxItems: aws.Int32(listPage)}),
		func(page *iam.ListAttachedRolePoliciesOutput) []types.AttachedPolicy { return page.AttachedPolicies })
	if err != nil {
		return d, terminal.Classify(err, "list policies attached to role %s", name)
	}
	for _, p := range attached {
		d.attached = append(d.attached, aws.ToString(p.PolicyArn))
	}
	slices.Sort(d.attached)
	d.attached = slices.Compact(d.attached)
	names, err := regional.Pages(ctx, iam.NewListRolePoliciesPaginator(cl, &iam.ListRolePoliciesInput{RoleName: aws.String(name), MaxItems: aws.Int32(listPage)}),
		func(page *iam.ListRolePoliciesOutput) []string { return page.PolicyNames })
	if err != nil {
		return d, terminal.Classify(err, "list inline policies of role %s", name)
	}
	d.inline = map[string]any{}
	for _, pn := range names {
		out, err := cl.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String(name), PolicyName: aws.String(pn)})
		if module.IsCode(err, "NoSuchEntity") {
			if _, gone := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)}); gone != nil {
				return d, gone
			}
			continue // the policy was deleted since it was listed
		}
		if err != nil {
			return d, terminal.Classify(err, "get inline policy %s of role %s", pn, name)
		}
		d.inline[pn] = parseDoc(aws.ToString(out.PolicyDocument))
	}
	return d, nil
}

// readOne reads one role back, fresh.
func (m *roleMapper) readOne(ctx context.Context, call module.Call, name string) (Role, error) {
	cl := m.client(call)
	out, err := cl.GetRole(ctx, &iam.GetRoleInput{RoleName: aws.String(name)})
	if err != nil {
		return Role{}, terminal.Classify(err, "get role %s", name)
	}
	if p := aws.ToString(out.Role.Path); p != rolePath {
		return Role{}, &module.TerminalError{Err: fmt.Errorf("role %s exists with path %s; the iam_role table manages roles under %s only", name, p, rolePath)}
	}
	return m.row(ctx, module.Fresh{All: true}, cl, *out.Role, nil)
}

// Create creates the role, attaches its managed policies, puts its inline
// policies and reads it back. A role of that name that already exists is
// read back as it is (the engine then updates it to the row).
func (m *roleMapper) Create(ctx context.Context, call module.Call, want Role) (Role, error) {
	name := want.Name
	if name == "" {
		return Role{}, &module.TerminalError{Err: errors.New("create role: role_name is required")}
	}
	trust, err := docText(want.Trust)
	if err != nil {
		return Role{}, &module.TerminalError{Err: fmt.Errorf("create role %s: assume_role_policy_document: %w", name, err)}
	}
	in := &iam.CreateRoleInput{
		RoleName:                 aws.String(name),
		Path:                     aws.String(rolePath),
		AssumeRolePolicyDocument: aws.String(trust),
		MaxSessionDuration:       aws.Int32(want.maxSession()),
		Description:              optional(aws.ToString(want.Description)),
	}
	cl := m.client(call)
	arns, _, err := m.attachable(ctx, cl, want, Role{})
	if err != nil {
		return Role{}, fmt.Errorf("create role %s: %w", name, err)
	}
	_, err = cl.CreateRole(ctx, in)
	switch {
	case module.IsCode(err, "EntityAlreadyExists"):
		return m.readOne(ctx, call, name)
	case err != nil:
		return Role{}, terminal.Classify(err, "create role %s", name)
	}
	for _, arn := range arns {
		if err := m.attach(ctx, cl, name, arn); err != nil {
			return Role{}, err
		}
	}
	for pn, doc := range inlineMap(want.InlinePolicies) {
		if err := m.putInline(ctx, cl, name, pn, doc); err != nil {
			return Role{}, err
		}
	}
	return m.readOne(ctx, call, name)
}

func (m *roleMapper) attach(ctx context.Context, cl *iam.Client, role, arn string) error {
	_, err := cl.AttachRolePolicy(ctx, &iam.AttachRolePolicyInput{RoleName: aws.String(role), PolicyArn: aws.String(arn)})
	return terminal.Classify(err, "attach policy %s to role %s", arn, role)
}

func (m *roleMapper) detach(ctx context.Context, cl *iam.Client, role, arn string) error {
	_, err := cl.DetachRolePolicy(ctx, &iam.DetachRolePolicyInput{RoleName: aws.String(role), PolicyArn: aws.String(arn)})
	// NoSuchEntity: detached already (a NoSuchEntity for the role fails
	// the read-back).
	return terminal.Classify(module.Deleted(err, "NoSuchEntity"), "detach policy %s from role %s", arn, role)
}

func (m *roleMapper) putInline(ctx context.Context, cl *iam.Client, role, name string, doc any) error {
	text, err := docText(doc)
	if err != nil {
		return &module.TerminalError{Err: fmt.Errorf("inline policy %s of role %s: %w", name, role, err)}
	}
	_, err = cl.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name), PolicyDocument: aws.String(text)})
	return terminal.Classify(err, "put inline policy %s of role %s", name, role)
}

func (m *roleMapper) deleteInline(ctx context.Context, cl *iam.Client, role, name string) error {
	_, err := cl.DeleteRolePolicy(ctx, &iam.DeleteRolePolicyInput{RoleName: aws.String(role), PolicyName: aws.String(name)})
	return terminal.Classify(module.Deleted(err, "NoSuchEntity"), "delete inline policy %s of role %s", name, role)
}

// Update makes the role match want: UpdateRole for the description and
// the maximum session, UpdateAssumeRolePolicy for the trust policy, attach
// and detach the difference of the managed policy sets, put changed and
// delete removed inline policies. Another name needs a new role.
func (m *roleMapper) Update(ctx context.Context, call module.Call, want, have Role) (Role, error) {
	name := have.Name
	if want.Name != name {
		return Role{}, module.ErrReplace
	}
	cl := m.client(call)
	if aws.ToString(want.Description) != aws.ToString(have.Description) || want.maxSession() != have.maxSession() {
		_, err := cl.UpdateRole(ctx, &iam.UpdateRoleInput{
			RoleName:           aws.String(name),
			Description:        aws.String(aws.ToString(want.Description)),
			MaxSessionDuration: aws.Int32(want.maxSession()),
		})
		if err != nil {
			return Role{}, terminal.Classify(err, "update role %s", name)
		}
	}
	if !sameDoc(want.Trust, have.Trust) {
		trust, err := docText(want.Trust)
		if err != nil {
			return Role{}, &module.TerminalError{Err: fmt.Errorf("update role %s: assume_role_policy_document: %w", name, err)}
		}
		_, err = cl.UpdateAssumeRolePolicy(ctx, &iam.UpdateAssumeRolePolicyInput{RoleName: aws.String(name), PolicyDocument: aws.String(trust)})
		if err != nil {
			return Role{}, terminal.Classify(err, "update the trust policy of role %s", name)
		}
	}
	wantArns, haveArns, err := m.attachable(ctx, cl, want, have)
	if err != nil {
		return Role{}, fmt.Errorf("update role %s: %w", name, err)
	}
	// Detach first: a role near its quota of attached policies can then
	// take the new ones.
	for _, arn := range haveArns {
		if _, keep := slices.BinarySearch(wantArns, arn); !keep {
			if err := m.detach(ctx, cl, name, arn); err != nil {
				return Role{}, err
			}
		}
	}
	for _, arn := range wantArns {
		if _, had := slices.BinarySearch(haveArns, arn); !had {
			if err := m.attach(ctx, cl, name, arn); err != nil {
				return Role{}, err
			}
		}
	}
	wantInline, haveInline := inlineMap(want.InlinePolicies), inlineMap(have.InlinePolicies)
	for pn := range haveInline {
		if _, keep := wantInline[pn]; !keep {
			if err := m.deleteInline(ctx, cl, name, pn); err != nil {
				return Role{}, err
			}
		}
	}
	for pn, doc := range wantInline {
		if old, ok := haveInline[pn]; !ok || !jsonvalue.Equal(old, doc) {
			if err := m.putInline(ctx, cl, name, pn, doc); err != nil {
				return Role{}, err
			}
		}
	}
	return m.readOne(ctx, call, name)
}

// Delete detaches the role's managed policies and deletes its inline
// policies (as IAM has them now), then deletes the role. A role already
// gone is no error (NoSuchEntity, as DeleteRole, DetachRolePolicy and
// DeleteRolePolicy answer for a role or policy that does not exist:
// https://docs.aws.amazon.com/IAM/latest/APIReference/API_DeleteRole.html).
func (m *roleMapper) Delete(ctx context.Context, call module.Call, have Role) error {
	name := have.Name
	cl := m.client(call)
	d, err := m.policies(ctx, cl, name)
	if module.IsCode(err, "NoSuchEntity") {
		m.details.Forget(name)
		return nil
	}
	if err != nil {
		return err
	}
	for _, arn := range d.attached {
		if err := m.detach(ctx, cl, name, arn); err != nil {
			return err
		}
	}
	for pn := range d.inline {
		if err := m.deleteInline(ctx, cl, name, pn); err != nil {
			return err
		}
	}
	_, err = cl.DeleteRole(ctx, &iam.DeleteRoleInput{RoleName: aws.String(name)})
	if err := module.Deleted(err, "NoSuchEntity"); err != nil {
		return terminal.Classify(err, "delete role %s", name)
	}
	m.details.Forget(name)
	return nil
}

// Equal compares the declarative columns: names exactly, NULL and ""
// descriptions alike, numbers by value, attached policies as sets (an ARN
// of the account's own policy in attached_policy_arns as its name in
// policy_ids), policy documents (the trust policy and each inline one) by
// meaning.
func (m *roleMapper) Equal(db, cloud Role) bool {
	return db.Name == cloud.Name && sameDoc(db.Trust, cloud.Trust) &&
		aws.ToString(db.Description) == aws.ToString(cloud.Description) &&
		module.Same(db.session(), cloud.session()) && sameAttachments(db, cloud) &&
		sameInline(db.InlinePolicies, cloud.InlinePolicies)
}

// awsManaged reports whether a policy ARN is of one of AWS's own managed
// policies (arn:aws:iam::aws:policy/...): a role record holds those in
// attached_policy_arns, and the account's own by name in policy_ids.
func awsManaged(arn string) bool {
	parts := strings.SplitN(arn, ":", 6)
	return len(parts) == 6 && parts[4] == "aws"
}

// policyName is the name in a policy's ARN (what follows its path).
func policyName(arn string) string { return arn[strings.LastIndexByte(arn, '/')+1:] }

// attachments is what a role attaches: the ARNs of AWS's managed
// policies, and the names of the account's own (policy_ids, and those
// attached_policy_arns names by ARN), each a sorted set.
func attachments(r Role) (managed, own []string) {
	for _, arn := range stringSet(r.AttachedPolicyARNs) {
		if awsManaged(arn) {
			managed = append(managed, arn)
		} else {
			own = append(own, policyName(arn))
		}
	}
	return managed, module.Strings(append(own, module.Strings(r.PolicyIDs)...))
}

func sameAttachments(a, b Role) bool {
	am, ao := attachments(a)
	bm, bo := attachments(b)
	return slices.Equal(am, bm) && slices.Equal(ao, bo)
}

// attachable is the ARNs of the policies want and have attach (each a
// sorted set): attached_policy_arns, and the ARNs of the account's policies
// policy_ids names (ListPolicies, when it names any). A policy want names
// that IAM does not have is an error; one have names is simply not there.
func (m *roleMapper) attachable(ctx context.Context, cl *iam.Client, want, have Role) (wantArns, haveArns []string, err error) {
	var byName map[string]string
	if len(module.Strings(want.PolicyIDs))+len(module.Strings(have.PolicyIDs)) > 0 {
		if byName, err = policyArns(ctx, cl); err != nil {
			return nil, nil, err
		}
	}
	arns := func(r Role, strict bool) ([]string, error) {
		out := stringSet(r.AttachedPolicyARNs)
		for _, name := range module.Strings(r.PolicyIDs) {
			switch arn, ok := byName[name]; {
			case ok:
				out = append(out, arn)
			case strict:
				return nil, fmt.Errorf("attach policy %s: IAM has no policy of that name", name)
			}
		}
		return stringSet(out), nil
	}
	if wantArns, err = arns(want, true); err != nil {
		return nil, nil, err
	}
	haveArns, _ = arns(have, false)
	return wantArns, haveArns, nil
}

var (
	_ module.MapperOf[Role]  = (*roleMapper)(nil)
	_ module.GetterOf[Role]  = (*roleMapper)(nil)
	_ module.EqualerOf[Role] = (*roleMapper)(nil)
)
