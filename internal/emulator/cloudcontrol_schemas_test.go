package emulator_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"
	"github.com/aws/aws-sdk-go-v2/service/iam"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

const quirkyDir = "testdata/quirky-schemas"

// ccRun is one Cloud Control request of a table of steps: what it
// answered at once (err) or, for a create, update or delete, how its
// request ended.
type ccRun struct {
	ev  *cctypes.ProgressEvent
	err error
}

// ccDo sends a create (desired), update (patch) or delete and waits for
// its request to end.
func ccDo(t *testing.T, c *cloudcontrol.Client, op, typeName, arg string) ccRun {
	t.Helper()
	ctx := t.Context()
	var ev *cctypes.ProgressEvent
	var err error
	switch op {
	case "create":
		var out *cloudcontrol.CreateResourceOutput
		if out, err = c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String(typeName), DesiredState: aws.String(arg)}); err == nil {
			ev = out.ProgressEvent
		}
	case "delete":
		var out *cloudcontrol.DeleteResourceOutput
		if out, err = c.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{TypeName: aws.String(typeName), Identifier: aws.String(arg)}); err == nil {
			ev = out.ProgressEvent
		}
	default:
		t.Fatalf("op %s", op)
	}
	if err != nil {
		return ccRun{err: err}
	}
	return ccRun{ev: testkit.WaitCloudControl(t, 10*time.Second, c, ev)}
}

