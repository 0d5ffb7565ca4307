// Package emulator is an AWS-compatible endpoint for tests, demos and
// benchmarks: one HTTP port that answers the AWS services the modules use,
// in memory. S3 (path-style requests) is served by gofakes3 behind a router
// that adds what gofakes3 lacks: bucket regions, ListBuckets pagination,
// AWS's versioning and location responses and AWS's error codes. Every
// request is counted per operation (Calls), so tests and benchmarks can
// assert how many cloud calls something cost.
//
// Requests are routed by the service their signature is scoped to (the
// Authorization header's credential scope, e.g.
// ".../us-east-1/ec2/aws4_request", or a presigned URL's X-Amz-Credential);
// S3 is the default. Other services are added to Emulator.services.
package emulator

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Options configure an Emulator. The zero value behaves like AWS.
type Options struct {
	// Logger receives one debug line per request; nil discards.
	Logger *slog.Logger
	// AnyRegion accepts requests for a bucket signed for any region. By
	// default, like AWS, a request for a bucket signed for a region other
	// than the bucket's fails with AuthorizationHeaderMalformed (400, with
	// the bucket's region in x-amz-bucket-region), and CreateBucket checks
	// the location constraint against the signing region.
	AnyRegion bool
	// LegacyListBuckets makes ListBuckets ignore max-buckets, prefix,
	// continuation-token and bucket-region and leave BucketRegion out, like
	// older S3-compatible servers: clients must fall back to
	// GetBucketLocation.
	LegacyListBuckets bool
	// ForeignBuckets are bucket names another account owns: CreateBucket
	// fails with BucketAlreadyExists, every other request on them with
	// AccessDenied.
	ForeignBuckets []string
	// AccountID is the account the emulator plays (ARNs, owner ids);
	// DefaultAccountID when empty.
	AccountID string
	// DisabledRegions are regions of Regions() the account has not enabled,
	// as an opt-in region it has not opted in to: EC2 DescribeRegions
	// leaves them out unless asked for all regions (AllRegions, or by
	// name), with optInStatus not-opted-in, and every request signed for
	// one of them fails as AWS fails it, with the service's authentication
	// error (EC2 AuthFailure, HTTP 401; see service.denied).
	DisabledRegions []string
	// CloudControlDelay is how long a Cloud Control request (create,
	// update, delete) stays IN_PROGRESS before it completes; 0 completes
	// it at the first look after the call that made it (whose answer is
	// still IN_PROGRESS, as AWS's is).
	CloudControlDelay time.Duration
	// InstanceStartDelay is how long an EC2 instance stays pending (after
	// RunInstances or StartInstances) before it is running; 0 makes it
	// running at the first EC2 call after the one that started it (whose
	// answer still says pending, as AWS's does).
	InstanceStartDelay time.Duration
	// InstanceStopDelay is how long an EC2 instance stays stopping (after
	// StopInstances) or shutting-down (after TerminateInstances) before it
	// is stopped or terminated; 0 as for InstanceStartDelay.
	InstanceStopDelay time.Duration
	// TerminatedVisibleFor is how long DescribeInstances still lists a
	// terminated instance; 0 means an hour, as on AWS ("usually less than
	// one hour").
	TerminatedVisibleFor time.Duration
	// LoadBalancerActiveDelay is how long an ELBv2 load balancer stays
	// provisioning before it is active; 0 makes it active at the first
	// call after the one that created it (whose answer says provisioning).
	LoadBalancerActiveDelay time.Duration
	// TargetHealthyDelay is how long an ELBv2 target stays initial (its
	// initial health checks) once it is registered, running, and its
	// group is forwarded to by an active load balancer, before it is
	// healthy; 0 as for LoadBalancerActiveDelay.
	TargetHealthyDelay time.Duration
	// CloudFormationSchemas are resource schemas (JSON documents, as
	// cfnschemas/ holds) served besides the embedded ones, for tests of
	// types no real schema has the shape of.
	CloudFormationSchemas []string
	// SchemaDir is a folder of resource schemas (every *.json in it, as
	// DescribeType's Schema returns them) served by DescribeType and Cloud
	// Control besides the embedded ones; one of a type the emulator embeds
	// replaces the embedded one. "" for none.
	SchemaDir string
	// Identities maps access key ids to the IAM ARNs they play: the
	// userIdentity.arn of the CloudTrail events of their calls and the Arn
	// STS GetCallerIdentity answers them. A key not in the map is the IAM
	// user named after it, arn:aws:iam::ACCOUNT:user/KEY. An ARN of a user
	// (…:user/NAME) is an IAMUser identity, one of an assumed role
	// (arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION) or a role an
	// AssumedRole one.
	Identities map[string]string
	// EventDelay is how long after a call its CloudTrail event reaches
	// EventBridge (and the SQS queues its rules target): 0 means
	// DefaultEventDelay (1 s); a negative delay delivers it at once.
	EventDelay time.Duration
	// LookupEventsRate is how many CloudTrail LookupEvents requests a
	// second each region answers before ThrottlingException: 0 means
	// AWS's 2; a negative rate never throttles.
	LookupEventsRate float64
}

