package aws_iam

import "github.com/iasql/iasql/modules/module"

// terminalCodes are IAM errors that retrying cannot fix: bad input,
// quotas, entities IAM does not let anyone change, missing permissions.
var terminalCodes = map[string]bool{
	"ValidationError": true, "MalformedPolicyDocument": true, "InvalidInput": true, "LimitExceeded": true,
	"UnmodifiableEntity": true, "PolicyNotAttachable": true, "AccessDenied": true, "InvalidClientTokenId": true,
	"SignatureDoesNotMatch": true, "NotImplemented": true, "InvalidAction": true,
}

// classify wraps err with what was being done, as a *module.TerminalError
// when its code is one of terminalCodes.
func classify(err error, format string, args ...any) error {
	return module.Classify(err, terminalCodes, format, args...)
}
