package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/iasql/iasql/internal/jsonvalue"
)

// Cloud Control API: AWS JSON 1.0 (POST /, X-Amz-Target
// CloudApiService.<Op>, signed as "cloudcontrolapi"), generic over the
// resource schemas of cfnschemas/. Resources are kept per region and type
// as models (property name -> decoded JSON value), write-only properties
// included. Create, update and delete are requests: they answer
// IN_PROGRESS and complete (SUCCESS, or FAILED with a handler error code)
// once Options.CloudControlDelay has passed, when next looked at (any
// Cloud Control call completes the requests that are due, so no goroutine
// acts behind the tests' back). AWS's reference:
// https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/Welcome.html
//
// Decisions (what AWS documents loosely, played one way):
//   - A create whose identifier exists is accepted and FAILS with
//     AlreadyExists, a delete of a missing resource FAILS with NotFound:
//     the handlers find it, as on AWS. GetResource and UpdateResource of a
//     missing resource answer ResourceNotFoundException at once.
//   - A patch whose path (or from) is at, under or above a create-only
//     (read-only) property answers NotUpdatableException; the test op is
//     exempt.
//   - ListResources answers pages of 25 whatever MaxResults says, as AWS
//     does, with every property of each resource but write-only ones.
//   - A ClientToken names one request for good (AWS: 36 hours): the same
//     call again answers that request's current progress; another call
//     with it answers ClientTokenConflictException.
//   - An operation on an identifier with a request in progress answers
//     ConcurrentOperationException.

const (
	ccTargetPrefix = "CloudApiService."
	ccPageSize     = 25
)

// ccService emulates Cloud Control.
type ccService struct {
	jsonProto
	account string
	delay   time.Duration
	schemas map[string]*cfnSchema // under mu (ReloadSchemas replaces it)
	// schemaDir and extraSchemas are where schemas come from
	// (Options.SchemaDir, Options.CloudFormationSchemas): ReloadSchemas
	// reads them again.
	schemaDir    string
	extraSchemas []string
	// iam keeps what AWS::IAM::RolePolicy creates: the roles' inline
	// policies, as IAM's PutRolePolicy does.
	iam *iamService
	// hooks: ccHooks (a field, so the hooks can call the service's
	// lookup without an initialisation cycle).
	hooks map[string]ccTypeHooks
	// trail records the calls the handlers make for the caller; sqs and
	// events keep AWS::SQS::Queue, AWS::SQS::QueuePolicy and
	// AWS::Events::Rule (cloudcontrol_events.go).
	trail  *cloudTrail
	sqs    *sqsService
	events *eventsService

	mu        sync.Mutex
	resources map[ccKey]map[string]map[string]any // region+type -> identifier -> model
	requests  map[string]*ccRequest               // by RequestToken
	order     []*ccRequest                        // in the order made
	pending   []*ccRequest                        // IN_PROGRESS
	byClient  map[string]*ccRequest               // region + "\x00" + ClientToken
	busy      map[string]*ccRequest               // region, type, identifier -> request in progress
}

type ccKey struct{ region, typeName string }

// ccRequest is one resource operation request.
type ccRequest struct {
	seq                      int
	token, region, typeName  string
	identifier, op           string // op: CREATE, UPDATE, DELETE
	fingerprint              string // what ClientToken idempotency compares
	status                   string
	start, due               time.Time
	model                    map[string]any // the model to store on success
	errorCode, statusMessage string
	failWith                 string // an injected handler error code
	view                     map[string]any
	key                      string // the caller's access key (CloudTrail)
}

