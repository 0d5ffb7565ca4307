package emulator_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/ec2"

	"github.com/iasql/iasql/internal/emulator"
	"github.com/iasql/iasql/internal/testkit"
)

// httpDo sends a request to one of the emulator's own paths (FaultsPath,
// CallsPath) and answers its status and body.
func httpDo(t *testing.T, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.WithoutCancel(t.Context()), method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// TestFaultsOverHTTP: faults added and cleared over HTTP (as with iasql
// emulator running as its own process) reach the SDK as AWS errors.
func TestFaultsOverHTTP(t *testing.T) {
	srv := testkit.StartCloud(t, emulator.Options{})
	clients := testkit.Clients(srv.AWS, ec2.NewFromConfig)
	cl := clients("us-east-1")
	ctx := context.Background()
	send := func(method, body string) (int, string) {
		t.Helper()
		code, b := httpDo(t, method, srv.URL+emulator.FaultsPath, body)
		return code, string(b)
	}
	describe := func() error {
		_, err := cl.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{})
		return err
	}

	if code, body := send(http.MethodPost, `{"op": "ec2:DescribeVpcs", "kind": "throttle", "times": 1}`); code != http.StatusNoContent {
		t.Fatalf("add a fault: %d %s", code, body)
	}
	if err := describe(); err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
		t.Errorf("first call under a throttle fault: %v", err)
	}
	if err := describe(); err != nil {
		t.Errorf("the fault was for one call; the second: %v", err)
	}
	send(http.MethodPost, `{"op": "ec2:*", "kind": "server_error"}`)
	if err := describe(); err == nil || !strings.Contains(err.Error(), "InternalError") {
		t.Errorf("call under a lasting 5xx fault: %v", err)
	}
	if code, _ := send(http.MethodDelete, ""); code != http.StatusNoContent {
		t.Errorf("clear faults: %d", code)
	}
	send(http.MethodPost, `{"op": "ec2:*", "kind": "denied", "region": "eu-west-1"}`)
	if err := describe(); err != nil {
		t.Errorf("a fault for eu-west-1 reached a us-east-1 call: %v", err)
	}
	if _, err := clients("eu-west-1").DescribeVpcs(ctx, &ec2.DescribeVpcsInput{}); err == nil || !strings.Contains(err.Error(), "AuthFailure") {
		t.Errorf("call in eu-west-1 under a denied fault for it: %v", err)
	}
	send(http.MethodDelete, "")
	if err := describe(); err != nil {
		t.Errorf("after clearing: %v", err)
	}

	for _, bad := range []struct{ name, method, body, want string }{
		{"unknown kind", http.MethodPost, `{"op": "*", "kind": "meteor"}`, "kind"},
		{"no op", http.MethodPost, `{"kind": "throttle"}`, "op"},
		{"negative times", http.MethodPost, `{"op": "*", "kind": "latency", "times": -1}`, "times"},
		{"not JSON", http.MethodPost, `throttle please`, "bad fault"},
		{"unknown field", http.MethodPost, `{"op": "*", "kind": "latency", "delay": 5}`, "unknown field"},
		{"wrong method", http.MethodGet, ``, "POST"},
	} {
		t.Run(bad.name, func(t *testing.T) {
			code, body := send(bad.method, bad.body)
			if code < 400 || !strings.Contains(body, bad.want) {
				t.Errorf("%s: %d %q, want an error mentioning %q", bad.name, code, body, bad.want)
			}
		})
	}
	if err := describe(); err != nil {
		t.Errorf("bad requests added a fault: %v", err)
	}
}