// service emulates one AWS service behind the shared endpoint.
type service interface {
	// operation names the request's operation (e.g. "ListBuckets"), for
	// Calls and dispatch.
	operation(r *http.Request) string
	// serve answers the request.
	serve(w http.ResponseWriter, r *http.Request, op string)
	// writeError answers with an error in the service's protocol.
	writeError(w http.ResponseWriter, r *http.Request, status int, code, message string)
	// throttle is the service's throttling error: HTTP status and code.
	throttle() (status int, code string)
	// denied is the service's answer to a request whose credentials it
	// does not accept, which is also what AWS answers for a region the
	// account has not enabled: HTTP status, code and message.
	denied() (status int, code, message string)
}

// Emulator is an http.Handler answering AWS API requests.
type Emulator struct {
	log *slog.Logger
	// services by signing name (the credential scope's service); unsigned
	// requests go to S3, unknown services get NotImplemented.
	services map[string]service

	// disabled: the regions the account has not enabled (Options).
	disabled map[string]bool

	// trail records the mutating calls served (CloudTrail).
	trail *cloudTrail

	mu     sync.Mutex
	calls  map[string]int
	faults []*Fault
}

// New returns an emulator with no resources. It panics when
// Options.SchemaDir cannot be read (see Open).
func New(opts Options) *Emulator {
	e, err := Open(opts)
	if err != nil {
		panic(err)
	}
	return e
}

// Open returns an emulator with no resources, or why Options.SchemaDir
// (or a schema of Options.CloudFormationSchemas) cannot be served.
func Open(opts Options) (*Emulator, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	iam := newIAM(opts)
	sqs := newSQS(opts)
	events := newEvents(opts, sqs, log)
	sqs.bus = events
	trail := newCloudTrail(opts, events)
	cc, err := newCloudControl(opts, iam)
	if err != nil {
		return nil, err
	}
	cc.trail, cc.sqs, cc.events = trail, sqs, events
	ec2 := newEC2(opts)
	return &Emulator{
		log:   log,
		trail: trail,
		services: map[string]service{
			"s3":  newS3(opts),
			"iam": iam,
			"ecr": newECR(opts),
			"ec2": ec2,
			// ELBv2 signs as elasticloadbalancing, and reads EC2's subnets,
			// groups and instances.
			"elasticloadbalancing": newELBv2(opts, ec2),
			"sts":                  newSTS(opts, trail),
			"sqs":                  sqs,
			"events":               events,
			"cloudtrail":           newCloudTrailAPI(opts, trail),
			// Cloud Control signs as cloudcontrolapi.
			"cloudcontrolapi": cc,
			"cloudformation":  newCloudFormation(cc),
		},
		calls:    map[string]int{},
		disabled: opts.disabled(),
	}, nil
}

