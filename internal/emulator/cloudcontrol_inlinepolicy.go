package emulator

// AWS::SQS::QueueInlinePolicy: the policy of one queue, kept as the
// queue's Policy attribute (SetQueueAttributes), identified by the queue's
// URL; unlike AWS::SQS::QueuePolicy it has a read handler, so a table of
// this product can hold it:
// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queueinlinepolicy.html

// sqsInlinePolicies keeps AWS::SQS::QueueInlinePolicy resources as the
// Policy of SQS's queues: a queue with a policy is one.
type sqsInlinePolicies struct{}

// inlineModel is a queue's policy as the read handler answers it
// (PolicyDocument as an object), false when it has none.
func inlineModel(q *sqsQueue) (map[string]any, bool) {
	if q.policy == "" {
		return nil, false
	}
	doc, err := decodeJSONValue([]byte(q.policy))
	if err != nil {
		return nil, false
	}
	return map[string]any{"Queue": q.url, "PolicyDocument": doc}, true
}

func (sqsInlinePolicies) get(s *ccService, region, id string) (map[string]any, bool) {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	q, e := s.sqs.byURL(region, id)
	if e != nil {
		return nil, false
	}
	return inlineModel(q)
}

func (sqsInlinePolicies) all(s *ccService, region string) map[string]map[string]any {
	s.sqs.mu.Lock()
	defer s.sqs.mu.Unlock()
	out := map[string]map[string]any{}
	for _, q := range s.sqs.queues[region] {
		if m, ok := inlineModel(q); ok {
			out[q.url] = m
		}
	}
	return out
}

func (sqsInlinePolicies) put(s *ccService, region, _ string, m map[string]any) (string, string) {
	return setPolicies(s, region, []string{attrString(m["Queue"])}, policyText(m["PolicyDocument"]))
}

func (sqsInlinePolicies) remove(s *ccService, region, id string) {
	sqsQueuePolicies{}.clear(s, region, []string{id})
}

func inlinePolicyCalls(op string, m map[string]any) []handlerCall {
	policy := ""
	if op != "DELETE" {
		policy = policyText(m["PolicyDocument"])
	}
	return []handlerCall{{service: "sqs", op: "SetQueueAttributes",
		params: map[string]any{"queueUrl": m["Queue"], "attributes": map[string]any{"Policy": policy}}}}
}
