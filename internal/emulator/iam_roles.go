package emulator

import (
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// roleName reads RoleName, which must be a valid role name.
func (p iamParams) roleName() (string, *iamErr) { return p.name("RoleName", 64) }

// role finds the role RoleName names, regardless of case like IAM.
func (s *iamService) role(p iamParams) (*iamRole, *iamErr) {
	name, e := p.roleName()
	if e != nil {
		return nil, e
	}
	r, ok := s.roles[strings.ToLower(name)]
	if !ok {
		return nil, iamError(http.StatusNotFound, "NoSuchEntity", "The role with name %s cannot be found.", name)
	}
	return r, nil
}

func iamCheckDescription(d string) *iamErr {
	if utf8.RuneCountInString(d) > 1000 {
		return iamValidation(d, "description", "Member must have length less than or equal to 1000")
	}
	if !iamDescriptionPattern.MatchString(d) {
		return iamValidation(d, "description", `Member must satisfy regular expression pattern: [\u0009\u000A\u000D\u0020-\u007E\u00A1-\u00FF]*`)
	}
	return nil
}

func iamMaxSession(p iamParams) (int, bool, *iamErr) {
	if !p.Has("MaxSessionDuration") {
		return 0, false, nil
	}
	v := p.Get("MaxSessionDuration")
	n, err := strconv.Atoi(v)
	switch {
	case err != nil:
		return 0, false, iamValidation(v, "maxSessionDuration", "Member must be an integer")
	case n < 3600:
		return 0, false, iamValidation(n, "maxSessionDuration", "Member must have value greater than or equal to 3600")
	case n > 43200:
		return 0, false, iamValidation(n, "maxSessionDuration", "Member must have value less than or equal to 43200")
	}
	return n, true, nil
}

// roleXML writes a Role element's content. full adds what GetRole and
// CreateRole tell and ListRoles does not (tags, last use).
func (x *iamXML) role(r *iamRole, full bool) *iamXML {
	x.elem("Path", r.path).elem("RoleName", r.name).elem("RoleId", r.id).elem("Arn", r.arn).
		elem("CreateDate", r.created.UTC().Format(time.RFC3339)).
		elem("AssumeRolePolicyDocument", iamEncode(r.assumeRolePolicy))
	if r.description != "" {
		x.elem("Description", r.description)
	}
	x.elem("MaxSessionDuration", strconv.Itoa(r.maxSession))
	if full {
		x.tags(r.tags).WriteString("<RoleLastUsed/>")
	}
	return x
}

// iamRoleResult is the result of an action answering with the role.
func iamRoleResult(r *iamRole) *iamXML {
	var x iamXML
	x.open("Role").role(r, true).close("Role")
	return &x
}

func (s *iamService) createRole(p iamParams) (*iamXML, *iamErr) {
	name, e := p.roleName()
	if e != nil {
		return nil, e
	}
	doc, e := p.policyDocument("AssumeRolePolicyDocument")
	if e != nil {
		return nil, e
	}
	path := "/"
	if p.Has("Path") {
		path = p.Get("Path")
		if len(path) > 512 || !iamPathPattern.MatchString(path) {
			return nil, iamValidation(path, "path", `Member must satisfy regular expression pattern: (\u002F)|(\u002F[\u0021-\u007E]+\u002F)`)
		}
	}
	desc := p.Get("Description")
	if e := iamCheckDescription(desc); e != nil {
		return nil, e
	}
	maxSession, ok, e := iamMaxSession(p)
	if e != nil {
		return nil, e
	}
	if !ok {
		maxSession = 3600
	}
	tags, e := p.tags("Tags")
	if e != nil {
		return nil, e
	}
	if _, dup := s.roles[strings.ToLower(name)]; dup {
		return nil, iamError(http.StatusConflict, "EntityAlreadyExists", "Role with name %s already exists.", name)
	}
	r := &iamRole{
		name: name, path: path, id: iamUniqueID("AROA"),
		arn:              "arn:aws:iam::" + s.account + ":role" + path + name,
		assumeRolePolicy: doc, description: desc,
		maxSession: maxSession, created: time.Now().UTC().Truncate(time.Second), tags: tags,
		attached: map[string]bool{}, inline: map[string]string{},
	}
	s.roles[strings.ToLower(name)] = r
	return iamRoleResult(r), nil
}

func (s *iamService) getRole(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	return iamRoleResult(r), nil
}

func (s *iamService) listRoles(p iamParams) (*iamXML, *iamErr) {
	prefix := "/"
	if p.Has("PathPrefix") {
		prefix = p.Get("PathPrefix")
		if len(prefix) > 512 || !iamPathPrefixPattern.MatchString(prefix) {
			return nil, iamValidation(prefix, "pathPrefix", `Member must satisfy regular expression pattern: \u002F[\u0021-\u007F]*`)
		}
	}
	var keys []string
	for k, r := range s.roles {
		if strings.HasPrefix(r.path, prefix) {
			keys = append(keys, k)
		}
	}
	return iamList(p, "Roles", keys, func(x *iamXML, k string) {
		x.open("member").role(s.roles[k], false).close("member")
	})
}

func (s *iamService) updateRole(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	maxSession, setMax, e := iamMaxSession(p)
	if e != nil {
		return nil, e
	}
	if p.Has("Description") {
		if e := iamCheckDescription(p.Get("Description")); e != nil {
			return nil, e
		}
		r.description = p.Get("Description")
	}
	if setMax {
		r.maxSession = maxSession
	}
	return nil, nil
}

func (s *iamService) updateRoleDescription(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	desc, e := p.required("Description")
	if e != nil {
		return nil, e
	}
	if e := iamCheckDescription(desc); e != nil {
		return nil, e
	}
	r.description = desc
	return iamRoleResult(r), nil
}

func (s *iamService) updateAssumeRolePolicy(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	doc, e := p.policyDocument("PolicyDocument")
	if e != nil {
		return nil, e
	}
	r.assumeRolePolicy = doc
	return nil, nil
}

func (s *iamService) deleteRole(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	if len(r.attached) > 0 {
		return nil, iamError(http.StatusConflict, "DeleteConflict", "Cannot delete entity, must detach all policies first.")
	}
	if len(r.inline) > 0 {
		return nil, iamError(http.StatusConflict, "DeleteConflict", "Cannot delete entity, must delete policies first.")
	}
	delete(s.roles, strings.ToLower(r.name))
	return nil, nil
}

func (s *iamService) tagRole(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	r.tags, e = p.tagged(r.tags)
	return nil, e
}

func (s *iamService) untagRole(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	r.tags, e = p.untagged(r.tags)
	return nil, e
}

func (s *iamService) listRoleTags(p iamParams) (*iamXML, *iamErr) {
	r, e := s.role(p)
	if e != nil {
		return nil, e
	}
	return iamTagList(p, r.tags)
}