func newCloudControl(opts Options, iam *iamService) (*ccService, error) {
	schemas, err := loadCFNSchemas(opts.SchemaDir, opts.CloudFormationSchemas)
	if err != nil {
		return nil, err
	}
	return &ccService{
		jsonProto: jsonProto{"application/x-amz-json-1.0"},
		account:   opts.accountID(),
		delay:     opts.CloudControlDelay,
		schemas:   schemas,
		schemaDir: opts.SchemaDir, extraSchemas: opts.CloudFormationSchemas,
		iam:       iam,
		hooks:     ccHooks,
		resources: map[ccKey]map[string]map[string]any{},
		requests:  map[string]*ccRequest{},
		byClient:  map[string]*ccRequest{},
		busy:      map[string]*ccRequest{},
	}, nil
}

// ccErr is a Cloud Control error response.
type ccErr struct {
	status    int
	code, msg string
}

func ccError(code, format string, args ...any) *ccErr {
	return &ccErr{status: http.StatusBadRequest, code: code, msg: fmt.Sprintf(format, args...)}
}

// ccCall is one request: its region, body, injected handler failure and
// the caller's access key.
type ccCall struct {
	region   string
	body     []byte
	failWith string
	now      time.Time
	key      string
}

func (c ccCall) decode(v any) *ccErr {
	if len(bytes.TrimSpace(c.body)) == 0 {
		return nil
	}
	if err := json.Unmarshal(c.body, v); err != nil {
		return ccError("SerializationException", "%s", err.Error())
	}
	return nil
}

type ccHandler func(s *ccService, c ccCall) (any, *ccErr)

var ccOps = map[string]ccHandler{
	"CreateResource":           (*ccService).createResource,
	"GetResource":              (*ccService).getResource,
	"ListResources":            (*ccService).listResources,
	"UpdateResource":           (*ccService).updateResource,
	"DeleteResource":           (*ccService).deleteResource,
	"GetResourceRequestStatus": (*ccService).getResourceRequestStatus,
	"ListResourceRequests":     (*ccService).listResourceRequests,
	"CancelResourceRequest":    (*ccService).cancelResourceRequest,
}

func (s *ccService) operation(r *http.Request) string {
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), ccTargetPrefix); ok && op != "" {
		return op
	}
	return "Unknown"
}

func (s *ccService) serve(w http.ResponseWriter, r *http.Request, op string) {
	handler, ok := ccOps[op]
	if !ok {
		s.writeError(w, r, http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("The emulator does not implement Cloud Control operation %q.", r.Header.Get("X-Amz-Target")))
		return
	}
	body, region, ok := s.read(w, r)
	if !ok {
		return
	}
	failWith, _ := r.Context().Value(handlerFailureKey{}).(string)
	s.mu.Lock()
	now := time.Now()
	s.advance(now)
	out, e := handler(s, ccCall{region: region, body: body, failWith: failWith, now: now, key: accessKeyID(r)})
	s.mu.Unlock()
	if e != nil {
		s.answer(w, r, nil, e.status, e.code, e.msg)
		return
	}
	s.answer(w, r, out, 0, "", "")
}

// handlerFailureKey carries an injected HandlerFailure fault's error code
// in a request's context.
type handlerFailureKey struct{}

func withHandlerFailure(r *http.Request, code string) *http.Request {
	if code == "" {
		code = "NotStabilized"
	}
	return r.WithContext(context.WithValue(r.Context(), handlerFailureKey{}, code))
}

// store is the resources of a type in a region, made on first use.
func (s *ccService) store(region, typeName string) map[string]map[string]any {
	k := ccKey{region, typeName}
	m := s.resources[k]
	if m == nil {
		m = map[string]map[string]any{}
		s.resources[k] = m
	}
	return m
}

// lookup is the model of a resource: from the type's backend when it has
// one (AWS::IAM::RolePolicy: IAM's roles), else from the store.
func (s *ccService) lookup(region, typeName, id string) (map[string]any, bool) {
	if b := s.hooks[typeName].backend; b != nil {
		return b.get(s, region, id)
	}
	m, ok := s.store(region, typeName)[id]
	return m, ok
}