// What a folder of schemas (Options.SchemaDir) serves: DescribeType with
// the document as written (NUL escapes kept), generic CRUD with
// validation through $ref chains and oneOf/anyOf, defaults, generated
// read-only properties, nested and composite identifiers, AlreadyExists
// and NotFound, list under a parent, UnsupportedActionException for a type
// without a list handler; the folder's schema of an embedded type wins.
func TestCloudControlSchemaDir(t *testing.T) {
	cl := testkit.StartCloud(t, emulator.Options{SchemaDir: quirkyDir})
	c := testkit.Clients(cl.AWS, cloudcontrol.NewFromConfig)("us-east-1")
	cfn := cloudformation.NewFromConfig(cl.AWS)
	ctx := t.Context()

	raw, err := os.ReadFile(filepath.Join(quirkyDir, "example-quirk-schedule.json"))
	if err != nil {
		t.Fatal(err)
	}
	dt, err := cfn.DescribeType(ctx, &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String("Example::Quirk::Schedule")})
	if err != nil {
		t.Fatalf("DescribeType: %v", err)
	}
	if aws.ToString(dt.Schema) != string(raw) || dt.ProvisioningType != cfntypes.ProvisioningTypeFullyMutable {
		t.Errorf("DescribeType: %s, schema as served:\n%s", dt.ProvisioningType, aws.ToString(dt.Schema))
	}

	const sched = "Example::Quirk::Schedule"
	good := `{"Owner":"ann","Plan":{"PlanId":"p1","Every":"DAILY","Secret":"s"},"Email":"a@example.com","Target":{"Queue":"q"}}`
	created := ccDo(t, c, "create", sched, good)
	if created.err != nil || created.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("create: %v %+v", created.err, created.ev)
	}
	if id := aws.ToString(created.ev.Identifier); id != "ann|p1" {
		t.Errorf("identifier %q, want ann|p1 (Owner, then Plan/PlanId)", id)
	}
	got, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(sched), Identifier: aws.String("ann|p1")})
	if err != nil {
		t.Fatal(err)
	}
	props := ccProps(t, got.ResourceDescription.Properties)
	for name, re := range map[string]string{
		"ScheduleArn": `^arn:aws:quirk:us-east-1:` + acct + `:schedule/ann$`,
		"CreatedAt":   `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`,
		"Revision":    `^1$`,
		"Mode":        `^ACTIVE$`, // the default
	} {
		if v := toString(props[name]); !regexp.MustCompile(re).MatchString(v) {
			t.Errorf("%s = %q, want %s", name, v, re)
		}
	}
	if plan, _ := props["Plan"].(map[string]any); plan["PlanId"] != "p1" || plan["Secret"] != nil {
		t.Errorf("Plan as read: %v (write-only Secret must be left out)", props["Plan"])
	}

	for _, tc := range []struct {
		name, typeName, desired string
		code                    string // error answered at once
		failed                  cctypes.HandlerErrorCode
		in                      string
	}{
		{"same user-given identifier", sched, good, "", cctypes.HandlerErrorCodeAlreadyExists, "already exists"},
		{"neither oneOf alternative", sched, `{"Owner":"bo","Plan":{"PlanId":"p"}}`, "InvalidRequestException", "", "#: no subschema matched out of the total 2 subschemas"},
		{"unknown key behind a $ref chain", sched, `{"Owner":"bo","Plan":{"PlanId":"p","Nope":1},"Phone":"1"}`, "InvalidRequestException", "", "#/Plan: extraneous key [Nope] is not permitted"},
		{"enum behind a $ref chain", sched, `{"Owner":"bo","Plan":{"PlanId":"p","Every":"WEEKLY"},"Phone":"1"}`, "InvalidRequestException", "", "#/Plan/Every: WEEKLY is not a valid enum value"},
		{"nested required", sched, `{"Owner":"bo","Plan":{},"Phone":"1"}`, "InvalidRequestException", "", "#/Plan: required key [PlanId] not found"},
		{"no anyOf alternative", sched, `{"Owner":"bo","Plan":{"PlanId":"p"},"Phone":"1","Target":7}`, "InvalidRequestException", "", "#/Target: no subschema matched"},
		{"read-only given", sched, `{"Owner":"bo","Plan":{"PlanId":"p"},"Phone":"1","Revision":3}`, "InvalidRequestException", "", "/properties/Revision"},
		{"a path naming no property is no property", sched, `{"Owner":"bo","Plan":{"PlanId":"p"},"Phone":"1","LastError":"x"}`, "InvalidRequestException", "", "extraneous key [LastError]"},
		{"the folder's schema wins", "AWS::ECS::Cluster", `{"ClusterName":"c1","Flavour":"mint"}`, "", "", ""},
		{"an item under a shelf", "Example::Quirk::Item", `{"ShelfName":"top","Label":"a"}`, "", "", ""},
		{"another item under another shelf", "Example::Quirk::Item", `{"ShelfName":"low","Label":"b"}`, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ccDo(t, c, "create", tc.typeName, tc.desired)
			switch {
			case tc.code != "":
				if code := errCode(r.err); code != tc.code || !strings.Contains(r.err.Error(), tc.in) {
					t.Errorf("%v, want %s with %q", r.err, tc.code, tc.in)
				}
			case r.err != nil:
				t.Fatalf("create: %v", r.err)
			case tc.failed != "":
				if r.ev.OperationStatus != cctypes.OperationStatusFailed || r.ev.ErrorCode != tc.failed || !strings.Contains(aws.ToString(r.ev.StatusMessage), tc.in) {
					t.Errorf("ended %+v, want FAILED %s", r.ev, tc.failed)
				}
			case r.ev.OperationStatus != cctypes.OperationStatusSuccess:
				t.Errorf("ended %+v, want SUCCESS", r.ev)
			}
		})
	}

	// Items: composite identifier ShelfName|ItemId (ItemId generated),
	// listed by shelf only.
	list := func(typeName, model string) (*cloudcontrol.ListResourcesOutput, error) {
		in := &cloudcontrol.ListResourcesInput{TypeName: aws.String(typeName)}
		if model != "" {
			in.ResourceModel = aws.String(model)
		}
		return c.ListResources(ctx, in)
	}
	out, err := list("Example::Quirk::Item", `{"ShelfName":"top"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.ResourceDescriptions) != 1 || !regexp.MustCompile(`^top\|[a-z0-9]{10}$`).MatchString(aws.ToString(out.ResourceDescriptions[0].Identifier)) {
		t.Errorf("items of shelf top: %+v", out.ResourceDescriptions)
	}
	for _, tc := range []struct {
		name, typeName, model, code string
	}{
		{"list without the parent", "Example::Quirk::Item", "", "InvalidRequestException"},
		{"list of a type without a list handler", sched, "", "UnsupportedActionException"},
	} {
		if _, err := list(tc.typeName, tc.model); errCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}

	// Gone: GetResource answers ResourceNotFoundException, a delete FAILS
	// NotFound.
	if r := ccDo(t, c, "delete", sched, "ann|p1"); r.err != nil || r.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("delete: %v %+v", r.err, r.ev)
	}
	if _, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(sched), Identifier: aws.String("ann|p1")}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("GetResource after delete: %v", err)
	}
	if r := ccDo(t, c, "delete", sched, "ann|p1"); r.err != nil || r.ev.ErrorCode != cctypes.HandlerErrorCodeNotFound {
		t.Errorf("second delete: %v %+v", r.err, r.ev)
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// A folder that cannot be served is refused with what is wrong.
func TestSchemaDirRefused(t *testing.T) {
	bad := t.TempDir()
	if err := os.WriteFile(filepath.Join(bad, "broken.json"), []byte(`{"typeName": `), 0o600); err != nil {
		t.Fatal(err)
	}
	noID := t.TempDir()
	if err := os.WriteFile(filepath.Join(noID, "x.json"), []byte(`{"typeName":"A::B::C","properties":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ dir, want string }{
		{filepath.Join(t.TempDir(), "missing"), "schema folder"},
		{bad, "broken.json"},
		{noID, "primaryIdentifier"},
	} {
		if _, err := emulator.Open(emulator.Options{SchemaDir: tc.dir}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Open %s: %v, want an error naming %q", tc.dir, err, tc.want)
		}
	}
}

// The built-in types: an API and its routes (ApiId|RouteId, listed by API,
// none under a missing API, gone with their API), a topic's subscriptions
// (none to a missing topic), and role policies kept as IAM's inline
// policies, seen both ways.
func TestCloudControlBuiltinTypes(t *testing.T) {
	cl := testkit.StartCloud(t, emulator.Options{})
	c := testkit.Clients(cl.AWS, cloudcontrol.NewFromConfig)("eu-west-1")
	ic := iam.NewFromConfig(cl.AWS)
	ctx := t.Context()

	api := ccDo(t, c, "create", "AWS::ApiGatewayV2::Api", `{"Name":"shop","ProtocolType":"HTTP"}`)
	if api.err != nil || api.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("create API: %v %+v", api.err, api.ev)
	}
	apiID := aws.ToString(api.ev.Identifier)
	if m := ccProps(t, api.ev.ResourceModel); !regexp.MustCompile(`^[a-z0-9]{10}$`).MatchString(apiID) ||
		m["ApiEndpoint"] != "https://"+apiID+".execute-api.eu-west-1.amazonaws.com" {
		t.Errorf("API %q: %v", apiID, m)
	}
	topic := ccDo(t, c, "create", "AWS::SNS::Topic", `{"TopicName":"alerts"}`)
	if topic.err != nil || topic.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("create topic: %v %+v", topic.err, topic.ev)
	}
	topicArn := aws.ToString(topic.ev.Identifier)
	if _, err := ic.CreateRole(ctx, &iam.CreateRoleInput{RoleName: aws.String("app"), AssumeRolePolicyDocument: aws.String(`{"Version":"2012-10-17","Statement":[]}`)}); err != nil {
		t.Fatal(err)
	}
	const doc = `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"s3:GetObject","Resource":"*"}]}`

	for _, tc := range []struct {
		name, typeName, desired string
		id                      string // regexp of the identifier on success
		failed                  cctypes.HandlerErrorCode
	}{
		{"route", "AWS::ApiGatewayV2::Route", `{"ApiId":"` + apiID + `","RouteKey":"GET /items"}`, `^` + apiID + `\|[a-z0-9]{7}$`, ""},
		{"second route", "AWS::ApiGatewayV2::Route", `{"ApiId":"` + apiID + `","RouteKey":"POST /items"}`, `^` + apiID + `\|[a-z0-9]{7}$`, ""},
		{"route of a missing API", "AWS::ApiGatewayV2::Route", `{"ApiId":"nope000000","RouteKey":"GET /"}`, "", cctypes.HandlerErrorCodeNotFound},
		{"API without name", "AWS::ApiGatewayV2::Api", `{"ProtocolType":"HTTP"}`, "", cctypes.HandlerErrorCodeInvalidRequest},
		{"subscription", "AWS::SNS::Subscription", `{"TopicArn":"` + topicArn + `","Protocol":"sqs","Endpoint":"arn:aws:sqs:eu-west-1:` + acct + `:q"}`,
			`^` + regexp.QuoteMeta(topicArn) + `:[0-9a-f-]{36}$`, ""},
		{"subscription to a missing topic", "AWS::SNS::Subscription", `{"TopicArn":"arn:aws:sns:eu-west-1:` + acct + `:nope","Protocol":"sqs"}`, "", cctypes.HandlerErrorCodeNotFound},
		{"role policy", "AWS::IAM::RolePolicy", `{"PolicyName":"read","RoleName":"app","PolicyDocument":` + doc + `}`, `^read\|app$`, ""},
		{"role policy again", "AWS::IAM::RolePolicy", `{"PolicyName":"read","RoleName":"app","PolicyDocument":` + doc + `}`, "", cctypes.HandlerErrorCodeAlreadyExists},
		{"role policy of a missing role", "AWS::IAM::RolePolicy", `{"PolicyName":"read","RoleName":"ghost","PolicyDocument":` + doc + `}`, "", cctypes.HandlerErrorCodeNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ccDo(t, c, "create", tc.typeName, tc.desired)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if tc.failed != "" {
				if r.ev.OperationStatus != cctypes.OperationStatusFailed || r.ev.ErrorCode != tc.failed {
					t.Errorf("ended %+v, want FAILED %s", r.ev, tc.failed)
				}
				return
			}
			if id := aws.ToString(r.ev.Identifier); r.ev.OperationStatus != cctypes.OperationStatusSuccess || !regexp.MustCompile(tc.id).MatchString(id) {
				t.Errorf("ended %+v (identifier %q), want SUCCESS with %s", r.ev, id, tc.id)
			}
		})
	}

	// Routes are listed under their API.
	routes, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::ApiGatewayV2::Route"), ResourceModel: aws.String(`{"ApiId":"` + apiID + `"}`)})
	if err != nil || len(routes.ResourceDescriptions) != 2 {
		t.Fatalf("routes of the API: %v %+v", err, routes)
	}

	// The role policy is IAM's inline policy, and IAM's are Cloud
	// Control's.
	gp, err := ic.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String("app"), PolicyName: aws.String("read")})
	if err != nil {
		t.Fatalf("GetRolePolicy of the policy created through Cloud Control: %v", err)
	}
	if d := decoded(t, gp.PolicyDocument); !jsonEqual(t, d, doc) {
		t.Errorf("GetRolePolicy document %s, want %s", d, doc)
	}
	if _, err := ic.PutRolePolicy(ctx, &iam.PutRolePolicyInput{RoleName: aws.String("app"), PolicyName: aws.String("write"), PolicyDocument: aws.String(doc)}); err != nil {
		t.Fatal(err)
	}
	lp, err := ic.ListRolePolicies(ctx, &iam.ListRolePoliciesInput{RoleName: aws.String("app")})
	if err != nil || strings.Join(slices.Sorted(slices.Values(lp.PolicyNames)), ",") != "read,write" {
		t.Errorf("ListRolePolicies: %v %v", err, lp)
	}
	gr, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::IAM::RolePolicy"), Identifier: aws.String("write|app")})
	if err != nil {
		t.Fatalf("GetResource of the policy put through IAM: %v", err)
	}
	if m := ccProps(t, gr.ResourceDescription.Properties); m["RoleName"] != "app" || !jsonEqual(t, toString(m["PolicyDocument"]), doc) {
		t.Errorf("policy put through IAM, as Cloud Control reads it: %v", m)
	}
	if _, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::IAM::RolePolicy")}); errCode(err) != "UnsupportedActionException" {
		t.Errorf("ListResources of role policies: %v, want UnsupportedActionException (no list handler)", err)
	}
	if r := ccDo(t, c, "delete", "AWS::IAM::RolePolicy", "read|app"); r.err != nil || r.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("delete role policy: %v %+v", r.err, r.ev)
	}
	if _, err := ic.GetRolePolicy(ctx, &iam.GetRolePolicyInput{RoleName: aws.String("app"), PolicyName: aws.String("read")}); errCode(err) != "NoSuchEntity" {
		t.Errorf("GetRolePolicy after the Cloud Control delete: %v", err)
	}

	// Deleting the API deletes its routes.
	if r := ccDo(t, c, "delete", "AWS::ApiGatewayV2::Api", apiID); r.err != nil || r.ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("delete API: %v %+v", r.err, r.ev)
	}
	routes, err = c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::ApiGatewayV2::Route"), ResourceModel: aws.String(`{"ApiId":"` + apiID + `"}`)})
	if err != nil || len(routes.ResourceDescriptions) != 0 {
		t.Errorf("routes after their API's delete: %v %+v", err, routes)
	}
}

