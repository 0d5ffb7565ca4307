package module

import (
	"errors"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/smithy-go"
)

// ErrorCode returns the cloud's error code of err (the code of the
// smithy.APIError it wraps, e.g. "NoSuchBucket"), "" when it has none.
func ErrorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// IsCode reports whether err carries one of codes as its cloud error code.
// An error without a code matches none.
func IsCode(err error, codes ...string) bool {
	c := ErrorCode(err)
	return c != "" && slices.Contains(codes, c)
}

// Classify wraps err with what was being done (format and args, then
// ": " and err, which stays wrapped), as a *TerminalError when its code is
// one of terminal, the codes of the module's cloud that retrying cannot
// fix. It returns nil for nil, and err unchanged when err already is or
// wraps a *TerminalError.
func Classify(err error, terminal map[string]bool, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var te *TerminalError
	if errors.As(err, &te) {
		return err
	}
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	if terminal[ErrorCode(err)] {
		return &TerminalError{Err: wrapped}
	}
	return wrapped
}

// Deleted is the result of a delete call: nil when err is nil or carries
// one of notFound, the codes with which the cloud says the resource does
// not exist (a delete retried after the first one acted, or a resource
// someone else deleted: either way it is gone, which is what was asked);
// err otherwise.
func Deleted(err error, notFound ...string) error {
	if err == nil || IsCode(err, notFound...) {
		return nil
	}
	return err
}

// Transient reports whether err is a failure that passes by itself:
// throttling, a server error (5xx), a connection that failed. The SDK
// retries those a few times; calls that must not be retried blindly (a
// create without a client token) are not, so they reach the engine, which
// tries the action again later while failures are transient.
func Transient(err error) bool {
	if err == nil {
		return false
	}
	var te *TerminalError
	if errors.As(err, &te) {
		return false
	}
	return retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary ||
		retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}