// all is every resource of a type in a region, by identifier.
func (s *ccService) all(region, typeName string) map[string]map[string]any {
	if b := s.hooks[typeName].backend; b != nil {
		return b.all(s, region)
	}
	return s.store(region, typeName)
}

// save stores a created or updated model; a handler error code and
// message when the backend refuses it.
func (s *ccService) save(region, typeName, id string, m map[string]any) (code, msg string) {
	if b := s.hooks[typeName].backend; b != nil {
		return b.put(s, region, id, m)
	}
	s.store(region, typeName)[id] = m
	return "", ""
}

// drop deletes a resource.
func (s *ccService) drop(region, typeName, id string) {
	if b := s.hooks[typeName].backend; b != nil {
		b.remove(s, region, id)
		return
	}
	delete(s.store(region, typeName), id)
}

func busyKey(region, typeName, id string) string { return region + "\x00" + typeName + "\x00" + id }

// schema is a type's schema; TypeNotFoundException when the emulator does
// not know it. handler names what the call needs ("create", "list", ...):
// UnsupportedActionException when the type has no such handler.
func (s *ccService) schema(typeName, handler string) (*cfnSchema, *ccErr) {
	sc, ok := s.schemas[typeName]
	if !ok {
		return nil, ccError("TypeNotFoundException", "The type '%s' cannot be found.", typeName)
	}
	if _, ok := sc.Handlers[handler]; !ok {
		return nil, ccError("UnsupportedActionException", "Resource type %s does not support %s action", typeName, strings.ToUpper(handler))
	}
	return sc, nil
}

// advance completes the requests that are due at now.
func (s *ccService) advance(now time.Time) {
	if len(s.pending) == 0 {
		return
	}
	kept := s.pending[:0]
	for _, r := range s.pending {
		if r.status != "IN_PROGRESS" {
			continue
		}
		if now.Before(r.due) {
			kept = append(kept, r)
			continue
		}
		s.complete(r)
	}
	clear(s.pending[len(kept):])
	s.pending = kept
}

// complete does a request's operation: SUCCESS or FAILED.
func (s *ccService) complete(r *ccRequest) {
	delete(s.busy, busyKey(r.region, r.typeName, r.identifier))
	sc := s.schemas[r.typeName]
	fail := func(code, msg string) { r.status, r.errorCode, r.statusMessage = "FAILED", code, msg }
	prev, exists := s.lookup(r.region, r.typeName, r.identifier)
	switch {
	case r.failWith != "":
		fail(r.failWith, fmt.Sprintf("Resource of type '%s' with identifier '%s' did not complete (%s, injected by the emulator).", r.typeName, r.identifier, r.failWith))
		return
	case r.op == "CREATE" && exists:
		fail("AlreadyExists", fmt.Sprintf("Resource of type '%s' with identifier '%s' already exists.", r.typeName, r.identifier))
		return
	case r.op != "CREATE" && !exists:
		fail("NotFound", fmt.Sprintf("Resource of type '%s' with identifier '%s' was not found.", r.typeName, r.identifier))
		return
	}
	if h := s.hooks[r.typeName]; r.op == "CREATE" && h.check != nil {
		if code, msg := h.check(s, r.region, r.model); code != "" {
			fail(code, msg)
			return
		}
	}
	switch r.op {
	case "CREATE", "UPDATE":
		if code, msg := s.save(r.region, r.typeName, r.identifier, r.model); code != "" {
			fail(code, msg)
			return
		}
		r.view = sc.view(r.model)
	case "DELETE":
		s.drop(r.region, r.typeName, r.identifier)
		if h := s.hooks[r.typeName]; h.deleted != nil {
			h.deleted(s, r.region, prev)
		}
	}
	r.status = "SUCCESS"
	model := r.model
	if r.op == "DELETE" {
		model = prev
	}
	s.recordHandler(r, sc, model)
}

