package emulator

import (
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// IAM is a global service answering the query protocol (POST form
// Action=...&Version=2010-05-08) with XML. Requests signed for any region
// reach the same roles.

const (
	iamVersion   = "2010-05-08"
	iamNamespace = "https://iam.amazonaws.com/doc/2010-05-08/"
)

// iamService emulates IAM roles, their managed policy attachments, inline
// policies and tags, and managed policies: AWS's (a selection) and the
// account's own, with their versions and tags.
type iamService struct {
	account string

	mu       sync.Mutex
	roles    map[string]*iamRole   // by lowercased name: role names are unique regardless of case
	policies map[string]*iamPolicy // managed policies by ARN
}

// iamRole is a role as the emulator keeps it.
type iamRole struct {
	name, path, id, arn string
	assumeRolePolicy    string // as given: AWS keeps the text
	description         string // "": none
	maxSession          int
	created             time.Time
	tags                []iamTag          // in the order given; keys unique
	attached            map[string]bool   // managed policy ARNs
	inline              map[string]string // policy name -> document as given
}

type iamTag struct{ key, value string }

// iamManagedPolicies are the AWS managed policies the emulator knows (a
// small selection: attaching any other ARN fails with NoSuchEntity).
var iamManagedPolicies = []string{
	"arn:aws:iam::aws:policy/AdministratorAccess",
	"arn:aws:iam::aws:policy/PowerUserAccess",
	"arn:aws:iam::aws:policy/ReadOnlyAccess",
	"arn:aws:iam::aws:policy/AmazonS3ReadOnlyAccess",
	"arn:aws:iam::aws:policy/AmazonS3FullAccess",
	"arn:aws:iam::aws:policy/AmazonEC2ReadOnlyAccess",
	"arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryReadOnly",
	"arn:aws:iam::aws:policy/AmazonEC2ContainerRegistryPowerUser",
	"arn:aws:iam::aws:policy/CloudWatchLogsFullAccess",
	"arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole",
	"arn:aws:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole",
}

func newIAM(opts Options) *iamService {
	s := &iamService{account: opts.accountID(), roles: map[string]*iamRole{}, policies: map[string]*iamPolicy{}}
	created := time.Date(2015, 2, 6, 18, 39, 46, 0, time.UTC)
	for _, arn := range iamManagedPolicies {
		_, pathName, _ := strings.Cut(arn, ":policy")
		i := strings.LastIndexByte(pathName, '/')
		s.policies[arn] = &iamPolicy{name: pathName[i+1:], path: pathName[:i+1], arn: arn, id: iamUniqueID("ANPA"), aws: true,
			created: created, updated: created, defaultVersion: "v1", nextVersion: 2,
			versions: []iamPolicyVersion{{id: "v1", doc: `{"Version":"2012-10-17","Statement":[]}`, created: created}}}
	}
	return s
}

// iamErr is an IAM error response.
type iamErr struct {
	status    int
	code, msg string
}

func iamError(status int, code, format string, args ...any) *iamErr {
	return &iamErr{status: status, code: code, msg: fmt.Sprintf(format, args...)}
}

// iamValidation is AWS's message for a parameter that breaks its model's
// constraints.
func iamValidation(value any, field, constraint string) *iamErr {
	v := "null"
	if value != nil {
		v = fmt.Sprintf("'%v'", value)
	}
	return iamError(http.StatusBadRequest, "ValidationError",
		"1 validation error detected: Value %s at '%s' failed to satisfy constraint: %s", v, field, constraint)
}

// iamHandler answers one operation: the content of its Result element.
type iamHandler func(s *iamService, p iamParams) (*iamXML, *iamErr)

// iamOps are the operations, with whether their response has a Result
// element.
var iamOps = map[string]struct {
	fn     iamHandler
	result bool
}{
	"CreateRole":               {(*iamService).createRole, true},
	"GetRole":                  {(*iamService).getRole, true},
	"ListRoles":                {(*iamService).listRoles, true},
	"UpdateRole":               {(*iamService).updateRole, true},
	"UpdateRoleDescription":    {(*iamService).updateRoleDescription, true},
	"UpdateAssumeRolePolicy":   {(*iamService).updateAssumeRolePolicy, false},
	"DeleteRole":               {(*iamService).deleteRole, false},
	"TagRole":                  {(*iamService).tagRole, false},
	"UntagRole":                {(*iamService).untagRole, false},
	"ListRoleTags":             {(*iamService).listRoleTags, true},
	"AttachRolePolicy":         {(*iamService).attachRolePolicy, false},
	"DetachRolePolicy":         {(*iamService).detachRolePolicy, false},
	"ListAttachedRolePolicies": {(*iamService).listAttachedRolePolicies, true},
	"PutRolePolicy":            {(*iamService).putRolePolicy, false},
	"GetRolePolicy":            {(*iamService).getRolePolicy, true},
	"DeleteRolePolicy":         {(*iamService).deleteRolePolicy, false},
	"ListRolePolicies":         {(*iamService).listRolePolicies, true},
	"CreatePolicy":             {(*iamService).createPolicy, true},
	"GetPolicy":                {(*iamService).getPolicy, true},
	"ListPolicies":             {(*iamService).listPolicies, true},
	"DeletePolicy":             {(*iamService).deletePolicy, false},
	"CreatePolicyVersion":      {(*iamService).createPolicyVersion, true},
	"GetPolicyVersion":         {(*iamService).getPolicyVersion, true},
	"ListPolicyVersions":       {(*iamService).listPolicyVersions, true},
	"DeletePolicyVersion":      {(*iamService).deletePolicyVersion, false},
	"TagPolicy":                {(*iamService).tagPolicy, false},
	"UntagPolicy":              {(*iamService).untagPolicy, false},
	"ListPolicyTags":           {(*iamService).listPolicyTags, true},
}

// operation is the form's Action, of a body of at most 1 MiB.
func (s *iamService) operation(r *http.Request) string {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	return queryAction(r)
}

// serve answers from the form operation parsed.
func (s *iamService) serve(w http.ResponseWriter, r *http.Request, op string) {
	handler, ok := iamOps[op]
	if v := r.Form.Get("Version"); !ok || v != iamVersion {
		s.writeError(w, r, http.StatusBadRequest, "InvalidAction", fmt.Sprintf("Could not find operation %s for version %s", op, v))
		return
	}
	s.mu.Lock()
	result, e := handler.fn(s, iamParams{r.Form})
	s.mu.Unlock()
	if e != nil {
		s.writeError(w, r, e.status, e.code, e.msg)
		return
	}
	var x iamXML
	if handler.result {
		x.open(op + "Result")
		if result != nil {
			x.WriteString(result.String())
		}
		x.close(op + "Result")
	}
	id := newRequestID()
	x.open("ResponseMetadata").elem("RequestId", id).close("ResponseMetadata")
	writeIAM(w, http.StatusOK, id, op+"Response", x.String())
}

func (s *iamService) throttle() (int, string) { return http.StatusBadRequest, "Throttling" }

func (s *iamService) denied() (int, string, string) {
	return http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."
}

func (s *iamService) writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeQueryError(w, iamNamespace, status, code, message)
}

