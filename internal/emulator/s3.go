package emulator

import (
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

const (
	s3Namespace   = "http://s3.amazonaws.com/doc/2006-03-01/"
	defaultRegion = "us-east-1"
	ownerID       = "75aa57f09aa0c8caeab4f8c24e99d10f8e7faeebf76c078efc7c6caea54ba06a"
	maxXMLBody    = 1 << 20
)

// s3Service is S3: bucket-level operations are answered here (regions,
// pagination, versioning state, AWS errors), object-level ones by gofakes3
// on an in-memory backend.
type s3Service struct {
	opts    Options
	backend *s3mem.Backend
	fake    http.Handler
	foreign map[string]bool
	reqID   atomic.Uint64

	mu      sync.Mutex
	buckets map[string]*s3Bucket // guarded by mu; mirrors the backend's buckets
	names   []string             // guarded by mu; the buckets' names, sorted (a page of ListBuckets is found without sorting them all)
}

// s3Bucket is what the router keeps about a bucket.
type s3Bucket struct {
	region     string
	versioning string // "", "Enabled" or "Suspended"
	created    time.Time
}

func newS3(opts Options) *s3Service {
	backend := s3mem.New()
	fake := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0))
	s := &s3Service{
		opts:    opts,
		backend: backend,
		fake:    fake.Server(),
		foreign: map[string]bool{},
		buckets: map[string]*s3Bucket{},
	}
	for _, b := range opts.ForeignBuckets {
		s.foreign[b] = true
	}
	return s
}

// passThrough are the operations gofakes3 answers.
var passThrough = map[string]bool{
	"ListObjects": true, "ListObjectsV2": true, "ListObjectVersions": true, "DeleteObjects": true,
	"GetObject": true, "HeadObject": true, "PutObject": true, "CopyObject": true, "DeleteObject": true,
	"PostObject": true, "CreateMultipartUpload": true, "UploadPart": true, "CompleteMultipartUpload": true,
	"AbortMultipartUpload": true, "ListParts": true, "ListMultipartUploads": true,
}

func (s *s3Service) operation(r *http.Request) string { return s3Operation(r) }

func (s *s3Service) serve(w http.ResponseWriter, r *http.Request, op string) {
	id := s.requestID()
	bucket, _ := splitS3Path(r.URL.Path)
	if bucket != "" && s.foreign[bucket] {
		if op == "CreateBucket" {
			writeS3Error(w, r, id, s3Err(http.StatusConflict, "BucketAlreadyExists",
				"The requested bucket name is not available. The bucket namespace is shared by all users of the system. Please select a different name and try again.").bucket(bucket))
			return
		}
		writeS3Error(w, r, id, s3Err(http.StatusForbidden, "AccessDenied", "Access Denied"))
		return
	}
	if bucket != "" && op != "CreateBucket" && op != "GetBucketLocation" {
		if e := s.checkRegion(w, r, bucket); e != nil {
			writeS3Error(w, r, id, e)
			return
		}
	}
	w.Header().Set("x-amz-request-id", id)
	var err *s3Error
	switch op {
	case "ListBuckets":
		err = s.listBuckets(w, r)
	case "CreateBucket":
		err = s.createBucket(w, r, bucket)
	case "DeleteBucket":
		err = s.deleteBucket(w, bucket)
	case "HeadBucket":
		err = s.headBucket(w, bucket)
	case "GetBucketLocation":
		err = s.getBucketLocation(w, bucket)
	case "GetBucketVersioning":
		err = s.getBucketVersioning(w, bucket)
	case "PutBucketVersioning":
		err = s.putBucketVersioning(w, r, bucket)
	default:
		if !passThrough[op] {
			err = s3Err(http.StatusNotImplemented, "NotImplemented",
				fmt.Sprintf("The emulator does not implement S3 %s.", op))
			break
		}
		if e := decodeAWSChunked(r); e != nil {
			err = s3Err(http.StatusBadRequest, "IncompleteBody", e.Error())
			break
		}
		s.fake.ServeHTTP(w, r)
		return
	}
	if err != nil {
		writeS3Error(w, r, id, err)
	}
}