// ccEvent is a ProgressEvent.
type ccEvent struct {
	TypeName        string    `json:"TypeName"`
	Identifier      string    `json:"Identifier,omitempty"`
	RequestToken    string    `json:"RequestToken"`
	Operation       string    `json:"Operation"`
	OperationStatus string    `json:"OperationStatus"`
	EventTime       ecrEpoch  `json:"EventTime"`
	ResourceModel   string    `json:"ResourceModel,omitempty"`
	StatusMessage   string    `json:"StatusMessage,omitempty"`
	ErrorCode       string    `json:"ErrorCode,omitempty"`
	RetryAfter      *ecrEpoch `json:"RetryAfter,omitempty"`
}

// event is the request's progress: RetryAfter (when it is due) while in
// progress, the resource's model after a create or update succeeded.
func (r *ccRequest) event() ccEvent {
	ev := ccEvent{
		TypeName: r.typeName, Identifier: r.identifier, RequestToken: r.token, Operation: r.op,
		OperationStatus: r.status, EventTime: ecrEpoch(r.start), StatusMessage: r.statusMessage, ErrorCode: r.errorCode,
	}
	if r.status == "IN_PROGRESS" {
		due := ecrEpoch(r.due)
		ev.RetryAfter = &due
	}
	if r.view != nil {
		b, _ := json.Marshal(r.view)
		ev.ResourceModel = string(b)
	}
	return ev
}

type ccProgress struct {
	ProgressEvent ccEvent `json:"ProgressEvent"`
}

// begin records a new request of op on identifier, or answers the request
// a ClientToken already names.
func (s *ccService) begin(c ccCall, clientToken, typeName, op, id, fingerprint string, model map[string]any) (any, *ccErr) {
	ck := c.region + "\x00" + clientToken
	if clientToken != "" {
		if prev, ok := s.byClient[ck]; ok {
			if prev.fingerprint != op+"\x00"+typeName+"\x00"+fingerprint {
				return nil, ccError("ClientTokenConflictException", "The client token %s has already been used in another resource request.", clientToken)
			}
			return ccProgress{prev.event()}, nil
		}
	}
	bk := busyKey(c.region, typeName, id)
	if other, ok := s.busy[bk]; ok {
		return nil, concurrent(other)
	}
	r := &ccRequest{
		seq: len(s.order), token: newRequestID(), region: c.region, typeName: typeName, identifier: id, op: op,
		fingerprint: op + "\x00" + typeName + "\x00" + fingerprint, status: "IN_PROGRESS",
		start: c.now, due: c.now.Add(s.delay), model: model, failWith: c.failWith, key: c.key,
	}
	s.requests[r.token] = r
	s.order = append(s.order, r)
	s.pending = append(s.pending, r)
	s.busy[bk] = r
	if clientToken != "" {
		s.byClient[ck] = r
	}
	return ccProgress{r.event()}, nil
}

