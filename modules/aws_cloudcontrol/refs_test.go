package aws_cloudcontrol_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/internal/testkit"
	"github.com/iasql/iasql/modules/aws_account"
	"github.com/iasql/iasql/modules/aws_cloudcontrol"
	"github.com/iasql/iasql/modules/aws_iam"
	"github.com/iasql/iasql/modules/aws_vpc"
	"github.com/iasql/iasql/modules/module"
)

// TestReferenceByWellKnownName: a log group's KmsKeyId names a KMS key;
// its table has kms_key_id_ref, a foreign key to aws_kms_key. A key and a
// log group that uses it, inserted in one transaction, take one commit:
// the group reaches the cloud under the key's ARN, which the row then
// shows. A group made elsewhere with that key is imported pointing at the
// key's row. Deleting the key's row while a group references it is refused
// at write time.
func TestReferenceByWellKnownName(t *testing.T) {
	t.Parallel()
	e, c := env(t, 0, "AWS::KMS::Key", "AWS::Logs::LogGroup")
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO aws_kms_key (description) VALUES ('logs')`,
		`INSERT INTO aws_logs_log_group (log_group_name, kms_key_id_ref) VALUES ('encrypted', currval('aws_kms_key_id_seq'))`,
		`CALL iasql_commit()`)
	var keyARN string
	if err := e.DB.QueryRow(context.Background(), `SELECT arn FROM aws_kms_key WHERE description = 'logs'`).Scan(&keyARN); err != nil || keyARN == "" {
		t.Fatalf("the key's ARN after the commit: %q %v", keyARN, err)
	}
	if got := c.get("AWS::Logs::LogGroup", "encrypted"); got == nil || got["KmsKeyId"] != keyARN {
		t.Fatalf("the log group in the cloud: %v, want KmsKeyId %s", got, keyARN)
	}
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'encrypted' AND kms_key_id = '` + keyARN + `'`); n != 1 {
		t.Error("the group's row does not show the key's ARN after the commit")
	}

	c.create("AWS::Logs::LogGroup", `{"LogGroupName": "made-elsewhere", "KmsKeyId": "`+keyARN+`"}`)
	e.Exec(`CALL iasql_refresh()`)
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'made-elsewhere' AND kms_key_id_ref = (SELECT id FROM aws_kms_key WHERE description = 'logs')`); n != 1 {
		t.Error("a group made elsewhere with the key was not imported pointing at the key's row")
	}

	_, err := e.DB.Exec(context.Background(), `DELETE FROM aws_kms_key WHERE description = 'logs'`)
	if err == nil || !strings.Contains(err.Error(), "aws_logs_log_group_kms_key_id_ref_fk") {
		t.Errorf("deleting a key the groups reference: %v, want the foreign key's refusal", err)
	}
}

// TestReferenceInstalledLater: a type installed before the table it
// references refuses a reference until that table is installed, then
// takes it as a foreign key.
func TestReferenceInstalledLater(t *testing.T) {
	t.Parallel()
	e, _ := env(t, 0, "AWS::Logs::LogGroup")
	_, err := e.DB.Exec(context.Background(), `INSERT INTO aws_logs_log_group (log_group_name, kms_key_id_ref) VALUES ('early', 1)`)
	if err == nil || !strings.Contains(err.Error(), "aws_kms_key, which is not installed") {
		t.Fatalf("a reference to a table not installed: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM pg_constraint WHERE conname = 'aws_logs_log_group_kms_key_id_ref_fk'`); n != 0 {
		t.Fatal("a foreign key to a table that is not installed")
	}
	e.Exec(`SELECT * FROM iasql_install('AWS::KMS::Key')`)
	if n := e.Count(`SELECT count(*) FROM pg_constraint WHERE conname = 'aws_logs_log_group_kms_key_id_ref_fk' AND confrelid = 'aws_kms_key'::regclass`); n != 1 {
		t.Fatal("installing the referenced type did not link the reference")
	}
	e.Exec(`INSERT INTO aws_kms_key (description) VALUES ('late')`,
		`INSERT INTO aws_logs_log_group (log_group_name, kms_key_id_ref) VALUES ('later', currval('aws_kms_key_id_seq'))`,
		`CALL iasql_commit()`)
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group g JOIN aws_kms_key k ON k.id = g.kms_key_id_ref WHERE g.log_group_name = 'later' AND g.kms_key_id = k.arn`); n != 1 {
		t.Error("the group made after the link does not name its key's ARN")
	}
}

// TestReferenceToHandWrittenTable: a subscription filter's RoleArn points
// at an iam_role row; role and filter (with its log group) in one commit.
func TestReferenceToHandWrittenTable(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_iam.Module()},
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"aws_iam", "AWS::Logs::LogGroup", "AWS::Logs::SubscriptionFilter"},
		Emulator: emulator.Options{},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('logs-writer', '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "logs.amazonaws.com"}, "Action": "sts:AssumeRole"}]}')`,
		`INSERT INTO aws_logs_log_group (log_group_name) VALUES ('app')`,
		`INSERT INTO aws_logs_subscription_filter (filter_name, log_group_name, destination_arn, filter_pattern, role_arn_ref)
		 VALUES ('ship', 'app', 'arn:aws:kinesis:us-east-1:123456789012:stream/logs', '', currval('iam_role_id_seq'))`,
		`CALL iasql_commit()`)
	var roleARN string
	if err := e.DB.QueryRow(context.Background(), `SELECT arn FROM iam_role WHERE role_name = 'logs-writer'`).Scan(&roleARN); err != nil || roleARN == "" {
		t.Fatalf("the role's ARN: %q %v", roleARN, err)
	}
	if got := c.get("AWS::Logs::SubscriptionFilter", "ship|app"); got == nil || got["RoleArn"] != roleARN {
		t.Fatalf("the filter in the cloud: %v, want RoleArn %s", got, roleARN)
	}
	if n := e.Count(`SELECT count(*) FROM aws_logs_subscription_filter WHERE filter_name = 'ship' AND role_arn = '` + roleARN + `'`); n != 1 {
		t.Error("the filter's row does not show the role's ARN")
	}
}

