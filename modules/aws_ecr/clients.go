package aws_ecr

import (
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ecr"

	"github.com/iasql/iasql/modules/module"
)

// clients holds an ECR client per region.
type clients struct {
	cfg aws.Config

	mu       sync.Mutex
	byRegion map[string]*ecr.Client
}

func newClients(cfg aws.Config) *clients {
	return &clients{cfg: cfg, byRegion: map[string]*ecr.Client{}}
}

func (c *clients) client(region string) *ecr.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byRegion[region]; ok {
		return cl
	}
	cl := ecr.NewFromConfig(c.cfg, func(o *ecr.Options) { o.Region = region })
	c.byRegion[region] = cl
	return cl
}

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

// isCode reports whether err is an ECR error with one of codes.
func isCode(err error, codes ...string) bool { return module.IsCode(err, codes...) }
