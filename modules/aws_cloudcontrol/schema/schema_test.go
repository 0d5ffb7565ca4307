package schema_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// emulatorSchemas is every resource schema the emulator serves.
func emulatorSchemas(t *testing.T) map[string][]byte {
	t.Helper()
	files, err := filepath.Glob("../../../internal/emulator/cfnschemas/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("no schemas: %v", err)
	}
	out := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = b
	}
	return out
}

func TestTableName(t *testing.T) {
	cases := map[string]string{
		"AWS::Logs::LogGroup":                   "aws_logs_log_group",
		"AWS::DynamoDB::Table":                  "aws_dynamodb_table",
		"AWS::EC2::VPC":                         "aws_ec2_vpc",
		"AWS::EC2::VPCEndpoint":                 "aws_ec2_vpc_endpoint",
		"AWS::Logs::SubscriptionFilter":         "aws_logs_subscription_filter",
		"AWS::KMS::Key":                         "aws_kms_key",
		"AWS::ElasticLoadBalancingV2::Listener": "aws_elasticloadbalancingv2_listener",
	}
	for in, want := range cases {
		if got := schema.TableName(in); got != want {
			t.Errorf("TableName(%s) = %s, want %s", in, got, want)
		}
	}
	long := "AWS::SomeVeryLongServiceName::" + strings.Repeat("AndSoOn", 10)
	got := schema.TableName(long)
	if len(got) > 56 || got != schema.TableName(long) || got == schema.TableName(long+"X") {
		t.Errorf("long TableName %q: want ≤ 56 bytes (its sequence <table>_id_seq ≤ 63), stable and unique", got)
	}
	// 57 bytes: its sequence's name would not be <table>_id_seq.
	if got := schema.TableName("AWS::NetworkManager::TransitGatewayRouteTableAttachment"); len(got) > 56 || !strings.HasPrefix(got, "aws_networkmanager_transit_gateway_route_") {
		t.Errorf("TableName of a 57-byte name: %q", got)
	}
}

func TestColumnName(t *testing.T) {
	cases := map[string]string{
		"LogGroupName": "log_group_name", "KmsKeyId": "kms_key_id", "SSESpecification": "sse_specification",
		"Ipv6CidrBlock": "ipv6_cidr_block", "S3Bucket": "s3_bucket", "Arn": "arn", "Id": "aws_id",
		"KMSMasterKeyID": "kms_master_key_id", "RetentionInDays": "retention_in_days",
		// Words SQL reserves cannot be column names unquoted.
		"Order": "aws_order", "Default": "aws_default", "User": "aws_user", "Type": "type",
	}
	for in, want := range cases {
		if got := schema.ColumnName(in); got != want {
			t.Errorf("ColumnName(%s) = %s, want %s", in, got, want)
		}
	}
}