// writeQueryError answers a query-protocol request (IAM, STS) with an
// ErrorResponse in the service's namespace: Sender errors below 500,
// Receiver errors from 500.
func writeQueryError(w http.ResponseWriter, namespace string, status int, code, message string) {
	typ := "Sender"
	if status >= 500 {
		typ = "Receiver"
	}
	id := newRequestID()
	var x iamXML
	x.open("Error").elem("Type", typ).elem("Code", code).elem("Message", message).close("Error").elem("RequestId", id)
	writeQuery(w, namespace, status, id, "ErrorResponse", x.String())
}

// writeIAM answers with status and an XML document whose root element
// (in IAM's namespace) holds content; id is the request's.
func writeIAM(w http.ResponseWriter, status int, id, root, content string) {
	writeQuery(w, iamNamespace, status, id, root, content)
}

// writeQuery answers a query-protocol request with status and an XML
// document whose root element, in namespace, holds content.
func writeQuery(w http.ResponseWriter, namespace string, status int, id, root, content string) {
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("x-amzn-RequestId", id)
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `%s<%s xmlns="%s">%s</%s>`, xml.Header, root, namespace, content, root)
}

// iamUniqueID is an IAM unique id: a 4-letter prefix (AROA for roles) and
// 17 uppercase letters and digits.
func iamUniqueID(prefix string) string {
	return prefix + randomString("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", 17)
}

