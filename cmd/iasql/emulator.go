package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/iasql/iasql/internal/emulator"
)

func cmdEmulator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f := newFlags("emulator", "Serve an in-memory AWS-compatible endpoint on one port until Ctrl-C: S3 path-style, EC2, ELBv2, IAM, ECR,\nSTS GetCallerIdentity, and Cloud Control and CloudFormation DescribeType over the embedded resource\ntypes (among them AWS::ApiGatewayV2::Api and Route, AWS::SNS::Topic and Subscription, and\nAWS::IAM::RolePolicy, kept as the IAM roles' inline policies) and every *.json resource schema of\n--schemas DIR (a type without a list handler answers ListResources with UnsupportedActionException);\nfor trying iasql and for tests without an AWS account. Point the SDK at it with\nAWS_ENDPOINT_URL; any credentials are accepted. Everything is lost on exit.\nFaults for reliability tests: POST a JSON fault to /_iasql/faults\n({\"op\": \"ec2:CreateSecurityGroup\", \"kind\": \"throttle|server_error|server_error_after|latency|denied|handler_failure|ignore_client_token\",\n\"times\": N, \"delay_ms\": N, \"error_code\": \"NotStabilized\"}; op may be service:* or *), DELETE /_iasql/faults to clear them.\nCall counts since start: GET /_iasql/calls answers {\"service:Operation\": N, ...}\n(e.g. \"cloudcontrolapi:ListResources\"); DELETE /_iasql/calls resets them.",
		"  iasql emulator\n  iasql emulator --listen 127.0.0.1:9000\n  iasql emulator --schemas ../shared/cfn-schemas\n  curl http://127.0.0.1:4566/_iasql/calls\n  curl -X POST -d '{\"op\": \"ec2:*\", \"kind\": \"throttle\", \"times\": 5}' http://127.0.0.1:4566/_iasql/faults\n  AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test iasql run --dsn ...", stderr)
	listen := f.String("listen", "IASQL_EMULATOR_LISTEN", "127.0.0.1:4566", "address to listen on (host:port; port 0 picks a free one)")
	account := f.String("account-id", "IASQL_EMULATOR_ACCOUNT_ID", emulator.DefaultAccountID, "the AWS account the emulator plays (STS GetCallerIdentity, ARNs, owner ids)")
	ccDelay := f.String("cloudcontrol-delay", "IASQL_EMULATOR_CLOUDCONTROL_DELAY", "0s", "how long a Cloud Control create, update or delete stays IN_PROGRESS (e.g. 1s)")
	schemas := f.String("schemas", "IASQL_EMULATOR_SCHEMAS", "", "a folder of CloudFormation resource schemas (*.json, as DescribeType returns them) to serve besides the embedded ones; one of an embedded type replaces it")
	logger := logFlags(f, stderr)
	if err := f.parse(args); err != nil {
		return err
	}
	delay, err := time.ParseDuration(*ccDelay)
	if err != nil || delay < 0 {
		return fmt.Errorf("--cloudcontrol-delay %q: want a duration of 0 or more, e.g. 500ms", *ccDelay)
	}
	log, err := logger()
	if err != nil {
		return err
	}
	emu, err := emulator.Open(emulator.Options{Logger: log, AccountID: *account, CloudControlDelay: delay, SchemaDir: *schemas})
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
