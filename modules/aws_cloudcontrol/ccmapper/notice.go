package ccmapper

import (
	"slices"
	"strings"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/internal/trail"
	"github.com/iasql/iasql/modules/module"
)

var _ module.Noticer = (*Mapper)(nil)

// ccSource is the eventSource of Cloud Control's own calls.
const ccSource = "cloudcontrolapi.amazonaws.com"

// maxNoticed bounds the resources one event of the type's service names
// (read by matching names, not by a rule the service publishes): a wrong
// identity only costs a GetResource that finds nothing, but an event that
// seems to name many is more likely about something else.
const maxNoticed = 2

// Noticed names the resources of the type an event made, changed or
// deleted, by identity (the primary identifier's values and, where it is
// part of the identity, the event's region). Two kinds of events do:
//
//   - Cloud Control's CreateResource, UpdateResource and DeleteResource
//     of the type (requestParameters.typeName): the requestParameters'
//     identifier, else the responseElements' progressEvent.identifier,
//     else the identifier the desiredState holds (a create whose
//     identifier the user gives)
//     (https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/logging-using-cloudtrail.html,
//     https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_ProgressEvent.html);
//   - the type's own service's calls (AWS::SQS::Queue's are
//     sqs.amazonaws.com's; source), but reads (Get, List, Describe...):
//     the values that the requestParameters and responseElements hold
//     under the identifier's property names, regardless of case (QueueUrl
//     is logged as queueUrl), or under the name prefixed by the
//     resource's (a rule's Arn is logged as ruleArn), the shallowest
//     found; else the resources[] ARNs that are the type's (an ARN
//     identifier as it is; another identifier as the ARN's last part).
//     At most maxNoticed.
//
// A type whose identifier is below a property (NestedIdentifier) notices
// nothing: its identity cannot be rendered alone.
func (m *Mapper) Noticed(ev module.Event) []string {
	t := m.t
	if t.NestedIdentifier() {
		return nil
	}
	var idents []string
	switch {
	case ev.Source == ccSource:
		idents = m.ccIdentifiers(ev)
	case ev.Source == source(t.TypeName) && !isRead(ev.Name):
		idents = m.serviceIdentifiers(ev)
		if len(idents) > maxNoticed {
			return nil
		}
	}
	var ids []string
	for _, ident := range idents {
		if r := m.identity(ev.Region, ident); r != nil {
			ids = append(ids, module.CloudIDOf(t.ModuleTable(), r))
		}
	}
	return trail.Unique(ids)
}

// ccIdentifiers is the identifier a Cloud Control call of the type names.
func (m *Mapper) ccIdentifiers(ev module.Event) []string {
	if !slices.Contains([]string{"CreateResource", "UpdateResource", "DeleteResource"}, ev.Name) ||
		!strings.EqualFold(trail.String(ev.Request, "typeName"), m.t.TypeName) {
		return nil
	}
	if id := trail.String(ev.Request, "identifier"); id != "" {
		return []string{id}
	}
	if id := trail.String(ev.Response, "progressEvent", "identifier"); id != "" {
		return []string{id}
	}
	if model, err := schema.DecodeModel(trail.String(ev.Request, "desiredState")); err == nil && model != nil {
		if id := m.t.IdentifierOf(m.t.ToRecord(model)); id != "" {
			return []string{id}
		}
	}
	return nil
}

// serviceIdentifiers are the identifiers a call of the type's service
// names (see Noticed).
func (m *Mapper) serviceIdentifiers(ev module.Event) []string {
	t := m.t
	resource := resourceName(t.TypeName)
	arnish := len(t.Identifier) == 1 && strings.HasSuffix(strings.ToLower(t.Identifier[0]), "arn")
	// Each part of the identifier, at the shallowest depth it is found.
	parts := make([][]string, len(t.Identifier))
	for i, p := range t.Identifier {
		keys := []string{p, resource + p}
		for depth := 0; depth <= 3 && len(parts[i]) == 0; depth++ {
			for _, doc := range []map[string]any{ev.Request, ev.Response} {
				for _, v := range valuesAt(doc, keys, depth) {
					if _, isARN := trail.ParseARN(v); isARN == arnish && !slices.Contains(parts[i], v) {
						parts[i] = append(parts[i], v)
					}
				}
			}
		}
	}
	if len(parts) == 1 {
		if len(parts[0]) > 0 {
			return parts[0]
		}
		return m.resourceIdentifiers(ev.Resources, resource, arnish)
	}
	// A composite identifier: one value of each part, or none.
	ident := make([]string, len(parts))
	for i, vs := range parts {
		if len(vs) != 1 {
			return nil
		}
		ident[i] = vs[0]
	}
	return []string{strings.Join(ident, "|")}
}

