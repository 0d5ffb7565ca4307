package aws_iam

import (
	"strings"

	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

// iamSource is the eventSource of IAM's calls, logged in us-east-1 (IAM
// is global):
// https://docs.aws.amazon.com/IAM/latest/UserGuide/cloudtrail-integration.html
const iamSource = "iam.amazonaws.com"

var (
	_ module.Noticer = (*roleMapper)(nil)
	_ module.Noticer = (*policyMapper)(nil)
)

// roleCalls are the IAM calls that make, change or delete what iam_role
// holds of a role (its trust policy, description, maximum session,
// attached and inline policies); CloudTrail logs each with
// requestParameters.roleName
// (https://docs.aws.amazon.com/IAM/latest/UserGuide/cloudtrail-integration.html#cloudtrail-integration_examples-iam).
var roleCalls = []string{
	"CreateRole", "DeleteRole", "UpdateRole", "UpdateRoleDescription", "UpdateAssumeRolePolicy",
	"AttachRolePolicy", "DetachRolePolicy", "PutRolePolicy", "DeleteRolePolicy",
}

// Noticed names the role a call of roleCalls made, changed or deleted, by
// name (the table's identity).
func (m *roleMapper) Noticed(ev module.Event) []string {
	if !trail.Is(ev, iamSource, roleCalls...) {
		return nil
	}
	return trail.Strings(ev.Request, "roleName")
}

// Noticed names the customer managed policy an IAM call made, deleted or
// changed (its default version, its tags), by name (the table's
// identity): CreatePolicy's requestParameters.policyName
// (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicy.html),
// and the policy named by the requestParameters.policyArn of
// DeletePolicy, CreatePolicyVersion, DeletePolicyVersion,
// SetDefaultPolicyVersion, TagPolicy and UntagPolicy. An AWS managed
// policy (its ARN's account is "aws") is none of the table's.
func (m *policyMapper) Noticed(ev module.Event) []string {
	switch {
	case trail.Is(ev, iamSource, "CreatePolicy"):
		return trail.Strings(ev.Request, "policyName")
	case trail.Is(ev, iamSource, "DeletePolicy", "CreatePolicyVersion", "DeletePolicyVersion", "SetDefaultPolicyVersion", "TagPolicy", "UntagPolicy"):
		a, ok := trail.ParseARN(trail.String(ev.Request, "policyArn"))
		path, isPolicy := strings.CutPrefix(a.Resource, "policy/")
		if !ok || !isPolicy || a.Service != "iam" || a.Account == "aws" {
			return nil
		}
		return []string{path[strings.LastIndexByte(path, '/')+1:]}
	}
	return nil
}
