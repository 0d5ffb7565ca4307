package aws_ecr

import "github.com/iasql/iasql/modules/module"

// terminal are ECR errors that retrying cannot fix: bad input, quotas, a
// repository that still holds images, missing permissions.
var terminal = module.TerminalCodes(
	"InvalidParameterException", "ValidationException", "InvalidTagParameterException",
	"TooManyTagsException", "LimitExceededException", "RepositoryNotEmptyException",
	"KmsException", "AccessDeniedException", "UnrecognizedClientException",
	"UnknownOperationException", "NotImplemented")
