package emulator

import "testing"

// TestQueuePolicyConditions: EventBridge delivers to a queue only when the
// queue's policy lets events.amazonaws.com send for the delivering rule:
// aws:SourceArn and aws:SourceAccount conditions are evaluated (a negated
// operator holds when no value matches), and a Deny that applies wins.
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_multi-value-conditions.html
func TestQueuePolicyConditions(t *testing.T) {
	t.Parallel()
	const (
		queue   = "arn:aws:sqs:us-east-1:123456789012:iasql-events"
		rule    = "arn:aws:events:us-east-1:123456789012:rule/iasql-events"
		other   = "arn:aws:events:us-east-1:123456789012:rule/other"
		account = "123456789012"
	)
	allow := `{"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage", "Resource": "` + queue + `", "Condition": {"ArnEquals": {"aws:SourceArn": "` + rule + `"}}}`
	deny := `{"Effect": "Deny", "Principal": "*", "Action": "sqs:SendMessage", "Resource": "` + queue + `", "Condition": {"ArnNotEquals": {"aws:SourceArn": "` + rule + `"}}}`
	for _, tc := range []struct {
		name, policy, source string
		want                 bool
	}{
		{"allowed for the rule", `{"Statement": [` + allow + `]}`, rule, true},
		{"allowed for another rule only", `{"Statement": [` + allow + `]}`, other, false},
		{"the rule, others denied", `{"Statement": [` + allow + `, ` + deny + `]}`, rule, true},
		{"another rule, others denied", `{"Statement": [` + allow + `, ` + deny + `]}`, other, false},
		{"a wildcard rule", `{"Statement": {"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage", "Condition": {"ArnLike": {"aws:SourceArn": "arn:aws:events:*:123456789012:rule/iasql-*"}}}}`, rule, true},
		{"another account's", `{"Statement": {"Effect": "Allow", "Principal": {"Service": "events.amazonaws.com"}, "Action": "sqs:SendMessage", "Condition": {"StringEquals": {"aws:SourceAccount": "999999999999"}}}}`, rule, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := allowsEvents(tc.policy, queue, tc.source, account); got != tc.want {
				t.Errorf("delivery for %s allowed: %v, want %v", tc.source, got, tc.want)
			}
		})
	}
}
