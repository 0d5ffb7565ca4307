package emulator

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Managed policies: AWS's (attachable, not changeable) and the account's
// own (customer managed), each with up to five versions, one of them the
// default, and tags. As the IAM API Reference documents CreatePolicy,
// GetPolicy, ListPolicies, DeletePolicy, CreatePolicyVersion,
// GetPolicyVersion, ListPolicyVersions, DeletePolicyVersion, TagPolicy,
// UntagPolicy and ListPolicyTags
// (https://docs.aws.amazon.com/IAM/latest/APIReference/API_<Action>.html).

// iamVersionsPerPolicy is how many versions a managed policy can have
// (CreatePolicyVersion: "A managed policy can have up to five versions").
const iamVersionsPerPolicy = 5

// iamPolicy is a managed policy as the emulator keeps it.
type iamPolicy struct {
	name, path, id, arn string
	description         string // "": none; immutable
	aws                 bool   // AWS's own: no one may change or delete it
	created, updated    time.Time
	tags                []iamTag
	versions            []iamPolicyVersion // oldest first
	defaultVersion      string
	nextVersion         int // the number of the next version's id
}

type iamPolicyVersion struct {
	id, doc string // doc as given: IAM keeps the text
	created time.Time
}

// iamPolicyPathPattern is CreatePolicy's Path: / alone, or / ... / of the
// characters ! to DEL but the asterisk, which "You cannot use ... in the
// path name".
var iamPolicyPathPattern = regexp.MustCompile(`^(/|/[\x21-\x29\x2B-\x7F]+/)$`)

// policy finds a managed policy by ARN.
func (s *iamService) policy(arn string) (*iamPolicy, *iamErr) {
	if pol, ok := s.policies[arn]; ok {
		return pol, nil
	}
	return nil, iamError(http.StatusNotFound, "NoSuchEntity", "Policy %s does not exist or is not attachable.", arn)
}

// ownPolicy finds the account's managed policy PolicyArn names: AWS's own
// cannot be changed by anyone else.
func (s *iamService) ownPolicy(p iamParams) (*iamPolicy, *iamErr) {
	arn, e := p.policyArn()
	if e != nil {
		return nil, e
	}
	pol, e := s.policy(arn)
	if e == nil && pol.aws {
		return nil, iamError(http.StatusForbidden, "AccessDenied", "User is not authorized to change policy %s: it is an AWS managed policy.", arn)
	}
	return pol, e
}

// attachments counts the roles a policy is attached to.
func (s *iamService) attachments(arn string) int {
	n := 0
	for _, r := range s.roles {
		if r.attached[arn] {
			n++
		}
	}
	return n
}

// version returns the policy's version id, or NoSuchEntity.
func (pol *iamPolicy) version(id string) (int, *iamErr) {
	i := slices.IndexFunc(pol.versions, func(v iamPolicyVersion) bool { return v.id == id })
	if i < 0 {
		return 0, iamError(http.StatusNotFound, "NoSuchEntity", "Policy %s version %s does not exist or is not attachable.", pol.arn, id)
	}
	return i, nil
}

// addVersion makes doc the policy's next version, its default when
// asDefault.
func (pol *iamPolicy) addVersion(doc string, asDefault bool) iamPolicyVersion {
	v := iamPolicyVersion{id: "v" + strconv.Itoa(pol.nextVersion), doc: doc, created: time.Now().UTC().Truncate(time.Second)}
	pol.nextVersion++
	pol.versions = append(pol.versions, v)
	if asDefault {
		pol.defaultVersion, pol.updated = v.id, v.created
	}
	return v
}

// policy writes a Policy element's content; full adds what GetPolicy
// and CreatePolicy tell and ListPolicies does not (description, tags).
func (x *iamXML) policy(s *iamService, pol *iamPolicy, full bool) *iamXML {
	x.elem("PolicyName", pol.name).elem("PolicyId", pol.id).elem("Arn", pol.arn).elem("Path", pol.path).
		elem("DefaultVersionId", pol.defaultVersion).elem("AttachmentCount", strconv.Itoa(s.attachments(pol.arn))).
		elem("PermissionsBoundaryUsageCount", "0").elem("IsAttachable", "true")
	if full && pol.description != "" {
		x.elem("Description", pol.description)
	}
	x.elem("CreateDate", pol.created.Format(time.RFC3339)).elem("UpdateDate", pol.updated.Format(time.RFC3339))
	if full {
		x.tags(pol.tags)
	}
	return x
}

func (s *iamService) policyResult(pol *iamPolicy) *iamXML {
	var x iamXML
	x.open("Policy").policy(s, pol, true).close("Policy")
	return &x
}