func (s *s3Service) throttle() (int, string) { return http.StatusServiceUnavailable, "SlowDown" }

func (s *s3Service) denied() (int, string, string) {
	return http.StatusForbidden, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records."
}

func (s *s3Service) writeError(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	writeS3Error(w, r, s.requestID(), s3Err(status, code, message))
}

// requestID is a request id shaped like S3's: 16 hexadecimal digits.
func (s *s3Service) requestID() string { return fmt.Sprintf("%016X", s.reqID.Add(1)) }

// bucketState returns a copy of what is known about a bucket.
func (s *s3Service) bucketState(name string) (s3Bucket, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[name]
	if !ok {
		return s3Bucket{}, false
	}
	return *b, true
}

// checkRegion refuses, like AWS, a request for an existing bucket signed
// for another region than the bucket's.
func (s *s3Service) checkRegion(w http.ResponseWriter, r *http.Request, bucket string) *s3Error {
	region, _ := credentialScope(r)
	b, ok := s.bucketState(bucket)
	if s.opts.AnyRegion || region == "" || !ok || region == b.region {
		return nil
	}
	w.Header().Set("x-amz-bucket-region", b.region)
	e := s3Err(http.StatusBadRequest, "AuthorizationHeaderMalformed",
		fmt.Sprintf("The authorization header is malformed; the region '%s' is wrong; expecting '%s'", region, b.region))
	e.Region = b.region
	return e
}

type listBucketsResult struct {
	XMLName           xml.Name       `xml:"ListAllMyBucketsResult"`
	Xmlns             string         `xml:"xmlns,attr"`
	Owner             owner          `xml:"Owner"`
	Buckets           []bucketResult `xml:"Buckets>Bucket"`
	ContinuationToken string         `xml:"ContinuationToken,omitempty"`
	Prefix            string         `xml:"Prefix,omitempty"`
}

type owner struct {
	ID          string `xml:"ID"`
	DisplayName string `xml:"DisplayName"`
}

type bucketResult struct {
	Name         string `xml:"Name"`
	CreationDate string `xml:"CreationDate"`
	BucketRegion string `xml:"BucketRegion,omitempty"`
}

// listBuckets is ListBuckets with AWS's pagination (max-buckets,
// continuation-token), prefix and bucket-region filters, names in order.
// Like AWS, BucketRegion is in the response only when the request has a
// parameter.
func (s *s3Service) listBuckets(w http.ResponseWriter, r *http.Request) *s3Error {
	q := r.URL.Query()
	paged := !s.opts.LegacyListBuckets && (q.Has("max-buckets") || q.Has("continuation-token") || q.Has("prefix") || q.Has("bucket-region"))
	limit := 10000
	after := ""
	prefix, region := "", ""
	if paged {
		if v := q.Get("max-buckets"); q.Has("max-buckets") {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 10000 {
				e := s3Err(http.StatusBadRequest, "InvalidArgument", "Argument max-buckets must be an integer between 1 and 10000")
				e.ArgumentName, e.ArgumentValue = "max-buckets", v
				return e
			}
			limit = n
		}
		if tok := q.Get("continuation-token"); tok != "" {
			var ok bool
			if after, ok = pageAfter("", tok); !ok {
				return s3Err(http.StatusBadRequest, "InvalidArgument", "The continuation token provided is incorrect")
			}
		}
		prefix, region = q.Get("prefix"), q.Get("bucket-region")
	}
	out := listBucketsResult{Xmlns: s3Namespace, Owner: owner{ID: ownerID, DisplayName: "emulator"}, Buckets: []bucketResult{}}
	if paged {
		out.Prefix = prefix
	}
	s.mu.Lock()
	// The names with the prefix are together in sorted order, from the
	// first not before it; the page starts after the token's name.
	start, _ := slices.BinarySearch(s.names, prefix)
	if after != "" {
		i, found := slices.BinarySearch(s.names, after)
		if found {
			i++
		}
		start = max(start, i)
	}
	var names []string // the page's, and one more if there is one
	for _, name := range s.names[start:] {
		if !strings.HasPrefix(name, prefix) || len(names) > limit {
			break
		}
		if region == "" || s.buckets[name].region == region {
			names = append(names, name)
		}
	}
	for i, name := range names {
		if i == limit {
			out.ContinuationToken = pageToken("", names[i-1])
			break
		}
		b := s.buckets[name]
		br := bucketResult{Name: name, CreationDate: b.created.UTC().Format("2006-01-02T15:04:05.000Z")}
		if paged {
			br.BucketRegion = b.region
		}
		out.Buckets = append(out.Buckets, br)
	}
	s.mu.Unlock()
	writeXML(w, http.StatusOK, out)
	return nil
}

