package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/iasql/iasql/internal/emulator"
)

func cmdEmulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("emulator", "Serve an in-memory AWS-compatible endpoint on one port until Ctrl-C: S3 path-style, EC2, ELBv2, IAM, ECR,\nSTS GetCallerIdentity, and Cloud Control and CloudFormation DescribeType over the embedded resource\ntypes (among them AWS::ApiGatewayV2::Api and Route, AWS::SNS::Topic and Subscription, and\nAWS::IAM::RolePolicy, kept as the IAM roles' inline policies) and every *.json resource schema of\n--schemas DIR (a type without a list handler answers ListResources with UnsupportedActionException);\nfor trying iasql and for tests without an AWS account. Point the SDK at it with\nAWS_ENDPOINT_URL; any credentials are accepted. Everything is lost on exit.\nFaults for reliability tests: POST a JSON fault to /_iasql/faults\n({\"op\": \"ec2:CreateSecurityGroup\", \"kind\": \"throttle|server_error|server_error_after|latency|denied|handler_failure|ignore_client_token\",\n\"times\": N, \"delay_ms\": N, \"error_code\": \"NotStabilized\"}; op may be service:* or *), DELETE /_iasql/faults to clear them.\nCall counts since start: GET /_iasql/calls answers {\"service:Operation\": N, ...}\n(e.g. \"cloudcontrolapi:ListResources\"); DELETE /_iasql/calls resets them.\nEvents: every mutating call is recorded as a CloudTrail event (LookupEvents serves them) whose\nuserIdentity is its access key's (--identity KEY=ARN, else arn:aws:iam::ACCOUNT:user/KEY; STS\nGetCallerIdentity answers the same); --event-delay after the call it reaches EventBridge's default\nbus as \"AWS API Call via CloudTrail\" and the SQS queues its rules target, when a queue's Policy lets\nevents.amazonaws.com sqs:SendMessage (SQS in its JSON protocol, ReceiveMessage with long polling).",
		"  iasql emulator\n  iasql emulator --listen 127.0.0.1:9000\n  iasql emulator --schemas ../shared/cfn-schemas\n  iasql emulator --identity AKIAOTHER=arn:aws:iam::123456789012:user/alice --event-delay 1s\n  curl http://127.0.0.1:4566/_iasql/calls\n  curl -X POST -d '{\"op\": \"ec2:*\", \"kind\": \"throttle\", \"times\": 5}' http://127.0.0.1:4566/_iasql/faults\n  AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test iasql run --dsn ...", stderr)
	listen := f.String("listen", "IASQL_EMULATOR_LISTEN", "127.0.0.1:4566", "address to listen on (host:port; port 0 picks a free one)")
	account := f.String("account-id", "IASQL_EMULATOR_ACCOUNT_ID", emulator.DefaultAccountID, "the AWS account the emulator plays (STS GetCallerIdentity, ARNs, owner ids)")
	ccDelay := f.String("cloudcontrol-delay", "IASQL_EMULATOR_CLOUDCONTROL_DELAY", "0s", "how long a Cloud Control create, update or delete stays IN_PROGRESS (e.g. 1s)")
	schemas := f.String("schemas", "IASQL_EMULATOR_SCHEMAS", "", "a folder of CloudFormation resource schemas (*.json, as DescribeType returns them) to serve besides the embedded ones; one of an embedded type replaces it")
	identity := &identityFlag{}
	f.env["identity"] = "IASQL_EMULATOR_IDENTITIES"
	f.Var(identity, "identity", "KEY=ARN: the IAM ARN an access key plays in CloudTrail events and STS GetCallerIdentity (repeat it, or give several KEY=ARN separated by commas); other keys are arn:aws:iam::ACCOUNT:user/KEY (env IASQL_EMULATOR_IDENTITIES)")
	eventDelay := f.String("event-delay", "IASQL_EMULATOR_EVENT_DELAY", "1s", "how long after a call its CloudTrail event reaches EventBridge and the SQS queues its rules target (0s: at once)")
	lookupRate := f.String("lookup-events-rate", "IASQL_EMULATOR_LOOKUP_EVENTS_RATE", "2", "CloudTrail LookupEvents requests a second per region before ThrottlingException (AWS's 2; 0: no limit)")
	logger := logFlags(f, stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	delay, err := time.ParseDuration(*ccDelay)
	if err != nil || delay < 0 {
		return fmt.Errorf("--cloudcontrol-delay %q: want a duration of 0 or more, e.g. 500ms", *ccDelay)
	}
	evDelay, err := time.ParseDuration(*eventDelay)
	if err != nil || evDelay < 0 {
		return fmt.Errorf("--event-delay %q: want a duration of 0 or more, e.g. 1s", *eventDelay)
	}
	if evDelay == 0 {
		evDelay = -1 // emulator.Options: negative is at once, 0 the default
	}
	rate, err := strconv.ParseFloat(*lookupRate, 64)
	if err != nil || rate < 0 {
		return fmt.Errorf("--lookup-events-rate %q: want a number of requests a second, 0 or more (0: no limit)", *lookupRate)
	}
	if rate == 0 {
		rate = -1 // emulator.Options: negative is no limit, 0 AWS's rate
	}
	identities, err := identity.identities()
	if err != nil {
		return err
	}
	log, err := logger()
	if err != nil {
		return err
	}
	emu, err := emulator.Open(emulator.Options{Logger: log, AccountID: *account, CloudControlDelay: delay, SchemaDir: *schemas,
		Identities: identities, EventDelay: evDelay, LookupEventsRate: rate})
	if err != nil {
		return fmt.Errorf("--schemas %q: %w (give a folder of *.json resource schemas, as DescribeType returns them)", *schemas, err)
	}
	srv, err := emu.Start(ctx, *listen)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "AWS emulator listening on %s; use: AWS_ENDPOINT_URL=%s AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test\n",
		srv.Addr, srv.URL)
	return srv.Wait()
}

// identityFlag is --identity: the KEY=ARN lists given, checked after
// parsing (a one-line error).
type identityFlag struct{ given []string }

func (f *identityFlag) String() string { return strings.Join(f.given, ",") }

func (f *identityFlag) Set(v string) error {
	f.given = append(f.given, v)
	return nil
}

// identities reads the pairs: access key -> ARN.
func (f *identityFlag) identities() (map[string]string, error) {
	out := map[string]string{}
	for _, v := range f.given {
		for _, part := range strings.Split(v, ",") {
			key, arn, ok := strings.Cut(strings.TrimSpace(part), "=")
			if !ok || key == "" || !strings.HasPrefix(arn, "arn:") {
				return nil, fmt.Errorf("--identity %q: want KEY=ARN, e.g. AKIAOTHER=arn:aws:iam::123456789012:user/alice", part)
			}
			out[key] = arn
		}
	}
	return out, nil
}
