package emulator

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Elastic Load Balancing v2 (application load balancers): the query
// protocol (POST form Action=...&Version=2015-12-01, signed as
// "elasticloadbalancing"), XML answers in ELBv2's namespace, errors as
// <ErrorResponse> with HTTP 400 (every error of the API reference is 400).
// Load balancers, listeners, target groups and their targets are kept per
// region; subnets, security groups and instances are the EC2 emulator's,
// read under its lock (always taken after this service's, never before).
// AWS's reference:
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/Welcome.html

const (
	elbVersion   = "2015-12-01"
	elbNamespace = "http://elasticloadbalancing.amazonaws.com/doc/2015-12-01/"
	elbMaxTags   = 50
)

// elbHostedZones are the Route 53 hosted zones of application load
// balancers' DNS names, by region (AWS's "Elastic Load Balancing endpoints
// and quotas" page).
var elbHostedZones = map[string]string{
	"us-east-1": "Z35SXDOTRQ7X7K", "us-east-2": "Z3AADJGX6KTTL2", "us-west-2": "Z1H1FL5HABSF5",
	"eu-west-1": "Z32O12XQLNTSW2", "eu-central-1": "Z215JYRZR1TBD5", "ap-southeast-2": "Z1GM3OXH4ZPM65",
}

type elbService struct {
	account     string
	ec2         *ec2Service
	activeDelay time.Duration
	healthDelay time.Duration

	mu      sync.Mutex
	counter uint64
	regions map[string]*elbRegion // guarded by mu
}

func newELBv2(opts Options, ec2 *ec2Service) *elbService {
	return &elbService{account: opts.accountID(), ec2: ec2, activeDelay: opts.LoadBalancerActiveDelay,
		healthDelay: opts.TargetHealthyDelay, regions: map[string]*elbRegion{}}
}

type elbRegion struct {
	name      string
	lbs       map[string]*elbLB       // by ARN
	tgs       map[string]*elbTG       // by ARN
	listeners map[string]*elbListener // by ARN
}

// elbErr is an ELBv2 error; all of the API's are HTTP 400.
type elbErr struct {
	status    int
	code, msg string
}