type createBucketConfiguration struct {
	LocationConstraint string `xml:"LocationConstraint"`
}

var regionPattern = regexp.MustCompile(`^[a-z]{2}(-[a-z]+)+-[0-9]+$`)

// createBucket follows AWS: the location constraint says the region
// (none: us-east-1), a region-specific endpoint accepts only its own
// region, and creating a bucket you own again is 200 OK in us-east-1 and
// BucketAlreadyOwnedByYou elsewhere.
func (s *s3Service) createBucket(w http.ResponseWriter, r *http.Request, name string) *s3Error {
	if err := validBucketName(name); err != "" {
		return s3Err(http.StatusBadRequest, "InvalidBucketName", "The specified bucket is not valid.").bucket(name)
	}
	var cfg createBucketConfiguration
	body, e := readXMLBody(r)
	if e != nil {
		return e
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		if err := xml.Unmarshal(body, &cfg); err != nil {
			return malformedXML()
		}
	}
	signed, _ := credentialScope(r)
	region := strings.TrimSpace(cfg.LocationConstraint)
	switch {
	case region == "":
		region = defaultRegion
		if !s.opts.AnyRegion && signed != "" && signed != defaultRegion {
			return s3Err(http.StatusBadRequest, "IllegalLocationConstraintException",
				"The unspecified location constraint is incompatible for the region specific endpoint this request was sent to.")
		}
	case region == "EU":
		region = "eu-west-1"
	case region == defaultRegion || !regionPattern.MatchString(region):
		e := s3Err(http.StatusBadRequest, "InvalidLocationConstraint", "The specified location-constraint is not valid")
		e.LocationConstraint = region
		return e
	}
	if !s.opts.AnyRegion && signed != "" && signed != defaultRegion && signed != region {
		return s3Err(http.StatusBadRequest, "IllegalLocationConstraintException",
			fmt.Sprintf("The %s location constraint is incompatible for the region specific endpoint this request was sent to.", region))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.buckets[name]; ok {
		if b.region == defaultRegion && region == defaultRegion {
			w.Header().Set("Location", "/"+name)
			w.WriteHeader(http.StatusOK)
			return nil
		}
		return s3Err(http.StatusConflict, "BucketAlreadyOwnedByYou",
			"Your previous request to create the named bucket succeeded and you already own it.").bucket(name)
	}
	if err := s.backend.CreateBucket(name); err != nil {
		return internalError(err)
	}
	s.add(name, &s3Bucket{region: region, created: time.Now()})
	w.Header().Set("Location", "/"+name)
	w.WriteHeader(http.StatusOK)
	return nil
}

// AddBuckets makes general purpose buckets in region, as CreateBucket
// would (created at created, versioning never set), without the requests:
// for benchmarks that need an account with many buckets. A name that is
// not valid, or a bucket that exists (or is named twice), fails it before
// any is made.
func (e *Emulator) AddBuckets(region string, created time.Time, names ...string) error {
	if !regionPattern.MatchString(region) {
		return fmt.Errorf("emulator: %q is not a region", region)
	}
	s := e.services["s3"].(*s3Service)
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if why := validBucketName(name); why != "" {
			return fmt.Errorf("emulator: bucket name %q %s", name, why)
		}
		if _, ok := s.buckets[name]; ok || s.foreign[name] || seen[name] {
			return fmt.Errorf("emulator: bucket %s exists", name)
		}
		seen[name] = true
	}
	for _, name := range names {
		if err := s.backend.CreateBucket(name); err != nil {
			return fmt.Errorf("emulator: add bucket %s: %w", name, err)
		}
		s.buckets[name] = &s3Bucket{region: region, created: created}
	}
	s.names = append(s.names, names...)
	slices.Sort(s.names)
	return nil
}

