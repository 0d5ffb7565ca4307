package emulator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// jsonProto is what services answering AWS's JSON protocols (ECR: 1.1,
// Cloud Control: 1.0) share: reading a request, writing an answer or an
// error, and the throttling and authentication errors. Services embed it.
type jsonProto struct{ contentType string }

func (p jsonProto) throttle() (int, string) { return http.StatusBadRequest, "ThrottlingException" }

// denied is what AWS's JSON services answer to credentials they do not
// accept, as in a region the account has not enabled.
func (p jsonProto) denied() (int, string, string) {
	return http.StatusBadRequest, "UnrecognizedClientException", "The security token included in the request is invalid."
}

func (p jsonProto) writeError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	body, _ := json.Marshal(map[string]string{"__type": code, "message": message})
	w.Header().Set("X-Amzn-ErrorType", code)
	p.write(w, status, body)
}

// write answers with status and a JSON body.
func (p jsonProto) write(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", p.contentType)
	w.Header().Set("x-amzn-RequestId", newRequestID())
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// read returns a request's body (at most 1 MiB) and the region it is
// signed for (us-east-1 when none); false when it answered an error.
func (p jsonProto) read(w http.ResponseWriter, r *http.Request) (body []byte, region string, ok bool) {
	if r.Method != http.MethodPost {
		p.writeError(w, r, http.StatusBadRequest, "UnknownOperationException", "Requests must be POSTs.")
		return nil, "", false
	}
	body, err := io.ReadAll(http.MaxBytesReader(nil, r.Body, 1<<20))
	if err != nil {
		p.writeError(w, r, http.StatusBadRequest, "SerializationException", err.Error())
		return nil, "", false
	}
	region, _ = credentialScope(r)
	if region == "" {
		region = defaultRegion
	}
	return body, region, true
}

// answer writes a handler's result: out as JSON, or the error.
func (p jsonProto) answer(w http.ResponseWriter, r *http.Request, out any, status int, code, msg string) {
	if code != "" {
		p.writeError(w, r, status, code, msg)
		return
	}
	resp, err := json.Marshal(out)
	if err != nil {
		p.writeError(w, r, http.StatusInternalServerError, "InternalFailure", err.Error())
		return
	}
	p.write(w, http.StatusOK, resp)
}

// opErr is an error answer of a JSON service (SQS, EventBridge): its code
// and message (HTTP 400).
type opErr struct{ code, msg string }

func opError(code, format string, args ...any) *opErr {
	return &opErr{code: code, msg: fmt.Sprintf(format, args...)}
}

// jsonCall is one request to a JSON service: its context, region and body.
type jsonCall struct {
	ctx    context.Context
	region string
	body   []byte
}

// decode reads the body into v (an empty body is no members).
func (c jsonCall) decode(v any) *opErr {
	if len(c.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return opError("SerializationException", "The request body is not valid JSON for the operation: %v", err)
	}
	return nil
}

// jsonService is a service answering the JSON protocol (jsonProto and its
// own writeError, if any).
type jsonService interface {
	read(w http.ResponseWriter, r *http.Request) ([]byte, string, bool)
	answer(w http.ResponseWriter, r *http.Request, out any, status int, code, msg string)
	writeError(w http.ResponseWriter, r *http.Request, status int, code, message string)
}

// serveOps answers a request with the handler of its operation; unknown
// is the service's code for an operation it does not have, name its name
// in the message.
func serveOps[S jsonService](s S, ops map[string]func(S, jsonCall) (any, *opErr), w http.ResponseWriter, r *http.Request, op, unknown, name string) {
	h, ok := ops[op]
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, unknown, fmt.Sprintf("The emulator does not implement %s operation %q.", name, op))
		return
	}
	body, region, ok := s.read(w, r)
	if !ok {
		return
	}
	out, e := h(s, jsonCall{ctx: r.Context(), region: region, body: body})
	if e != nil {
		s.writeError(w, r, http.StatusBadRequest, e.code, e.msg)
		return
	}
	s.answer(w, r, out, 0, "", "")
}