// decodeModel reads a JSON object, numbers as json.Number.
func decodeModel(doc, what string) (map[string]any, *ccErr) {
	v, err := decodeJSONValue([]byte(doc))
	if err != nil {
		return nil, ccError("InvalidRequestException", "%s is not valid JSON: %v", what, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, ccError("InvalidRequestException", "%s must be a JSON object.", what)
	}
	return m, nil
}

func (s *ccService) createResource(c ccCall) (any, *ccErr) {
	var in struct {
		TypeName, DesiredState, ClientToken string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	sc, e := s.schema(in.TypeName, "create")
	if e != nil {
		return nil, e
	}
	model, e := decodeModel(in.DesiredState, "DesiredState")
	if e != nil {
		return nil, e
	}
	var ro []string
	for name := range model {
		if sc.readOnlyTop[name] {
			ro = append(ro, "/properties/"+name)
		}
	}
	if len(ro) > 0 {
		slices.Sort(ro)
		return nil, ccError("InvalidRequestException", "Model validation failed (#: read-only properties %v cannot be set)", ro)
	}
	if err := sc.validate(model); err != nil {
		return nil, ccError("InvalidRequestException", "%s", err.Error())
	}
	// An idempotent retry must not generate a second name: answer it
	// before generating anything.
	if prev, ok := s.byClient[c.region+"\x00"+in.ClientToken]; ok && in.ClientToken != "" {
		if prev.fingerprint != "CREATE\x00"+in.TypeName+"\x00"+in.DesiredState {
			return nil, ccError("ClientTokenConflictException", "The client token %s has already been used in another resource request.", in.ClientToken)
		}
		return ccProgress{prev.event()}, nil
	}
	sc.fillDefaults(model)
	h := s.hooks[in.TypeName]
	if h.generate != nil {
		h.generate(model, c.region, s.account)
	} else {
		sc.generate(model, c.region, s.account)
	}
	if h.derive != nil {
		h.derive(model, c.region, s.account)
	}
	id, ok := sc.identifier(model)
	if !ok {
		return nil, ccError("InvalidRequestException", "The primary identifier of %s cannot be made from the desired state.", in.TypeName)
	}
	return s.begin(c, in.ClientToken, in.TypeName, "CREATE", id, in.DesiredState, model)
}

func (s *ccService) getResource(c ccCall) (any, *ccErr) {
	var in struct{ TypeName, Identifier string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	sc, e := s.schema(in.TypeName, "read")
	if e != nil {
		return nil, e
	}
	m, ok := s.lookup(c.region, in.TypeName, in.Identifier)
	if !ok {
		return nil, notFound(in.TypeName, in.Identifier)
	}
	return map[string]any{"TypeName": in.TypeName, "ResourceDescription": describe(sc, in.Identifier, m)}, nil
}

// concurrent is the error of an operation on a resource with request
// other in progress.
func concurrent(other *ccRequest) *ccErr {
	return ccError("ConcurrentOperationException",
		"Another resource operation (request %s, %s) is in progress on resource of type '%s' with identifier '%s'.", other.token, other.op, other.typeName, other.identifier)
}

func notFound(typeName, id string) *ccErr {
	return ccError("ResourceNotFoundException", "Resource of type '%s' with identifier '%s' was not found.", typeName, id)
}

type ccDescription struct {
	Identifier string `json:"Identifier"`
	Properties string `json:"Properties"`
}

func describe(sc *cfnSchema, id string, m map[string]any) ccDescription {
	b, _ := json.Marshal(sc.view(m))
	return ccDescription{Identifier: id, Properties: string(b)}
}

func (s *ccService) listResources(c ccCall) (any, *ccErr) {
	var in struct {
		TypeName, NextToken, ResourceModel string
		MaxResults                         *int
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	sc, e := s.schema(in.TypeName, "list")
	if e != nil {
		return nil, e
	}
	filter, e := sc.listFilter(in.TypeName, in.ResourceModel)
	if e != nil {
		return nil, e
	}
	tag := "cc:" + c.region + ":" + in.TypeName + ":"
	after := ""
	if in.NextToken != "" {
		var ok bool
		if after, ok = pageAfter(tag, in.NextToken); !ok {
			return nil, ccError("InvalidRequestException", "Invalid NextToken.")
		}
	}
	store := s.all(c.region, in.TypeName)
	ids := make([]string, 0, len(store))
	for id, m := range store {
		if matchesAll(m, filter) {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	page, next := paginate(ids, after, ccPageSize, tag)
	descs := make([]ccDescription, len(page))
	for i, id := range page {
		descs[i] = describe(sc, id, store[id])
	}
	out := map[string]any{"TypeName": in.TypeName, "ResourceDescriptions": descs}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// listFilter is what a list request's ResourceModel selects: a list handler
// with a handlerSchema needs the properties of the parent it names
// (required, or those of one of its oneOf/anyOf alternatives) and lists
// that parent's resources only; other properties it names filter when
// given. https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-operations-list.html
func (sc *cfnSchema) listFilter(typeName, resourceModel string) (map[string]any, *ccErr) {
	hs := sc.Handlers["list"].HandlerSchema
	if hs == nil {
		return nil, nil
	}
	model := map[string]any{}
	if resourceModel != "" {
		var e *ccErr
		if model, e = decodeModel(resourceModel, "ResourceModel"); e != nil {
			return nil, e
		}
	}
	has := func(names []string) bool {
		return !slices.ContainsFunc(names, func(n string) bool { _, ok := model[n]; return !ok })
	}
	alts := append(slices.Clone(hs.OneOf), hs.AnyOf...)
	if !has(hs.Required) || (len(alts) > 0 && !slices.ContainsFunc(alts, func(a *cfnProp) bool { return has(a.Required) })) {
		need := slices.Clone(hs.Required)
		for _, a := range alts {
			need = append(need, strings.Join(a.Required, "+"))
		}
		return nil, ccError("InvalidRequestException",
			"Missing or invalid ResourceModel property in %s list handler request input. Required property: %v", typeName, need)
	}
	filter := map[string]any{}
	for name := range hs.Properties {
		if _, ok := sc.Properties[name]; !ok {
			continue // a selector that is no property (e.g. a list of ARNs)
		}
		if v, ok := model[name]; ok {
			filter[name] = v
		}
	}
	return filter, nil
}

func matchesAll(m, filter map[string]any) bool {
	for k, v := range filter {
		if !jsonvalue.Equal(m[k], v) {
			return false
		}
	}
	return true
}

func (s *ccService) updateResource(c ccCall) (any, *ccErr) {
	var in struct {
		TypeName, Identifier, PatchDocument, ClientToken string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	sc, e := s.schema(in.TypeName, "update")
	if e != nil {
		return nil, e
	}
	if prev, ok := s.byClient[c.region+"\x00"+in.ClientToken]; ok && in.ClientToken != "" {
		return s.begin(c, in.ClientToken, in.TypeName, "UPDATE", prev.identifier, in.Identifier+"\x00"+in.PatchDocument, nil)
	}
	cur, ok := s.lookup(c.region, in.TypeName, in.Identifier)
	if !ok {
		return nil, notFound(in.TypeName, in.Identifier)
	}
	if other, ok := s.busy[busyKey(c.region, in.TypeName, in.Identifier)]; ok {
		return nil, concurrent(other)
	}
	ops, err := parsePatch(in.PatchDocument)
	if err != nil {
		return nil, ccError("InvalidRequestException", "Invalid patch document: %v", err)
	}
	var createOnly, readOnly []string
	for _, op := range ops {
		if op.Op == "test" {
			continue
		}
		paths := []string{op.Path}
		if op.Op == "move" {
			paths = append(paths, op.From)
		}
		for _, p := range paths {
			for _, co := range sc.CreateOnly {
				if touches(p, co) && !slices.Contains(createOnly, co) {
					createOnly = append(createOnly, co)
				}
			}
			for _, ro := range sc.ReadOnly {
				if touches(p, ro) && !slices.Contains(readOnly, ro) {
					readOnly = append(readOnly, ro)
				}
			}
		}
	}
	if len(createOnly) > 0 {
		return nil, ccError("NotUpdatableException", "Invalid patch update: createOnlyProperties %v cannot be updated", createOnly)
	}
	if len(readOnly) > 0 {
		return nil, ccError("NotUpdatableException", "Invalid patch update: readOnlyProperties %v cannot be updated", readOnly)
	}
	patched, err := applyPatch(map[string]any(cur), ops)
	if err != nil {
		return nil, ccError("InvalidRequestException", "Invalid patch update: %v", err)
	}
	model, ok := patched.(map[string]any)
	if !ok {
		return nil, ccError("InvalidRequestException", "Invalid patch update: the result is not a JSON object")
	}
	// Read-only properties are the resource's, not the request's: check
	// the rest as a desired state.
	desired := map[string]any{}
	for k, v := range model {
		if !sc.readOnlyTop[k] {
			desired[k] = v
		}
	}
	if err := sc.validate(desired); err != nil {
		return nil, ccError("InvalidRequestException", "%s", err.Error())
	}
	sc.fillDefaults(model)
	if h := s.hooks[in.TypeName]; h.derive != nil {
		h.derive(model, c.region, s.account)
	}
	return s.begin(c, in.ClientToken, in.TypeName, "UPDATE", in.Identifier, in.Identifier+"\x00"+in.PatchDocument, model)
}

func (s *ccService) deleteResource(c ccCall) (any, *ccErr) {
	var in struct {
		TypeName, Identifier, ClientToken string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if _, e := s.schema(in.TypeName, "delete"); e != nil {
		return nil, e
	}
	return s.begin(c, in.ClientToken, in.TypeName, "DELETE", in.Identifier, in.Identifier, nil)
}

// request is the request the call's RequestToken names.
func (s *ccService) request(c ccCall) (*ccRequest, *ccErr) {
	var in struct{ RequestToken string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	r, ok := s.requests[in.RequestToken]
	if !ok {
		return nil, ccError("RequestTokenNotFoundException", "Request with token %s was not found.", in.RequestToken)
	}
	return r, nil
}

func (s *ccService) getResourceRequestStatus(c ccCall) (any, *ccErr) {
	r, e := s.request(c)
	if e != nil {
		return nil, e
	}
	return ccProgress{r.event()}, nil
}

func (s *ccService) cancelResourceRequest(c ccCall) (any, *ccErr) {
	r, e := s.request(c)
	if e != nil {
		return nil, e
	}
	if r.status != "IN_PROGRESS" && r.status != "PENDING" {
		return nil, ccError("ConcurrentModificationException",
			"Request %s has status %s: only requests PENDING or IN_PROGRESS can be canceled.", r.token, r.status)
	}
	r.status = "CANCEL_COMPLETE"
	r.statusMessage = "The request was canceled."
	delete(s.busy, busyKey(r.region, r.typeName, r.identifier))
	return ccProgress{r.event()}, nil
}

func (s *ccService) listResourceRequests(c ccCall) (any, *ccErr) {
	var in struct {
		NextToken                   string
		MaxResults                  *int
		ResourceRequestStatusFilter struct {
			Operations, OperationStatuses []string
		}
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	limit := 20
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 100 {
			return nil, ccError("ValidationException", "MaxResults must be between 1 and 100.")
		}
		limit = *in.MaxResults
	}
	const tag = "ccreq:"
	after := ""
	if in.NextToken != "" {
		var ok bool
		if after, ok = pageAfter(tag, in.NextToken); !ok {
			return nil, ccError("ValidationException", "Invalid NextToken.")
		}
	}
	f := in.ResourceRequestStatusFilter
	var keys []string
	byKey := map[string]*ccRequest{}
	for _, r := range s.order {
		if r.region != c.region ||
			(len(f.Operations) > 0 && !slices.Contains(f.Operations, r.op)) ||
			(len(f.OperationStatuses) > 0 && !slices.Contains(f.OperationStatuses, r.status)) {
			continue
		}
		k := fmt.Sprintf("%012d", r.seq)
		keys = append(keys, k)
		byKey[k] = r
	}
	page, next := paginate(keys, after, limit, tag)
	events := make([]ccEvent, len(page))
	for i, k := range page {
		events[i] = byKey[k].event()
	}
	out := map[string]any{"ResourceRequestStatusSummaries": events}
	if next != "" {
		out["NextToken"] = next
	}
	return out, nil
}

// SetCloudControlDelay changes Options.CloudControlDelay for the Cloud
// Control requests made from now on (a benchmark fills the account fast,
// then measures slow requests).
func (e *Emulator) SetCloudControlDelay(d time.Duration) {
	s := e.services["cloudcontrolapi"].(*ccService)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}
