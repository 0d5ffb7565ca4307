package aws_ecr

import "github.com/iasql/iasql/modules/module"

// terminalCodes are ECR errors that retrying cannot fix: bad input,
// quotas, a repository that still holds images, missing permissions.
var terminalCodes = map[string]bool{
	"InvalidParameterException": true, "ValidationException": true, "InvalidTagParameterException": true,
	"TooManyTagsException": true, "LimitExceededException": true, "RepositoryNotEmptyException": true,
	"KmsException": true, "AccessDeniedException": true, "UnrecognizedClientException": true,
	"UnknownOperationException": true, "NotImplemented": true,
}

// classify wraps err with what was being done, as a *module.TerminalError
// when its code is one of terminalCodes.
func classify(err error, format string, args ...any) error {
	return module.Classify(err, terminalCodes, format, args...)
}
