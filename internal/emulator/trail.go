package emulator

import (
	"bytes"
	"encoding/json"
	"html"
	"maps"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// CloudTrail: every mutating management call the emulator serves, from any
// client, is recorded as a CloudTrail event record, as AWS's CloudTrail
// records management events in every account without a trail (event
// history). Records have AWS's fields:
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
// and the caller's identity comes from the request's access key:
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-user-identity.html
//
// Decisions:
//   - Only mutating calls are recorded (readOnly false): reads (Describe*,
//     List*, Get*, Head*) are left out, as EventBridge rules in the ENABLED
//     state never see them:
//     https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail-management.html
//     (AWS's event history has them too; LookupEvents here never does).
//   - Data events are not management events and are not recorded: S3
//     object-level operations and SQS's message operations (SendMessage,
//     ReceiveMessage, DeleteMessage, ChangeMessageVisibility and their
//     batches): https://docs.aws.amazon.com/awscloudtrail/latest/userguide/logging-data-events-with-cloudtrail.html
//   - Failed calls (a 4xx or 5xx answer) are recorded as AWS records them:
//     with errorCode and errorMessage (the error's code and message, as the
//     answer carried them) and no responseElements. AWS records most failed
//     calls, AccessDenied among them; the emulator records every one that
//     reached the service (not the faults it injects before it).
//     https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
//   - A call Cloud Control makes on the caller's behalf (its resource
//     handlers' calls to SQS, EventBridge, IAM...) is recorded when the
//     request completes, with the caller's identity, userIdentity.invokedBy,
//     sourceIPAddress and userAgent "cloudcontrolapi.amazonaws.com", as AWS
//     logs calls a service makes for you.
//   - The emulator keeps the last trailCap records.

const (
	trailEventVersion = "1.11"
	// trailCap is how many records the emulator keeps (oldest dropped).
	trailCap = 20000
	// ccInvoker is how calls Cloud Control makes for its caller are logged.
	ccInvoker = "cloudcontrolapi.amazonaws.com"
)

// trailRecord is one CloudTrail event record.
type trailRecord struct {
	EventVersion       string          `json:"eventVersion"`
	UserIdentity       map[string]any  `json:"userIdentity"`
	EventTime          string          `json:"eventTime"`
	EventSource        string          `json:"eventSource"`
	EventName          string          `json:"eventName"`
	AWSRegion          string          `json:"awsRegion"`
	SourceIPAddress    string          `json:"sourceIPAddress"`
	UserAgent          string          `json:"userAgent"`
	RequestParameters  any             `json:"requestParameters"`
	ResponseElements   any             `json:"responseElements"`
	RequestID          string          `json:"requestID"`
	EventID            string          `json:"eventID"`
	ReadOnly           bool            `json:"readOnly"`
	Resources          []trailResource `json:"resources,omitempty"`
	ErrorCode          string          `json:"errorCode,omitempty"`
	ErrorMessage       string          `json:"errorMessage,omitempty"`
	EventType          string          `json:"eventType"`
	ManagementEvent    bool            `json:"managementEvent"`
	RecipientAccountID string          `json:"recipientAccountId"`
	EventCategory      string          `json:"eventCategory"`
}

// trailResource is a record's resources entry.
type trailResource struct {
	ARN       string `json:"ARN"`
	AccountID string `json:"accountId"`
	Type      string `json:"type"`
}

// trailEvent is a recorded event: its record (as JSON) and what
// LookupEvents filters and answers on.
type trailEvent struct {
	seq                      int
	time                     time.Time
	region, id, name, source string
	key, username            string
	readOnly                 bool
	resources                []lookupResource // type and name, as LookupEvents answers them
	json                     []byte           // the record
	eventTime                string           // the record's
}

// lookupResource is a resource of a LookupEvents event.
type lookupResource struct {
	ResourceType string `json:"ResourceType,omitempty"`
	ResourceName string `json:"ResourceName,omitempty"`
}

// cloudTrail keeps the account's event records and hands each to
// EventBridge.
type cloudTrail struct {
	account    string
	identities map[string]string // access key -> ARN (Options.Identities)
	bus        *eventsService    // gets every record; nil for none

	mu     sync.Mutex
	events []*trailEvent // oldest first
	seq    int
}

func newCloudTrail(opts Options, bus *eventsService) *cloudTrail {
	return &cloudTrail{account: opts.accountID(), identities: maps.Clone(opts.Identities), bus: bus}
}

// identity is who a key is: its ARN (Options.Identities, else the IAM
// user named after the key) and its userIdentity element. An unsigned
// request is "anonymous".
func (t *cloudTrail) identity(key string) (arn string, ui map[string]any) {
	if key == "" {
		key = "anonymous"
	}
	arn, ok := t.identities[key]
	if !ok {
		arn = "arn:aws:iam::" + t.account + ":user/" + key
	}
	account := t.account
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 && parts[4] != "" {
		account = parts[4]
	}
	ui = map[string]any{"arn": arn, "accountId": account, "accessKeyId": key}
	_, res, _ := strings.Cut(arn, ":")
	if parts := strings.SplitN(arn, ":", 6); len(parts) == 6 {
		res = parts[5]
	}
	switch {
	case strings.HasPrefix(res, "user/"):
		name := res[strings.LastIndexByte(res, '/')+1:]
		ui["type"], ui["userName"], ui["principalId"] = "IAMUser", name, principalID(key)
	case strings.HasPrefix(res, "assumed-role/"):
		// arn:aws:sts::ACCOUNT:assumed-role/ROLE/SESSION
		parts := strings.Split(res, "/")
		role := parts[1]
		session := parts[len(parts)-1]
		ui["type"], ui["principalId"] = "AssumedRole", "AROA"+strings.ToUpper(role)+":"+session
		ui["sessionContext"] = map[string]any{"sessionIssuer": map[string]any{
			"type": "Role", "principalId": "AROA" + strings.ToUpper(role), "accountId": account, "userName": role,
			"arn": "arn:aws:iam::" + account + ":role/" + role,
		}}
	case strings.HasPrefix(res, "role/"):
		role := res[strings.LastIndexByte(res, '/')+1:]
		ui["type"], ui["principalId"] = "AssumedRole", "AROA"+strings.ToUpper(role)+":"+key
		ui["sessionContext"] = map[string]any{"sessionIssuer": map[string]any{
			"type": "Role", "principalId": "AROA" + strings.ToUpper(role), "accountId": account, "userName": role, "arn": arn,
		}}
	case res == "root":
		ui["type"], ui["principalId"] = "Root", account
	default:
		ui["type"], ui["principalId"] = "Unknown", principalID(key)
	}
	return arn, ui
}

// principalID is the unique id of the IAM user a key plays (STS
// GetCallerIdentity's UserId).
func principalID(key string) string { return "AIDA" + strings.ToUpper(key) }

// username is what LookupEvents calls the caller: the user's name, the
// role session's name, the role's name.
func username(arn string) string {
	if i := strings.LastIndexAny(arn, "/:"); i >= 0 {
		return arn[i+1:]
	}
	return arn
}

// trailCall is one call to record.
type trailCall struct {
	service, op, region string // signing name, operation, region
	key                 string // access key id
	sourceIP, userAgent string
	invokedBy           string // the AWS service that made the call for the caller
	requestID           string
	params, response    any
	errCode, errMessage string // the call failed (responseElements null)
	resources           []trailResource
	// named are resources LookupEvents finds the event by besides those
	// its parameters identify (a Cloud Control handler's resource).
	named []lookupResource
	time  time.Time
}

// record keeps a call's event and hands it to EventBridge.
func (t *cloudTrail) record(c trailCall) {
	arn, ui := t.identity(c.key)
	if c.invokedBy != "" {
		ui["invokedBy"] = c.invokedBy
		c.sourceIP, c.userAgent = c.invokedBy, c.invokedBy
	}
	if c.requestID == "" {
		c.requestID = newRequestID()
	}
	if c.region == "" {
		c.region = defaultRegion
	}
	if c.time.IsZero() {
		c.time = time.Now()
	}
	rec := &trailRecord{
		EventVersion: trailEventVersion, UserIdentity: ui, EventTime: c.time.UTC().Format(time.RFC3339),
		EventSource: c.service + ".amazonaws.com", EventName: c.op, AWSRegion: c.region,
		SourceIPAddress: c.sourceIP, UserAgent: c.userAgent,
		RequestParameters: c.params, ResponseElements: c.response,
		RequestID: c.requestID, EventID: newRequestID(), Resources: c.resources, ErrorCode: c.errCode, ErrorMessage: c.errMessage,
		EventType: "AwsApiCall", ManagementEvent: true, RecipientAccountID: t.account, EventCategory: "Management",
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return
	}
	ev := &trailEvent{
		time: c.time, region: c.region, id: rec.EventID, name: c.op, source: rec.EventSource,
		key: ui["accessKeyId"].(string), username: username(arn), json: b, eventTime: rec.EventTime,
		resources: append(lookupResources(c.params, c.response, c.resources), c.named...),
	}
	t.mu.Lock()
	t.seq++
	ev.seq = t.seq
	t.events = append(t.events, ev)
	if len(t.events) > trailCap {
		t.events = slices.Delete(t.events, 0, len(t.events)-trailCap)
	}
	t.mu.Unlock()
	if t.bus != nil {
		t.bus.publish(ev)
	}
}

// Which requests are management events that change something.

// dataEvents are operations CloudTrail logs as data events, not
// management events.
var dataEvents = map[string]bool{
	"sqs:SendMessage": true, "sqs:SendMessageBatch": true, "sqs:ReceiveMessage": true,
	"sqs:DeleteMessage": true, "sqs:DeleteMessageBatch": true,
	"sqs:ChangeMessageVisibility": true, "sqs:ChangeMessageVisibilityBatch": true,
	"events:PutEvents": true,
}

// recorded reports whether a request of op ("service:Operation") is a
// mutating management event CloudTrail records.
func recorded(service, op string) bool {
	full := service + ":" + op
	switch {
	case op == "Unknown" || IsRead(full) || dataEvents[full]:
		return false
	case service == "s3":
		return !passThrough[op] && !strings.Contains(op, "Object") && op != "UploadPartCopy"
	case service == "cloudtrail", service == "sts":
		return op != "LookupEvents" && op != "GetCallerIdentity"
	case service == "ecr":
		return !strings.HasPrefix(op, "BatchGet") && !strings.HasPrefix(op, "BatchCheck")
	}
	return true
}

// captureWriter keeps the first captureMax bytes of a response.
type captureWriter struct {
	*statusRecorder
	buf bytes.Buffer
}

const captureMax = 256 << 10

func (c *captureWriter) Write(b []byte) (int, error) {
	if room := captureMax - c.buf.Len(); room > 0 {
		c.buf.Write(b[:min(len(b), room)])
	}
	return c.statusRecorder.Write(b)
}

// Flush lets a handler flush through the capture.
func (c *captureWriter) Flush() {
	if f, ok := c.statusRecorder.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// teeBody keeps a copy of what a handler reads of a request's body (at
// most captureMax bytes).
type teeBody struct {
	r   interface{ Read([]byte) (int, error) }
	c   interface{ Close() error }
	buf bytes.Buffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if room := captureMax - t.buf.Len(); room > 0 && n > 0 {
		t.buf.Write(p[:min(n, room)])
	}
	return n, err
}

func (t *teeBody) Close() error { return t.c.Close() }

// errorOf is the code and message of a failed call's answer: a JSON
// protocol's __type (after its '#') and message, or the Code and Message
// elements of an XML error (query protocols, S3); the HTTP status's text
// when neither is there.
func errorOf(status int, header http.Header, body []byte) (code, message string) {
	var js struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
		Upper   string `json:"Message"`
	}
	if json.Unmarshal(body, &js) == nil && js.Type != "" {
		return js.Type[strings.LastIndexByte(js.Type, '#')+1:], cmpOr(js.Message, js.Upper)
	}
	if t := header.Get("X-Amzn-ErrorType"); t != "" {
		return strings.SplitN(t, ":", 2)[0], ""
	}
	element := func(name string) string {
		_, after, ok := bytes.Cut(body, []byte("<"+name+">"))
		if !ok {
			return ""
		}
		v, _, _ := bytes.Cut(after, []byte("</"+name+">"))
		return html.UnescapeString(string(v))
	}
	if c := element("Code"); c != "" {
		return c, element("Message")
	}
	return strings.ReplaceAll(http.StatusText(status), " ", ""), http.StatusText(status)
}

// clientIP is a request's source address, without the port.
func clientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// serviceCall is what the emulator records of a request it served: the
// parameters and response elements in CloudTrail's shape for the
// service's protocol.
func (t *cloudTrail) serviceCall(service, op string, r *http.Request, body []byte, resp *captureWriter) trailCall {
	region, _ := credentialScope(r)
	if service == "iam" || region == "" {
		region = defaultRegion // IAM is global: its events are us-east-1's
	}
	c := trailCall{
		service: service, op: op, region: region, key: accessKeyID(r),
		sourceIP: clientIP(r), userAgent: r.UserAgent(),
		requestID: cmpOr(resp.Header().Get("x-amzn-RequestId"), resp.Header().Get("x-amz-request-id")),
	}
	switch {
	case service == "s3":
		c.params, c.resources = s3Params(r, t.account)
	case r.Header.Get("X-Amz-Target") != "":
		c.params = jsonParams(body)
		c.response = jsonParams(resp.buf.Bytes())
		if m, ok := c.params.(map[string]any); ok && service == "events" {
			// EventBridge's calls name their rule (Name or Rule).
			if name, ok := cmpOrAny(m["name"], m["rule"]).(string); ok {
				c.resources = []trailResource{{ARN: "arn:aws:events:" + region + ":" + t.account + ":rule/" + name, AccountID: t.account, Type: "AWS::Events::Rule"}}
			}
		}
	default: // query protocol: EC2, IAM, ELBv2
		c.params = formParams(r.PostForm, service == "ec2")
		c.response = xmlElements(resp.buf.Bytes(), service == "ec2")
		if m, ok := c.response.(map[string]any); ok && service == "ec2" {
			if id, ok := m["requestId"].(string); ok {
				c.requestID = id
			}
		}
	}
	return c
}

func cmpOrAny(a, b any) any {
	if a != nil {
		return a
	}
	return b
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// s3Params are an S3 bucket request's parameters as CloudTrail logs them:
// bucketName, Host and the query's subresources; the bucket is the
// record's resource.
func s3Params(r *http.Request, account string) (map[string]any, []trailResource) {
	bucket, _ := splitS3Path(r.URL.Path)
	p := map[string]any{"bucketName": bucket, "Host": r.Host}
	for k, v := range r.URL.Query() {
		if !strings.HasPrefix(k, "X-Amz-") && len(v) > 0 {
			p[k] = v[0]
		}
	}
	return p, []trailResource{{ARN: "arn:aws:s3:::" + bucket, AccountID: account, Type: "AWS::S3::Bucket"}}
}

// mapMembers are JSON members whose values are maps (names are data, not
// members): their keys stay as sent.
var mapMembers = map[string]bool{"Attributes": true, "tags": true, "Tags": true, "MessageAttributes": true}

// jsonParams is a JSON protocol body with its members named as
// CloudTrail names them (lowerFirst); nil when empty or not JSON.
func jsonParams(body []byte) any {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	v, err := decodeJSONValue(body)
	if err != nil {
		return nil
	}
	return lowerMembers(v)
}

func lowerMembers(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, val := range x {
			if m, ok := val.(map[string]any); ok && mapMembers[k] {
				out[lowerFirst(k)] = m
				continue
			}
			out[lowerFirst(k)] = lowerMembers(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, val := range x {
			out[i] = lowerMembers(val)
		}
		return out
	}
	return v
}
