package emulator

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

const (
	ec2Namespace = "http://ec2.amazonaws.com/doc/2016-11-15/"
	// ec2MaxTags is AWS's limit of tags per resource.
	ec2MaxTags = 50
)

// ec2Service is EC2 (query protocol: a form with Action=..., XML answers):
// regions and zones, VPCs, subnets, security groups and their rules,
// instances (ec2_instances.go), and tags on them. Every region of Regions exists, created on first use with
// AWS's defaults (a default VPC with one default subnet per zone); each
// VPC has its "default" security group. Resources live in the region the
// request is signed for; ids are unique across regions.
type ec2Service struct {
	account string
	// seed makes this emulator's ids differ from another's.
	seed uint64

	// disabled: regions the account has not enabled (Options.DisabledRegions).
	disabled map[string]bool

	// Instance transitions (Options): pending -> running takes startDelay,
	// stopping -> stopped and shutting-down -> terminated stopDelay; a
	// terminated instance is listed for terminatedVisible.
	startDelay, stopDelay, terminatedVisible time.Duration

	mu      sync.Mutex
	counter uint64                // guarded by mu; ids are derived from it
	regions map[string]*ec2Region // guarded by mu; created on first use
}

func newEC2(opts Options) *ec2Service {
	visible := opts.TerminatedVisibleFor
	if visible == 0 {
		visible = ec2DefaultTerminatedVisibleFor
	}
	return &ec2Service{account: opts.accountID(), seed: rand.Uint64(), regions: map[string]*ec2Region{}, disabled: opts.disabled(),
		startDelay: opts.InstanceStartDelay, stopDelay: opts.InstanceStopDelay, terminatedVisible: visible}
}

// ec2Handler does one action in a region and writes the elements of its
// response into x; it must change nothing when it fails. It runs with
// the service's mutex held.
type ec2Handler func(s *ec2Service, rg *ec2Region, p ec2Params, x *ec2XML) error

// ec2Actions are the actions the emulator answers.
var ec2Actions = map[string]ec2Handler{
	"DescribeRegions":                            (*ec2Service).describeRegions,
	"DescribeAvailabilityZones":                  (*ec2Service).describeAvailabilityZones,
	"CreateVpc":                                  (*ec2Service).createVpc,
	"DescribeVpcs":                               (*ec2Service).describeVpcs,
	"DeleteVpc":                                  (*ec2Service).deleteVpc,
	"CreateSubnet":                               (*ec2Service).createSubnet,
	"DescribeSubnets":                            (*ec2Service).describeSubnets,
	"DeleteSubnet":                               (*ec2Service).deleteSubnet,
	"CreateSecurityGroup":                        (*ec2Service).createSecurityGroup,
	"DescribeSecurityGroups":                     (*ec2Service).describeSecurityGroups,
	"DeleteSecurityGroup":                        (*ec2Service).deleteSecurityGroup,
	"AuthorizeSecurityGroupIngress":              ec2Directed((*ec2Service).authorize, false),
	"AuthorizeSecurityGroupEgress":               ec2Directed((*ec2Service).authorize, true),
	"RevokeSecurityGroupIngress":                 ec2Directed((*ec2Service).revoke, false),
	"RevokeSecurityGroupEgress":                  ec2Directed((*ec2Service).revoke, true),
	"DescribeSecurityGroupRules":                 (*ec2Service).describeSecurityGroupRules,
	"ModifySecurityGroupRules":                   (*ec2Service).modifySecurityGroupRules,
	"UpdateSecurityGroupRuleDescriptionsIngress": ec2Directed((*ec2Service).updateDescriptions, false),
	"UpdateSecurityGroupRuleDescriptionsEgress":  ec2Directed((*ec2Service).updateDescriptions, true),
	"RunInstances":                               (*ec2Service).runInstances,
	"DescribeInstances":                          (*ec2Service).describeInstances,
	"StopInstances":                              (*ec2Service).stopInstances,
	"StartInstances":                             (*ec2Service).startInstances,
	"TerminateInstances":                         (*ec2Service).terminateInstances,
	"ModifyInstanceAttribute":                    (*ec2Service).modifyInstanceAttribute,
	"DescribeInstanceAttribute":                  (*ec2Service).describeInstanceAttribute,
	"CreateTags":                                 (*ec2Service).createTags,
	"DeleteTags":                                 (*ec2Service).deleteTags,
}