// TestEmulatorSchemas checks, for every schema the emulator serves, what a
// user reading the table would check.
func TestEmulatorSchemas(t *testing.T) {
	type col struct{ name, sqlType string }
	want := map[string]struct {
		table     string
		cloudID   []string
		cols      []col
		notNull   []string
		feedback  []string
		create    []string
		unordered []string
		parents   []string
		refs      []string
		refused   string // why the type has no table (schema.Parse's error)
	}{
		"aws-logs-loggroup.json": {
			table: "aws_logs_log_group", cloudID: []string{"log_group_name"},
			cols:      []col{{"log_group_name", "text"}, {"retention_in_days", "bigint"}, {"tags", "jsonb"}, {"data_protection_policy", "jsonb"}, {"arn", "text"}},
			feedback:  []string{"arn"},
			create:    []string{"log_group_class", "log_group_name"},
			unordered: []string{"field_index_policies"},
			refs:      []string{"kms_key_id_ref -> aws_kms_key.arn"},
		},
		"aws-sqs-queue.json": {
			table: "aws_sqs_queue", cloudID: []string{"queue_url"},
			cols:     []col{{"queue_url", "text"}, {"fifo_queue", "boolean"}, {"delay_seconds", "bigint"}, {"redrive_policy", "jsonb"}},
			feedback: []string{"arn", "queue_url"}, create: []string{"fifo_queue", "queue_name"},
			refs: []string{"kms_master_key_id_ref -> aws_kms_key.arn"},
		},
		"aws-dynamodb-table.json": {
			table: "aws_dynamodb_table", cloudID: []string{"table_name"},
			cols:    []col{{"key_schema", "jsonb"}, {"sse_specification", "jsonb"}, {"deletion_protection_enabled", "boolean"}},
			notNull: []string{"key_schema"}, feedback: []string{"arn", "stream_arn"},
			create:    []string{"import_source_specification", "table_name"},
			unordered: []string{"attribute_definitions", "global_secondary_indexes", "local_secondary_indexes"},
		},
		"aws-logs-subscriptionfilter.json": {
			table: "aws_logs_subscription_filter", cloudID: []string{"filter_name", "log_group_name"},
			cols:    []col{{"filter_name", "text"}, {"log_group_name", "text"}, {"apply_on_transformed_logs", "boolean"}},
			notNull: []string{"destination_arn", "filter_pattern", "log_group_name"},
			create:  []string{"filter_name", "log_group_name"}, parents: []string{"LogGroupName"},
			refs: []string{"role_arn_ref -> iam_role.arn"},
		},
		"aws-kms-key.json":                  {table: "aws_kms_key", cloudID: []string{"key_id"}, cols: []col{{"key_policy", "jsonb"}, {"rotation_period_in_days", "bigint"}}, feedback: []string{"arn", "key_id"}},
		"aws-sns-topic.json":                {table: "aws_sns_topic", cloudID: []string{"topic_arn"}, feedback: []string{"topic_arn"}, create: []string{"fifo_topic", "topic_name"}, unordered: []string{"delivery_status_logging", "subscription"}, refs: []string{"kms_master_key_id_ref -> aws_kms_key.arn"}},
		"aws-apigatewayv2-api.json":         {table: "aws_apigatewayv2_api", cloudID: []string{"api_id"}, feedback: []string{"api_endpoint", "api_id"}, create: []string{"protocol_type"}},
		"aws-apigatewayv2-integration.json": {table: "aws_apigatewayv2_integration", cloudID: []string{"api_id", "integration_id"}, notNull: []string{"api_id", "integration_type"}, feedback: []string{"integration_id"}, create: []string{"api_id"}, parents: []string{"ApiId"}},
		"aws-apigatewayv2-route.json":       {table: "aws_apigatewayv2_route", cloudID: []string{"api_id", "route_id"}, notNull: []string{"api_id", "route_key"}, feedback: []string{"route_id"}, create: []string{"api_id"}, parents: []string{"ApiId"}},
		"aws-sns-subscription.json":         {table: "aws_sns_subscription", cloudID: []string{"arn"}, notNull: []string{"protocol", "topic_arn"}, feedback: []string{"arn"}, create: []string{"endpoint", "protocol", "topic_arn"}},
		"aws-lambda-function.json": {table: "aws_lambda_function", cloudID: []string{"function_name"}, notNull: []string{"code", "role"}, feedback: []string{"arn"}, create: []string{"function_name"},
			refs: []string{"role_ref -> iam_role.arn"}},
		"aws-rds-dbsubnetgroup.json": {table: "aws_rds_db_subnet_group", cloudID: []string{"db_subnet_group_name"}, notNull: []string{"db_subnet_group_description", "subnet_ids"}, feedback: []string{"db_subnet_group_arn"}, create: []string{"db_subnet_group_name"},
			unordered: []string{"subnet_ids"}, refs: []string{"subnet_ids_ref -> subnet.subnet_id"}},
		"aws-iam-rolepolicy.json": {table: "aws_iam_role_policy", cloudID: []string{"policy_name", "role_name"}, notNull: []string{"policy_name", "role_name"}, create: []string{"policy_name", "role_name"}, refs: []string{"role_name_ref -> iam_role.role_name"}},
		// AWS::SQS::QueuePolicy has no read handler, as on AWS:
		// AWS::SQS::QueueInlinePolicy is its table.
		"aws-sqs-queuepolicy.json": {refused: "no read handler"},
		"aws-sqs-queueinlinepolicy.json": {table: "aws_sqs_queue_inline_policy", cloudID: []string{"queue"}, cols: []col{{"queue", "text"}, {"policy_document", "jsonb"}},
			notNull: []string{"policy_document", "queue"}, create: []string{"queue"}},
		"aws-events-rule.json": {table: "aws_events_rule", cloudID: []string{"arn"}, cols: []col{{"arn", "text"}, {"event_pattern", "jsonb"}, {"targets", "jsonb"}, {"state", "text"}},
			feedback: []string{"arn"}, create: []string{"event_bus_name", "name"}, unordered: []string{"targets"}, refs: []string{"role_arn_ref -> iam_role.arn"}},
		"aws-ecs-cluster.json": {table: "aws_ecs_cluster", cloudID: []string{"cluster_name"}, feedback: []string{"arn"}, create: []string{"cluster_name"}, unordered: []string{"capacity_providers", "cluster_settings", "default_capacity_provider_strategy"}},
	}
	docs := emulatorSchemas(t)
	for file := range docs {
		if _, ok := want[file]; !ok {
			t.Errorf("schema %s has no expectations here: add them", file)
		}
	}
	for file, w := range want {
		t.Run(file, func(t *testing.T) {
			doc, ok := docs[file]
			if !ok {
				t.Fatalf("no schema %s", file)
			}
			ty, err := schema.Parse(doc)
			if w.refused != "" {
				if err == nil || !strings.Contains(err.Error(), w.refused) {
					t.Fatalf("Parse: %v, want an error saying %q", err, w.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			mt := ty.ModuleTable()
			if mt.Name != w.table || ty.Table != w.table {
				t.Errorf("table %s, want %s", mt.Name, w.table)
			}
			// Every table has the region column last, declarative and
			// create-only: part of the identity where the identifier is
			// the user's, not where the cloud generates it.
			want := w.cloudID
			if !slices.ContainsFunc(w.cloudID, func(c string) bool { return slices.Contains(w.feedback, c) }) {
				want = append(slices.Clone(w.cloudID), schema.RegionColumn)
			}
			if !slices.Equal(mt.CloudID, want) {
				t.Errorf("CloudID %v, want %v", mt.CloudID, want)
			}
			if mt.Region != schema.RegionColumn {
				t.Errorf("the table's region is %q", mt.Region)
			}
			for _, c := range w.cols {
				got, ok := ty.ColumnNamed(c.name)
				if !ok || got.SQLType != c.sqlType {
					t.Errorf("column %s: %+v, want type %s", c.name, got, c.sqlType)
				}
			}
			var notNull, feedback, create, unordered []string
			for _, c := range ty.Columns {
				if c.Required {
					notNull = append(notNull, c.Name)
				}
				if c.Unordered {
					unordered = append(unordered, c.Name)
				}
			}
			feedback = slices.Sorted(slices.Values(mt.Feedback))
			create = slices.DeleteFunc(slices.Sorted(slices.Values(mt.CreateOnly)), func(c string) bool { return c == schema.RegionColumn })
			if !slices.Contains(mt.CreateOnly, schema.RegionColumn) {
				t.Error("region is not create-only")
			}
			slices.Sort(notNull)
			slices.Sort(unordered)
			for _, chk := range []struct {
				what      string
				got, want []string
			}{{"NOT NULL", notNull, w.notNull}, {"feedback", feedback, w.feedback}, {"create-only", create, w.create}, {"unordered", unordered, w.unordered}, {"list parents", ty.ListParents, w.parents}} {
				if !slices.Equal(chk.got, chk.want) {
					t.Errorf("%s: %v, want %v", chk.what, chk.got, chk.want)
				}
			}
			// Every column of the table is either declarative or feedback,
			// and only the engine's id is neither.
			refs := ty.References()
			if len(mt.Declarative)+len(mt.Feedback) != len(ty.Columns)+len(refs)+1 {
				t.Errorf("declarative %v + feedback %v do not cover the %d columns, %d references and the region", mt.Declarative, mt.Feedback, len(ty.Columns), len(refs))
			}
			var gotRefs []string
			for _, r := range refs {
				gotRefs = append(gotRefs, r.Ref+" -> "+r.Target+"."+r.By)
			}
			if !slices.Equal(gotRefs, w.refs) {
				t.Errorf("references %v, want %v", gotRefs, w.refs)
			}
			// The declaration: a column per property, in the table's
			// order, of its type, NOT NULL when required (and not given by
			// a reference instead), commented, then a column per
			// reference, then the region; its DDL creates them, and SQL
			// adds the identity's constraint.
			if len(mt.Columns) != len(ty.Columns)+len(refs)+1 {
				t.Fatalf("declares %d columns, the type has %d, %d references and the region", len(mt.Columns), len(ty.Columns), len(refs))
			}
			if r := mt.Columns[len(mt.Columns)-1]; r.Name != schema.RegionColumn || r.Type != "text" || !r.NotNull || r.Default != `public."`+w.table+`_region"()` || r.Comment == "" {
				t.Errorf("the region column: %+v", r)
			}
			for i, c := range ty.Columns {
				d := mt.Columns[i]
				given := slices.ContainsFunc(refs, func(r schema.Reference) bool { return r.Column == c.Name })
				if d.Name != c.Name || d.Type != c.SQLType || d.NotNull != (c.Required && !given) || d.Comment == "" || d.Default != "" || d.Ref != "" {
					t.Errorf("column %d declared %+v, the type's is %+v", i+1, d, c)
				}
			}
			for i, r := range refs {
				d := mt.Columns[len(ty.Columns)+i]
				if d.Name != r.Ref || d.Ref != r.Target || d.Names != r.Column || d.NamedBy != r.By || d.Kind != module.Declarative || d.Comment == "" {
					t.Errorf("reference column %d declared %+v, the reference is %+v", i+1, d, r)
				}
			}
			ddl := mt.DDL()
			if !strings.HasPrefix(ddl, "CREATE TABLE public."+w.table+" (") {
				t.Errorf("DDL does not create public.%s:\n%s", w.table, ddl)
			}
			for _, c := range ty.Columns {
				decl := c.Name + " " + c.SQLType
				if c.Required && !slices.ContainsFunc(ty.References(), func(r schema.Reference) bool { return r.Column == c.Name }) {
					decl += " NOT NULL" // else a CHECK: the property or its reference
				}
				if !strings.Contains(ddl, decl+",\n") && !strings.Contains(ddl, decl+"\n") {
					t.Errorf("DDL lacks %s", decl)
				}
				if !strings.Contains(ddl, "COMMENT ON COLUMN public."+w.table+"."+c.Name+" IS '") {
					t.Errorf("DDL lacks the comment of %s", c.Name)
				}
			}
			if !strings.Contains(ddl, "COMMENT ON TABLE public."+w.table+" IS '") {
				t.Error("DDL lacks the table's comment")
			}
			for _, c := range mt.Feedback {
				if !commentOf(ddl, c, "read-only") {
					t.Errorf("the comment of %s does not say read-only", c)
				}
			}
			ids := `"` + strings.Join(w.cloudID, `", "`) + `"`
			if ty.RegionInIdentity() {
				ids += ", region"
			}
			if sql := ty.SQL(); !strings.Contains(sql, `ALTER TABLE public."`+w.table+`" ADD CONSTRAINT "`+w.table+`_identity" UNIQUE (`+ids+`);`) {
				t.Errorf("SQL lacks the identity's constraint:\n%s", sql)
			}
		})
	}
}

func commentOf(ddl, col, word string) bool {
	for _, line := range strings.Split(ddl, "\n") {
		if strings.Contains(line, "COMMENT ON COLUMN") && strings.Contains(line, "."+col+" IS '") {
			return strings.Contains(line, word)
		}
	}
	return false
}

func TestParseDetails(t *testing.T) {
	doc := `{
	  "typeName": "AWS::Test::Thing",
	  "description": "A thing's test (with a quote)",
	  "definitions": {"Cfg": {"type": "object", "properties": {"Name": {"type": "string"}, "Inner": {"type": "object"}}}},
	  "properties": {
	    "Name": {"type": "string", "description": "It's the name"},
	    "Config": {"$ref": "#/definitions/Cfg"},
	    "Choice": {"oneOf": [{"type": "string"}, {"type": "object"}]},
	    "Ordered": {"type": "array", "items": {"type": "string"}},
	    "Secret": {"type": "string"},
	    "Size": {"type": "number", "default": 1.5},
	    "Labels": {"type": "object", "patternProperties": {".*": {"type": "string"}}}
	  },
	  "tagging": {"taggable": true, "tagProperty": "/properties/Labels"},
	  "required": ["Name"],
	  "writeOnlyProperties": ["/properties/Secret", "/properties/Config/Inner"],
	  "createOnlyProperties": ["/properties/Config/Name"],
	  "primaryIdentifier": ["/properties/Name"],
	  "handlers": {"create": {"permissions": []}, "read": {"permissions": []}, "delete": {"permissions": []}, "list": {"permissions": []}}
	}`
	ty, err := schema.Parse([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	col := func(n string) *schema.Column {
		c, ok := ty.ColumnNamed(n)
		if !ok {
			t.Fatalf("no column %s", n)
		}
		return c
	}
	if c := col("config"); c.SQLType != "jsonb" || !c.CreateOnly || !slices.Equal(c.CreateOnlyPaths, []string{"/properties/Config/Name"}) || !slices.Equal(c.WriteOnlyPaths, []string{"/properties/Config/Inner"}) {
		t.Errorf("config: %+v", c)
	}
	if c := col("choice"); c.SQLType != "jsonb" {
		t.Errorf("a oneOf is jsonb: %+v", c)
	}
	if c := col("ordered"); c.Unordered {
		t.Error("insertionOrder defaults to true: an array without it is ordered")
	}
	if c := col("secret"); !c.WriteOnly {
		t.Error("secret is write-only")
	}
	if c := col("size"); c.SQLType != "numeric" || c.Default == nil {
		t.Errorf("size: %+v", c)
	}
	if c := col("labels"); !c.Tags || c.TagList {
		t.Errorf("labels is the tag property, a map: %+v", c)
	}
	// No update handler: every declarative column is create-only.
	if mt := ty.ModuleTable(); len(mt.CreateOnly) != len(mt.Declarative) {
		t.Errorf("a type without update: create-only %v, declarative %v", mt.CreateOnly, mt.Declarative)
	}
	ddl := ty.ModuleTable().DDL()
	if !strings.Contains(ddl, "It''s the name") || !strings.Contains(ddl, "A thing''s test") {
		t.Errorf("quotes not escaped:\n%s", ddl)
	}
	// Records and models convert both ways; tags as a map.
	model := map[string]any{"Name": "n", "Labels": map[string]any{"a": "b"}, "Size": json.Number("2")}
	rec := ty.ToRecord(model)
	if rec["name"] != "n" || rec["labels"].(map[string]any)["a"] != "b" || rec["size"] != json.Number("2") {
		t.Errorf("record %v", rec)
	}
	back := ty.ToModel(rec, nil)
	if !module.Same(back["Labels"], model["Labels"]) || back["Name"] != "n" {
		t.Errorf("model %v", back)
	}
}

func TestParseRefuses(t *testing.T) {
	base := func(handlers, props string) string {
		return `{"typeName": "AWS::Test::Thing", "properties": {` + props + `}, "primaryIdentifier": ["/properties/Name"], "handlers": {` + handlers + `}}`
	}
	all := `"create": {}, "read": {}, "delete": {}, "list": {}`
	cases := []struct {
		name, doc, want string
		notProv         bool
	}{
		{"no create handler", base(`"read": {}, "delete": {}, "list": {}`, `"Name": {"type": "string"}`), "no create handler", true},
		{"no delete handler", base(`"create": {}, "read": {}, "list": {}`, `"Name": {"type": "string"}`), "no delete handler", true},
		{"colliding columns", base(all, `"Name": {"type": "string"}, "NAME": {"type": "string"}`), "both make column", false},
		{"the engine's id", base(all, `"Name": {"type": "string"}, "ID": {"type": "string"}, "AwsId": {"type": "string"}`), "both make column", false},
		{"a table name not starting with a letter", `{"typeName": "1Abc::T::T", "properties": {"Name": {"type": "string"}}, "primaryIdentifier": ["/properties/Name"], "handlers": {` + all + `}}`, "does not start with a letter", false},
		{"identifier not a property", `{"typeName": "AWS::T::T", "properties": {"A": {"type": "string"}}, "primaryIdentifier": ["/properties/B"], "handlers": {` + all + `}}`, "names no property", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := schema.Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want one line with %q", err, c.want)
			}
			if errors.Is(err, schema.ErrNotProvisionable) != c.notProv {
				t.Errorf("ErrNotProvisionable: %v", err)
			}
		})
	}
	if err := schema.CheckProvisioning("AWS::T::T", "NON_PROVISIONABLE"); !errors.Is(err, schema.ErrNotProvisionable) {
		t.Errorf("NON_PROVISIONABLE: %v", err)
	}
	if err := schema.CheckProvisioning("AWS::T::T", "IMMUTABLE"); err != nil {
		t.Errorf("IMMUTABLE: %v", err)
	}
}

// TestNoReferenceToItself: a well-known name that is the type's own
// identifier (AWS::IAM::Role's RoleName) is no reference to the
// hand-written table of the same resources; another type's is
// (AWS::IAM::RolePolicy's RoleName).
func TestNoReferenceToItself(t *testing.T) {
	schemaOf := func(typeName, ident string) []byte {
		return []byte(`{"typeName": "` + typeName + `", "properties": {"RoleName": {"type": "string"}, "PolicyName": {"type": "string"}},
			"primaryIdentifier": [` + ident + `], "handlers": {"create": {}, "read": {}, "delete": {}}}`)
	}
	for _, tc := range []struct {
		typeName, ident string
		refs            int
	}{
		{"AWS::IAM::Role", `"/properties/RoleName"`, 0},
		{"AWS::IAM::RolePolicy", `"/properties/PolicyName", "/properties/RoleName"`, 1},
	} {
		ty, err := schema.Parse(schemaOf(tc.typeName, tc.ident))
		if err != nil {
			t.Fatal(err)
		}
		if got := len(ty.References()); got != tc.refs {
			t.Errorf("%s: %d references %v, want %d", tc.typeName, got, ty.References(), tc.refs)
		}
	}
}
