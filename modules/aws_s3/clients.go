package aws_s3

import (
	"context"
	"errors"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

const (
	defaultRegion = "us-east-1"
	// concurrency bounds the per-bucket requests in flight during a Read.
	concurrency = 16
	// pageSize is the MaxBuckets of ListBuckets pages.
	pageSize = 1000
)

// clients holds an S3 client per region and the regions of the buckets
// seen, for the mappers of one configuration.
type clients struct {
	cfg      aws.Config
	byRegion *regional.Clients[*s3.Client]

	mu      sync.Mutex
	regions map[string]string // bucket name -> region
}

// newClients returns the clients for cfg (in us-east-1 when it names no
// region). Checksums are computed and validated only where S3 requires
// them, which works with AWS and with S3-compatible servers that predate
// the SDK's default CRC32 checksums.
func newClients(cfg aws.Config) *clients {
	if cfg.Region == "" {
		cfg.Region = defaultRegion
	}
	usePathStyle := pathStyle(cfg)
	byRegion := regional.NewClients(cfg, func(region string) *s3.Client {
		return s3.NewFromConfig(cfg, func(o *s3.Options) {
			o.Region = region
			o.UsePathStyle = usePathStyle
			o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
			o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
		})
	})
	return &clients{cfg: cfg, byRegion: byRegion, regions: map[string]string{}}
}

// pathStyle says whether to address buckets in the path: when
// IASQL_S3_PATH_STYLE says so, else when a custom endpoint is configured
// (emulators and S3-compatible stores rarely do virtual hosts).
func pathStyle(cfg aws.Config) bool {
	if v, err := strconv.ParseBool(os.Getenv("IASQL_S3_PATH_STYLE")); err == nil {
		return v
	}
	return cfg.BaseEndpoint != nil || os.Getenv("AWS_ENDPOINT_URL_S3") != "" || os.Getenv("AWS_ENDPOINT_URL") != ""
}

// client returns the client for a region ("" is the configuration's).
func (c *clients) client(region string) *s3.Client {
	if region == "" {
		region = c.cfg.Region
	}
	return c.byRegion.Region(region)
}

func (c *clients) rememberRegion(bucket, region string) {
	c.mu.Lock()
	c.regions[bucket] = region
	c.mu.Unlock()
}

func (c *clients) forgetRegion(bucket string) {
	c.mu.Lock()
	delete(c.regions, bucket)
	c.mu.Unlock()
}

// regionOf returns a bucket's region: remembered, else located.
func (c *clients) regionOf(ctx context.Context, bucket string) (string, error) {
	c.mu.Lock()
	region, ok := c.regions[bucket]
	c.mu.Unlock()
	if ok {
		return region, nil
	}
	return c.locate(ctx, bucket)
}

// locate asks S3 for a bucket's region (GetBucketLocation) and remembers
// it.
func (c *clients) locate(ctx context.Context, bucket string) (string, error) {
	out, err := c.client("").GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(bucket)})
	if err != nil {
		if r := redirectRegion(err); r != "" {
			c.rememberRegion(bucket, r)
			return r, nil
		}
		return "", terminal.Classify(err, "get location of bucket %s", bucket)
	}
	region := normRegion(string(out.LocationConstraint))
	c.rememberRegion(bucket, region)
	return region, nil
}

// withBucket runs fn with the client for the bucket's region; when S3
// says the region is wrong (the bucket was recreated elsewhere), it
// learns the right one and runs fn once more.
func (c *clients) withBucket(ctx context.Context, bucket string, fn func(*s3.Client) error) error {
	region, err := c.regionOf(ctx, bucket)
	if err != nil {
		return err
	}
	err = fn(c.client(region))
	if err == nil || !wrongRegion(err) {
		return err
	}
	c.forgetRegion(bucket)
	if r := redirectRegion(err); r != "" {
		c.rememberRegion(bucket, r)
	}
	if region, err = c.regionOf(ctx, bucket); err != nil {
		return err
	}
	return fn(c.client(region))
}

// bucketInfo is a bucket as ListBuckets says.
type bucketInfo struct {
	name    string
	region  string
	created time.Time
}

// listBuckets lists the account's buckets (those whose name starts with
// prefix) with their regions: from ListBuckets' BucketRegion, or
// GetBucketLocation where the server does not give it (never from memory:
// a bucket may have been recreated elsewhere).
func (c *clients) listBuckets(ctx context.Context, prefix string) ([]bucketInfo, error) {
	in := &s3.ListBucketsInput{MaxBuckets: aws.Int32(pageSize)}
	if prefix != "" {
		in.Prefix = aws.String(prefix)
	}
	buckets, err := regional.Pages(ctx, s3.NewListBucketsPaginator(c.client(""), in), func(page *s3.ListBucketsOutput) []types.Bucket { return page.Buckets })
	if err != nil {
		return nil, terminal.Classify(err, "list buckets")
	}
	out := make([]bucketInfo, len(buckets))
	for i, b := range buckets {
		out[i] = bucketInfo{name: aws.ToString(b.Name), created: aws.ToTime(b.CreationDate)}
		if b.BucketRegion != nil {
			out[i].region = normRegion(*b.BucketRegion)
			c.rememberRegion(out[i].name, out[i].region)
		}
	}
	err = regional.ForEach(ctx, concurrency, len(out), func(ctx context.Context, i int) error {
		if out[i].region != "" {
			return nil
		}
		region, err := c.locate(ctx, out[i].name)
		if module.IsCode(err, "NoSuchBucket") {
			return nil // deleted meanwhile; the caller skips it
		}
		out[i].region = region
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// normRegion turns S3's location constraints into region codes: "" is
// us-east-1, EU is eu-west-1.
func normRegion(r string) string {
	switch r {
	case "":
		return defaultRegion
	case "EU":
		return "eu-west-1"
	}
	return r
}

// terminal are S3 errors that retrying cannot fix: bad input, a name
// someone else owns, missing permissions, unsupported requests.
var terminal = module.TerminalCodes(
	"InvalidBucketName", "BucketAlreadyExists", "InvalidLocationConstraint",
	"IllegalLocationConstraintException", "InvalidArgument", "InvalidRequest",
	"KeyTooLongError", "TooManyBuckets", "MalformedXML",
	"IllegalVersioningConfigurationException", "InvalidBucketState",
	"AccessDenied", "AllAccessDisabled", "InvalidAccessKeyId",
	"SignatureDoesNotMatch", "NotImplemented", "MethodNotAllowed")

// wrongRegion says whether S3 refused a request for being sent to or
// signed for the wrong region.
func wrongRegion(err error) bool {
	if module.IsCode(err, "AuthorizationHeaderMalformed", "PermanentRedirect") {
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusMovedPermanently
}

// redirectRegion is the bucket region S3 names in an error response.
func redirectRegion(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) && re.Response != nil {
		return re.Response.Header.Get("x-amz-bucket-region")
	}
	return ""
}

// inScope keeps the buckets of the regions in the cycle's scope when it is
// set (aws_account's enabled regions): S3 lists an account's buckets in
// every region, and a region disabled in aws_regions is one the user does
// not sync (its rows go; nothing is imported there). Without a scope, or
// for a bucket whose region is unknown, everything listed is kept.
func inScope(s module.Scope, infos []bucketInfo) []bucketInfo {
	if !s.Set() {
		return infos
	}
	kept := infos[:0:0]
	for _, b := range infos {
		if b.region == "" || slices.Contains(s.Regions, b.region) {
			kept = append(kept, b)
		}
	}
	return kept
}