// add records a bucket the backend has just made. The caller holds mu.
func (s *s3Service) add(name string, b *s3Bucket) {
	s.buckets[name] = b
	i, _ := slices.BinarySearch(s.names, name)
	s.names = slices.Insert(s.names, i, name)
}

func (s *s3Service) deleteBucket(w http.ResponseWriter, name string) *s3Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.buckets[name]; !ok {
		return noSuchBucket(name)
	}
	if err := s.backend.DeleteBucket(name); err != nil {
		switch {
		case gofakes3.HasErrorCode(err, gofakes3.ErrBucketNotEmpty):
			msg := "The bucket you tried to delete is not empty"
			if s.buckets[name].versioning != "" {
				msg = "The bucket you tried to delete is not empty. You must delete all versions in the bucket."
			}
			return s3Err(http.StatusConflict, "BucketNotEmpty", msg).bucket(name)
		case gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket):
			return noSuchBucket(name)
		}
		return internalError(err)
	}
	delete(s.buckets, name)
	if i, found := slices.BinarySearch(s.names, name); found {
		s.names = slices.Delete(s.names, i, i+1)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

func (s *s3Service) headBucket(w http.ResponseWriter, name string) *s3Error {
	b, ok := s.bucketState(name)
	if !ok {
		return noSuchBucket(name)
	}
	w.Header().Set("x-amz-bucket-region", b.region)
	w.WriteHeader(http.StatusOK)
	return nil
}

type locationConstraint struct {
	XMLName xml.Name `xml:"LocationConstraint"`
	Xmlns   string   `xml:"xmlns,attr"`
	Region  string   `xml:",chardata"`
}

// getBucketLocation answers from any region, like AWS; us-east-1 is the
// empty constraint.
func (s *s3Service) getBucketLocation(w http.ResponseWriter, name string) *s3Error {
	b, ok := s.bucketState(name)
	if !ok {
		return noSuchBucket(name)
	}
	out := locationConstraint{Xmlns: s3Namespace}
	if b.region != defaultRegion {
		out.Region = b.region
	}
	writeXML(w, http.StatusOK, out)
	return nil
}

type versioningConfiguration struct {
	XMLName   xml.Name `xml:"VersioningConfiguration"`
	Xmlns     string   `xml:"xmlns,attr,omitempty"`
	Status    *string  `xml:"Status"`
	MfaDelete *string  `xml:"MfaDelete"`
}

// getBucketVersioning: no Status element until versioning was ever set.
func (s *s3Service) getBucketVersioning(w http.ResponseWriter, name string) *s3Error {
	b, ok := s.bucketState(name)
	if !ok {
		return noSuchBucket(name)
	}
	out := versioningConfiguration{Xmlns: s3Namespace}
	if b.versioning != "" {
		out.Status = &b.versioning
	}
	writeXML(w, http.StatusOK, out)
	return nil
}

// putBucketVersioning keeps the status here (gofakes3's backend cannot
// say Suspended for a bucket never enabled) and in the backend, which
// gives objects their versioned behaviour.
func (s *s3Service) putBucketVersioning(w http.ResponseWriter, r *http.Request, name string) *s3Error {
	body, e := readXMLBody(r)
	if e != nil {
		return e
	}
	var in versioningConfiguration
	if err := xml.Unmarshal(body, &in); err != nil {
		return malformedXML()
	}
	if in.MfaDelete != nil && *in.MfaDelete == "Enabled" {
		return s3Err(http.StatusNotImplemented, "NotImplemented", "The emulator does not implement MFA delete.")
	}
	if in.MfaDelete != nil && *in.MfaDelete != "Disabled" {
		return malformedXML()
	}
	if in.Status == nil {
		return s3Err(http.StatusBadRequest, "IllegalVersioningConfigurationException", "The Versioning element must be specified")
	}
	status := *in.Status
	if status != "Enabled" && status != "Suspended" {
		return malformedXML()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.buckets[name]
	if !ok {
		return noSuchBucket(name)
	}
	cfg := gofakes3.VersioningConfiguration{Status: gofakes3.VersioningStatus(status)}
	if err := s.backend.SetVersioningConfiguration(name, cfg); err != nil {
		return internalError(err)
	}
	b.versioning = status
	w.WriteHeader(http.StatusOK)
	return nil
}

// readXMLBody reads a request's XML body, of at most maxXMLBody bytes.
func readXMLBody(r *http.Request) ([]byte, *s3Error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxXMLBody))
	if err != nil {
		return nil, s3Err(http.StatusBadRequest, "IncompleteBody", "You did not provide the number of bytes specified by the Content-Length HTTP header.")
	}
	return body, nil
}