// version writes a PolicyVersion element: its document only when asked
// (GetPolicyVersion; not CreatePolicyVersion nor ListPolicyVersions).
func (x *iamXML) version(pol *iamPolicy, v iamPolicyVersion, doc bool) *iamXML {
	if doc {
		x.elem("Document", iamEncode(v.doc))
	}
	return x.elem("VersionId", v.id).elem("IsDefaultVersion", strconv.FormatBool(v.id == pol.defaultVersion)).
		elem("CreateDate", v.created.Format(time.RFC3339))
}

// managedPolicySize is the most characters a managed policy's document
// may hold, white space not counted ("IAM and AWS STS quotas", IAM object
// quotas: managed policy character size 6,144):
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_iam-quotas.html
const managedPolicySize = 6144

// managedDocument reads the PolicyDocument of a managed policy (or of a
// version of one): LimitExceeded past managedPolicySize.
func (p iamParams) managedDocument() (string, *iamErr) {
	doc, e := p.policyDocument("PolicyDocument")
	if e != nil {
		return "", e
	}
	n := 0
	for _, r := range doc {
		if !unicode.IsSpace(r) {
			n++
		}
	}
	if n > managedPolicySize {
		return "", iamError(http.StatusConflict, "LimitExceeded", "Cannot exceed quota for PolicySize: %d", managedPolicySize)
	}
	return doc, nil
}

func (s *iamService) createPolicy(p iamParams) (*iamXML, *iamErr) {
	name, e := p.policyName()
	if e != nil {
		return nil, e
	}
	doc, e := p.managedDocument()
	if e != nil {
		return nil, e
	}
	path := "/"
	if p.Has("Path") {
		path = p.Get("Path")
		if len(path) > 512 || !iamPolicyPathPattern.MatchString(path) {
			return nil, iamValidation(path, "path", `Member must satisfy regular expression pattern: ((/[A-Za-z0-9\.,\+@=_-]+)*)/`)
		}
	}
	desc := p.Get("Description")
	if utf8.RuneCountInString(desc) > 1000 {
		return nil, iamValidation(desc, "description", "Member must have length less than or equal to 1000")
	}
	tags, e := p.tags("Tags")
	if e != nil {
		return nil, e
	}
	for _, pol := range s.policies {
		if !pol.aws && strings.EqualFold(pol.name, name) {
			return nil, iamError(http.StatusConflict, "EntityAlreadyExists", "A policy called %s already exists. Duplicate names are not allowed.", name)
		}
	}
	pol := &iamPolicy{name: name, path: path, id: iamUniqueID("ANPA"), arn: "arn:aws:iam::" + s.account + ":policy" + path + name,
		description: desc, tags: tags, nextVersion: 1}
	pol.created = pol.addVersion(doc, true).created
	s.policies[pol.arn] = pol
	return s.policyResult(pol), nil
}

func (s *iamService) getPolicy(p iamParams) (*iamXML, *iamErr) {
	arn, e := p.policyArn()
	if e != nil {
		return nil, e
	}
	pol, e := s.policy(arn)
	if e != nil {
		return nil, e
	}
	return s.policyResult(pol), nil
}

// listPolicies lists managed policies: Scope All (the default), AWS or
// Local, only those attached to something with OnlyAttached, under
// PathPrefix (default /).
func (s *iamService) listPolicies(p iamParams) (*iamXML, *iamErr) {
	scope := "All"
	if p.Has("Scope") {
		scope = p.Get("Scope")
		if scope != "All" && scope != "AWS" && scope != "Local" {
			return nil, iamValidation(scope, "scope", "Member must satisfy enum value set: [All, AWS, Local]")
		}
	}
	onlyAttached := p.Get("OnlyAttached") == "true"
	prefix := "/"
	if p.Has("PathPrefix") {
		prefix = p.Get("PathPrefix")
		if len(prefix) > 512 || !iamPathPrefixPattern.MatchString(prefix) {
			return nil, iamValidation(prefix, "pathPrefix", `Member must satisfy regular expression pattern: \u002F[\u0021-\u007F]*`)
		}
	}
	var arns []string
	for arn, pol := range s.policies {
		if (scope == "AWS" && !pol.aws) || (scope == "Local" && pol.aws) || !strings.HasPrefix(pol.path, prefix) ||
			(onlyAttached && s.attachments(arn) == 0) {
			continue
		}
		arns = append(arns, arn)
	}
	return iamList(p, "Policies", arns, func(x *iamXML, arn string) {
		x.open("member").policy(s, s.policies[arn], false).close("member")
	})
}

