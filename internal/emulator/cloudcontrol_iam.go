package emulator

import (
	"encoding/json"
	"strings"
)

// iamRolePolicies keeps AWS::IAM::RolePolicy resources as the inline
// policies of the emulator's IAM roles, as AWS's handler calls
// PutRolePolicy, GetRolePolicy and DeleteRolePolicy: a policy created
// through Cloud Control is one IAM's GetRolePolicy and ListRolePolicies
// answer, and one put through IAM is a resource Cloud Control reads. The
// identifier is PolicyName|RoleName (the schema's primaryIdentifier).
// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-iam-rolepolicy.html
type iamRolePolicies struct{}

// role is the role an identifier's RoleName names, with the policy name;
// the caller holds s.iam.mu.
func (iamRolePolicies) role(s *ccService, id string) (*iamRole, string, bool) {
	policy, roleName, ok := strings.Cut(id, "|")
	if !ok {
		return nil, "", false
	}
	r, ok := s.iam.roles[strings.ToLower(roleName)]
	return r, policy, ok
}

// model is the resource of a role's inline policy: its document as an
// object (as the handler reads it back), or as text when it is none.
func rolePolicyModel(r *iamRole, name string) map[string]any {
	m := map[string]any{"PolicyName": name, "RoleName": r.name}
	if doc, err := decodeJSONValue([]byte(r.inline[name])); err == nil {
		m["PolicyDocument"] = doc
	} else {
		m["PolicyDocument"] = r.inline[name]
	}
	return m
}

func (b iamRolePolicies) get(s *ccService, _, id string) (map[string]any, bool) {
	s.iam.mu.Lock()
	defer s.iam.mu.Unlock()
	r, name, ok := b.role(s, id)
	if !ok {
		return nil, false
	}
	if _, ok := r.inline[name]; !ok {
		return nil, false
	}
	return rolePolicyModel(r, name), true
}

func (iamRolePolicies) all(s *ccService, _ string) map[string]map[string]any {
	s.iam.mu.Lock()
	defer s.iam.mu.Unlock()
	out := map[string]map[string]any{}
	for _, r := range s.iam.roles {
		for name := range r.inline {
			out[name+"|"+r.name] = rolePolicyModel(r, name)
		}
	}
	return out
}

func (b iamRolePolicies) put(s *ccService, _, id string, m map[string]any) (string, string) {
	s.iam.mu.Lock()
	defer s.iam.mu.Unlock()
	r, name, ok := b.role(s, id)
	if !ok {
		_, roleName, _ := strings.Cut(id, "|")
		return "NotFound", "The role with name " + roleName + " cannot be found. (Service: Iam, Status Code: 404, Error Code: NoSuchEntity)"
	}
	var doc string
	switch d := m["PolicyDocument"].(type) {
	case nil:
		return "InvalidRequest", "PolicyDocument is required: IAM's PutRolePolicy needs a policy document."
	case string:
		doc = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			return "InvalidRequest", "PolicyDocument: " + err.Error()
		}
		doc = string(b)
	}
	r.inline[name] = doc
	return "", ""
}

func (b iamRolePolicies) remove(s *ccService, _, id string) {
	s.iam.mu.Lock()
	defer s.iam.mu.Unlock()
	if r, name, ok := b.role(s, id); ok {
		delete(r.inline, name)
	}
}