// TestStackInOneCommit: an API and two routes inserted in one transaction
// take one commit: the routes reach the cloud under the API's ApiId, which
// the cloud generates, through route.api_id_ref (found because ApiId is
// AWS::ApiGatewayV2::Api's single identifier). Deleting them together
// deletes the routes before the API.
func TestStackInOneCommit(t *testing.T) {
	t.Parallel()
	e, c := env(t, 0, "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Route")
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO aws_apigatewayv2_api (name, protocol_type) VALUES ('shop', 'HTTP')`,
		`INSERT INTO aws_apigatewayv2_route (api_id_ref, route_key) VALUES (currval('aws_apigatewayv2_api_id_seq'), 'GET /items'), (currval('aws_apigatewayv2_api_id_seq'), 'POST /items')`,
		`CALL iasql_commit()`)
	var apiID string
	if err := e.DB.QueryRow(context.Background(), `SELECT api_id FROM aws_apigatewayv2_api WHERE name = 'shop'`).Scan(&apiID); err != nil || apiID == "" {
		t.Fatalf("the API's id after the commit: %q %v", apiID, err)
	}
	rows, err := e.DB.Query(context.Background(), `SELECT api_id, route_id FROM aws_apigatewayv2_route ORDER BY route_key`)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for rows.Next() {
		var api, route *string
		if err := rows.Scan(&api, &route); err != nil {
			t.Fatal(err)
		}
		n++
		if api == nil || *api != apiID || route == nil {
			t.Errorf("route row %d: api_id %v route_id %v, want api_id %s and a route id", n, api, route, apiID)
			continue
		}
		if got := c.get("AWS::ApiGatewayV2::Route", apiID+"|"+*route); got == nil || got["ApiId"] != apiID {
			t.Errorf("route %s in the cloud: %v", *route, got)
		}
	}
	if n != 2 {
		t.Fatalf("%d route rows, want 2", n)
	}

	e.Exec(`CALL iasql_begin()`, `DELETE FROM aws_apigatewayv2_route`, `DELETE FROM aws_apigatewayv2_api`, `CALL iasql_commit()`)
	if got := c.get("AWS::ApiGatewayV2::Api", apiID); got != nil {
		t.Errorf("the API is still in the cloud: %v", got)
	}
}

// TestUninstallReferencedModule: uninstalling the module of a table that
// rows still point at is refused in one line and changes nothing; once
// they point elsewhere (NULL), it goes, and the type stays installed.
func TestUninstallReferencedModule(t *testing.T) {
	t.Parallel()
	e, _ := env(t, 0, "AWS::KMS::Key", "AWS::Logs::LogGroup")
	e.Exec(`INSERT INTO aws_kms_key (description) VALUES ('k')`,
		`INSERT INTO aws_logs_log_group (log_group_name, kms_key_id_ref) VALUES ('g', currval('aws_kms_key_id_seq'))`,
		`CALL iasql_commit()`)
	_, err := e.DB.Exec(context.Background(), `SELECT * FROM iasql_uninstall('AWS::KMS::Key')`)
	if err == nil || !strings.Contains(err.Error(), "1 row(s) of aws_logs_log_group point at its rows in kms_key_id_ref") {
		t.Fatalf("uninstalling a referenced type: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM pg_tables WHERE tablename = 'aws_kms_key'`); n != 1 {
		t.Fatal("a refused uninstall dropped the table")
	}
	e.Exec(`UPDATE aws_logs_log_group SET kms_key_id_ref = NULL`, `SELECT * FROM iasql_uninstall('AWS::KMS::Key')`)
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group WHERE log_group_name = 'g' AND kms_key_id LIKE 'arn:%'`); n != 1 {
		t.Error("the log group lost the key's ARN with the key's module")
	}
	if _, err := e.DB.Exec(context.Background(), `UPDATE aws_logs_log_group SET kms_key_id_ref = 1`); err == nil || !strings.Contains(err.Error(), "not installed") {
		t.Errorf("a reference to the uninstalled type's table: %v", err)
	}
}

// TestFunctionWithRole: an AWS::Lambda::Function's Role points at an
// iam_role row; the role and the function take one commit.
func TestFunctionWithRole(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_iam.Module()},
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"aws_iam", "AWS::Lambda::Function"},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('fn-exec', '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}]}')`,
		`INSERT INTO aws_lambda_function (function_name, runtime, handler, code, role_ref) VALUES ('hello', 'python3.12', 'index.handler', '{"ZipFile": "def handler(e, c): return 1"}', currval('iam_role_id_seq'))`,
		`CALL iasql_commit()`)
	var roleARN string
	if err := e.DB.QueryRow(context.Background(), `SELECT arn FROM iam_role WHERE role_name = 'fn-exec'`).Scan(&roleARN); err != nil || roleARN == "" {
		t.Fatalf("the role's ARN: %q %v", roleARN, err)
	}
	if got := c.get("AWS::Lambda::Function", "hello"); got == nil || got["Role"] != roleARN {
		t.Fatalf("the function in the cloud: %v, want Role %s", got, roleARN)
	}
	if n := e.Count(`SELECT count(*) FROM aws_lambda_function WHERE function_name = 'hello' AND role = '` + roleARN + `'`); n != 1 {
		t.Error("the function's row does not show the role's ARN")
	}
}