// validBucketName applies S3's general purpose bucket naming rules; it
// returns what is wrong, "" when the name is valid.
func validBucketName(name string) string {
	switch {
	case len(name) < 3 || len(name) > 63:
		return "must be 3 to 63 characters long"
	case strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "":
		return "may contain only lowercase letters, digits, dots and hyphens"
	case !isAlnum(name[0]) || !isAlnum(name[len(name)-1]):
		return "must begin and end with a letter or digit"
	case strings.Contains(name, ".."):
		return "must not contain two adjacent dots"
	case net.ParseIP(name) != nil:
		return "must not be formatted as an IP address"
	}
	for _, p := range []string{"xn--", "sthree-", "amzn-s3-demo-"} {
		if strings.HasPrefix(name, p) {
			return "must not start with " + p
		}
	}
	for _, p := range []string{"-s3alias", "--ol-s3", ".mrap", "--x-s3", "--table-s3"} {
		if strings.HasSuffix(name, p) {
			return "must not end with " + p
		}
	}
	return ""
}

func isAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// splitS3Path splits a path-style request path into bucket and key.
func splitS3Path(p string) (bucket, key string) {
	p = strings.TrimPrefix(p, "/")
	bucket, key, _ = strings.Cut(p, "/")
	return bucket, key
}

// bucketSubresources are the bucket configuration subresources (query
// keys) and the noun of their operations (verb + noun).
var bucketSubresources = []struct{ query, noun string }{
	{"tagging", "BucketTagging"}, {"policy", "BucketPolicy"}, {"policyStatus", "BucketPolicyStatus"},
	{"acl", "BucketAcl"}, {"cors", "BucketCors"}, {"lifecycle", "BucketLifecycleConfiguration"},
	{"encryption", "BucketEncryption"}, {"website", "BucketWebsite"}, {"logging", "BucketLogging"},
	{"notification", "BucketNotificationConfiguration"}, {"replication", "BucketReplication"},
	{"ownershipControls", "BucketOwnershipControls"}, {"publicAccessBlock", "PublicAccessBlock"},
	{"accelerate", "BucketAccelerateConfiguration"}, {"requestPayment", "BucketRequestPayment"},
	{"object-lock", "ObjectLockConfiguration"}, {"intelligent-tiering", "BucketIntelligentTieringConfiguration"},
	{"analytics", "BucketAnalyticsConfiguration"}, {"metrics", "BucketMetricsConfiguration"},
	{"inventory", "BucketInventoryConfiguration"}, {"metadataTable", "BucketMetadataTableConfiguration"},
}

