package ccmapper

import (
	"errors"
	"fmt"

	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"

	"github.com/iasql/iasql/modules/module"
)

// RequestError is a Cloud Control request that ended FAILED: its
// operation, the handler error code and AWS's status message.
type RequestError struct {
	TypeName   string
	Operation  string // CREATE, UPDATE, DELETE
	Identifier string
	Code       string // the handler error code (cctypes.HandlerErrorCode)
	Message    string // the ProgressEvent's StatusMessage
	Token      string // the RequestToken
}

func (e *RequestError) Error() string {
	id := ""
	if e.Identifier != "" {
		id = " " + e.Identifier
	}
	return fmt.Sprintf("%s %s%s failed in the cloud: %s: %s", e.Operation, e.TypeName, id, e.Code, e.Message)
}

// Retryable reports whether AWS classes the handler error code as one a
// new request may get past. AWS's handler error codes
// (https://docs.aws.amazon.com/cloudformation-cli/latest/userguide/resource-type-test-contract-errors.html)
// mark NetworkFailure, ResourceConflict, ServiceInternalError and
// Throttling "Retriable". NotStabilized is "Terminal" there but
// "Retriable" in the handler SDK's HandlerErrorCode (and issue 12 asks
// for it to be retried): it is retried, within the engine's bounded
// backoff. ServiceTimeout (in the API's enum, not on that page) is a
// timeout, retried too.
func (e *RequestError) Retryable() bool { return retryableCodes[e.Code] }

var retryableCodes = map[string]bool{
	string(cctypes.HandlerErrorCodeNetworkFailure):       true,
	string(cctypes.HandlerErrorCodeResourceConflict):     true,
	string(cctypes.HandlerErrorCodeServiceInternalError): true,
	string(cctypes.HandlerErrorCodeThrottling):           true,
	string(cctypes.HandlerErrorCodeNotStabilized):        true,
	string(cctypes.HandlerErrorCodeServiceTimeout):       true,
}

// classify makes a FAILED request's error: retryable as is, otherwise a
// module.TerminalError. A create that failed because the resource exists
// says what to do.
func classify(e *RequestError) error {
	if e.Retryable() {
		return e
	}
	if e.Operation == string(cctypes.OperationCreate) && e.Code == string(cctypes.HandlerErrorCodeAlreadyExists) {
		return &module.TerminalError{Err: fmt.Errorf("%w (a resource with this identity exists already and was not made by this row: import it by deleting the row and letting the next cycle read it, or choose another identity)", e)}
	}
	return &module.TerminalError{Err: e}
}

// terminalAPI are Cloud Control API error codes that a retry of the same
// call cannot get past (the others, such as ThrottlingException,
// ConcurrentOperationException, ServiceInternalErrorException and
// NetworkFailureException, are retried).
var terminalAPI = module.TerminalCodes(
	"InvalidRequestException", "NotUpdatableException", "TypeNotFoundException", "UnsupportedActionException",
	"InvalidCredentialsException", "AccessDeniedException", "ServiceLimitExceededException", "GeneralServiceException",
	"PrivateTypeException", "AlreadyExistsException", "HandlerInternalFailureException", "UnrecognizedClientException",
	"ValidationException")

// IsNotFound reports whether err is Cloud Control's
// ResourceNotFoundException.
func IsNotFound(err error) bool {
	var nf *cctypes.ResourceNotFoundException
	return errors.As(err, &nf) || module.IsCode(err, "ResourceNotFoundException")
}