// TestSubnetGroupWithSubnets: an AWS::RDS::DBSubnetGroup's SubnetIds point
// at subnet rows (subnet_ids_ref, bigint[]): a VPC, two subnets and the
// group take one commit; the group's SubnetIds are the subnets' ids; an id
// that is no subnet row is refused at write time.
func TestSubnetGroupWithSubnets(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_vpc.Module()},
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"aws_vpc", "AWS::RDS::DBSubnetGroup"},
	})
	c := &cc{t: t, client: cloudcontrol.NewFromConfig(e.AWS)}
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO vpc (cidr_block) VALUES ('10.7.0.0/16')`,
		`INSERT INTO subnet (vpc_id, cidr_block, availability_zone) VALUES (currval('vpc_id_seq'), '10.7.1.0/24', 'us-east-1a'), (currval('vpc_id_seq'), '10.7.2.0/24', 'us-east-1b')`,
		`INSERT INTO aws_rds_db_subnet_group (db_subnet_group_name, db_subnet_group_description, subnet_ids_ref) SELECT 'db', 'two zones', array_agg(id ORDER BY id) FROM subnet WHERE cidr_block::text LIKE '10.7.%'`,
		`CALL iasql_commit()`)
	var want []string
	rows, err := e.DB.Query(context.Background(), `SELECT subnet_id FROM subnet WHERE cidr_block::text LIKE '10.7.%' ORDER BY subnet_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		want = append(want, s)
	}
	got := c.get("AWS::RDS::DBSubnetGroup", "db")
	var ids []string
	if list, ok := got["SubnetIds"].([]any); ok {
		for _, v := range list {
			ids = append(ids, fmt.Sprint(v))
		}
	}
	slices.Sort(ids)
	if len(want) != 2 || !slices.Equal(ids, want) {
		t.Fatalf("the group in the cloud has SubnetIds %v, want the subnets' %v", ids, want)
	}
	if _, err := e.DB.Exec(context.Background(), `UPDATE aws_rds_db_subnet_group SET subnet_ids_ref = subnet_ids_ref || 999999::bigint`); err == nil || !strings.Contains(err.Error(), "999999 is not a row of subnet") {
		t.Errorf("a subnet id that is no row: %v", err)
	}
	_, err = e.DB.Exec(context.Background(), `DELETE FROM subnet WHERE cidr_block = '10.7.1.0/24'`)
	if err == nil || !strings.Contains(err.Error(), "still referenced by aws_rds_db_subnet_group") {
		t.Errorf("deleting a subnet the group lists: %v", err)
	}
}