// objectSubresources are the same for objects.
var objectSubresources = []struct{ query, noun string }{
	{"tagging", "ObjectTagging"}, {"acl", "ObjectAcl"}, {"retention", "ObjectRetention"},
	{"legal-hold", "ObjectLegalHold"}, {"attributes", "ObjectAttributes"}, {"torrent", "ObjectTorrent"},
}

// subresourceOp names the operation on the first subresource the query
// has: verb + noun, or "Unknown" for a method without a verb.
func subresourceOp(q url.Values, verb string, subs []struct{ query, noun string }) (string, bool) {
	for _, sr := range subs {
		if q.Has(sr.query) {
			if verb == "" {
				return "Unknown", true
			}
			return verb + sr.noun, true
		}
	}
	return "", false
}

// s3Operation names an S3 request's operation from its method, path and
// query, as the S3 API reference names it ("Unknown" when unrecognised).
func s3Operation(r *http.Request) string {
	bucket, key := splitS3Path(r.URL.Path)
	q := r.URL.Query()
	m := r.Method
	verb := map[string]string{http.MethodGet: "Get", http.MethodPut: "Put", http.MethodDelete: "Delete"}[m]
	switch {
	case bucket == "":
		if m == http.MethodGet {
			return "ListBuckets"
		}
	case key == "":
		switch {
		case q.Has("location"):
			return only(m == http.MethodGet, "GetBucketLocation")
		case q.Has("versioning"):
			return only(m == http.MethodGet || m == http.MethodPut, verb+"BucketVersioning")
		case q.Has("versions"):
			return only(m == http.MethodGet, "ListObjectVersions")
		case q.Has("uploads"):
			return only(m == http.MethodGet, "ListMultipartUploads")
		case q.Has("delete"):
			return only(m == http.MethodPost, "DeleteObjects")
		}
		if op, ok := subresourceOp(q, verb, bucketSubresources); ok {
			return op
		}
		switch m {
		case http.MethodGet:
			if q.Get("list-type") == "2" {
				return "ListObjectsV2"
			}
			return "ListObjects"
		case http.MethodPut:
			return "CreateBucket"
		case http.MethodDelete:
			return "DeleteBucket"
		case http.MethodHead:
			return "HeadBucket"
		case http.MethodPost:
			return "PostObject"
		}
	default:
		switch {
		case q.Has("uploadId"):
			switch m {
			case http.MethodPut:
				if r.Header.Get("x-amz-copy-source") != "" {
					return "UploadPartCopy"
				}
				return "UploadPart"
			case http.MethodGet:
				return "ListParts"
			case http.MethodPost:
				return "CompleteMultipartUpload"
			case http.MethodDelete:
				return "AbortMultipartUpload"
			}
			return "Unknown"
		case q.Has("uploads"):
			return only(m == http.MethodPost, "CreateMultipartUpload")
		case q.Has("restore"):
			return only(m == http.MethodPost, "RestoreObject")
		case q.Has("select"):
			return only(m == http.MethodPost, "SelectObjectContent")
		}
		if op, ok := subresourceOp(q, verb, objectSubresources); ok {
			return op
		}
		switch m {
		case http.MethodGet:
			return "GetObject"
		case http.MethodHead:
			return "HeadObject"
		case http.MethodPut:
			if r.Header.Get("x-amz-copy-source") != "" {
				return "CopyObject"
			}
			return "PutObject"
		case http.MethodDelete:
			return "DeleteObject"
		}
	}
	return "Unknown"
}

// only returns op when ok, else "Unknown".
func only(ok bool, op string) string {
	if ok {
		return op
	}
	return "Unknown"
}