// deletePolicy deletes one of the account's policies, which must be
// attached to nothing and have no version but its default (DeletePolicy:
// detach it and delete its other versions first; DeleteConflict).
func (s *iamService) deletePolicy(p iamParams) (*iamXML, *iamErr) {
	pol, e := s.ownPolicy(p)
	if e != nil {
		return nil, e
	}
	if s.attachments(pol.arn) > 0 {
		return nil, iamError(http.StatusConflict, "DeleteConflict", "Cannot delete a policy attached to entities.")
	}
	if len(pol.versions) > 1 {
		return nil, iamError(http.StatusConflict, "DeleteConflict",
			"This policy has more than one version. Before you delete a policy, you must delete the policy's versions. The default version is deleted with the policy.")
	}
	delete(s.policies, pol.arn)
	return nil, nil
}

// createPolicyVersion adds a version, LimitExceeded when the policy has
// five already.
func (s *iamService) createPolicyVersion(p iamParams) (*iamXML, *iamErr) {
	pol, e := s.ownPolicy(p)
	if e != nil {
		return nil, e
	}
	doc, e := p.managedDocument()
	if e != nil {
		return nil, e
	}
	if len(pol.versions) >= iamVersionsPerPolicy {
		return nil, iamError(http.StatusConflict, "LimitExceeded",
			"A managed policy can have up to %d versions. Before you create a new version, you must delete an existing version.", iamVersionsPerPolicy)
	}
	v := pol.addVersion(doc, p.Get("SetAsDefault") == "true")
	var x iamXML
	x.open("PolicyVersion").version(pol, v, false).close("PolicyVersion")
	return &x, nil
}

// policyVersion reads the policy (PolicyArn) and the index of its version
// VersionId.
func (s *iamService) policyVersion(p iamParams, own bool) (*iamPolicy, int, *iamErr) {
	var pol *iamPolicy
	var e *iamErr
	if own {
		pol, e = s.ownPolicy(p)
	} else {
		var arn string
		if arn, e = p.policyArn(); e == nil {
			pol, e = s.policy(arn)
		}
	}
	if e != nil {
		return nil, 0, e
	}
	id, e := p.required("VersionId")
	if e != nil {
		return nil, 0, e
	}
	i, e := pol.version(id)
	return pol, i, e
}

func (s *iamService) getPolicyVersion(p iamParams) (*iamXML, *iamErr) {
	pol, i, e := s.policyVersion(p, false)
	if e != nil {
		return nil, e
	}
	var x iamXML
	x.open("PolicyVersion").version(pol, pol.versions[i], true).close("PolicyVersion")
	return &x, nil
}

func (s *iamService) listPolicyVersions(p iamParams) (*iamXML, *iamErr) {
	arn, e := p.policyArn()
	if e != nil {
		return nil, e
	}
	pol, e := s.policy(arn)
	if e != nil {
		return nil, e
	}
	// Keys that sort as the versions were made.
	byKey := map[string]iamPolicyVersion{}
	for i, v := range pol.versions {
		byKey[fmt.Sprintf("%03d", i)] = v
	}
	keys := make([]string, 0, len(byKey))
	for k := range byKey {
		keys = append(keys, k)
	}
	return iamList(p, "Versions", keys, func(x *iamXML, k string) {
		x.open("member").version(pol, byKey[k], false).close("member")
	})
}

// deletePolicyVersion deletes a version other than the default
// (DeleteConflict for the default: DeletePolicy deletes it).
func (s *iamService) deletePolicyVersion(p iamParams) (*iamXML, *iamErr) {
	pol, i, e := s.policyVersion(p, true)
	if e != nil {
		return nil, e
	}
	if pol.versions[i].id == pol.defaultVersion {
		return nil, iamError(http.StatusConflict, "DeleteConflict", "Cannot delete the default version of a policy.")
	}
	pol.versions = slices.Delete(pol.versions, i, i+1)
	return nil, nil
}

func (s *iamService) tagPolicy(p iamParams) (*iamXML, *iamErr) {
	pol, e := s.ownPolicy(p)
	if e != nil {
		return nil, e
	}
	pol.tags, e = p.tagged(pol.tags)
	return nil, e
}

func (s *iamService) untagPolicy(p iamParams) (*iamXML, *iamErr) {
	pol, e := s.ownPolicy(p)
	if e != nil {
		return nil, e
	}
	pol.tags, e = p.untagged(pol.tags)
	return nil, e
}

func (s *iamService) listPolicyTags(p iamParams) (*iamXML, *iamErr) {
	pol, e := s.ownPolicy(p)
	if e != nil {
		return nil, e
	}
	return iamTagList(p, pol.tags)
}