// TestReferencesAddedToAnOlderTable: a type's table made by a sidecar that
// declared no reference columns gets them, with their checks, when a
// sidecar that declares them starts; rows and values stay.
func TestReferencesAddedToAnOlderTable(t *testing.T) {
	t.Parallel()
	e, _ := env(t, 0, "AWS::KMS::Key", "AWS::Logs::LogGroup")
	e.Exec(`INSERT INTO aws_logs_log_group (log_group_name, retention_in_days) VALUES ('old', 7)`, `CALL iasql_commit()`)
	// The table as the older sidecar made it: no kms_key_id_ref.
	e.Exec(`ALTER TABLE aws_logs_log_group DROP COLUMN kms_key_id_ref CASCADE`)
	e.Upgrade(nil)
	// The engine registers the modules it offers as it starts leading.
	testkit.WaitQuery(t, e.DB, 30*time.Second, "the reference column added as the sidecar starts",
		`SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'aws_logs_log_group'::regclass AND attname = 'kms_key_id_ref' AND NOT attisdropped)`)
	if n := e.Count(`SELECT count(*) FROM pg_trigger WHERE tgrelid = 'aws_logs_log_group'::regclass AND tgname = 'aws_logs_log_group_kms_key_id_ref_check'`); n != 1 {
		t.Error("the reference column's check was not made")
	}
	if n := e.Count(`SELECT count(*) FROM pg_constraint WHERE conname = 'aws_logs_log_group_kms_key_id_ref_fk'`); n != 1 {
		t.Error("the reference column was not linked to aws_kms_key")
	}
	e.Exec(`INSERT INTO aws_kms_key (description) VALUES ('k')`,
		`UPDATE aws_logs_log_group SET kms_key_id_ref = currval('aws_kms_key_id_seq') WHERE log_group_name = 'old'`,
		`CALL iasql_commit()`)
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group g JOIN aws_kms_key k ON k.id = g.kms_key_id_ref WHERE g.kms_key_id = k.arn AND g.retention_in_days = 7`); n != 1 {
		t.Error("the older row does not take a reference after the migration")
	}
}

// TestParentReplacedChildRepointed: an API whose create-only ProtocolType
// changes is replaced (a new ApiId); its routes, whose ApiId is create-only
// too, follow it to the new API, and the old API is deleted.
func TestParentReplacedChildRepointed(t *testing.T) {
	t.Parallel()
	e, c := env(t, 0, "AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Route")
	e.Exec(`INSERT INTO aws_apigatewayv2_api (name, protocol_type, route_selection_expression) VALUES ('chat', 'HTTP', '$request.method $request.path')`,
		`INSERT INTO aws_apigatewayv2_route (api_id_ref, route_key) VALUES (currval('aws_apigatewayv2_api_id_seq'), 'GET /a')`,
		`CALL iasql_commit()`)
	old := e.String(`SELECT api_id FROM aws_apigatewayv2_api WHERE name = 'chat'`)
	e.Exec(`UPDATE aws_apigatewayv2_api SET protocol_type = 'WEBSOCKET', route_selection_expression = '$request.body.action' WHERE name = 'chat'`,
		`CALL iasql_commit()`)
	now := e.String(`SELECT api_id FROM aws_apigatewayv2_api WHERE name = 'chat'`)
	if now == "" || now == old {
		t.Fatalf("the API was not replaced: %q -> %q", old, now)
	}
	if got := c.get("AWS::ApiGatewayV2::Api", old); got != nil {
		t.Errorf("the old API is still in the cloud: %v", got)
	}
	route := e.String(`SELECT route_id FROM aws_apigatewayv2_route WHERE api_id = '` + now + `'`)
	if route == "" {
		t.Fatalf("the route row does not follow the new API %s: %v", now, e.String(`SELECT api_id FROM aws_apigatewayv2_route`))
	}
	if got := c.get("AWS::ApiGatewayV2::Route", now+"|"+route); got == nil || got["ApiId"] != now {
		t.Errorf("the route in the cloud under the new API: %v", got)
	}
}

// TestRolePolicyOnRole: an AWS::IAM::RolePolicy names its role by
// RoleName (role_name_ref, an iam_role row): the role and its inline policy
// take one commit, and IAM sees the policy on the role.
func TestRolePolicyOnRole(t *testing.T) {
	t.Parallel()
	e := enginetest.New(t, srv, enginetest.Options{
		Modules:  []module.Module{aws_account.Module(), aws_iam.Module()},
		Catalogs: []module.Catalog{aws_cloudcontrol.Catalog()},
		Install:  []string{"aws_iam", "AWS::IAM::RolePolicy"},
	})
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO iam_role (role_name, assume_role_policy_document) VALUES ('worker', '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": {"Service": "ec2.amazonaws.com"}, "Action": "sts:AssumeRole"}]}')`,
		`INSERT INTO aws_iam_role_policy (policy_name, role_name_ref, policy_document) VALUES ('read-logs', currval('iam_role_id_seq'), '{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "logs:Get*", "Resource": "*"}]}')`,
		`CALL iasql_commit()`)
	out, err := iam.NewFromConfig(e.AWS).GetRolePolicy(context.Background(), &iam.GetRolePolicyInput{RoleName: aws.String("worker"), PolicyName: aws.String("read-logs")})
	if err != nil || !strings.Contains(aws.ToString(out.PolicyDocument), "logs") {
		t.Fatalf("IAM's inline policy read-logs of worker: %v", err)
	}
	if n := e.Count(`SELECT count(*) FROM aws_iam_role_policy WHERE policy_name = 'read-logs' AND role_name = 'worker'`); n != 1 {
		t.Error("the policy's row does not show its role's name")
	}
}