func elbError(code, format string, args ...any) *elbErr {
	return &elbErr{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// elbCall is one request: its region, parameters and time.
type elbCall struct {
	rg  *elbRegion
	p   iamParams
	now time.Time
}

// elbHandler answers one operation with the content of its Result element.
type elbHandler func(s *elbService, c elbCall, x *iamXML) *elbErr

var elbOps = map[string]elbHandler{
	"CreateLoadBalancer":             (*elbService).createLoadBalancer,
	"DescribeLoadBalancers":          (*elbService).describeLoadBalancers,
	"DeleteLoadBalancer":             (*elbService).deleteLoadBalancer,
	"SetSecurityGroups":              (*elbService).setSecurityGroups,
	"SetSubnets":                     (*elbService).setSubnets,
	"DescribeLoadBalancerAttributes": (*elbService).describeLoadBalancerAttributes,
	"ModifyLoadBalancerAttributes":   (*elbService).modifyLoadBalancerAttributes,
	"CreateTargetGroup":              (*elbService).createTargetGroup,
	"DescribeTargetGroups":           (*elbService).describeTargetGroups,
	"ModifyTargetGroup":              (*elbService).modifyTargetGroup,
	"DeleteTargetGroup":              (*elbService).deleteTargetGroup,
	"DescribeTargetGroupAttributes":  (*elbService).describeTargetGroupAttributes,
	"ModifyTargetGroupAttributes":    (*elbService).modifyTargetGroupAttributes,
	"RegisterTargets":                (*elbService).registerTargets,
	"DeregisterTargets":              (*elbService).deregisterTargets,
	"DescribeTargetHealth":           (*elbService).describeTargetHealth,
	"CreateListener":                 (*elbService).createListener,
	"DescribeListeners":              (*elbService).describeListeners,
	"ModifyListener":                 (*elbService).modifyListener,
	"DeleteListener":                 (*elbService).deleteListener,
	"AddTags":                        (*elbService).addTags,
	"RemoveTags":                     (*elbService).removeTags,
	"DescribeTags":                   (*elbService).describeTags,
}

func (s *elbService) operation(r *http.Request) string {
	r.Body = http.MaxBytesReader(nil, r.Body, 1<<20)
	return queryAction(r)
}

// throttle: ELBv2's common errors name Throttling (HTTP 400).
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/CommonErrors.html
func (s *elbService) throttle() (int, string) { return http.StatusBadRequest, "Throttling" }

func (s *elbService) denied() (int, string, string) {
	return http.StatusForbidden, "InvalidClientTokenId", "The security token included in the request is invalid."
}

func (s *elbService) writeError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	writeQueryError(w, elbNamespace, status, code, message)
}

func (s *elbService) serve(w http.ResponseWriter, r *http.Request, op string) {
	handler, ok := elbOps[op]
	if v := r.Form.Get("Version"); !ok || v != elbVersion {
		code, status := "InvalidAction", http.StatusBadRequest
		if elbAPIActions[op] && v == elbVersion {
			code, status = "NotImplemented", http.StatusNotImplemented
		}
		s.writeError(w, r, status, code, fmt.Sprintf("Could not find operation %s for version %s", op, v))
		return
	}
	region, _ := credentialScope(r)
	if _, ok := elbHostedZones[region]; !ok {
		s.writeError(w, r, http.StatusForbidden, "InvalidClientTokenId",
			fmt.Sprintf("The request is signed for region %q, which the emulator does not offer.", region))
		return
	}
	s.mu.Lock()
	rg := s.region(region)
	now := time.Now()
	rg.settle(now)
	var x iamXML
	x.open(op + "Result")
	e := handler(s, elbCall{rg: rg, p: iamParams{r.Form}, now: now}, &x)
	s.mu.Unlock()
	if e != nil {
		s.writeError(w, r, e.status, e.code, e.msg)
		return
	}
	x.close(op + "Result")
	id := newRequestID()
	x.open("ResponseMetadata").elem("RequestId", id).close("ResponseMetadata")
	writeQuery(w, elbNamespace, http.StatusOK, id, op+"Response", x.String())
}

// elbAPIActions are the ELBv2 API's other operations (aws-sdk-go-v2's
// elasticloadbalancingv2 v1.63.7): NotImplemented (501) rather than
// InvalidAction.
var elbAPIActions = map[string]bool{
	"AddListenerCertificates": true, "AddTrustStoreRevocations": true, "CreateRule": true, "CreateTrustStore": true,
	"DeleteRule": true, "DeleteSharedTrustStoreAssociation": true, "DeleteTrustStore": true, "DescribeAccountLimits": true,
	"DescribeCapacityReservation": true, "DescribeListenerAttributes": true, "DescribeListenerCertificates": true,
	"DescribeRules": true, "DescribeSSLPolicies": true, "DescribeTrustStoreAssociations": true,
	"DescribeTrustStoreRevocations": true, "DescribeTrustStores": true, "GetResourcePolicy": true,
	"GetTrustStoreCaCertificatesBundle": true, "GetTrustStoreRevocationContent": true, "ModifyCapacityReservation": true,
	"ModifyIpPools": true, "ModifyListenerAttributes": true, "ModifyRule": true, "ModifyTrustStore": true,
	"RemoveListenerCertificates": true, "RemoveTrustStoreRevocations": true, "SetIpAddressType": true,
	"SetRulePriorities": true,
}

// region returns a region's state, made on first use.
func (s *elbService) region(name string) *elbRegion {
	rg := s.regions[name]
	if rg == nil {
		rg = &elbRegion{name: name, lbs: map[string]*elbLB{}, tgs: map[string]*elbTG{}, listeners: map[string]*elbListener{}}
		s.regions[name] = rg
	}
	return rg
}

// withEC2 runs f on the EC2 state of the call's region, under EC2's lock,
// its instance transitions settled.
func (s *elbService) withEC2(c elbCall, f func(rg *ec2Region) *elbErr) *elbErr {
	s.ec2.mu.Lock()
	defer s.ec2.mu.Unlock()
	rg, err := s.ec2.region(c.rg.name)
	if err != nil {
		return &elbErr{status: http.StatusForbidden, code: "InvalidClientTokenId", msg: err.Error()}
	}
	s.ec2.advance(rg, c.now)
	return f(rg)
}

// newID is a 16-hex-digit id, unique in this emulator, as ARNs end with.
func (s *elbService) newID() string {
	s.counter++
	return fmt.Sprintf("%016x", ec2Mix(s.counter^s.ec2.seed))
}

func (s *elbService) arn(rg *elbRegion, resource string) string {
	return "arn:aws:elasticloadbalancing:" + rg.name + ":" + s.account + ":" + resource
}

// elbNameRe: load balancer and target group names are 1 to 32
// alphanumeric characters or hyphens, not starting or ending with a
// hyphen (CreateLoadBalancer's and CreateTargetGroup's Name).
var elbNameRe = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$`)

// elbValidName checks a name of what ("LoadBalancer", "Target group").
func elbValidName(what, name string) *elbErr {
	switch {
	case name == "":
		return elbError("ValidationError", "%s name cannot be empty", what)
	case len(name) > 32:
		return elbError("ValidationError", "%s name cannot be longer than '32' characters", what)
	case !elbNameRe.MatchString(name):
		return elbError("ValidationError", "%s name '%s' can only contain alphanumeric characters and hyphens, and cannot begin or end with a hyphen", what, name)
	}
	return nil
}

// required returns a parameter that must be present (ValidationError).
func elbRequired(p iamParams, name string) (string, *elbErr) {
	if !p.Has(name) || p.Get(name) == "" {
		return "", elbError("ValidationError", "1 validation error detected: Value null at '%s' failed to satisfy constraint: Member must not be null", lowerFirst(name))
	}
	return p.Get(name), nil
}

// elbInt reads an optional integer parameter within [lo, hi].
func elbInt(p iamParams, name string, lo, hi int) (int, bool, *elbErr) {
	if !p.Has(name) {
		return 0, false, nil
	}
	n, err := strconv.Atoi(p.Get(name))
	if err != nil || n < lo || n > hi {
		return 0, true, elbError("ValidationError", "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must have value between %d and %d", p.Get(name), lowerFirst(name), lo, hi)
	}
	return n, true, nil
}

// elbPage reads Marker and PageSize (1..400, 400 by default; DescribeLoadBalancers'
// reference) for a listing whose markers are tagged tag.
func elbPage(p iamParams, tag string) (after string, size int, e *elbErr) {
	size, set, e := elbInt(p, "PageSize", 1, 400)
	if e != nil {
		return "", 0, e
	}
	if !set {
		size = 400
	}
	if m := p.Get("Marker"); m != "" {
		var ok bool
		if after, ok = pageAfter(tag, m); !ok {
			return "", 0, elbError("ValidationError", "The marker '%s' is not valid", m)
		}
	}
	return after, size, nil
}

// writePage writes, as the list element, the page of keys (sorted, each
// once) that Marker (after) and PageSize (size) ask for, each item by
// write, and NextMarker when more follow: ELBv2's describe calls.
func writePage(x *iamXML, list string, keys []string, after string, size int, tag string, write func(key string)) {
	slices.Sort(keys)
	keys = slices.Compact(keys)
	page, next := paginate(keys, after, size, tag)
	x.open(list)
	for _, k := range page {
		write(k)
	}
	x.close(list)
	if next != "" {
		x.elem("NextMarker", next)
	}
}

// elbFingerprint is a create request's parameters but tags, for AWS's
// idempotent creates ("same settings").
func elbFingerprint(p iamParams) string {
	keys := make([]string, 0, len(p.Values))
	for k := range p.Values {
		if k == "Action" || k == "Version" || strings.HasPrefix(k, "Tags.") {
			continue
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + strings.Join(p.Values[k], "\x00") + "\n")
	}
	return b.String()
}

// elbTags reads Tags.member.N.Key/Value: DuplicateTagKeys for a key
// given twice, TooManyTags past 50.
func elbTags(p iamParams) (ec2Tags, *elbErr) {
	var tags ec2Tags
	for i := 1; ; i++ {
		k := fmt.Sprintf("Tags.member.%d", i)
		if !p.Has(k+".Key") && !p.Has(k+".Value") {
			break
		}
		key, value := p.Get(k+".Key"), p.Get(k+".Value")
		switch {
		case key == "" || utf8.RuneCountInString(key) > 128 || utf8.RuneCountInString(value) > 256:
			return nil, elbError("ValidationError", "Tag key must be 1 to 128 characters and value at most 256: '%s'", key)
		case awsOwnTag(key):
			return nil, elbError("ValidationError", "Tag keys starting with 'aws:' are reserved for internal use")
		}
		if _, ok := tags.get(key); ok {
			return nil, elbError("DuplicateTagKeys", "A tag key was specified more than once: '%s'", key)
		}
		tags.set(key, value)
	}
	if len(tags) > elbMaxTags {
		return nil, elbError("TooManyTags", "You've reached the limit on the number of tags for this resource")
	}
	return tags, nil
}

func elbWriteTags(x *iamXML, tags ec2Tags) {
	x.open("Tags")
	for _, t := range tags {
		x.open("member").elem("Key", t.key).elem("Value", t.value).close("member")
	}
	x.close("Tags")
}

// taggable returns the tags of the resource with arn, or the not-found
// error of its kind.
func (rg *elbRegion) taggable(arn string) (*ec2Tags, *elbErr) {
	switch {
	case strings.Contains(arn, ":loadbalancer/"):
		if lb := rg.lbs[arn]; lb != nil {
			return &lb.tags, nil
		}
		return nil, elbError("LoadBalancerNotFound", "Load balancer '%s' not found", arn)
	case strings.Contains(arn, ":targetgroup/"):
		if tg := rg.tgs[arn]; tg != nil {
			return &tg.tags, nil
		}
		return nil, elbError("TargetGroupNotFound", "Target group '%s' not found", arn)
	case strings.Contains(arn, ":listener/"):
		if l := rg.listeners[arn]; l != nil {
			return &l.tags, nil
		}
		return nil, elbError("ListenerNotFound", "Listener '%s' not found", arn)
	}
	return nil, elbError("ValidationError", "'%s' is not a valid load balancer, target group or listener ARN", arn)
}

// addTags adds or overwrites tags on resources (ResourceArns, Tags), all
// or none.
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_AddTags.html
func (s *elbService) addTags(c elbCall, x *iamXML) *elbErr {
	arns := c.p.list("ResourceArns")
	if len(arns) == 0 {
		return elbError("ValidationError", "ResourceArns must not be empty")
	}
	tags, e := elbTags(c.p)
	if e != nil {
		return e
	}
	var targets []*ec2Tags
	for _, arn := range arns {
		t, e := c.rg.taggable(arn)
		if e != nil {
			return e
		}
		n := len(*t)
		for _, tag := range tags {
			if _, ok := t.get(tag.key); !ok {
				n++
			}
		}
		if n > elbMaxTags {
			return elbError("TooManyTags", "You've reached the limit on the number of tags for resource '%s'", arn)
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		for _, tag := range tags {
			t.set(tag.key, tag.value)
		}
	}
	return nil
}

// removeTags removes tag keys (TagKeys) from resources (ResourceArns).
func (s *elbService) removeTags(c elbCall, x *iamXML) *elbErr {
	arns := c.p.list("ResourceArns")
	if len(arns) == 0 {
		return elbError("ValidationError", "ResourceArns must not be empty")
	}
	var targets []*ec2Tags
	for _, arn := range arns {
		t, e := c.rg.taggable(arn)
		if e != nil {
			return e
		}
		targets = append(targets, t)
	}
	for _, t := range targets {
		for _, k := range c.p.list("TagKeys") {
			t.del(k)
		}
	}
	return nil
}

// describeTags answers the tags of up to 20 resources (ResourceArns).
// https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_DescribeTags.html
func (s *elbService) describeTags(c elbCall, x *iamXML) *elbErr {
	arns := c.p.list("ResourceArns")
	if len(arns) == 0 || len(arns) > 20 {
		return elbError("ValidationError", "Between 1 and 20 ResourceArns must be given")
	}
	x.open("TagDescriptions")
	for _, arn := range arns {
		t, e := c.rg.taggable(arn)
		if e != nil {
			return e
		}
		x.open("member").elem("ResourceArn", arn)
		elbWriteTags(x, *t)
		x.close("member")
	}
	x.close("TagDescriptions")
	return nil
}

// elbAttributes are the attributes of a load balancer or target group
// with their defaults; Modify takes only these keys.
func elbWriteAttributes(x *iamXML, attrs map[string]string) {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	x.open("Attributes")
	for _, k := range keys {
		x.open("member").elem("Key", k).elem("Value", attrs[k]).close("member")
	}
	x.close("Attributes")
}

// elbModifyAttributes applies Attributes.member.N.Key/Value to attrs, all
// or none; an unknown key is InvalidConfigurationRequest.
func elbModifyAttributes(p iamParams, attrs map[string]string) *elbErr {
	changes := map[string]string{}
	for i := 1; ; i++ {
		k := fmt.Sprintf("Attributes.member.%d", i)
		if !p.Has(k + ".Key") {
			break
		}
		key := p.Get(k + ".Key")
		if _, ok := attrs[key]; !ok {
			return elbError("InvalidConfigurationRequest", "Key %s not valid", key)
		}
		changes[key] = p.Get(k + ".Value")
	}
	if len(changes) == 0 {
		return elbError("ValidationError", "Attributes must not be empty")
	}
	for k, v := range changes {
		attrs[k] = v
	}
	return nil
}
