package emulator

import (
	"encoding/json"
	"slices"
	"strings"
	"time"
)

// Cloud Control types kept in the state of the emulator's SQS and
// EventBridge, so that a queue or rule made through Cloud Control is the
// one SQS and EventBridge serve (and the reverse), as AWS's handlers call
// those services:
//   - AWS::SQS::Queue: SQS's queues, identified by URL:
//     https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queue.html
//   - AWS::SQS::QueuePolicy: the Policy attribute of each of its Queues
//     (SetQueueAttributes); the type has no read or list handler, as AWS's:
//     https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queuepolicy.html
//   - AWS::SQS::QueueInlinePolicy: the Policy attribute of one queue,
//     identified by the queue's URL (a read handler, unlike QueuePolicy):
//     https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queueinlinepolicy.html
//   - AWS::Events::Rule: EventBridge's rules of the default bus with their
//     targets (PutRule, PutTargets), identified by ARN:
//     https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-events-rule.html
//
// And the calls every handler makes for the caller, recorded by CloudTrail
// when a request completes (userIdentity.invokedBy
// cloudcontrolapi.amazonaws.com).

// handlerCall is an API call a resource handler makes, as CloudTrail logs
// it.
type handlerCall struct {
	service, op      string // signing name (sqs, events, ...) and operation
	params, response any
}

// recordHandler records the calls a completed request's handler made;
// the caller holds s.mu.
func (s *ccService) recordHandler(r *ccRequest, sc *cfnSchema, m map[string]any) {
	if s.trail == nil {
		return
	}
	var calls []handlerCall
	if h := s.hooks[r.typeName]; h.calls != nil {
		calls = h.calls(r.op, m)
	} else {
		calls = handlerCalls(sc, r.op, m)
	}
	now := time.Now()
	for _, c := range calls {
		region := r.region
		if c.service == "iam" {
			region = defaultRegion
		}
		s.trail.record(trailCall{
			service: c.service, op: c.op, region: region, key: r.key, invokedBy: ccInvoker,
			params: c.params, response: c.response, time: now,
			named: []lookupResource{{ResourceType: r.typeName, ResourceName: r.identifier}},
		})
	}
}

// handlerVerbs are the verbs of the calls a handler makes to create,
// update or delete a resource.
var handlerVerbs = map[string][]string{
	"CREATE": {"Create", "Put", "Run", "Register", "Subscribe", "Add", "Attach"},
	"UPDATE": {"Update", "Put", "Modify", "Set", "Change"},
	"DELETE": {"Delete", "Remove", "Unsubscribe", "Terminate", "Deregister", "Detach"},
}

// handlerCalls is the call a handler without hooks of its own makes: the
// first of the handler's permissions ("logs:CreateLogGroup") with the
// operation's verb, its parameters the resource's identifier and name
// properties.
func handlerCalls(sc *cfnSchema, op string, m map[string]any) []handlerCall {
	handler := map[string]string{"CREATE": "create", "UPDATE": "update", "DELETE": "delete"}[op]
	for _, p := range sc.Handlers[handler].Permissions {
		service, action, ok := strings.Cut(p, ":")
		if !ok || !slices.ContainsFunc(handlerVerbs[op], func(v string) bool { return strings.HasPrefix(action, v) }) {
			continue
		}
		params := map[string]any{}
		for _, path := range sc.identifierPaths {
			if v, ok := m[path[0]]; ok && len(path) == 1 {
				params[lowerFirst(path[0])] = v
			}
		}
		for name, v := range m {
			if strings.HasSuffix(name, "Name") {
				params[lowerFirst(name)] = v
			}
		}
		return []handlerCall{{service: service, op: action, params: params}}
	}
	return nil
}

// queueAttributes are a queue model's SQS attributes, as strings.
func queueAttributes(m map[string]any) map[string]string {
	out := map[string]string{}
	for name, v := range m {
		if _, ok := sqsAttrs[name]; ok {
			out[name] = attrString(v)
		}
	}
	return out
}

func queueCalls(op string, m map[string]any) []handlerCall {
	url := attrString(m["QueueUrl"])
	switch op {
	case "CREATE":
		return []handlerCall{{service: "sqs", op: "CreateQueue",
			params:   map[string]any{"queueName": m["QueueName"], "attributes": queueAttributes(m)},
			response: map[string]any{"queueUrl": url}}}
	case "UPDATE":
		return []handlerCall{{service: "sqs", op: "SetQueueAttributes",
			params: map[string]any{"queueUrl": url, "attributes": queueAttributes(m)}}}
	}
	return []handlerCall{{service: "sqs", op: "DeleteQueue", params: map[string]any{"queueUrl": url}}}
}

func queuePolicyCalls(op string, m map[string]any) []handlerCall {
	policy := ""
	if op != "DELETE" {
		policy = policyText(m["PolicyDocument"])
	}
	var calls []handlerCall
	for _, q := range stringsOf(m["Queues"]) {
		calls = append(calls, handlerCall{service: "sqs", op: "SetQueueAttributes",
			params: map[string]any{"queueUrl": q, "attributes": map[string]any{"Policy": policy}}})
	}
	return calls
}