// ec2Directed is the handler of an action on the rules of one direction
// (egress or ingress).
func ec2Directed(h func(s *ec2Service, rg *ec2Region, p ec2Params, x *ec2XML, egress bool) error, egress bool) ec2Handler {
	return func(s *ec2Service, rg *ec2Region, p ec2Params, x *ec2XML) error { return h(s, rg, p, x, egress) }
}

func (s *ec2Service) operation(r *http.Request) string { return queryAction(r) }

func (s *ec2Service) throttle() (int, string) {
	return http.StatusServiceUnavailable, "RequestLimitExceeded"
}

// denied is AWS's answer to a request for a region the account has not
// enabled (and to credentials it cannot validate): AuthFailure, HTTP 401.
// https://docs.aws.amazon.com/AWSEC2/latest/APIReference/errors-overview.html
func (s *ec2Service) denied() (int, string, string) {
	return http.StatusUnauthorized, "AuthFailure", "AWS was not able to validate the provided access credentials"
}

func (s *ec2Service) writeError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	writeEC2Error(w, newRequestID(), &ec2Error{status: status, code: code, msg: message})
}

func (s *ec2Service) serve(w http.ResponseWriter, r *http.Request, op string) {
	id := newRequestID()
	x := ec2Buffers.Get().(*ec2XML) // the response, the action's elements written in place
	defer func() { x.Reset(); ec2Buffers.Put(x) }()
	fmt.Fprintf(x, "%s<%sResponse xmlns=\"%s\"><requestId>%s</requestId>", xml.Header, op, ec2Namespace, id)
	if err := s.do(r, op, x); err != nil {
		writeEC2Error(w, id, asEC2Error(err))
		return
	}
	fmt.Fprintf(x, "</%sResponse>", op)
	writeEC2(w, http.StatusOK, x.Bytes())
}

// ec2Buffers are response buffers, reused: a listing's page (1000 rules)
// is about a megabyte.
var ec2Buffers = sync.Pool{New: func() any { return new(ec2XML) }}

// do runs the request's action, on the form operation parsed, under the
// mutex. A DryRun request gets DryRunOperation without further checks.
func (s *ec2Service) do(r *http.Request, op string, x *ec2XML) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	h, ok := ec2Actions[op]
	if !ok && ec2APIActions[op] {
		return &ec2Error{status: http.StatusNotImplemented, code: "NotImplemented",
			msg: fmt.Sprintf("The emulator does not implement EC2 %s.", op)}
	}
	if !ok {
		return ec2Errorf("InvalidAction", "The action %s is not valid for this web service.", op)
	}
	region, _ := credentialScope(r)
	rg, err := s.region(region)
	if err != nil {
		return err
	}
	s.advance(rg, time.Now())
	ignore, _ := r.Context().Value(ignoreClientTokenKey{}).(bool)
	p := ec2Params{Values: r.Form, ignoreToken: ignore}
	if p.Get("DryRun") == "true" {
		return &ec2Error{status: http.StatusPreconditionFailed, code: "DryRunOperation",
			msg: "Request would have succeeded, but DryRun flag is set."}
	}
	return h(s, rg, p, x)
}

// region returns the state of a region, creating it with AWS's defaults
// on first use.
func (s *ec2Service) region(name string) (*ec2Region, error) {
	if rg, ok := s.regions[name]; ok {
		return rg, nil
	}
	for _, r := range Regions() {
		if r.Name == name {
			rg := s.newRegion(r)
			s.regions[name] = rg
			return rg, nil
		}
	}
	return nil, &ec2Error{status: http.StatusUnauthorized, code: "AuthFailure",
		msg: fmt.Sprintf("The request is signed for region %q, which the emulator does not offer.", name)}
}

// newID returns prefix-<17 hex digits>, unique in this emulator: a
// bijective mix of a counter, so ids look random but never repeat.
func (s *ec2Service) newID(prefix string) string {
	s.counter++
	return fmt.Sprintf("%s-0%016x", prefix, ec2Mix(s.seed+s.counter))
}

// ec2Mix is the splitmix64 finalizer, a bijection on uint64.
func ec2Mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

func (s *ec2Service) arn(rg *ec2Region, kind, id string) string {
	return "arn:aws:ec2:" + rg.name + ":" + s.account + ":" + kind + "/" + id
}

// ec2Error is an EC2 API error.
type ec2Error struct {
	status    int
	code, msg string
}

func (e *ec2Error) Error() string { return e.code + ": " + e.msg }