// ServeHTTP routes the request to its service, counts it and answers it.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case FaultsPath:
		e.serveFaults(w, r)
		return
	case CallsPath:
		e.serveCalls(w, r)
		return
	}
	start := time.Now()
	name, svc := e.route(r)
	op := svc.operation(r)
	e.count(name + ":" + op)
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			e.log.Error("emulator: handler panicked", "op", name+":"+op, "panic", p)
			if !rec.wrote {
				writeS3Error(rec, r, "", s3Err(http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again."))
			}
		}
		e.log.Debug("emulator request", "op", name+":"+op, "method", r.Method, "path", r.URL.Path,
			"status", rec.status, "duration", time.Since(start))
	}()
	region, _ := credentialScope(r)
	if e.disabled[region] {
		status, code, msg := svc.denied()
		svc.writeError(rec, r, status, code, msg)
		return
	}
	faults := e.takeFaults(name+":"+op, region)
	for _, f := range faults {
		switch f.Kind {
		case HandlerFailure:
			r = withHandlerFailure(r, f.ErrorCode)
		case IgnoreClientToken:
			r = r.WithContext(context.WithValue(r.Context(), ignoreClientTokenKey{}, true))
		}
	}
	for _, f := range faults {
		if !f.Kind.modifies() && e.applyFault(rec, r, svc, name, op, f) {
			return
		}
	}
	e.serveRecorded(rec, r, svc, name, op)
}

// serveRecorded serves a request and, when it is a mutating management
// call, records it in the trail (CloudTrail) with what it logs of the
// request and response, or of the error when it failed.
func (e *Emulator) serveRecorded(w http.ResponseWriter, r *http.Request, svc service, name, op string) {
	if !recorded(name, op) {
		svc.serve(w, r, op)
		return
	}
	var body *teeBody
	if r.Body != nil && r.Header.Get("X-Amz-Target") != "" {
		body = &teeBody{r: r.Body, c: r.Body}
		r.Body = body
	}
	rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
	cw := &captureWriter{statusRecorder: rec}
	svc.serve(cw, r, op)
	if rec.status >= 300 && rec.status < 400 {
		return // not an answer (a redirect)
	}
	var raw []byte
	if body != nil {
		raw = body.buf.Bytes()
	}
	call := e.trail.serviceCall(name, op, r, raw, cw)
	if rec.status >= 400 {
		call.errCode, call.errMessage = errorOf(rec.status, cw.Header(), cw.buf.Bytes())
		call.response = nil
	}
	e.trail.record(call)
}

// route picks the service for a request: by the signing name of its
// credential scope, S3 when there is none. (JSON-protocol services could
// also be told by X-Amz-Target's prefix; signed requests never need it.)
func (e *Emulator) route(r *http.Request) (string, service) {
	_, name := credentialScope(r)
	if name == "" {
		return "s3", e.services["s3"]
	}
	if svc, ok := e.services[name]; ok {
		return name, svc
	}
	return name, unknownService{name: name}
}

func (e *Emulator) count(op string) {
	e.mu.Lock()
	e.calls[op]++
	e.mu.Unlock()
}

// Calls returns how many requests each operation received since New or
// the last Reset, by "service:Operation" (e.g. "s3:ListBuckets"). Failed
// requests count too.
func (e *Emulator) Calls() map[string]int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return maps.Clone(e.calls)
}

// Reset forgets the counted calls; the emulated resources stay.
func (e *Emulator) Reset() {
	e.mu.Lock()
	clear(e.calls)
	e.mu.Unlock()
}

// CallsPath is where the emulator answers Calls over HTTP, for tests and
// users of a separate process (iasql emulator): GET answers a JSON object
// of request counts since start or the last reset, keyed
// "service:Operation" as faults name operations
// ({"cloudcontrolapi:ListResources": 40, "s3:ListBuckets": 1}); DELETE
// resets them (Reset). No AWS request has this path: S3 bucket names cannot
// start with "_".
const CallsPath = "/_iasql/calls"

// serveCalls answers requests to CallsPath.
func (e *Emulator) serveCalls(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		b, err := json.Marshal(e.Calls())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	case http.MethodDelete:
		e.Reset()
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "GET, DELETE")
		http.Error(w, "use GET to read the call counts, DELETE to reset them", http.StatusMethodNotAllowed)
	}
}

// Server is an emulator listening on a TCP address.
type Server struct {
	Addr net.Addr
	URL  string // http://host:port, for AWS_ENDPOINT_URL
	done chan error
}