func jsonEqual(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}

// GET /_iasql/calls answers the call counts by service:Operation, DELETE
// resets them.
func TestCallsOverHTTP(t *testing.T) {
	cl := testkit.StartCloud(t, emulator.Options{})
	c := testkit.Clients(cl.AWS, cloudcontrol.NewFromConfig)("us-east-1")
	for range 3 {
		if _, err := c.ListResources(t.Context(), &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::SNS::Topic")}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s3.NewFromConfig(cl.AWS, testkit.PathStyle).ListBuckets(t.Context(), &s3.ListBucketsInput{}); err != nil {
		t.Fatal(err)
	}
	calls := func(method string) (int, map[string]int) {
		t.Helper()
		status, b := httpDo(t, method, cl.URL+emulator.CallsPath, "")
		var m map[string]int
		if method == http.MethodGet {
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatalf("GET %s: %v: %s", emulator.CallsPath, err, b)
			}
		}
		return status, m
	}
	for _, tc := range []struct {
		method string
		status int
		want   map[string]int
	}{
		{http.MethodGet, http.StatusOK, map[string]int{"cloudcontrolapi:ListResources": 3, "s3:ListBuckets": 1}},
		{http.MethodDelete, http.StatusNoContent, nil},
		{http.MethodGet, http.StatusOK, map[string]int{}},
		{http.MethodPost, http.StatusMethodNotAllowed, nil},
	} {
		status, got := calls(tc.method)
		if status != tc.status || (tc.want != nil && toString(got) != toString(tc.want)) {
			t.Errorf("%s: %d %v, want %d %v", tc.method, status, got, tc.status, tc.want)
		}
	}
}
