package emulator

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// EventBridge: the default event bus of each region, AWS JSON 1.1 (POST
// /, X-Amz-Target AWSEvents.<Op>, signed as "events"): PutRule, DeleteRule,
// DescribeRule, ListRules, PutTargets, RemoveTargets, ListTargetsByRule.
// AWS's reference: https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_Operations.html
//
// Every event the trail records becomes an "AWS API Call via CloudTrail"
// event on the default bus of its region, as CloudTrail delivers
// management events:
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
// It is matched against the enabled rules Options.EventDelay after the
// call (CloudTrail's delivery delay) and sent to their SQS targets.
//
// Decisions:
//   - Delivery has no goroutine: events due are delivered when SQS is
//     next read (ReceiveMessage, GetQueueAttributes, PurgeQueue), and a
//     long poll waits until the next event is due, so delivery is on time
//     for anyone who looks and no goroutine outlives a request.
//   - An SQS target receives an event only when the queue's policy allows
//     events.amazonaws.com sqs:SendMessage (AWS's requirement); otherwise
//     the event is dropped and logged, as AWS counts a FailedInvocation.
//   - Patterns match exact values (strings, numbers, booleans, null),
//     prefix, anything-but and exists, on nested fields; an array in the
//     event matches when any of its values does:
//     https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns.html
//   - Targets other than SQS queues are kept and never invoked; Input and
//     InputPath are kept, not applied (the event is sent whole).
//   - Schedule expressions are kept and never fire.

const eventsTargetPrefix = "AWSEvents."

type eventsService struct {
	jsonProto
	account string
	delay   time.Duration
	log     *slog.Logger
	sqs     *sqsService

	mu    sync.Mutex
	rules map[string]map[string]*ebRule // region -> name -> rule

	// deliverMu orders deliveries: events are sent in the order recorded.
	deliverMu sync.Mutex
	pmu       sync.Mutex
	pending   []pendingEvent // in the order recorded
	// published is closed (and replaced) when an event is published, to
	// wake long polls waiting for the next one to be due.
	published chan struct{}
}

type pendingEvent struct {
	due    time.Time
	region string
	event  map[string]any // the EventBridge event
}

// ebRule is a rule of a region's default bus.
type ebRule struct {
	name, arn, pattern, state, description, schedule, roleARN string
	created                                                   time.Time
	targets                                                   []ebTarget // by Id, in the order put
}

// ruleTarget is a target with the ARN of its rule (a delivery's
// aws:SourceArn).
type ruleTarget struct {
	ebTarget
	rule string
}

type ebTarget struct {
	ID        string `json:"Id"`
	Arn       string `json:"Arn"`
	Input     string `json:"Input,omitempty"`
	InputPath string `json:"InputPath,omitempty"`
	RoleArn   string `json:"RoleArn,omitempty"`
}

func newEvents(opts Options, sqs *sqsService, log *slog.Logger) *eventsService {
	delay := opts.EventDelay
	switch {
	case delay == 0:
		delay = DefaultEventDelay
	case delay < 0:
		delay = 0
	}
	return &eventsService{
		jsonProto: jsonProto{"application/x-amz-json-1.1"}, account: opts.accountID(), delay: delay, log: log,
		sqs: sqs, rules: map[string]map[string]*ebRule{}, published: make(chan struct{}),
	}
}

// DefaultEventDelay is how long after a call its CloudTrail event reaches
// EventBridge when Options.EventDelay is 0.
const DefaultEventDelay = time.Second

func (s *eventsService) operation(r *http.Request) string {
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), eventsTargetPrefix); ok && op != "" {
		return op
	}
	return "Unknown"
}

// cloudTrailEvent is the EventBridge event of a CloudTrail record:
// https://docs.aws.amazon.com/eventbridge/latest/ref/overiew-event-structure.html
func (s *eventsService) cloudTrailEvent(ev *trailEvent) map[string]any {
	var detail map[string]any
	_ = json.Unmarshal(ev.json, &detail)
	return map[string]any{
		"version": "0", "id": newRequestID(), "detail-type": "AWS API Call via CloudTrail",
		"source": "aws." + strings.TrimSuffix(ev.source, ".amazonaws.com"), "account": s.account,
		"time": ev.eventTime, "region": ev.region, "resources": []string{}, "detail": detail,
	}
}