// resourceIdentifiers are the identifiers of the resources[] ARNs that
// are of the type's service and, where the ARN names a resource type
// (TYPE/ID or TYPE:ID), of the type's (log-group is LogGroup's): the ARN
// itself for an identifier that is an ARN, else its ID (without a log
// group's trailing :*).
func (m *Mapper) resourceIdentifiers(arns []string, resource string, arnish bool) []string {
	svc := strings.TrimSuffix(source(m.t.TypeName), ".amazonaws.com")
	var out []string
	for _, s := range arns {
		a, ok := trail.ParseARN(s)
		if !ok || (a.Service != svc && a.Service != strings.ToLower(serviceOf(m.t.TypeName))) {
			continue
		}
		kind, id, typed := strings.Cut(a.Resource, "/")
		if k, i, ok := strings.Cut(a.Resource, ":"); ok && (!typed || len(k) < len(kind)) {
			kind, id, typed = k, i, true
		}
		if typed && !strings.EqualFold(strings.NewReplacer("-", "", "_", "").Replace(kind), resource) {
			continue
		}
		switch {
		case arnish:
			out = append(out, s)
		case typed && len(m.t.Identifier) == 1:
			out = append(out, strings.TrimSuffix(id, ":*"))
		}
	}
	return trail.Unique(out)
}

// valuesAt are the scalar values under any of keys (regardless of case)
// at depth levels below doc (0: doc's own keys), lists crossed freely.
func valuesAt(doc any, keys []string, depth int) []string {
	level := []any{doc}
	for range depth {
		var next []any
		for _, v := range level {
			for _, e := range elementsOf(v) {
				if obj, ok := e.(map[string]any); ok {
					for _, child := range obj {
						next = append(next, child)
					}
				}
			}
		}
		level = next
	}
	var out []string
	for _, v := range level {
		for _, e := range elementsOf(v) {
			for _, k := range keys {
				for _, s := range trail.Strings(e, k) {
					if !slices.Contains(out, s) {
						out = append(out, s)
					}
				}
			}
		}
	}
	return out
}

// elementsOf is a list's elements, or v alone.
func elementsOf(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// isRead reports whether a call only reads, by its name's verb (AWS does
// not deliver reads to EventBridge; LookupEvents returns them).
func isRead(name string) bool {
	for _, verb := range []string{"Get", "List", "Describe", "BatchGet", "Head", "Lookup", "Search", "Scan", "Query", "Select"} {
		if rest, ok := strings.CutPrefix(name, verb); ok && (rest == "" || rest[0] >= 'A' && rest[0] <= 'Z') {
			return true
		}
	}
	return false
}

// serviceOf is a type name's service (AWS::SQS::Queue: SQS).
func serviceOf(typeName string) string {
	parts := strings.Split(typeName, "::")
	if len(parts) != 3 {
		return ""
	}
	return parts[1]
}

// resourceName is a type name's resource, lower case (AWS::SQS::Queue:
// queue).
func resourceName(typeName string) string {
	parts := strings.Split(typeName, "::")
	return strings.ToLower(parts[len(parts)-1])
}

// sources are the eventSources of the services whose CloudTrail name is
// not their type names' service in lower case
// (https://docs.aws.amazon.com/service-authorization/latest/reference/reference_policies_actions-resources-contextkeys.html
// lists each service's prefix, which its eventSource begins with).
var sources = map[string]string{
	"ApiGatewayV2":           "apigateway",
	"ApplicationAutoScaling": "application-autoscaling",
	"CertificateManager":     "acm",
	"CloudWatch":             "monitoring",
	"DocDB":                  "rds",
	"EFS":                    "elasticfilesystem",
	"ElasticLoadBalancingV2": "elasticloadbalancing",
	"Elasticsearch":          "es",
	"EventSchemas":           "schemas",
	"KinesisFirehose":        "firehose",
	"MSK":                    "kafka",
	"Neptune":                "rds",
	"NetworkFirewall":        "network-firewall",
	"OpenSearchService":      "es",
	"StepFunctions":          "states",
}

// source is the eventSource of a type's service's calls
// (AWS::SQS::Queue: sqs.amazonaws.com).
func source(typeName string) string {
	svc := serviceOf(typeName)
	if s, ok := sources[svc]; ok {
		return s + ".amazonaws.com"
	}
	return strings.ToLower(svc) + ".amazonaws.com"
}
