package aws_iam

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/iam"

	"github.com/iasql/iasql/modules/module"
)

// concurrency bounds the per-role requests in flight during a Read.
const concurrency = 8

// clients holds an IAM client per signing region. IAM is global: any
// region reaches the same roles; the mappers use the scope's default
// region, so that partitions other than aws (aws-cn, aws-us-gov) resolve
// to their own endpoint.
type clients struct {
	cfg aws.Config

	mu       sync.Mutex
	byRegion map[string]*iam.Client
}

func newClients(cfg aws.Config) *clients {
	return &clients{cfg: cfg, byRegion: map[string]*iam.Client{}}
}

// client returns the client for the default region of the cycle's scope.
func (c *clients) client(ctx context.Context) *iam.Client {
	region := module.ScopeOf(ctx, c.cfg).Default
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.byRegion[region]; ok {
		return cl
	}
	cl := iam.NewFromConfig(c.cfg, func(o *iam.Options) { o.Region = region })
	c.byRegion[region] = cl
	return cl
}

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

// isCode reports whether err is an IAM error with one of codes.
func isCode(err error, codes ...string) bool { return module.IsCode(err, codes...) }
