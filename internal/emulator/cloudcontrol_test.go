package emulator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cfntypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// ccEnv is an emulator whose Cloud Control requests take delay, and a
// Cloud Control client for it signing for region, without retries.
func ccEnv(t *testing.T, delay time.Duration, region string) (*emulator.Emulator, *cloudcontrol.Client, string) {
	t.Helper()
	cl := testkit.StartCloud(t, emulator.Options{CloudControlDelay: delay})
	return cl.Emu, testkit.Clients(cl.AWS, cloudcontrol.NewFromConfig)(region), cl.URL
}

// ccCreate creates a resource and waits for its request to end.
func ccCreate(t *testing.T, c *cloudcontrol.Client, typeName, desired string) *cctypes.ProgressEvent {
	t.Helper()
	out, err := c.CreateResource(t.Context(), &cloudcontrol.CreateResourceInput{TypeName: aws.String(typeName), DesiredState: aws.String(desired)})
	if err != nil {
		t.Fatalf("CreateResource %s %s: %v", typeName, desired, err)
	}
	if out.ProgressEvent.OperationStatus != cctypes.OperationStatusInProgress {
		t.Errorf("create answered %s, want IN_PROGRESS", out.ProgressEvent.OperationStatus)
	}
	return testkit.WaitCloudControl(t, 10*time.Second, c, out.ProgressEvent)
}

func ccProps(t *testing.T, s *string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(aws.ToString(s)), &m); err != nil {
		t.Fatalf("properties %q: %v", aws.ToString(s), err)
	}
	return m
}

const acct = emulator.DefaultAccountID

