package module_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aws/smithy-go"

	"github.com/iasql/iasql/modules/module"
)

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: "the cloud says no"}
}

func TestErrorCode(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"nil", nil, ""},
		{"not an API error", errors.New("connection reset"), ""},
		{"an API error", apiError("NoSuchBucket"), "NoSuchBucket"},
		{"a wrapped API error", fmt.Errorf("get bucket: %w", apiError("NoSuchBucket")), "NoSuchBucket"},
		{"inside a terminal error", &module.TerminalError{Err: apiError("AccessDenied")}, "AccessDenied"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := module.ErrorCode(c.err); got != c.want {
				t.Errorf("ErrorCode(%v) = %q, want %q", c.err, got, c.want)
			}
		})
	}
}

func TestIsCode(t *testing.T) {
	cases := []struct {
		name  string
		err   error
		codes []string
		want  bool
	}{
		{"nil", nil, []string{"NoSuchEntity"}, false},
		{"not an API error", errors.New("timeout"), []string{"NoSuchEntity"}, false},
		{"the code", apiError("NoSuchEntity"), []string{"NoSuchEntity"}, true},
		{"one of the codes", apiError("PermanentRedirect"), []string{"AuthorizationHeaderMalformed", "PermanentRedirect"}, true},
		{"another code", apiError("EntityAlreadyExists"), []string{"NoSuchEntity"}, false},
		{"no codes", apiError("NoSuchEntity"), nil, false},
		{"codes are case-sensitive", apiError("NoSuchEntity"), []string{"nosuchentity"}, false},
		{"wrapped", fmt.Errorf("delete role: %w", apiError("NoSuchEntity")), []string{"NoSuchEntity"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := module.IsCode(c.err, c.codes...); got != c.want {
				t.Errorf("IsCode(%v, %q) = %v, want %v", c.err, c.codes, got, c.want)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	terminal := module.TerminalCodes("AccessDenied", "InvalidBucketName")
	denied := apiError("AccessDenied")
	throttled := apiError("SlowDown")
	reset := errors.New("connection reset")
	already := &module.TerminalError{Err: errors.New("bad input")}
	cases := []struct {
		name     string
		err      error
		want     string // the message; "" for a nil error
		terminal bool
		wraps    error // what errors.Is must still find
		same     bool  // returned as it is
	}{
		{"nil", nil, "", false, nil, false},
		{"a terminal code", denied, "create bucket logs: " + denied.Error(), true, denied, false},
		{"a retryable code", throttled, "create bucket logs: " + throttled.Error(), false, throttled, false},
		{"not an API error", reset, "create bucket logs: connection reset", false, reset, false},
		{"a wrapped terminal code", fmt.Errorf("send: %w", denied), "create bucket logs: send: " + denied.Error(), true, denied, false},
		{"already terminal", already, "bad input", true, already, true},
		{"wrapping a terminal error", fmt.Errorf("earlier: %w", already), "earlier: bad input", true, already, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := terminal.Classify(c.err, "create bucket %s", "logs")
			if c.want == "" {
				if got != nil {
					t.Fatalf("Classify(nil) = %v, want nil", got)
				}
				return
			}
			if got == nil {
				t.Fatalf("Classify(%v) = nil", c.err)
			}
			if got.Error() != c.want {
				t.Errorf("message %q, want %q", got.Error(), c.want)
			}
			var te *module.TerminalError
			if isTerminal := errors.As(got, &te); isTerminal != c.terminal {
				t.Errorf("%v: terminal %v, want %v", got, isTerminal, c.terminal)
			}
			if c.same && got != c.err {
				t.Errorf("%v: not returned as it is", c.err)
			}
			if c.wraps != nil && !errors.Is(got, c.wraps) {
				t.Errorf("%v does not wrap %v", got, c.wraps)
			}
			if module.ErrorCode(got) != module.ErrorCode(c.err) {
				t.Errorf("code %q, want %q kept", module.ErrorCode(got), module.ErrorCode(c.err))
			}
		})
	}
}

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&smithy.GenericAPIError{Code: "RequestLimitExceeded"}, true},
		{fmt.Errorf("create VPC: %w", &smithy.GenericAPIError{Code: "Throttling"}), true},
		{&smithy.GenericAPIError{Code: "InvalidParameterValue"}, false},
		{&module.TerminalError{Err: &smithy.GenericAPIError{Code: "Throttling"}}, false},
		{errors.New("Throttling"), false},
		{nil, false},
	} {
		if got := module.Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