// TestNamingColumnChangedByUser: a row whose reference is set, updated by a
// user in its naming column only, sends that name to the cloud (the
// reference lets go, then follows the new name), and nothing puts the old
// one back.
func TestNamingColumnChangedByUser(t *testing.T) {
	t.Parallel()
	e, c := env(t, 0, "AWS::KMS::Key", "AWS::Logs::LogGroup")
	e.Exec(`INSERT INTO aws_kms_key (description) VALUES ('one'), ('two')`,
		`INSERT INTO aws_logs_log_group (log_group_name, kms_key_id_ref) SELECT 'g', id FROM aws_kms_key WHERE description = 'one'`,
		`CALL iasql_commit()`)
	two := e.String(`SELECT arn FROM aws_kms_key WHERE description = 'two'`)
	e.Exec(`UPDATE aws_logs_log_group SET kms_key_id = '`+two+`' WHERE log_group_name = 'g'`, `CALL iasql_commit()`)
	if got := c.get("AWS::Logs::LogGroup", "g"); got == nil || got["KmsKeyId"] != two {
		t.Fatalf("the group in the cloud: %v, want KmsKeyId %s (the user's)", got, two)
	}
	e.Exec(`CALL iasql_refresh()`)
	if n := e.Count(`SELECT count(*) FROM aws_logs_log_group g JOIN aws_kms_key k ON k.id = g.kms_key_id_ref WHERE g.log_group_name = 'g' AND k.description = 'two' AND g.kms_key_id = '` + two + `'`); n != 1 {
		t.Errorf("the row does not name key two by both its ARN and its reference: %s", e.String(`SELECT row_to_json(g)::text FROM aws_logs_log_group g`))
	}
	if got := c.get("AWS::Logs::LogGroup", "g"); got["KmsKeyId"] != two {
		t.Errorf("the old key came back: %v", got)
	}
}