func ruleCalls(op string, m map[string]any) []handlerCall {
	name := attrString(m["Name"])
	var ids []any
	for _, t := range targetsOf(m) {
		ids = append(ids, t.ID)
	}
	if op == "DELETE" {
		calls := []handlerCall{}
		if len(ids) > 0 {
			calls = append(calls, handlerCall{service: "events", op: "RemoveTargets", params: map[string]any{"rule": name, "ids": ids}})
		}
		return append(calls, handlerCall{service: "events", op: "DeleteRule", params: map[string]any{"name": name}})
	}
	params := map[string]any{"name": name, "state": attrString(m["State"])}
	if p, ok := m["EventPattern"]; ok {
		params["eventPattern"] = policyText(p)
	}
	calls := []handlerCall{{service: "events", op: "PutRule", params: params, response: map[string]any{"ruleArn": m["Arn"]}}}
	if t, ok := m["Targets"]; ok {
		calls = append(calls, handlerCall{service: "events", op: "PutTargets",
			params:   map[string]any{"rule": name, "targets": lowerMembers(t)},
			response: map[string]any{"failedEntryCount": 0, "failedEntries": []any{}}})
	}
	return calls
}

// policyText is a document property (object or JSON text) as text.
func policyText(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// sqsQueues keeps AWS::SQS::Queue resources as SQS's queues; the caller
// holds s.mu (Cloud Control's), this takes SQS's.
type sqsQueues struct{}

func (sqsQueues) get(s *ccService, region, id string) (map[string]any, bool) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	q, e := s.sqs.byURL(region, id)
	if e != nil {
		return nil, false
	}
	return deepCopyJSON(q.props).(map[string]any), true
}

func (sqsQueues) all(s *ccService, region string) map[string]map[string]any {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	out := map[string]map[string]any{}
	for _, q := range s.sqs.queues[region] {
		out[q.url] = deepCopyJSON(q.props).(map[string]any)
	}
	return out
}

func (sqsQueues) put(s *ccService, region, id string, m map[string]any) (string, string) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	props := deepCopyJSON(m).(map[string]any)
	now := time.Now()
	if q, e := s.sqs.byURL(region, id); e == nil {
		props["QueueName"], props["QueueUrl"], props["Arn"] = q.name, q.url, q.arn
		q.props, q.modified = props, now
		return "", ""
	}
	name := attrString(m["QueueName"])
	if s.sqs.queues[region][name] != nil {
		return "AlreadyExists", "A queue named " + name + " already exists."
	}
	s.sqs.newQueue(region, name, props, now)
	return "", ""
}

func (sqsQueues) remove(s *ccService, region, id string) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	if q, e := s.sqs.byURL(region, id); e == nil {
		s.sqs.remove(q)
	}
}

// sqsQueuePolicies keeps AWS::SQS::QueuePolicy models in Cloud Control's
// store and their document as the Policy of each of their queues.
type sqsQueuePolicies struct{}

func (sqsQueuePolicies) get(s *ccService, region, id string) (map[string]any, bool) {
	m, ok := s.store(region, "AWS::SQS::QueuePolicy")[id]
	return m, ok
}

func (sqsQueuePolicies) all(s *ccService, region string) map[string]map[string]any {
	return s.store(region, "AWS::SQS::QueuePolicy")
}

// setPolicies sets the Policy of queues (by URL); the queues that do not
// exist when any does not, before changing anything.
func setPolicies(s *ccService, region string, urls []string, policy string) (code, msg string) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	var queues []*sqsQueue
	for _, u := range urls {
		q, e := s.sqs.byURL(region, u)
		if e != nil {
			return "NotFound", "The specified queue does not exist: " + u
		}
		queues = append(queues, q)
	}
	for _, q := range queues {
		q.policy, q.modified = policy, time.Now()
	}
	return "", ""
}

func (b sqsQueuePolicies) put(s *ccService, region, id string, m map[string]any) (string, string) {
	store := s.store(region, "AWS::SQS::QueuePolicy")
	if code, msg := setPolicies(s, region, stringsOf(m["Queues"]), policyText(m["PolicyDocument"])); code != "" {
		return code, msg
	}
	if prev, ok := store[id]; ok {
		var gone []string
		for _, u := range stringsOf(prev["Queues"]) {
			if !slices.Contains(stringsOf(m["Queues"]), u) {
				gone = append(gone, u)
			}
		}
		b.clear(s, region, gone)
	}
	store[id] = m
	return "", ""
}

// clear removes the policy of the queues of urls that still exist.
func (sqsQueuePolicies) clear(s *ccService, region string, urls []string) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	for _, u := range urls {
		if q, e := s.sqs.byURL(region, u); e == nil {
			q.policy, q.modified = "", time.Now()
		}
	}
}

func (b sqsQueuePolicies) remove(s *ccService, region, id string) {
	store := s.store(region, "AWS::SQS::QueuePolicy")
	if m, ok := store[id]; ok {
		b.clear(s, region, stringsOf(m["Queues"]))
	}
	delete(store, id)
}

