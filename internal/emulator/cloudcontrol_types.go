package emulator

import (
	"crypto/rand"
	"strconv"
	"strings"
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
	// deleted is what deleting a resource (its last model) does besides
	// (an API's routes go with it).
	deleted func(s *ccService, region string, m map[string]any)
	// backend keeps the type's resources elsewhere than Cloud Control's
	// store (nil: the store).
	backend ccBackend
	// calls are the API calls the handler of op (CREATE, UPDATE, DELETE)
	// makes for the caller, as CloudTrail records them (nil: one call
	// named by the handler's permissions, see handlerCalls).
	calls func(op string, m map[string]any) []handlerCall
}

// ccBackend keeps a type's resources in another service's state, so that
// service's API sees what Cloud Control made, and the reverse.
type ccBackend interface {
	get(s *ccService, region, id string) (map[string]any, bool)
	all(s *ccService, region string) map[string]map[string]any
	put(s *ccService, region, id string, m map[string]any) (code, msg string)
	remove(s *ccService, region, id string)
}

var ccHooks = map[string]ccTypeHooks{
	// A function's ARN is arn:aws:lambda:<region>:<account>:function:<name>;
	// CreateFunction refuses a role that does not exist
	// (InvalidParameterValueException "The role defined for the function
	// cannot be assumed by Lambda"):
	// https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunction.html
	"AWS::Lambda::Function": {
		generate: func(m map[string]any, region, account string) {
			m["Arn"] = "arn:aws:lambda:" + region + ":" + account + ":function:" + nameOr(m, "FunctionName", "Function")
		},
		check: func(s *ccService, _ string, m map[string]any) (string, string) {
			role, _ := m["Role"].(string)
			_, name, _ := strings.Cut(role, ":role/")
			if i := strings.LastIndex(name, "/"); i >= 0 {
				name = name[i+1:]
			}
			s.iam.mu.Lock()
			_, ok := s.iam.roles[strings.ToLower(name)]
			s.iam.mu.Unlock()
			if !ok {
				return "InvalidRequest", "The role defined for the function cannot be assumed by Lambda: " + role
			}
			return "", ""
		},
	},
	// A DB subnet group's name is stored in lower case; its ARN is
	// arn:aws:rds:<region>:<account>:subgrp:<name>:
	// https://docs.aws.amazon.com/AmazonRDS/latest/APIReference/API_CreateDBSubnetGroup.html
	"AWS::RDS::DBSubnetGroup": {generate: func(m map[string]any, region, account string) {
		name := strings.ToLower(nameOr(m, "DBSubnetGroupName", "DBSubnetGroup"))
		m["DBSubnetGroupName"] = name
		m["DBSubnetGroupArn"] = "arn:aws:rds:" + region + ":" + account + ":subgrp:" + name
	}},
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
	// The queues are SQS's (cloudcontrol_events.go).
	"AWS::SQS::Queue": {
		generate: func(m map[string]any, region, account string) {
			name := fifoName(m, "QueueName", "FifoQueue", "Queue")
			m["QueueUrl"] = sqsURL(region, account, name)
			m["Arn"] = "arn:aws:sqs:" + region + ":" + account + ":" + name
		},
		backend: sqsQueues{},
		calls:   queueCalls,
	},
	// A policy's Id is generated; the policy is each queue's Policy
	// attribute (cloudcontrol_events.go).
	"AWS::SQS::QueuePolicy": {
		generate: func(m map[string]any, _, _ string) { m["Id"] = ccName("QueuePolicy") },
		backend:  sqsQueuePolicies{},
		calls:    queuePolicyCalls,
	},
	// The policy of one queue, identified by the queue's URL: the queue's
	// Policy attribute (cloudcontrol_events.go):
	// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-sqs-queueinlinepolicy.html
	"AWS::SQS::QueueInlinePolicy": {
		generate: func(map[string]any, string, string) {},
		backend:  sqsInlinePolicies{},
		calls: func(op string, m map[string]any) []handlerCall {
			return queuePolicyCalls(op, map[string]any{"Queues": []any{m["Queue"]}, "PolicyDocument": m["PolicyDocument"]})
		},
	},
	// A rule's ARN is arn:aws:events:<region>:<account>:rule/<name>; the
	// rules are EventBridge's (cloudcontrol_events.go):
	// https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-resource-events-rule.html
	"AWS::Events::Rule": {
		generate: func(m map[string]any, region, account string) {
			m["Arn"] = "arn:aws:events:" + region + ":" + account + ":rule/" + nameOr(m, "Name", "Rule")
		},
		backend: eventRules{},
		calls:   ruleCalls,
	},
	"AWS::SNS::Topic": {generate: func(m map[string]any, region, account string) {
		m["TopicArn"] = "arn:aws:sns:" + region + ":" + account + ":" + fifoName(m, "TopicName", "FifoTopic", "Topic")
	}},
	// A subscription's ARN is its topic's ARN, ":" and a UUID, as SNS
	// Subscribe answers SubscriptionArn; subscribing to a missing topic
	// fails NotFound:
	// https://docs.aws.amazon.com/sns/latest/api/API_Subscribe.html
	"AWS::SNS::Subscription": {
		generate: func(m map[string]any, _, _ string) {
			topic, _ := m["TopicArn"].(string)
			m["Arn"] = topic + ":" + newRequestID()
		},
		check: func(s *ccService, region string, m map[string]any) (string, string) {
			topic, _ := m["TopicArn"].(string)
			// The topic may be in another region: its ARN says which.
			if parts := strings.Split(topic, ":"); len(parts) == 6 && parts[3] != "" {
				region = parts[3]
			}
			if _, ok := s.lookup(region, "AWS::SNS::Topic", topic); !ok {
				return "NotFound", "Topic does not exist: " + topic
			}
			return "", ""
		},
	},
	// An API's id is 10 lowercase letters and digits; its endpoint
	// {api-id}.execute-api.{region}.amazonaws.com, https for HTTP APIs and
	// wss for WebSocket ones:
	// https://docs.aws.amazon.com/apigatewayv2/latest/api-reference/apis.html
	"AWS::ApiGatewayV2::Api": {
		generate: func(m map[string]any, region, _ string) {
			id := randomString("abcdefghijklmnopqrstuvwxyz0123456789", 10)
			m["ApiId"] = id
			scheme := "https"
			if p, _ := m["ProtocolType"].(string); p == "WEBSOCKET" {
				scheme = "wss"
			}
			m["ApiEndpoint"] = scheme + "://" + id + ".execute-api." + region + ".amazonaws.com"
		},
		check: func(_ *ccService, _ string, m map[string]any) (string, string) {
			_, body := m["Body"]
			_, s3 := m["BodyS3Location"]
			_, name := m["Name"]
			_, protocol := m["ProtocolType"]
			if !body && !s3 && (!name || !protocol) {
				return "InvalidRequest", "Name and ProtocolType are required unless Body or BodyS3Location is given."
			}
			return "", ""
		},
		// Deleting an API deletes its routes and integrations.
		deleted: func(s *ccService, region string, m map[string]any) {
			for _, typ := range []string{"AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Integration"} {
				children := s.store(region, typ)
				for id, r := range children {
					if r["ApiId"] == m["ApiId"] {
						delete(children, id)
					}
				}
			}
		},
	},
	// An integration's id is 7 lowercase letters and digits; its identifier
	// ApiId|IntegrationId; one of a missing API fails NotFound, as
	// CreateIntegration answers NotFoundException:
	// https://docs.aws.amazon.com/apigatewayv2/latest/api-reference/apis-apiid-integrations.html
	"AWS::ApiGatewayV2::Integration": {
		generate: func(m map[string]any, _, _ string) {
			m["IntegrationId"] = randomString("abcdefghijklmnopqrstuvwxyz0123456789", 7)
		},
		check: apiChild,
	},
	// A route's id is 7 lowercase letters and digits; its identifier
	// ApiId|RouteId. A route of a missing API fails NotFound, as CreateRoute
	// answers NotFoundException:
	// https://docs.aws.amazon.com/apigatewayv2/latest/api-reference/apis-apiid-routes.html
	"AWS::ApiGatewayV2::Route": {
		generate: func(m map[string]any, _, _ string) {
			m["RouteId"] = randomString("abcdefghijklmnopqrstuvwxyz0123456789", 7)
		},
		check: apiChild,
	},
	// A role's inline policy, kept by IAM (PutRolePolicy, GetRolePolicy,
	// DeleteRolePolicy see the same policies):
	// https://docs.aws.amazon.com/IAM/latest/APIReference/API_PutRolePolicy.html
	"AWS::IAM::RolePolicy": {generate: func(map[string]any, string, string) {}, backend: iamRolePolicies{}},
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

// apiChild is what the create handler of an API's route or integration
// finds wrong: an API that does not exist.
func apiChild(s *ccService, region string, m map[string]any) (string, string) {
	api, _ := m["ApiId"].(string)
	if _, ok := s.lookup(region, "AWS::ApiGatewayV2::Api", api); !ok {
		return "NotFound", "Invalid API identifier specified " + api
	}
	return "", ""
}
