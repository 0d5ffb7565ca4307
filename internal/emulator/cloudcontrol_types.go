package emulator

import (
	"crypto/rand"
	"strconv"
	"time"
)

// What Cloud Control's handlers of each type the emulator knows generate:
// names left out (CloudFormation-style: the type's short name and 12
// random characters), read-only properties (ARNs in each service's format,
// ids), and what a handler checks before acting.

// ccTypeHooks are a type's handler behaviour beyond the schema.
type ccTypeHooks struct {
	// generate fills a new model's generated name and read-only
	// properties.
	generate func(m map[string]any, region, account string)
	// derive refreshes read-only properties that follow others, after
	// create and update (e.g. a table's StreamArn).
	derive func(m map[string]any, region, account string)
	// check is what the create handler finds wrong: a handler error code
	// and message ("" when none).
	check func(s *ccService, region string, m map[string]any) (code, msg string)
}

var ccHooks = map[string]ccTypeHooks{
	"AWS::Logs::LogGroup": {generate: func(m map[string]any, region, account string) {
		name := nameOr(m, "LogGroupName", "LogGroup")
		m["Arn"] = "arn:aws:logs:" + region + ":" + account + ":log-group:" + name + ":*"
	}},
	"AWS::Logs::SubscriptionFilter": {
		generate: func(m map[string]any, _, _ string) { nameOr(m, "FilterName", "SubscriptionFilter") },
		check: func(s *ccService, region string, m map[string]any) (string, string) {
			group, _ := m["LogGroupName"].(string)
			if _, ok := s.store(region, "AWS::Logs::LogGroup")[group]; !ok {
				return "NotFound", "The specified log group does not exist: " + group
			}
			return "", ""
		},
	},
	// QueueName: "If you don't specify a name, AWS CloudFormation generates
	// a unique physical ID and uses that ID for the queue name" (Update
	// requires: Replacement):
	// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queue.html
	"AWS::SQS::Queue": {generate: func(m map[string]any, region, account string) {
		name := fifoName(m, "QueueName", "FifoQueue", "Queue")
		m["QueueUrl"] = "https://sqs." + region + ".amazonaws.com/" + account + "/" + name
		m["Arn"] = "arn:aws:sqs:" + region + ":" + account + ":" + name
	}},
	"AWS::SNS::Topic": {generate: func(m map[string]any, region, account string) {
		m["TopicArn"] = "arn:aws:sns:" + region + ":" + account + ":" + fifoName(m, "TopicName", "FifoTopic", "Topic")
	}},
	"AWS::DynamoDB::Table": {
		generate: func(m map[string]any, region, account string) {
			name := nameOr(m, "TableName", "Table")
			m["Arn"] = "arn:aws:dynamodb:" + region + ":" + account + ":table/" + name
		},
		derive: func(m map[string]any, _, _ string) {
			arn, _ := m["Arn"].(string)
			spec, ok := m["StreamSpecification"].(map[string]any)
			if !ok || len(spec) == 0 {
				delete(m, "StreamArn")
				return
			}
			if _, ok := m["StreamArn"]; !ok {
				m["StreamArn"] = arn + "/stream/" + time.Now().UTC().Format("2006-01-02T15:04:05.000")
			}
		},
	},
	"AWS::KMS::Key": {generate: func(m map[string]any, region, account string) {
		id := newRequestID()
		if mr, _ := m["MultiRegion"].(bool); mr {
			id = "mrk-" + randomHex(16)
		}
		m["KeyId"] = id
		m["Arn"] = "arn:aws:kms:" + region + ":" + account + ":key/" + id
	}},
	"AWS::ECS::Cluster": {generate: func(m map[string]any, region, account string) {
		name := nameOr(m, "ClusterName", "Cluster")
		m["Arn"] = "arn:aws:ecs:" + region + ":" + account + ":cluster/" + name
	}},
}

// nameOr returns the model's name property, generating one (prefix-XXXX)
// when it is left out.
func nameOr(m map[string]any, prop, prefix string) string {
	if name, ok := m[prop].(string); ok && name != "" {
		return name
	}
	name := ccName(prefix)
	m[prop] = name
	return name
}

// fifoName is nameOr for SQS queues and SNS topics, whose generated names
// end in .fifo when they are FIFO (fifoProp true).
func fifoName(m map[string]any, prop, fifoProp, prefix string) string {
	if name, ok := m[prop].(string); ok && name != "" {
		return name
	}
	name := ccName(prefix)
	if fifo, _ := m[fifoProp].(bool); fifo {
		name += ".fifo"
	}
	m[prop] = name
	return name
}

// ccName is a generated physical name: prefix, "-", 12 uppercase letters
// and digits.
func ccName(prefix string) string {
	return prefix + "-" + randomString("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 12)
}

func randomHex(n int) string {
	b := make([]byte, (n+1)/2)
	_, _ = rand.Read(b)
	s := ""
	for _, c := range b {
		s += strconv.FormatUint(uint64(c)|0x100, 16)[1:]
	}
	return s[:n]
}