// sqsInlinePolicies keeps AWS::SQS::QueueInlinePolicy resources as the
// Policy of the queue their URL names: a queue with a policy has one.
type sqsInlinePolicies struct{}

func inlinePolicyModel(q *sqsQueue) map[string]any {
	m := map[string]any{"Queue": q.url}
	if doc, err := decodeJSONValue([]byte(q.policy)); err == nil {
		m["PolicyDocument"] = doc
	}
	return m
}

func (sqsInlinePolicies) get(s *ccService, region, id string) (map[string]any, bool) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	q, e := s.sqs.byURL(region, id)
	if e != nil || q.policy == "" {
		return nil, false
	}
	return inlinePolicyModel(q), true
}

func (sqsInlinePolicies) all(s *ccService, region string) map[string]map[string]any {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	out := map[string]map[string]any{}
	for _, q := range s.sqs.queues[region] {
		if q.policy != "" {
			out[q.url] = inlinePolicyModel(q)
		}
	}
	return out
}

func (sqsInlinePolicies) put(s *ccService, region, id string, m map[string]any) (string, string) {
	return setPolicies(s, region, []string{id}, policyText(m["PolicyDocument"]))
}

func (sqsInlinePolicies) remove(s *ccService, region, id string) {
	sqsQueuePolicies{}.clear(s, region, []string{id})
}

// eventRules keeps AWS::Events::Rule resources as EventBridge's rules of
// the default bus.
type eventRules struct{}

// ruleName is the name of the rule an ARN names.
func ruleName(arn string) string {
	_, name, _ := strings.Cut(arn, ":rule/")
	return name
}

// ruleModel is a rule as its read handler answers it (EventPattern as an
// object).
func ruleModel(r *ebRule) map[string]any {
	m := map[string]any{"Arn": r.arn, "Name": r.name, "State": r.state, "EventBusName": "default"}
	if r.pattern != "" {
		if doc, err := decodeJSONValue([]byte(r.pattern)); err == nil {
			m["EventPattern"] = doc
		}
	}
	for k, v := range map[string]string{"Description": r.description, "ScheduleExpression": r.schedule, "RoleArn": r.roleARN} {
		if v != "" {
			m[k] = v
		}
	}
	if len(r.targets) > 0 {
		var targets []any
		for _, t := range r.targets {
			tm := map[string]any{"Id": t.ID, "Arn": t.Arn}
			for k, v := range map[string]string{"Input": t.Input, "InputPath": t.InputPath, "RoleArn": t.RoleArn} {
				if v != "" {
					tm[k] = v
				}
			}
			targets = append(targets, tm)
		}
		m["Targets"] = targets
	}
	return m
}

func (eventRules) get(s *ccService, region, id string) (map[string]any, bool) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	r := s.events.rule(region, ruleName(id))
	if r == nil || r.arn != id {
		return nil, false
	}
	return ruleModel(r), true
}

func (eventRules) all(s *ccService, region string) map[string]map[string]any {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	out := map[string]map[string]any{}
	for _, r := range s.events.rules[region] {
		out[r.arn] = ruleModel(r)
	}
	return out
}

// targetsOf are a rule model's targets.
func targetsOf(m map[string]any) []ebTarget {
	var out []ebTarget
	list, _ := m["Targets"].([]any)
	for _, t := range list {
		tm, _ := t.(map[string]any)
		out = append(out, ebTarget{
			ID: attrString(tm["Id"]), Arn: attrString(tm["Arn"]), Input: attrString(tm["Input"]),
			InputPath: attrString(tm["InputPath"]), RoleArn: attrString(tm["RoleArn"]),
		})
	}
	return out
}

func (eventRules) put(s *ccService, region, _ string, m map[string]any) (string, string) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	in := ebRuleInput{
		Name: attrString(m["Name"]), State: attrString(m["State"]), Description: attrString(m["Description"]),
		ScheduleExpression: attrString(m["ScheduleExpression"]), RoleArn: attrString(m["RoleArn"]),
		EventBusName: attrString(m["EventBusName"]),
	}
	if p, ok := m["EventPattern"]; ok {
		in.EventPattern = policyText(p)
	}
	prev := s.events.rule(region, in.Name)
	var saved *ebRule
	if prev != nil {
		copied := *prev
		saved = &copied
	}
	r, e := s.events.put(region, in)
	if e != nil {
		return "InvalidRequest", e.msg
	}
	old := r.targets
	r.targets = nil
	if e := r.setTargets(targetsOf(m)); e != nil {
		if saved != nil {
			*r = *saved
		} else {
			delete(s.events.rules[region], in.Name)
		}
		r.targets = old
		return "InvalidRequest", e.msg
	}
	return "", ""
}

func (eventRules) remove(s *ccService, region, id string) {
	s.events.mu.Lock()
	defer s.events.mu.Unlock()
	if r := s.events.rule(region, ruleName(id)); r != nil && r.arn == id {
		delete(s.events.rules[region], r.name)
	}
}
