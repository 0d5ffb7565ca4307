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

// Terminal are the error codes of a cloud API that retrying cannot fix
// (bad input the database could not catch, quotas, missing permissions):
// a module's mappers classify their calls' errors by them (Classify).
type Terminal map[string]bool

// TerminalCodes is the Terminal of codes.
func TerminalCodes(codes ...string) Terminal {
	return Terminal{}.With(codes...)
}

// With is t and more codes: a service's own beside the codes a family of
// modules shares (EC2's, internal/ec2x).
func (t Terminal) With(more ...string) Terminal {
	out := make(Terminal, len(t)+len(more))
	for c := range t {
		out[c] = true
	}
	for _, c := range more {
		out[c] = true
	}
	return out
}

// Classify wraps err with what was being done (format and args, then
// ": " and err, which stays wrapped), as a *TerminalError when its code is
// one of t. It returns nil for nil, and err unchanged when err already is
// or wraps a *TerminalError.
func (t Terminal) Classify(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	var te *TerminalError
	if errors.As(err, &te) {
		return err
	}
	wrapped := fmt.Errorf(format+": %w", append(args, err)...)
	if t[ErrorCode(err)] {
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
