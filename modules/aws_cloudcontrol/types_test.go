package aws_cloudcontrol_test

import (
	"strings"
	"testing"
)

// typeCase is one resource type's walk through the table's life, in SQL.
type typeCase struct {
	typeName, table string
	// before runs (and is committed) first: a parent the type needs.
	before []string
	// insert creates the record; where selects it (also after update).
	insert, where string
	// update changes a column in place; replace changes a create-only one
	// ("" for a type without one: AWS::KMS::Key's keys change in place).
	update, replace, whereReplaced string
	// oob is a resource made by another tool (Cloud Control's desired
	// state) and oobWhere selects its row once imported.
	oob, oobWhere string
	// identity selects the Cloud Control identifier of a row.
	identity string
}

var typeCases = []typeCase{{
	typeName: "AWS::Logs::LogGroup", table: "aws_logs_log_group",
	insert: `INSERT INTO aws_logs_log_group (log_group_name, retention_in_days) VALUES ('g1', 7)`, where: `log_group_name = 'g1'`,
	update:  `UPDATE aws_logs_log_group SET retention_in_days = 14 WHERE log_group_name = 'g1'`,
	replace: `UPDATE aws_logs_log_group SET log_group_class = 'INFREQUENT_ACCESS' WHERE log_group_name = 'g1'`, whereReplaced: `log_group_name = 'g1'`,
	oob: `{"LogGroupName": "g-oob", "RetentionInDays": 3}`, oobWhere: `log_group_name = 'g-oob' AND retention_in_days = 3`,
	identity: `log_group_name`,
}, {
	typeName: "AWS::SQS::Queue", table: "aws_sqs_queue",
	insert: `INSERT INTO aws_sqs_queue (queue_name) VALUES ('q1')`, where: `queue_name = 'q1'`,
	update:  `UPDATE aws_sqs_queue SET delay_seconds = 3 WHERE queue_name = 'q1'`,
	replace: `UPDATE aws_sqs_queue SET queue_name = 'q1b' WHERE queue_name = 'q1'`, whereReplaced: `queue_name = 'q1b'`,
	oob: `{"QueueName": "q-oob"}`, oobWhere: `queue_name = 'q-oob'`,
	identity: `queue_url`,
}, {
	typeName: "AWS::SNS::Topic", table: "aws_sns_topic",
	insert: `INSERT INTO aws_sns_topic (topic_name, display_name) VALUES ('t1', 'one')`, where: `topic_name = 't1'`,
	update:  `UPDATE aws_sns_topic SET display_name = 'uno' WHERE topic_name = 't1'`,
	replace: `UPDATE aws_sns_topic SET topic_name = 't1b' WHERE topic_name = 't1'`, whereReplaced: `topic_name = 't1b'`,
	oob: `{"TopicName": "t-oob"}`, oobWhere: `topic_name = 't-oob'`,
	identity: `topic_arn`,
}, {
	typeName: "AWS::DynamoDB::Table", table: "aws_dynamodb_table",
	insert: `INSERT INTO aws_dynamodb_table (table_name, key_schema, attribute_definitions, billing_mode) VALUES
		('d1', '[{"AttributeName": "pk", "KeyType": "HASH"}]', '[{"AttributeName": "pk", "AttributeType": "S"}]', 'PAY_PER_REQUEST')`,
	where:   `table_name = 'd1'`,
	update:  `UPDATE aws_dynamodb_table SET table_class = 'STANDARD_INFREQUENT_ACCESS' WHERE table_name = 'd1'`,
	replace: `UPDATE aws_dynamodb_table SET table_name = 'd1b' WHERE table_name = 'd1'`, whereReplaced: `table_name = 'd1b'`,
	oob:      `{"TableName": "d-oob", "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}], "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}], "BillingMode": "PAY_PER_REQUEST"}`,
	oobWhere: `table_name = 'd-oob'`,
	identity: `table_name`,
}, {
	typeName: "AWS::KMS::Key", table: "aws_kms_key",
	insert: `INSERT INTO aws_kms_key (description, key_policy) VALUES ('k1', '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"}, "Action": "kms:*", "Resource": "*"}]}')`,
	where:  `description = 'k1'`,
	update: `UPDATE aws_kms_key SET description = 'k1 renamed' WHERE description = 'k1'`,
	oob:    `{"Description": "k-oob"}`, oobWhere: `description = 'k-oob'`,
	identity: `key_id`,
}, {
	typeName: "AWS::ECS::Cluster", table: "aws_ecs_cluster",
	insert: `INSERT INTO aws_ecs_cluster (cluster_name) VALUES ('c1')`, where: `cluster_name = 'c1'`,
	update:  `UPDATE aws_ecs_cluster SET cluster_settings = '[{"Name": "containerInsights", "Value": "enabled"}]' WHERE cluster_name = 'c1'`,
	replace: `UPDATE aws_ecs_cluster SET cluster_name = 'c1b' WHERE cluster_name = 'c1'`, whereReplaced: `cluster_name = 'c1b'`,
	oob: `{"ClusterName": "c-oob"}`, oobWhere: `cluster_name = 'c-oob'`,
	identity: `cluster_name`,
}, {
	typeName: "AWS::Logs::SubscriptionFilter", table: "aws_logs_subscription_filter",
	before: []string{`SELECT * FROM iasql_install('AWS::Logs::LogGroup')`, `INSERT INTO aws_logs_log_group (log_group_name) VALUES ('parent')`},
	insert: `INSERT INTO aws_logs_subscription_filter (filter_name, log_group_name, destination_arn, filter_pattern) VALUES
		('f1', 'parent', 'arn:aws:lambda:us-east-1:123456789012:function:ship', '')`,
	where:   `filter_name = 'f1'`,
	update:  `UPDATE aws_logs_subscription_filter SET filter_pattern = 'ERROR' WHERE filter_name = 'f1'`,
	replace: `UPDATE aws_logs_subscription_filter SET filter_name = 'f1b' WHERE filter_name = 'f1'`, whereReplaced: `filter_name = 'f1b'`,
	oob:      `{"FilterName": "f-oob", "LogGroupName": "parent", "DestinationArn": "arn:aws:lambda:us-east-1:123456789012:function:ship", "FilterPattern": ""}`,
	oobWhere: `filter_name = 'f-oob'`,
	identity: `filter_name || '|' || log_group_name`,
}}

