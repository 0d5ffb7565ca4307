package emulator

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// FaultKind is what an injected fault does to a request.
type FaultKind int

const (
	// Throttle answers with the service's throttling error (S3 SlowDown,
	// EC2 RequestLimitExceeded, IAM and ELBv2 Throttling, ECR
	// ThrottlingException)
	// without doing the request.
	Throttle FaultKind = iota + 1
	// ServerError answers 500 InternalError without doing the request.
	ServerError
	// ServerErrorAfter does the request, then answers 500 InternalError
	// instead of its response: the client cannot tell whether it happened,
	// as with a connection lost after AWS acted.
	ServerErrorAfter
	// Latency delays the request by Delay, then does it.
	Latency
	// Denied answers with the service's authentication failure (EC2
	// AuthFailure, ECR UnrecognizedClientException, IAM and ELBv2
	// InvalidClientTokenId, S3 InvalidAccessKeyId) without doing the
	// request, as AWS answers for a region the account has not enabled;
	// the SDK does not retry it.
	Denied
	// HandlerFailure lets a Cloud Control create, update or delete be
	// accepted (IN_PROGRESS) and makes it end FAILED with the fault's
	// ErrorCode (NotStabilized when empty), as when a resource handler
	// fails; other requests are served normally.
	HandlerFailure
	// IgnoreClientToken serves RunInstances as an endpoint that does not
	// honour ClientToken: it launches new instances whatever an earlier
	// request with the same token launched (AWS answers that request's
	// instances: https://docs.aws.amazon.com/ec2/latest/devguide/ec2-api-idempotency.html).
	// What it launches still carries the token, as its tags do; other
	// requests are served normally.
	IgnoreClientToken
	// Refuse answers with the service's client error (HTTP 400) of the
	// fault's ErrorCode, without doing the request: an error the
	// emulator's state does not produce, such as a Cloud Control list
	// handler's ResourceNotFoundException under a parent that no longer
	// exists (handlers differ there; see ccmapper.Mapper.Read).
	Refuse
)

// modifies reports whether a fault only changes how a request is served
// (HandlerFailure, IgnoreClientToken): such faults apply together with
// the first matching fault that answers or delays it.
func (k FaultKind) modifies() bool { return k == HandlerFailure || k == IgnoreClientToken }

// Fault is a failure injected into matching requests, for reliability
// tests: see Emulator.Inject.
type Fault struct {
	// Op selects the requests, like the keys of Calls:
	// "ec2:CreateSecurityGroup", "ec2:*" (every operation of a service) or
	// "*" (every request).
	Op string
	// Region, when set, limits the fault to requests signed for that
	// region (a regional outage).
	Region string
	Kind   FaultKind
	Times  int           // how many matching requests it affects; 0 means until ClearFaults
	Delay  time.Duration // for Latency
	// ErrorCode is a HandlerFailure's handler error code (NotStabilized,
	// Throttling, ServiceInternalError, InvalidRequest, ...), or the API
	// error code a Refuse answers (ResourceNotFoundException, ...).
	ErrorCode string
}

func (f *Fault) matches(op, region string) bool {
	if f.Region != "" && f.Region != region {
		return false
	}
	if f.Op == "*" || f.Op == op {
		return true
	}
	if svc, ok := strings.CutSuffix(f.Op, ":*"); ok {
		return strings.HasPrefix(op, svc+":")
	}
	return false
}

// Inject adds a fault; faults apply in the order injected: the first
// matching one that answers or delays a request (Throttle, ServerError,
// ServerErrorAfter, Latency, Denied), and with it every matching one that
// changes how it is served (HandlerFailure, IgnoreClientToken).
func (e *Emulator) Inject(f Fault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = append(e.faults, &f)
}

// ClearFaults removes every injected fault.
func (e *Emulator) ClearFaults() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.faults = nil
}

// takeFaults returns the faults that apply to a request of op signed for
// region (see Inject), counting each against its Times.
func (e *Emulator) takeFaults(op, region string) []*Fault {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []*Fault
	answered := false
	kept := e.faults[:0:0]
	for _, f := range e.faults {
		if !f.matches(op, region) || (answered && !f.Kind.modifies()) {
			kept = append(kept, f)
			continue
		}
		answered = answered || !f.Kind.modifies()
		got := *f
		out = append(out, &got)
		if f.Times > 0 {
			f.Times--
			if f.Times == 0 {
				continue // used up
			}
		}
		kept = append(kept, f)
	}
	e.faults = kept
	return out
}

