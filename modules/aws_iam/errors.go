package aws_iam

import "github.com/iasql/iasql/modules/module"

// terminal are IAM errors that retrying cannot fix: bad input, quotas,
// entities IAM does not let anyone change, missing permissions.
var terminal = module.TerminalCodes(
	"ValidationError", "MalformedPolicyDocument", "InvalidInput", "LimitExceeded",
	"UnmodifiableEntity", "PolicyNotAttachable", "AccessDenied", "InvalidClientTokenId",
	"SignatureDoesNotMatch", "NotImplemented", "InvalidAction")