// publish puts a recorded event on its region's default bus, due after
// the delay, and delivers the events already due (so events do not pile
// up when no one reads a queue). An event of a region without rules is
// dropped at once: no rule would match it.
func (s *eventsService) publish(ev *trailEvent) {
	s.deliverDue(ev.time)
	s.mu.Lock()
	rules := len(s.rules[ev.region])
	s.mu.Unlock()
	if rules == 0 {
		return
	}
	p := pendingEvent{due: ev.time.Add(s.delay), region: ev.region, event: s.cloudTrailEvent(ev)}
	s.pmu.Lock()
	s.pending = append(s.pending, p)
	close(s.published)
	s.published = make(chan struct{})
	s.pmu.Unlock()
}

// deliverDue delivers the events due at now to the targets of the rules
// they match; next is when the next pending one is due (zero when none),
// wake is closed when another is published.
func (s *eventsService) deliverDue(now time.Time) (next time.Time, wake <-chan struct{}) {
	s.deliverMu.Lock()
	defer s.deliverMu.Unlock()
	s.pmu.Lock()
	n := 0
	for n < len(s.pending) && !s.pending[n].due.After(now) {
		n++
	}
	due := slices.Clone(s.pending[:n])
	s.pending = slices.Delete(s.pending, 0, n)
	if len(s.pending) > 0 {
		next = s.pending[0].due
	}
	wake = s.published
	s.pmu.Unlock()
	for _, p := range due {
		body, _ := json.Marshal(p.event)
		for _, t := range s.targets(p.region, p.event) {
			if !strings.HasPrefix(t.Arn, "arn:aws:sqs:") {
				continue
			}
			if ok, why := s.sqs.deliver(t.Arn, t.rule, body, now); !ok {
				s.log.Info("emulator: EventBridge could not deliver an event to its target", "target", t.Arn, "reason", why)
			}
		}
	}
	return next, wake
}

// targets are the targets of the enabled rules of a region an event
// matches.
func (s *eventsService) targets(region string, event map[string]any) []ruleTarget {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ruleTarget
	for _, name := range slices.Sorted(maps.Keys(s.rules[region])) {
		r := s.rules[region][name]
		if r.state == "DISABLED" || r.pattern == "" {
			continue
		}
		var pattern map[string]any
		if json.Unmarshal([]byte(r.pattern), &pattern) != nil || !matchPattern(pattern, event) {
			continue
		}
		for _, t := range r.targets {
			out = append(out, ruleTarget{ebTarget: t, rule: r.arn})
		}
	}
	return out
}