// applyFault serves the request under fault f; it reports whether it
// answered the request (false: serve it normally).
func (e *Emulator) applyFault(w http.ResponseWriter, r *http.Request, svc service, name, op string, f *Fault) bool {
	switch f.Kind {
	case Latency:
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
		}
		return false
	case Throttle:
		status, code := svc.throttle()
		svc.writeError(w, r, status, code, "Rate exceeded (injected by the emulator)")
		return true
	case ServerError:
		svc.writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error (injected by the emulator). Please try again.")
		return true
	case Denied:
		status, code, msg := svc.denied()
		svc.writeError(w, r, status, code, msg+" (injected by the emulator)")
		return true
	case Refuse:
		svc.writeError(w, r, http.StatusBadRequest, f.ErrorCode, "Refused (injected by the emulator)")
		return true
	case ServerErrorAfter:
		// The call happened: CloudTrail records it.
		e.serveRecorded(&discardWriter{h: http.Header{}}, r, svc, name, op)
		svc.writeError(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error (injected by the emulator, after doing the request). Please try again.")
		return true
	}
	return false
}

// discardWriter swallows a response.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardWriter) WriteHeader(int)             {}

// FaultsPath is where the emulator takes faults over HTTP, for tests that
// run it as a separate process (iasql emulator): POST a JSON fault
// {"op": "ec2:CreateSecurityGroup", "kind": "throttle", "times": 3,
// "delay_ms": 0, "region": "", "error_code": ""} to add one (kinds: throttle,
// server_error, server_error_after, latency, denied, handler_failure,
// ignore_client_token, refuse;
// region and error_code optional), DELETE to clear
// them all. No AWS request has this path: S3 bucket names cannot start
// with "_".
const FaultsPath = "/_iasql/faults"

var faultKinds = map[string]FaultKind{
	"throttle": Throttle, "server_error": ServerError, "server_error_after": ServerErrorAfter, "latency": Latency,
	"denied": Denied, "handler_failure": HandlerFailure, "ignore_client_token": IgnoreClientToken,
	"refuse": Refuse,
}

// serveFaults answers requests to FaultsPath.
func (e *Emulator) serveFaults(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		e.ClearFaults()
		w.WriteHeader(http.StatusNoContent)
	case http.MethodPost:
		var in struct {
			Op      string `json:"op"`
			Kind    string `json:"kind"`
			Times   int    `json:"times"`
			DelayMS int    `json:"delay_ms"`
			Region  string `json:"region"`
			Code    string `json:"error_code"`
		}
		dec := json.NewDecoder(r.Body)
		dec.DisallowUnknownFields()
		if err := dec.Decode(&in); err != nil {
			http.Error(w, "bad fault: "+err.Error()+`: send {"op": "service:Operation", "kind": "throttle", "times": N, "delay_ms": N, "region": "optional-region-1"}`, http.StatusBadRequest)
			return
		}
		kind, ok := faultKinds[in.Kind]
		if !ok || in.Op == "" || in.Times < 0 || in.DelayMS < 0 || (kind == Refuse && in.Code == "") {
			http.Error(w, `bad fault: give "op" (e.g. ec2:CreateVpc, ec2:* or *), "kind" (throttle, server_error, server_error_after, latency, denied, handler_failure, ignore_client_token or refuse), "times" >= 0 and "delay_ms" >= 0 (and "region" to limit it to one; "error_code" for refuse)`, http.StatusBadRequest)
			return
		}
		e.Inject(Fault{Op: in.Op, Region: in.Region, Kind: kind, Times: in.Times, Delay: time.Duration(in.DelayMS) * time.Millisecond, ErrorCode: in.Code})
		w.WriteHeader(http.StatusNoContent)
	default:
		w.Header().Set("Allow", "POST, DELETE")
		http.Error(w, "use POST to add a fault, DELETE to clear them", http.StatusMethodNotAllowed)
	}
}