// TestEveryType: for each type with a schema in the emulator, from SQL:
// create, a no-op cycle that makes no mutating call, an update in place, a
// create-only change that replaces, delete; from another tool: a resource
// imported, then deleted and its row gone.
func TestEveryType(t *testing.T) {
	for _, tc := range typeCases {
		t.Run(tc.typeName, func(t *testing.T) {
			t.Parallel()
			e, c := env(t, 0, tc.typeName)
			if len(tc.before) > 0 {
				e.Exec(tc.before...)
				e.Commit()
			}
			one := func(where string) string {
				t.Helper()
				if n := e.Count(`SELECT count(*) FROM ` + tc.table + ` WHERE ` + where); n != 1 {
					t.Fatalf("%d rows of %s where %s; want 1", n, tc.table, where)
				}
				return e.String(`SELECT ` + tc.identity + ` FROM ` + tc.table + ` WHERE ` + where)
			}
			mutations := func(what string, want map[string]int) {
				t.Helper()
				m := e.Mutations()
				for op, n := range want {
					if m[op] != n {
						t.Errorf("%s made %v; want %s %d times", what, m, op, n)
					}
				}
				if len(m) != len(want) {
					t.Errorf("%s made %v; want only %v", what, m, want)
				}
			}

			e.Exec(tc.insert)
			e.Commit()
			id := one(tc.where)
			if id == "" || c.get(tc.typeName, id) == nil {
				t.Fatalf("not created: row identity %q", id)
			}
			e.Emu.Reset()
			e.Refresh()
			mutations("a cycle over what is in sync", map[string]int{})

			e.Exec(tc.update)
			e.Emu.Reset()
			e.Commit()
			mutations("an update in place", map[string]int{"cloudcontrolapi:UpdateResource": 1})
			e.Emu.Reset()
			e.Refresh()
			mutations("a cycle after the update", map[string]int{})

			if tc.replace != "" {
				e.Exec(tc.replace)
				e.Emu.Reset()
				e.Commit()
				mutations("a create-only change", map[string]int{"cloudcontrolapi:CreateResource": 1, "cloudcontrolapi:DeleteResource": 1})
				id = one(tc.whereReplaced)
				if c.get(tc.typeName, id) == nil {
					t.Errorf("the replacement %s is not in the cloud", id)
				}
			}

			c.create(tc.typeName, tc.oob)
			e.Refresh()
			oob := one(tc.oobWhere)
			c.delete(tc.typeName, oob)
			e.Refresh()
			if n := e.Count(`SELECT count(*) FROM ` + tc.table + ` WHERE ` + tc.oobWhere); n != 0 {
				t.Error("a resource deleted by another tool is still a row")
			}

			e.Exec(`DELETE FROM ` + tc.table + ` WHERE ` + tc.identity + ` = '` + strings.ReplaceAll(id, "'", "''") + `'`)
			e.Commit()
			if got := c.get(tc.typeName, id); got != nil {
				t.Errorf("deleted from SQL, still in the cloud: %v", got)
			}
		})
	}
}