// matchPattern reports whether an event matches an event pattern: every
// field of the pattern matches the event's field of the name.
func matchPattern(pattern, event map[string]any) bool {
	for k, want := range pattern {
		got, present := event[k]
		switch w := want.(type) {
		case map[string]any:
			sub, ok := got.(map[string]any)
			if !ok || !matchPattern(w, sub) {
				return false
			}
		case []any:
			if !matchValues(w, got, present) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// matchValues reports whether a field (present or not) matches any of a
// pattern's values.
func matchValues(want []any, got any, present bool) bool {
	gots := []any{got}
	if list, ok := got.([]any); ok {
		gots = list
	}
	for _, w := range want {
		if m, ok := w.(map[string]any); ok {
			if v, ok := m["exists"].(bool); ok {
				if v == present {
					return true
				}
				continue
			}
			if !present {
				continue
			}
			for _, g := range gots {
				if matchOperator(m, g) {
					return true
				}
			}
			continue
		}
		if !present {
			continue
		}
		for _, g := range gots {
			if equalJSON(w, g) {
				return true
			}
		}
	}
	return false
}

// matchOperator matches a value against {"prefix": ...} or
// {"anything-but": value or values}.
func matchOperator(op map[string]any, got any) bool {
	if p, ok := op["prefix"].(string); ok {
		s, ok := got.(string)
		return ok && strings.HasPrefix(s, p)
	}
	if but, ok := op["anything-but"]; ok {
		values, ok := but.([]any)
		if !ok {
			values = []any{but}
		}
		return !slices.ContainsFunc(values, func(v any) bool { return equalJSON(v, got) })
	}
	return false
}

// equalJSON compares decoded JSON scalars (numbers by value).
func equalJSON(a, b any) bool {
	af, aNum := a.(float64)
	bf, bNum := b.(float64)
	if aNum && bNum {
		return af == bf
	}
	return a == b
}

// validPattern is what is wrong with an event pattern: it must be a JSON
// object whose leaves are arrays (InvalidEventPatternException).
func validPattern(doc string) string {
	var pattern map[string]any
	if err := json.Unmarshal([]byte(doc), &pattern); err != nil {
		return "Event pattern is not valid. Reason: it must be a JSON object: " + err.Error()
	}
	var check func(m map[string]any, path string) string
	check = func(m map[string]any, path string) string {
		for k, v := range m {
			switch x := v.(type) {
			case map[string]any:
				if why := check(x, path+k+"."); why != "" {
					return why
				}
			case []any:
			default:
				return fmt.Sprintf("Event pattern is not valid. Reason: '%s%s' must be an object or an array", path, k)
			}
		}
		return ""
	}
	return check(pattern, "")
}

var ebOps = map[string]func(s *eventsService, c jsonCall) (any, *opErr){
	"PutRule":           (*eventsService).putRule,
	"DeleteRule":        (*eventsService).deleteRule,
	"DescribeRule":      (*eventsService).describeRule,
	"ListRules":         (*eventsService).listRules,
	"PutTargets":        (*eventsService).putTargets,
	"RemoveTargets":     (*eventsService).removeTargets,
	"ListTargetsByRule": (*eventsService).listTargetsByRule,
}

func (s *eventsService) serve(w http.ResponseWriter, r *http.Request, op string) {
	serveOps(s, ebOps, w, r, op, "UnknownOperationException", "EventBridge")
}

var ruleNamePattern = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)

// defaultBus checks a request's EventBusName: the default bus only.
func (s *eventsService) defaultBus(region, bus string) *opErr {
	if bus == "" || bus == "default" || bus == "arn:aws:events:"+region+":"+s.account+":event-bus/default" {
		return nil
	}
	return &opErr{"ResourceNotFoundException", fmt.Sprintf("Event bus %s does not exist.", bus)}
}

func ruleNotFound(name string) *opErr {
	return &opErr{"ResourceNotFoundException", fmt.Sprintf("Rule %s does not exist on EventBus default.", name)}
}

// rule is a region's rule; the caller holds mu.
func (s *eventsService) rule(region, name string) *ebRule { return s.rules[region][name] }

// ebRuleInput is PutRule's request.
type ebRuleInput struct {
	Name, EventPattern, State, Description, ScheduleExpression, RoleArn, EventBusName string
}

// putRule creates or updates a rule:
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutRule.html
func (s *eventsService) putRule(c jsonCall) (any, *opErr) {
	var in ebRuleInput
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, e := s.put(c.region, in)
	if e != nil {
		return nil, e
	}
	return map[string]string{"RuleArn": r.arn}, nil
}

// put is PutRule; the caller holds mu.
func (s *eventsService) put(region string, in ebRuleInput) (*ebRule, *opErr) {
	if e := s.defaultBus(region, in.EventBusName); e != nil {
		return nil, e
	}
	if !ruleNamePattern.MatchString(in.Name) {
		return nil, &opErr{"ValidationException", fmt.Sprintf("1 validation error detected: Value '%s' at 'name' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1 to 64 characters)", in.Name)}
	}
	if in.EventPattern == "" && in.ScheduleExpression == "" {
		return nil, &opErr{"ValidationException", "Parameter(s) EventPattern or ScheduleExpression must be specified."}
	}
	if in.EventPattern != "" {
		if why := validPattern(in.EventPattern); why != "" {
			return nil, &opErr{"InvalidEventPatternException", why}
		}
	}
	switch in.State {
	case "":
		in.State = "ENABLED"
	case "ENABLED", "DISABLED", "ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS":
	default:
		return nil, &opErr{"ValidationException", fmt.Sprintf("1 validation error detected: Value '%s' at 'state' failed to satisfy constraint: Member must satisfy enum value set: [ENABLED, DISABLED, ENABLED_WITH_ALL_CLOUDTRAIL_MANAGEMENT_EVENTS]", in.State)}
	}
	if s.rules[region] == nil {
		s.rules[region] = map[string]*ebRule{}
	}
	r := s.rules[region][in.Name]
	if r == nil {
		r = &ebRule{name: in.Name, arn: "arn:aws:events:" + region + ":" + s.account + ":rule/" + in.Name, created: time.Now()}
		s.rules[region][in.Name] = r
	}
	r.pattern, r.state, r.description, r.schedule, r.roleARN = in.EventPattern, in.State, in.Description, in.ScheduleExpression, in.RoleArn
	return r, nil
}

// deleteRule: "Before you can delete the rule, you must remove all
// targets, using RemoveTargets":
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_DeleteRule.html
// A rule that does not exist is no error.
func (s *eventsService) deleteRule(c jsonCall) (any, *opErr) {
	var in struct{ Name, EventBusName string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if e := s.defaultBus(c.region, in.EventBusName); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rule(c.region, in.Name)
	if r == nil {
		return map[string]any{}, nil
	}
	if len(r.targets) > 0 {
		return nil, &opErr{"ValidationException", "Rule can't be deleted since it has targets."}
	}
	delete(s.rules[c.region], in.Name)
	return map[string]any{}, nil
}

// ruleJSON is a rule as DescribeRule and ListRules answer it.
func (r *ebRule) json() map[string]any {
	out := map[string]any{"Name": r.name, "Arn": r.arn, "State": r.state, "EventBusName": "default"}
	for k, v := range map[string]string{"EventPattern": r.pattern, "Description": r.description, "ScheduleExpression": r.schedule, "RoleArn": r.roleARN} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func (s *eventsService) describeRule(c jsonCall) (any, *opErr) {
	var in struct{ Name, EventBusName string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onRule(c.region, in.EventBusName, in.Name, func(r *ebRule) (any, *opErr) {
		out := r.json()
		out["CreatedBy"] = s.account
		return out, nil
	})
}

// onRule runs f on a rule of the default bus, under mu;
// ResourceNotFoundException when there is no such rule.
func (s *eventsService) onRule(region, bus, name string, f func(r *ebRule) (any, *opErr)) (any, *opErr) {
	if e := s.defaultBus(region, bus); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.rule(region, name)
	if r == nil {
		return nil, ruleNotFound(name)
	}
	return f(r)
}

// listRules: https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_ListRules.html
// (Limit 1 to 100; names in order).
func (s *eventsService) listRules(c jsonCall) (any, *opErr) {
	var in struct {
		NamePrefix, NextToken, EventBusName string
		Limit                               *int
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if e := s.defaultBus(c.region, in.EventBusName); e != nil {
		return nil, e
	}
	limit := 100
	if in.Limit != nil {
		if *in.Limit < 1 || *in.Limit > 100 {
			return nil, &opErr{"ValidationException", "1 validation error detected: Value at 'limit' failed to satisfy constraint: Member must have value between 1 and 100"}
		}
		limit = *in.Limit
	}
	tag := "events:" + c.region + ":"
	after := ""
	if in.NextToken != "" {
		var ok bool
		if after, ok = pageAfter(tag, in.NextToken); !ok {
			return nil, &opErr{"ValidationException", "Invalid NextToken."}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.rules[c.region] {
		if strings.HasPrefix(name, in.NamePrefix) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	page, next := paginate(names, after, limit, tag)
	rules := make([]map[string]any, len(page))
	for i, name := range page {
		rules[i] = s.rules[c.region][name].json()
	}
	out := map[string]any{"Rules": rules}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// putTargets adds or replaces targets by Id (at most 5 a rule):
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutTargets.html
func (s *eventsService) putTargets(c jsonCall) (any, *opErr) {
	var in struct {
		Rule, EventBusName string
		Targets            []ebTarget
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onRule(c.region, in.EventBusName, in.Rule, func(r *ebRule) (any, *opErr) {
		if e := r.setTargets(in.Targets); e != nil {
			return nil, e
		}
		return map[string]any{"FailedEntryCount": 0, "FailedEntries": []any{}}, nil
	})
}

// setTargets adds or replaces targets by Id.
func (r *ebRule) setTargets(targets []ebTarget) *opErr {
	next := slices.Clone(r.targets)
	for _, t := range targets {
		if t.ID == "" || t.Arn == "" {
			return &opErr{"ValidationException", "A target needs an Id and an Arn."}
		}
		if i := slices.IndexFunc(next, func(x ebTarget) bool { return x.ID == t.ID }); i >= 0 {
			next[i] = t
			continue
		}
		next = append(next, t)
	}
	if len(next) > 5 {
		return &opErr{"LimitExceededException", fmt.Sprintf("The requested resource exceeds the maximum number allowed: rule %s can have at most 5 targets.", r.name)}
	}
	r.targets = next
	return nil
}

func (s *eventsService) removeTargets(c jsonCall) (any, *opErr) {
	var in struct {
		Rule, EventBusName string
		Ids                []string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onRule(c.region, in.EventBusName, in.Rule, func(r *ebRule) (any, *opErr) {
		r.targets = slices.DeleteFunc(r.targets, func(t ebTarget) bool { return slices.Contains(in.Ids, t.ID) })
		return map[string]any{"FailedEntryCount": 0, "FailedEntries": []any{}}, nil
	})
}

func (s *eventsService) listTargetsByRule(c jsonCall) (any, *opErr) {
	var in struct{ Rule, EventBusName string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onRule(c.region, in.EventBusName, in.Rule, func(r *ebRule) (any, *opErr) {
		return map[string]any{"Targets": slices.Clone(r.targets)}, nil
	})
}