// randomString is n random characters of alphabet.
func randomString(alphabet string, n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// iamXML builds the XML of a result; text is escaped.
type iamXML struct{ strings.Builder }

func (x *iamXML) open(name string) *iamXML {
	x.WriteString("<" + name + ">")
	return x
}

func (x *iamXML) close(name string) *iamXML {
	x.WriteString("</" + name + ">")
	return x
}

func (x *iamXML) elem(name, text string) *iamXML {
	x.open(name)
	_ = xml.EscapeText(x, []byte(text))
	return x.close(name)
}

// iamParams are a request's form parameters.
type iamParams struct{ url.Values }

// required returns a parameter that must be present; field is its name in
// AWS's validation messages (lower camel case).
func (p iamParams) required(name string) (string, *iamErr) {
	if !p.Has(name) {
		return "", iamValidation(nil, lowerFirst(name), "Member must not be null")
	}
	return p.Get(name), nil
}

// list returns the members of a list parameter: Name.member.1, ...
func (p iamParams) list(name string) []string {
	var out []string
	for i := 1; ; i++ {
		k := fmt.Sprintf("%s.member.%d", name, i)
		if !p.Has(k) {
			return out
		}
		out = append(out, p.Get(k))
	}
}

// tags returns the Tags.member.N.Key/Value of a request.
func (p iamParams) tags(name string) ([]iamTag, *iamErr) {
	var out []iamTag
	seen := map[string]bool{}
	for i := 1; ; i++ {
		prefix := fmt.Sprintf("%s.member.%d.", name, i)
		if !p.Has(prefix+"Key") && !p.Has(prefix+"Value") {
			break
		}
		t := iamTag{key: p.Get(prefix + "Key"), value: p.Get(prefix + "Value")}
		if n := utf8.RuneCountInString(t.key); n < 1 || n > 128 {
			return nil, iamValidation(t.key, fmt.Sprintf("tags.%d.member.key", i), "Member must have length between 1 and 128")
		}
		if utf8.RuneCountInString(t.value) > 256 {
			return nil, iamValidation(t.value, fmt.Sprintf("tags.%d.member.value", i), "Member must have length less than or equal to 256")
		}
		if seen[strings.ToLower(t.key)] {
			return nil, iamError(http.StatusBadRequest, "InvalidInput", "Duplicate tag keys found. Please note that Tag keys are case insensitive.")
		}
		seen[strings.ToLower(t.key)] = true
		out = append(out, t)
	}
	if len(out) > 50 {
		return nil, iamValidation(len(out), lowerFirst(name), "Member must have length less than or equal to 50")
	}
	return out, nil
}

// tagged returns have with the request's Tags added, or changed where
// a key is there already (regardless of case): TagRole, TagPolicy.
func (p iamParams) tagged(have []iamTag) ([]iamTag, *iamErr) {
	if !p.Has("Tags") && !p.Has("Tags.member.1.Key") {
		return have, iamValidation(nil, "tags", "Member must not be null")
	}
	tags, e := p.tags("Tags")
	if e != nil {
		return have, e
	}
	merged := slices.Clone(have)
	for _, t := range tags {
		i := slices.IndexFunc(merged, func(o iamTag) bool { return strings.EqualFold(o.key, t.key) })
		if i >= 0 {
			merged[i] = t
		} else {
			merged = append(merged, t)
		}
	}
	if len(merged) > 50 {
		return have, iamError(http.StatusConflict, "LimitExceeded", "The number of tags has reached the maximum limit.")
	}
	return merged, nil
}

// untagged returns have without the request's TagKeys (regardless of
// case): UntagRole, UntagPolicy.
func (p iamParams) untagged(have []iamTag) ([]iamTag, *iamErr) {
	keys := p.list("TagKeys")
	if keys == nil && !p.Has("TagKeys") {
		return have, iamValidation(nil, "tagKeys", "Member must not be null")
	}
	return slices.DeleteFunc(slices.Clone(have), func(t iamTag) bool {
		return slices.ContainsFunc(keys, func(k string) bool { return strings.EqualFold(k, t.key) })
	}), nil
}

// iamTagList is the result of ListRoleTags and ListPolicyTags: the tags
// sorted by key, a page at a time.
func iamTagList(p iamParams, tags []iamTag) (*iamXML, *iamErr) {
	values := map[string]string{}
	for _, t := range tags {
		values[t.key] = t.value
	}
	return iamList(p, "Tags", slices.Collect(maps.Keys(values)), func(x *iamXML, k string) {
		x.open("member").elem("Key", k).elem("Value", values[k]).close("member")
	})
}

// tagsXML writes a Tags element (nothing when there are none).
func (x *iamXML) tags(tags []iamTag) *iamXML {
	if len(tags) > 0 {
		x.open("Tags")
		for _, t := range tags {
			x.open("member").elem("Key", t.key).elem("Value", t.value).close("member")
		}
		x.close("Tags")
	}
	return x
}

// page reads Marker and MaxItems (1..1000, default 100).
func (p iamParams) page() (after string, max int, e *iamErr) {
	max = 100
	if p.Has("MaxItems") {
		n, err := strconv.Atoi(p.Get("MaxItems"))
		if err != nil {
			return "", 0, iamValidation(p.Get("MaxItems"), "maxItems", "Member must be an integer")
		}
		if n < 1 {
			return "", 0, iamValidation(n, "maxItems", "Member must have value greater than or equal to 1")
		}
		if n > 1000 {
			return "", 0, iamValidation(n, "maxItems", "Member must have value less than or equal to 1000")
		}
		max = n
	}
	if p.Has("Marker") {
		var ok bool
		if after, ok = pageAfter(iamMarkerTag, p.Get("Marker")); !ok {
			return "", 0, iamError(http.StatusBadRequest, "ValidationError", "Invalid Marker.")
		}
	}
	return after, max, nil
}

// iamMarkerTag marks IAM's markers (pageToken).
const iamMarkerTag = "iam:"

// iamList is the result of a List action: the page of keys (sorted here)
// that Marker and MaxItems ask for as list's members (member writes one),
// then IsTruncated and Marker.
func iamList(p iamParams, list string, keys []string, member func(x *iamXML, key string)) (*iamXML, *iamErr) {
	after, max, e := p.page()
	if e != nil {
		return nil, e
	}
	slices.Sort(keys)
	page, next := paginate(keys, after, max, iamMarkerTag)
	var x iamXML
	x.open(list)
	for _, k := range page {
		member(&x, k)
	}
	x.close(list)
	if next == "" {
		x.elem("IsTruncated", "false")
	} else {
		x.elem("IsTruncated", "true").elem("Marker", next)
	}
	return &x, nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}

// iamEncode percent-encodes a policy document as IAM returns it (RFC 3986:
// everything but unreserved characters).
func iamEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

var (
	iamNamePattern        = regexp.MustCompile(`^[\w+=,.@-]+$`)
	iamPathPattern        = regexp.MustCompile(`^(/|/[\x21-\x7E]+/)$`)
	iamPathPrefixPattern  = regexp.MustCompile(`^/[\x21-\x7F]*$`)
	iamDescriptionPattern = regexp.MustCompile(`^[\x{0009}\x{000A}\x{000D}\x{0020}-\x{007E}\x{00A1}-\x{00FF}]*$`)
	iamPolicyArnPattern   = regexp.MustCompile(`^arn:aws[a-z-]*:iam::(aws|\d{12}):policy/.+$`)
)

// name reads a role or policy name, the required parameter key ("RoleName",
// "PolicyName"), of at most maxLen characters.
func (p iamParams) name(key string, maxLen int) (string, *iamErr) {
	v, e := p.required(key)
	if e != nil {
		return "", e
	}
	if n := utf8.RuneCountInString(v); n < 1 || n > maxLen {
		return "", iamValidation(v, lowerFirst(key), fmt.Sprintf("Member must have length between 1 and %d", maxLen))
	}
	if !iamNamePattern.MatchString(v) {
		return "", iamValidation(v, lowerFirst(key), `Member must satisfy regular expression pattern: [\w+=,.@-]+`)
	}
	return v, nil
}

// policyDocument reads a policy document, the required parameter key: JSON
// text whose value is an object (AWS parses and validates much more; the
// emulator only refuses what is not a policy at all).
func (p iamParams) policyDocument(key string) (string, *iamErr) {
	doc, e := p.required(key)
	if e != nil {
		return "", e
	}
	if n := utf8.RuneCountInString(doc); n < 1 || n > 131072 {
		return "", iamValidation(doc, lowerFirst(key), "Member must have length between 1 and 131072")
	}
	if t := strings.TrimLeft(doc, " \t\r\n"); !strings.HasPrefix(t, "{") || !json.Valid([]byte(doc)) {
		return "", iamError(http.StatusBadRequest, "MalformedPolicyDocument", "Syntax errors in policy.")
	}
	return doc, nil
}