// ec2Errorf is a client error (HTTP 400).
func ec2Errorf(code, format string, args ...any) *ec2Error {
	return &ec2Error{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

func asEC2Error(err error) *ec2Error {
	if e, ok := err.(*ec2Error); ok {
		return e
	}
	return &ec2Error{status: http.StatusInternalServerError, code: "InternalError", msg: err.Error()}
}

func writeEC2Error(w http.ResponseWriter, requestID string, e *ec2Error) {
	var x ec2XML
	x.WriteString(xml.Header + "<Response><Errors><Error>")
	x.str("Code", e.code)
	x.str("Message", e.msg)
	x.WriteString("</Error></Errors>")
	x.str("RequestID", requestID)
	x.WriteString("</Response>")
	writeEC2(w, e.status, x.Bytes())
}

// writeEC2 answers with status and an XML body.
func writeEC2(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "text/xml;charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// ec2Params are a request's form values, with the query protocol's list
// conventions: Name.1, Name.2 for lists, Name.1.Field for lists of
// structures. ignoreToken: an injected IgnoreClientToken fault applies to
// the request.
type ec2Params struct {
	url.Values
	ignoreToken bool
}

// members returns the prefixes of a list's members ("Filter.1",
// "Filter.2", ...) in index order.
func (p ec2Params) members(prefix string) []string {
	var idx []int
	for k := range p.Values {
		rest, ok := strings.CutPrefix(k, prefix+".")
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '.'); i >= 0 {
			rest = rest[:i]
		}
		n, err := strconv.Atoi(rest)
		if err != nil || n < 1 || slices.Contains(idx, n) {
			continue
		}
		idx = append(idx, n)
	}
	slices.Sort(idx)
	out := make([]string, len(idx))
	for i, n := range idx {
		out[i] = prefix + "." + strconv.Itoa(n)
	}
	return out
}

// strings returns a list of strings (Name.1, Name.2, ...).
func (p ec2Params) strings(prefix string) []string {
	ms := p.members(prefix)
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		if p.Has(m) {
			out = append(out, p.Get(m))
		}
	}
	return out
}

// integer returns an optional 32-bit integer parameter.
func (p ec2Params) integer(key string) (v int32, set bool, err error) {
	if !p.Has(key) {
		return 0, false, nil
	}
	n, err := strconv.ParseInt(p.Get(key), 10, 32)
	if err != nil {
		return 0, true, ec2Errorf("InvalidParameterValue", "Invalid value '%s' for %s: not an integer", p.Get(key), key)
	}
	return int32(n), true, nil
}

// required returns a parameter that must be present.
func (p ec2Params) required(key string) (string, error) {
	if !p.Has(key) {
		return "", ec2Errorf("MissingParameter", "The request must contain the parameter %s", key)
	}
	return p.Get(key), nil
}

// ec2XML builds an XML response body.
type ec2XML struct{ bytes.Buffer }

func (x *ec2XML) open(tag string) {
	x.WriteByte('<')
	x.WriteString(tag)
	x.WriteByte('>')
}

func (x *ec2XML) close(tag string) {
	x.WriteString("</")
	x.WriteString(tag)
	x.WriteByte('>')
}

// str writes <tag>v</tag>, v escaped.
func (x *ec2XML) str(tag, v string) {
	x.open(tag)
	x.escape(v)
	x.close(tag)
}

// opt writes <tag>v</tag> unless v is empty.
func (x *ec2XML) opt(tag, v string) {
	if v != "" {
		x.str(tag, v)
	}
}

func (x *ec2XML) int(tag string, v int32) {
	x.open(tag)
	x.WriteString(strconv.Itoa(int(v)))
	x.close(tag)
}

func (x *ec2XML) bool(tag string, v bool) {
	x.open(tag)
	x.WriteString(strconv.FormatBool(v))
	x.close(tag)
}

func (x *ec2XML) escape(v string) {
	start := 0
	for i := 0; i < len(v); i++ {
		var esc string
		switch v[i] {
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '&':
			esc = "&amp;"
		case '"':
			esc = "&quot;"
		case '\'':
			esc = "&apos;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		case '\t':
			esc = "&#x9;"
		default:
			if v[i] >= 0x20 {
				continue
			}
			esc = "\uFFFD" // not allowed in XML 1.0
		}
		x.WriteString(v[start:i])
		x.WriteString(esc)
		start = i + 1
	}
	x.WriteString(v[start:])
}