// Each type: create (IN_PROGRESS, then SUCCESS after the delay, with its
// generated read-only properties), get, update with a JSON Patch, delete,
// and get again: ResourceNotFoundException.
func TestCloudControlLifecycle(t *testing.T) {
	const delay = 30 * time.Millisecond
	_, c, _ := ccEnv(t, delay, "eu-west-1")
	ctx := t.Context()
	for _, tc := range []struct {
		typeName, desired string
		id                string            // a regexp of the identifier
		readOnly          map[string]string // property -> regexp
		patch             string
		after             map[string]any // properties after the patch
		absent            []string       // properties never returned (write-only)
	}{
		{"AWS::Logs::LogGroup", `{"LogGroupName":"app/web","RetentionInDays":7,"Tags":[{"Key":"team","Value":"web"}]}`,
			`^app/web$`, map[string]string{"Arn": `^arn:aws:logs:eu-west-1:` + acct + `:log-group:app/web:\*$`},
			`[{"op":"replace","path":"/RetentionInDays","value":14}]`, map[string]any{"RetentionInDays": 14.0, "LogGroupClass": "STANDARD"}, nil},
		{"AWS::SQS::Queue", `{"QueueName":"jobs.fifo","FifoQueue":true}`,
			`^https://sqs\.eu-west-1\.amazonaws\.com/` + acct + `/jobs\.fifo$`, map[string]string{"Arn": `^arn:aws:sqs:eu-west-1:` + acct + `:jobs\.fifo$`},
			`[{"op":"add","path":"/VisibilityTimeout","value":60}]`, map[string]any{"VisibilityTimeout": 60.0, "DelaySeconds": 0.0}, nil},
		// A queue left unnamed is named by the handler, as AWS's
		// CloudFormation does ("generates a unique physical ID").
		{"AWS::SQS::Queue", `{"DelaySeconds":5}`,
			`^https://sqs\.eu-west-1\.amazonaws\.com/` + acct + `/Queue-[A-Z0-9]{12}$`, map[string]string{"QueueName": `^Queue-[A-Z0-9]{12}$`},
			`[{"op":"replace","path":"/DelaySeconds","value":0}]`, map[string]any{"DelaySeconds": 0.0}, nil},
		{"AWS::SNS::Topic", `{"DisplayName":"alerts"}`,
			`^arn:aws:sns:eu-west-1:` + acct + `:Topic-[A-Z0-9]{12}$`, map[string]string{"TopicName": `^Topic-[A-Z0-9]{12}$`},
			`[{"op":"remove","path":"/DisplayName"}]`, map[string]any{"DisplayName": nil}, nil},
		{"AWS::DynamoDB::Table", `{"TableName":"orders","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}],"BillingMode":"PAY_PER_REQUEST"}`,
			`^orders$`, map[string]string{"Arn": `^arn:aws:dynamodb:eu-west-1:` + acct + `:table/orders$`},
			`[{"op":"add","path":"/StreamSpecification","value":{"StreamViewType":"NEW_IMAGE"}}]`, map[string]any{"StreamSpecification": map[string]any{"StreamViewType": "NEW_IMAGE"}}, nil},
		{"AWS::KMS::Key", `{"Description":"data","PendingWindowInDays":7}`,
			`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, map[string]string{"Arn": `^arn:aws:kms:eu-west-1:` + acct + `:key/[0-9a-f-]{36}$`},
			`[{"op":"replace","path":"/EnableKeyRotation","value":true}]`, map[string]any{"EnableKeyRotation": true, "KeySpec": "SYMMETRIC_DEFAULT"}, []string{"PendingWindowInDays"}},
		{"AWS::ECS::Cluster", `{}`,
			`^Cluster-[A-Z0-9]{12}$`, map[string]string{"Arn": `^arn:aws:ecs:eu-west-1:` + acct + `:cluster/Cluster-[A-Z0-9]{12}$`},
			`[{"op":"add","path":"/ClusterSettings","value":[{"Name":"containerInsights","Value":"enabled"}]}]`,
			map[string]any{"ClusterSettings": []any{map[string]any{"Name": "containerInsights", "Value": "enabled"}}}, nil},
	} {
		t.Run(tc.typeName, func(t *testing.T) {
			start := time.Now()
			ev := ccCreate(t, c, tc.typeName, tc.desired)
			if ev.OperationStatus != cctypes.OperationStatusSuccess || ev.Operation != cctypes.OperationCreate || aws.ToString(ev.TypeName) != tc.typeName {
				t.Fatalf("create ended %+v", ev)
			}
			if since := time.Since(start); since < delay {
				t.Errorf("create succeeded after %v, before the delay %v", since, delay)
			}
			id := aws.ToString(ev.Identifier)
			if !regexp.MustCompile(tc.id).MatchString(id) {
				t.Errorf("identifier %q, want %s", id, tc.id)
			}
			model := ccProps(t, ev.ResourceModel)
			for p, re := range tc.readOnly {
				if v, _ := model[p].(string); !regexp.MustCompile(re).MatchString(v) {
					t.Errorf("%s %q, want %s", p, v, re)
				}
			}
			got, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(tc.typeName), Identifier: aws.String(id)})
			if err != nil {
				t.Fatal(err)
			}
			if aws.ToString(got.ResourceDescription.Identifier) != id {
				t.Errorf("GetResource identifier %q", aws.ToString(got.ResourceDescription.Identifier))
			}
			for _, p := range tc.absent {
				if _, ok := ccProps(t, got.ResourceDescription.Properties)[p]; ok {
					t.Errorf("write-only %s returned", p)
				}
			}

			up, err := c.UpdateResource(ctx, &cloudcontrol.UpdateResourceInput{TypeName: aws.String(tc.typeName), Identifier: aws.String(id), PatchDocument: aws.String(tc.patch)})
			if err != nil {
				t.Fatalf("UpdateResource: %v", err)
			}
			if ev := testkit.WaitCloudControl(t, 10*time.Second, c, up.ProgressEvent); ev.OperationStatus != cctypes.OperationStatusSuccess || ev.Operation != cctypes.OperationUpdate {
				t.Fatalf("update ended %+v", ev)
			}
			got, err = c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(tc.typeName), Identifier: aws.String(id)})
			if err != nil {
				t.Fatal(err)
			}
			props := ccProps(t, got.ResourceDescription.Properties)
			for p, want := range tc.after {
				if g := fmt.Sprint(props[p]); g != fmt.Sprint(want) && !(want == nil && props[p] == nil) {
					t.Errorf("after update %s = %v, want %v", p, props[p], want)
				}
			}
			if tc.typeName == "AWS::DynamoDB::Table" {
				if s, _ := props["StreamArn"].(string); !strings.HasPrefix(s, props["Arn"].(string)+"/stream/") {
					t.Errorf("StreamArn %q", s)
				}
			}

			del, err := c.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{TypeName: aws.String(tc.typeName), Identifier: aws.String(id)})
			if err != nil {
				t.Fatal(err)
			}
			if ev := testkit.WaitCloudControl(t, 10*time.Second, c, del.ProgressEvent); ev.OperationStatus != cctypes.OperationStatusSuccess {
				t.Fatalf("delete ended %+v", ev)
			}
			_, err = c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(tc.typeName), Identifier: aws.String(id)})
			if code := errCode(err); code != "ResourceNotFoundException" {
				t.Errorf("GetResource after delete: %v", err)
			}
		})
	}
}

// Errors answered at once, and those the handlers report as FAILED.
func TestCloudControlErrors(t *testing.T) {
	_, c, _ := ccEnv(t, 0, "us-east-1")
	ctx := t.Context()
	if ev := ccCreate(t, c, "AWS::Logs::LogGroup", `{"LogGroupName":"g"}`); ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Fatalf("create: %+v", ev)
	}
	create := func(typ, desired string) error {
		_, err := c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String(typ), DesiredState: aws.String(desired)})
		return err
	}
	update := func(id, patch string) error {
		_, err := c.UpdateResource(ctx, &cloudcontrol.UpdateResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String(id), PatchDocument: aws.String(patch)})
		return err
	}
	for _, tc := range []struct {
		name     string
		err      error
		code, in string
	}{
		{"missing required", create("AWS::DynamoDB::Table", `{"TableName":"t"}`), "InvalidRequestException", "required key [KeySchema]"},
		{"wrong type", create("AWS::Logs::LogGroup", `{"LogGroupName":"h","RetentionInDays":"7"}`), "InvalidRequestException", "#/RetentionInDays: expected type: Integer, found: String"},
		{"unknown property", create("AWS::Logs::LogGroup", `{"LogGroupName":"h","Retention":7}`), "InvalidRequestException", "extraneous key [Retention]"},
		{"read-only property", create("AWS::Logs::LogGroup", `{"LogGroupName":"h","Arn":"x"}`), "InvalidRequestException", "/properties/Arn"},
		{"not an object", create("AWS::Logs::LogGroup", `[1]`), "InvalidRequestException", "JSON object"},
		{"unknown type", create("AWS::Nope::Thing", `{}`), "TypeNotFoundException", "AWS::Nope::Thing"},
		{"create-only path", update("g", `[{"op":"replace","path":"/LogGroupName","value":"x"}]`), "NotUpdatableException", "createOnlyProperties [/properties/LogGroupName]"},
		{"create-only under a path", update("g", `[{"op":"add","path":"/LogGroupClass","value":"INFREQUENT_ACCESS"}]`), "NotUpdatableException", "/properties/LogGroupClass"},
		{"read-only path", update("g", `[{"op":"add","path":"/Arn","value":"x"}]`), "NotUpdatableException", "readOnlyProperties [/properties/Arn]"},
		{"patch of a missing path", update("g", `[{"op":"remove","path":"/KmsKeyId"}]`), "InvalidRequestException", "path not found"},
		{"patch makes a wrong type", update("g", `[{"op":"add","path":"/RetentionInDays","value":true}]`), "InvalidRequestException", "expected type: Integer, found: Boolean"},
		{"update of a missing resource", update("nope", `[{"op":"add","path":"/RetentionInDays","value":1}]`), "ResourceNotFoundException", "'nope'"},
	} {
		if code := errCode(tc.err); code != tc.code || !strings.Contains(tc.err.Error(), tc.in) {
			t.Errorf("%s: %v, want %s with %q", tc.name, tc.err, tc.code, tc.in)
		}
	}

	// The handlers find an existing resource on create and a missing one
	// on delete: the request FAILS with AlreadyExists, NotFound.
	if ev := ccCreate(t, c, "AWS::Logs::LogGroup", `{"LogGroupName":"g"}`); ev.OperationStatus != cctypes.OperationStatusFailed ||
		ev.ErrorCode != cctypes.HandlerErrorCodeAlreadyExists || !strings.Contains(aws.ToString(ev.StatusMessage), "already exists") {
		t.Errorf("second create: %+v", ev)
	}
	del, err := c.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String("nope")})
	if err != nil {
		t.Fatal(err)
	}
	if ev := testkit.WaitCloudControl(t, 10*time.Second, c, del.ProgressEvent); ev.OperationStatus != cctypes.OperationStatusFailed || ev.ErrorCode != cctypes.HandlerErrorCodeNotFound {
		t.Errorf("delete of a missing resource: %+v", ev)
	}
	_, err = c.GetResourceRequestStatus(ctx, &cloudcontrol.GetResourceRequestStatusInput{RequestToken: aws.String("nope")})
	if code := errCode(err); code != "RequestTokenNotFoundException" {
		t.Errorf("status of an unknown token: %v", err)
	}
}

// ListResources answers pages of 25 whatever MaxResults says, each
// resource once; other regions are apart.
func TestCloudControlListPages(t *testing.T) {
	_, c, _ := ccEnv(t, 0, "us-east-1")
	for i := range 60 {
		if ev := ccCreate(t, c, "AWS::Logs::LogGroup", fmt.Sprintf(`{"LogGroupName":"g%02d"}`, i)); ev.OperationStatus != cctypes.OperationStatusSuccess {
			t.Fatalf("create %d: %+v", i, ev)
		}
	}
	var sizes []int
	seen := map[string]bool{}
	var next *string
	for {
		out, err := c.ListResources(t.Context(), &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::Logs::LogGroup"), MaxResults: aws.Int32(5), NextToken: next})
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, len(out.ResourceDescriptions))
		for _, d := range out.ResourceDescriptions {
			id := aws.ToString(d.Identifier)
			if seen[id] || ccProps(t, d.Properties)["LogGroupName"] != id {
				t.Errorf("%s listed twice or with properties %s", id, aws.ToString(d.Properties))
			}
			seen[id] = true
		}
		if next = out.NextToken; next == nil {
			break
		}
	}
	if fmt.Sprint(sizes) != "[25 25 10]" || len(seen) != 60 {
		t.Errorf("pages %v, %d groups", sizes, len(seen))
	}
}

// A ClientToken names one request: the same call again answers it (and
// creates nothing more), another call with it is refused.
func TestCloudControlClientToken(t *testing.T) {
	_, c, _ := ccEnv(t, 0, "us-east-1")
	ctx := t.Context()
	in := &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::SNS::Topic"), DesiredState: aws.String(`{}`), ClientToken: aws.String("token-1")}
	first, err := c.CreateResource(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	done := testkit.WaitCloudControl(t, 10*time.Second, c, first.ProgressEvent)
	again, err := c.CreateResource(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(again.ProgressEvent.RequestToken) != aws.ToString(first.ProgressEvent.RequestToken) ||
		aws.ToString(again.ProgressEvent.Identifier) != aws.ToString(done.Identifier) || again.ProgressEvent.OperationStatus != cctypes.OperationStatusSuccess {
		t.Errorf("retry answered %+v, want request %s SUCCESS", again.ProgressEvent, aws.ToString(first.ProgressEvent.RequestToken))
	}
	list, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::SNS::Topic")})
	if err != nil || len(list.ResourceDescriptions) != 1 {
		t.Fatalf("%d topics (%v), want 1", len(list.ResourceDescriptions), err)
	}
	_, err = c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::SNS::Topic"), DesiredState: aws.String(`{"DisplayName":"x"}`), ClientToken: aws.String("token-1")})
	if code := errCode(err); code != "ClientTokenConflictException" {
		t.Errorf("token reused with another state: %v", err)
	}
	_, err = c.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{TypeName: aws.String("AWS::SNS::Topic"), Identifier: done.Identifier, ClientToken: aws.String("token-1")})
	if code := errCode(err); code != "ClientTokenConflictException" {
		t.Errorf("token reused for a delete: %v", err)
	}
}

// A request in progress: RetryAfter set; another operation on the same
// identifier is refused; cancelling it ends it without its effect.
func TestCloudControlConcurrentOperation(t *testing.T) {
	_, c, _ := ccEnv(t, time.Hour, "us-east-1")
	ctx := t.Context()
	out, err := c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::ECS::Cluster"), DesiredState: aws.String(`{"ClusterName":"c"}`)})
	if err != nil {
		t.Fatal(err)
	}
	ev := out.ProgressEvent
	if ev.OperationStatus != cctypes.OperationStatusInProgress || aws.ToString(ev.Identifier) != "c" || ev.RetryAfter == nil || time.Until(*ev.RetryAfter) < 59*time.Minute {
		t.Errorf("create answered %+v", ev)
	}
	st, err := c.GetResourceRequestStatus(ctx, &cloudcontrol.GetResourceRequestStatusInput{RequestToken: ev.RequestToken})
	if err != nil || st.ProgressEvent.OperationStatus != cctypes.OperationStatusInProgress {
		t.Fatalf("status %+v (%v)", st, err)
	}
	_, err = c.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{TypeName: aws.String("AWS::ECS::Cluster"), Identifier: aws.String("c")})
	if code := errCode(err); code != "ConcurrentOperationException" {
		t.Errorf("delete during the create: %v", err)
	}
	_, err = c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::ECS::Cluster"), DesiredState: aws.String(`{"ClusterName":"c"}`)})
	if code := errCode(err); code != "ConcurrentOperationException" {
		t.Errorf("second create during the first: %v", err)
	}
	_, err = c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::ECS::Cluster"), Identifier: aws.String("c")})
	if code := errCode(err); code != "ResourceNotFoundException" {
		t.Errorf("get during the create: %v", err)
	}
	reqs, err := c.ListResourceRequests(ctx, &cloudcontrol.ListResourceRequestsInput{ResourceRequestStatusFilter: &cctypes.ResourceRequestStatusFilter{
		Operations: []cctypes.Operation{cctypes.OperationCreate}, OperationStatuses: []cctypes.OperationStatus{cctypes.OperationStatusInProgress}}})
	if err != nil || len(reqs.ResourceRequestStatusSummaries) != 1 || aws.ToString(reqs.ResourceRequestStatusSummaries[0].RequestToken) != aws.ToString(ev.RequestToken) {
		t.Errorf("ListResourceRequests: %+v (%v)", reqs, err)
	}
	cancel, err := c.CancelResourceRequest(ctx, &cloudcontrol.CancelResourceRequestInput{RequestToken: ev.RequestToken})
	if err != nil || cancel.ProgressEvent.OperationStatus != cctypes.OperationStatusCancelComplete {
		t.Fatalf("cancel: %+v (%v)", cancel, err)
	}
	if ev := testkit.WaitCloudControl(t, 10*time.Second, c, ev); ev.OperationStatus != cctypes.OperationStatusCancelComplete {
		t.Errorf("status after cancel %s", ev.OperationStatus)
	}
	_, err = c.CancelResourceRequest(ctx, &cloudcontrol.CancelResourceRequestInput{RequestToken: ev.RequestToken})
	if code := errCode(err); code != "ConcurrentModificationException" {
		t.Errorf("second cancel: %v", err)
	}
	list, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String("AWS::ECS::Cluster")})
	if err != nil || len(list.ResourceDescriptions) != 0 {
		t.Errorf("a canceled create left %d clusters (%v)", len(list.ResourceDescriptions), err)
	}
}

// AWS::Logs::SubscriptionFilter's list handler needs its log group; its
// identifier is FilterName|LogGroupName; its create fails for a missing
// log group.
func TestCloudControlListNeedsParent(t *testing.T) {
	_, c, _ := ccEnv(t, 0, "us-east-1")
	ctx := t.Context()
	const typ = "AWS::Logs::SubscriptionFilter"
	for _, g := range []string{"a", "b"} {
		ccCreate(t, c, "AWS::Logs::LogGroup", `{"LogGroupName":"`+g+`"}`)
	}
	dest := `"DestinationArn":"arn:aws:lambda:us-east-1:` + acct + `:function:f","FilterPattern":""`
	for _, d := range []string{`{"FilterName":"f1","LogGroupName":"a",` + dest + `}`, `{"FilterName":"f2","LogGroupName":"b",` + dest + `}`, `{"LogGroupName":"a",` + dest + `}`} {
		if ev := ccCreate(t, c, typ, d); ev.OperationStatus != cctypes.OperationStatusSuccess {
			t.Fatalf("create %s: %+v", d, ev)
		}
	}
	if ev := ccCreate(t, c, typ, `{"FilterName":"f","LogGroupName":"missing",`+dest+`}`); ev.OperationStatus != cctypes.OperationStatusFailed || ev.ErrorCode != cctypes.HandlerErrorCodeNotFound {
		t.Errorf("create under a missing group: %+v", ev)
	}
	_, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String(typ)})
	if code := errCode(err); code != "InvalidRequestException" || !strings.Contains(err.Error(), "LogGroupName") {
		t.Errorf("list without its parent: %v", err)
	}
	out, err := c.ListResources(ctx, &cloudcontrol.ListResourcesInput{TypeName: aws.String(typ), ResourceModel: aws.String(`{"LogGroupName":"a"}`)})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range out.ResourceDescriptions {
		ids = append(ids, aws.ToString(d.Identifier))
	}
	if len(ids) != 2 || ids[1] != "f1|a" || !regexp.MustCompile(`^SubscriptionFilter-[A-Z0-9]{12}\|a$`).MatchString(ids[0]) {
		t.Errorf("filters of a: %v", ids)
	}
	if _, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(typ), Identifier: aws.String("f2|b")}); err != nil {
		t.Errorf("get by composite identifier: %v", err)
	}
}

// cloudformation:DescribeType serves the schemas Cloud Control uses.
func TestCloudFormationDescribeType(t *testing.T) {
	c := testkit.Clients(testkit.StartCloud(t, emulator.Options{}).AWS, cloudformation.NewFromConfig)("us-east-1")
	for _, name := range []string{"AWS::Logs::LogGroup", "AWS::SQS::Queue", "AWS::SNS::Topic", "AWS::DynamoDB::Table", "AWS::KMS::Key", "AWS::ECS::Cluster", "AWS::Logs::SubscriptionFilter"} {
		out, err := c.DescribeType(t.Context(), &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String(name)})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var schema struct {
			TypeName          string   `json:"typeName"`
			PrimaryIdentifier []string `json:"primaryIdentifier"`
		}
		if err := json.Unmarshal([]byte(aws.ToString(out.Schema)), &schema); err != nil || schema.TypeName != name || len(schema.PrimaryIdentifier) == 0 {
			t.Errorf("%s: schema %+v (%v)", name, schema, err)
		}
		if out.ProvisioningType != cfntypes.ProvisioningTypeFullyMutable || aws.ToString(out.TypeName) != name ||
			aws.ToString(out.Arn) != "arn:aws:cloudformation:us-east-1::type/resource/"+strings.ReplaceAll(name, "::", "-") {
			t.Errorf("%s: %s %s %s", name, out.ProvisioningType, aws.ToString(out.TypeName), aws.ToString(out.Arn))
		}
	}
	_, err := c.DescribeType(t.Context(), &cloudformation.DescribeTypeInput{Type: cfntypes.RegistryTypeResource, TypeName: aws.String("AWS::Nope::Thing")})
	var nf *cfntypes.TypeNotFoundException
	if !errors.As(err, &nf) {
		t.Errorf("unknown type: %v", err)
	}
}

// Injected faults: a throttle answers ThrottlingException; a handler
// failure lets the request start and end FAILED with its code.
func TestCloudControlFaults(t *testing.T) {
	em, c, _ := ccEnv(t, 0, "us-east-1")
	ctx := t.Context()
	em.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.Throttle, Times: 1})
	_, err := c.CreateResource(ctx, &cloudcontrol.CreateResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), DesiredState: aws.String(`{"LogGroupName":"g"}`)})
	var th *cctypes.ThrottlingException
	if !errors.As(err, &th) {
		t.Errorf("throttled create: %v", err)
	}
	em.Inject(emulator.Fault{Op: "cloudcontrolapi:CreateResource", Kind: emulator.HandlerFailure, ErrorCode: "NotStabilized", Times: 1})
	if ev := ccCreate(t, c, "AWS::Logs::LogGroup", `{"LogGroupName":"g"}`); ev.OperationStatus != cctypes.OperationStatusFailed ||
		ev.ErrorCode != cctypes.HandlerErrorCodeNotStabilized || aws.ToString(ev.StatusMessage) == "" {
		t.Errorf("create under a handler failure: %+v", ev)
	}
	if _, err := c.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String("AWS::Logs::LogGroup"), Identifier: aws.String("g")}); errCode(err) != "ResourceNotFoundException" {
		t.Errorf("a failed create left the group: %v", err)
	}
	if ev := ccCreate(t, c, "AWS::Logs::LogGroup", `{"LogGroupName":"g"}`); ev.OperationStatus != cctypes.OperationStatusSuccess {
		t.Errorf("create after the faults: %+v", ev)
	}
	calls := em.Calls()
	if calls["cloudcontrolapi:CreateResource"] != 3 || calls["cloudcontrolapi:GetResourceRequestStatus"] < 2 {
		t.Errorf("calls %v", calls)
	}
}
