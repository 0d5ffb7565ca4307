package emulator

import (
	"maps"
	"net/http"
	"slices"
	"strings"
)

// iamPoliciesPerRole is IAM's default quota of managed policies attached
// to one role.
const iamPoliciesPerRole = 10

// policyArn reads PolicyArn, which must be a policy's ARN.
func (p iamParams) policyArn() (string, *iamErr) {
	arn, e := p.required("PolicyArn")
	if e != nil {
		return "", e
	}
	if len(arn) < 20 || len(arn) > 2048 || !iamPolicyArnPattern.MatchString(arn) {
		return "", iamError(http.StatusBadRequest, "InvalidInput", "ARN %s is not valid.", arn)
	}
	return arn, nil
}

// rolePolicy reads the role (RoleName) and the policy an action names:
// policy reads the policy's ARN or name.
func (s *iamService) rolePolicy(p iamParams, policy func(iamParams) (string, *iamErr)) (*iamRole, string, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, "", e
	}
	name, e := policy(p)
	return r, name, e
}

// inlinePolicy returns the document of the role's inline policy name, or
// NoSuchEntity.
func (r *iamRole) inlinePolicy(name string) (string, *iamErr) {
	doc, ok := r.inline[name]
	if !ok {
		return "", iamError(http.StatusNotFound, "NoSuchEntity", "The role policy with name %s cannot be found.", name)
	}
	return doc, nil
}

func (s *iamService) attachRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, arn, e := s.rolePolicy(p, iamParams.policyArn)
	if e != nil {
		return nil, e
	}
	if _, e := s.policy(arn); e != nil {
		return nil, e
	}
	if !r.attached[arn] && len(r.attached) >= iamPoliciesPerRole {
		return nil, iamError(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for PoliciesPerRole: %d", iamPoliciesPerRole)
	}
	r.attached[arn] = true
	return nil, nil
}

func (s *iamService) detachRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, arn, e := s.rolePolicy(p, iamParams.policyArn)
	if e != nil {
		return nil, e
	}
	if !r.attached[arn] {
		return nil, iamError(http.StatusNotFound, "NoSuchEntity", "Policy %s was not found.", arn)
	}
	delete(r.attached, arn)
	return nil, nil
}

func (s *iamService) listAttachedRolePolicies(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	prefix := "/"
	if p.Has("PathPrefix") {
		prefix = p.Get("PathPrefix")
		if !iamPathPrefixPattern.MatchString(prefix) {
			return nil, iamValidation(prefix, "pathPrefix", `Member must satisfy regular expression pattern: ((/[A-Za-z0-9\.,\+@=_-]+)*)/`)
		}
	}
	var arns []string
	for arn := range r.attached {
		// The policy's path is what lies between "policy" and its name.
		_, rest, _ := strings.Cut(arn, ":policy")
		if strings.HasPrefix(rest, prefix) {
			arns = append(arns, arn)
		}
	}
	return iamList(p, "AttachedPolicies", arns, func(x *iamXML, arn string) {
		x.open("member").elem("PolicyName", s.policies[arn].name).elem("PolicyArn", arn).close("member")
	})
}

// policyName reads PolicyName, which must be a valid policy name.
func (p iamParams) policyName() (string, *iamErr) { return p.name("PolicyName", 128) }

func (s *iamService) putRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, name, e := s.rolePolicy(p, iamParams.policyName)
	if e != nil {
		return nil, e
	}
	doc, e := p.policyDocument("PolicyDocument")
	if e != nil {
		return nil, e
	}
	r.inline[name] = doc
	return nil, nil
}

func (s *iamService) getRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, name, e := s.rolePolicy(p, iamParams.policyName)
	if e != nil {
		return nil, e
	}
	doc, e := r.inlinePolicy(name)
	if e != nil {
		return nil, e
	}
	var x iamXML
	x.elem("RoleName", r.name).elem("PolicyName", name).elem("PolicyDocument", iamEncode(doc))
	return &x, nil
}

func (s *iamService) deleteRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, name, e := s.rolePolicy(p, iamParams.policyName)
	if e != nil {
		return nil, e
	}
	if _, e := r.inlinePolicy(name); e != nil {
		return nil, e
	}
	delete(r.inline, name)
	return nil, nil
}

func (s *iamService) listRolePolicies(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	return iamList(p, "PolicyNames", slices.Collect(maps.Keys(r.inline)), func(x *iamXML, name string) {
		x.elem("member", name)
	})
}