// Start listens on addr (host:port; port 0 picks a free one) and serves
// until ctx ends. It returns once the listener is bound.
func (e *Emulator) Start(ctx context.Context, addr string) (*Server, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("emulator: listen on %s: %w", addr, err)
	}
	srv := &http.Server{
		Handler:           e,
		ReadHeaderTimeout: 30 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
		ErrorLog:          slog.NewLogLogger(e.log.Handler(), slog.LevelDebug),
	}
	s := &Server{Addr: ln.Addr(), URL: "http://" + ln.Addr().String(), done: make(chan error, 1)}
	go func() {
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case err := <-errc:
			s.done <- fmt.Errorf("emulator: serve: %w", err)
			return
		case <-ctx.Done():
		}
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(shutdownCtx)
		if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
			err = serr
		}
		if err != nil {
			err = fmt.Errorf("emulator: shut down: %w", err)
		}
		s.done <- err
	}()
	return s, nil
}

// Wait blocks until the server has stopped (its context ended) and
// returns why it stopped early, if it did.
func (s *Server) Wait() error { return <-s.done }

// credentialScope returns the region and service a request is signed for
// (SigV4 Authorization header or presigned X-Amz-Credential); "" when
// unsigned.
func credentialScope(r *http.Request) (region, service string) {
	cred := ""
	if auth := r.Header.Get("Authorization"); auth != "" {
		if i := strings.Index(auth, "Credential="); i >= 0 {
			cred = auth[i+len("Credential="):]
			if j := strings.IndexAny(cred, ", "); j >= 0 {
				cred = cred[:j]
			}
		}
	} else {
		cred = r.URL.Query().Get("X-Amz-Credential")
	}
	// AKID/date/region/service/aws4_request; SigV4a has no region:
	// AKID/date/service/aws4_request.
	parts := strings.Split(cred, "/")
	switch len(parts) {
	case 5:
		return parts[2], parts[3]
	case 4:
		return "", parts[2]
	}
	return "", ""
}

// queryAction is the operation of a query-protocol request (IAM, EC2): its
// form's Action; "Unknown" when it has none or its form cannot be parsed.
// It parses the form, which serve then reads (r.Form).
func queryAction(r *http.Request) string {
	if err := r.ParseForm(); err != nil {
		return "Unknown"
	}
	if a := r.Form.Get("Action"); a != "" {
		return a
	}
	return "Unknown"
}

// newRequestID is a request id shaped like AWS's UUIDs (IAM, ECR, EC2).
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// unknownService answers requests for services the emulator does not
// have with NotImplemented in the protocol's error shape.
type unknownService struct{ name string }

func (u unknownService) operation(r *http.Request) string {
	if t := r.Header.Get("X-Amz-Target"); t != "" {
		if i := strings.LastIndexByte(t, '.'); i >= 0 {
			return t[i+1:]
		}
		return t
	}
	if a := r.URL.Query().Get("Action"); a != "" {
		return a
	}
	if r.Method == http.MethodPost && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		if err := r.ParseForm(); err == nil && r.PostForm.Get("Action") != "" {
			return r.PostForm.Get("Action")
		}
	}
	return "Unknown"
}

func (u unknownService) serve(w http.ResponseWriter, r *http.Request, op string) {
	u.writeError(w, r, http.StatusNotImplemented, "NotImplemented",
		fmt.Sprintf("The emulator does not implement service %q (operation %s).", u.name, op))
}

func (u unknownService) throttle() (int, string) { return http.StatusBadRequest, "Throttling" }

func (u unknownService) denied() (int, string, string) {
	return http.StatusForbidden, "UnrecognizedClientException", "The security token included in the request is invalid."
}

// writeError answers in the JSON protocol's shape when the request is a
// JSON one (X-Amz-Target), else in the query protocol's.
func (u unknownService) writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	if r.Header.Get("X-Amz-Target") != "" {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-ErrorType", code)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"__type":%q,"message":%q}`, code, msg)
		return
	}
	var escaped strings.Builder
	_ = xml.EscapeText(&escaped, []byte(msg))
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, `%s<ErrorResponse><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>0</RequestId></ErrorResponse>`,
		xml.Header, code, escaped.String())
}

// statusRecorder remembers the status a handler wrote, for the log.
type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}
