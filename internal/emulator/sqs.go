package emulator

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// SQS in the AWS JSON 1.0 protocol (POST /, X-Amz-Target AmazonSQS.<Op>,
// signed as "sqs"), as the SDK speaks it; errors carry __type
// (com.amazonaws.sqs#QueueDoesNotExist) and the query protocol's code in
// x-amzn-query-error (AWS.SimpleQueueService.NonExistentQueue;Sender):
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-json-api-responses.html
// Operations: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_Operations.html
//
// Decisions:
//   - Queue URLs are AWS's (https://sqs.REGION.amazonaws.com/ACCOUNT/NAME);
//     requests name a queue by such a URL (any host: the queue is the
//     region the host names, else the signing region's).
//   - A queue's settings are kept as the properties of AWS::SQS::Queue
//     (Cloud Control reads and writes the same queues: cloudcontrol_sqs.go);
//     Policy is kept apart (AWS::SQS::QueuePolicy).
//   - ReceiveMessage long-polls (WaitTimeSeconds, or the queue's
//     ReceiveMessageWaitTimeSeconds) and answers as soon as a message is
//     visible; a client that goes away ends the wait (the request's
//     context). FIFO queues keep no groups or deduplication (messages are
//     served as a standard queue's); message attributes are not kept.
//   - A receipt handle that is not the message's latest deletes nothing
//     and succeeds, as AWS documents for a stale handle.

const sqsTargetPrefix = "AmazonSQS."

// sqsQueryCodes are the query protocol's codes of SQS's errors (the
// x-amzn-query-error header), where they differ from __type's.
var sqsQueryCodes = map[string]string{
	"QueueDoesNotExist":    "AWS.SimpleQueueService.NonExistentQueue",
	"MessageNotInflight":   "AWS.SimpleQueueService.MessageNotInflight",
	"PurgeQueueInProgress": "AWS.SimpleQueueService.PurgeQueueInProgress",
	"QueueDeletedRecently": "AWS.SimpleQueueService.QueueDeletedRecently",
	"UnsupportedOperation": "AWS.SimpleQueueService.UnsupportedOperation",
}

// sqsModeled are SQS's own error shapes (com.amazonaws.sqs#Name); others
// (InvalidParameterValue, MissingParameter, ...) are common errors.
var sqsModeled = map[string]bool{
	"QueueDoesNotExist": true, "QueueNameExists": true, "MessageNotInflight": true, "PurgeQueueInProgress": true,
	"QueueDeletedRecently": true, "ReceiptHandleIsInvalid": true, "InvalidAttributeName": true,
	"InvalidAttributeValue": true, "UnsupportedOperation": true, "InvalidIdFormat": true, "OverLimit": true,
}

type sqsService struct {
	jsonProto
	account string
	bus     *eventsService // delivers due events before queues are read

	mu     sync.Mutex
	queues map[string]map[string]*sqsQueue // region -> name -> queue
}

// sqsQueue is a queue: its AWS::SQS::Queue properties, policy and
// messages.
type sqsQueue struct {
	name, region, url, arn string
	created, modified      time.Time
	props                  map[string]any
	policy                 string
	purged                 time.Time
	messages               []*sqsMessage
	// arrived is closed (and replaced) when a message is added or the
	// queue deleted, to wake long polls.
	arrived chan struct{}
}

type sqsMessage struct {
	id, body, md5, handle string
	sent, visibleAt       time.Time
	firstReceive          time.Time
	receives              int
}

func newSQS(opts Options) *sqsService {
	return &sqsService{jsonProto: jsonProto{"application/x-amz-json-1.0"}, account: opts.accountID(), queues: map[string]map[string]*sqsQueue{}}
}

func (s *sqsService) operation(r *http.Request) string {
	if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), sqsTargetPrefix); ok && op != "" {
		return op
	}
	return "Unknown"
}

func (s *sqsService) writeError(w http.ResponseWriter, _ *http.Request, status int, code, message string) {
	typ := code
	if sqsModeled[code] {
		typ = "com.amazonaws.sqs#" + code
	}
	fault := "Sender"
	if status >= 500 {
		fault = "Receiver"
	}
	body, _ := json.Marshal(map[string]string{"__type": typ, "message": message})
	w.Header().Set("x-amzn-query-error", cmpOr(sqsQueryCodes[code], code)+";"+fault)
	s.write(w, status, body)
}

func noQueue() *opErr {
	return opError("QueueDoesNotExist", "The specified queue does not exist.")
}

var sqsOps = map[string]func(s *sqsService, c jsonCall) (any, *opErr){
	"CreateQueue":             (*sqsService).createQueue,
	"GetQueueUrl":             (*sqsService).getQueueURL,
	"GetQueueAttributes":      (*sqsService).getQueueAttributes,
	"SetQueueAttributes":      (*sqsService).setQueueAttributes,
	"DeleteQueue":             (*sqsService).deleteQueue,
	"PurgeQueue":              (*sqsService).purgeQueue,
	"ListQueues":              (*sqsService).listQueues,
	"SendMessage":             (*sqsService).sendMessage,
	"ReceiveMessage":          (*sqsService).receiveMessage,
	"DeleteMessage":           (*sqsService).deleteMessage,
	"ChangeMessageVisibility": (*sqsService).changeMessageVisibility,
}

func (s *sqsService) serve(w http.ResponseWriter, r *http.Request, op string) {
	serveOps(s, sqsOps, w, r, op, "UnsupportedOperation", "SQS")
}

// sqsURL is a queue's URL.
func sqsURL(region, account, name string) string {
	return "https://sqs." + region + ".amazonaws.com/" + account + "/" + name
}

// byURL is the queue a URL names; the caller holds mu.
func (s *sqsService) byURL(region, raw string) (*sqsQueue, *opErr) {
	if raw == "" {
		return nil, opError("MissingParameter", "The request must contain the parameter QueueUrl.")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, opError("InvalidAddress", "The address %s is not valid for this endpoint.", raw)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 {
		return nil, opError("InvalidAddress", "The address %s is not valid for this endpoint.", raw)
	}
	if host := strings.Split(u.Host, "."); len(host) >= 4 && host[0] == "sqs" {
		region = host[1]
	}
	if parts[0] != s.account {
		return nil, noQueue()
	}
	q := s.queues[region][parts[1]]
	if q == nil {
		return nil, noQueue()
	}
	return q, nil
}

// The queue attributes SQS's API takes, and how each is kept among the
// AWS::SQS::Queue properties: an integer (with its range), a boolean, a
// JSON document or a string. Ranges and defaults:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SetQueueAttributes.html
var sqsAttrs = map[string]struct {
	kind     byte // 'i' integer, 'b' boolean, 'j' JSON document, 's' string
	min, max int64
}{
	"DelaySeconds":                  {'i', 0, 900},
	"MaximumMessageSize":            {'i', 1024, 1048576},
	"MessageRetentionPeriod":        {'i', 60, 1209600},
	"ReceiveMessageWaitTimeSeconds": {'i', 0, 20},
	"VisibilityTimeout":             {'i', 0, 43200},
	"KmsDataKeyReusePeriodSeconds":  {'i', 60, 86400},
	"FifoQueue":                     {'b', 0, 0},
	"ContentBasedDeduplication":     {'b', 0, 0},
	"SqsManagedSseEnabled":          {'b', 0, 0},
	"RedrivePolicy":                 {'j', 0, 0},
	"RedriveAllowPolicy":            {'j', 0, 0},
	"KmsMasterKeyId":                {'s', 0, 0},
	"DeduplicationScope":            {'s', 0, 0},
	"FifoThroughputLimit":           {'s', 0, 0},
	"Policy":                        {'s', 0, 0},
}

// sqsDefaults are the settings of a queue created without them.
var sqsDefaults = map[string]any{
	"DelaySeconds": json.Number("0"), "MaximumMessageSize": json.Number("262144"),
	"MessageRetentionPeriod": json.Number("345600"), "ReceiveMessageWaitTimeSeconds": json.Number("0"),
	"VisibilityTimeout": json.Number("30"), "FifoQueue": false,
}

// setAttrs applies attributes to a queue's properties and policy; the
// first bad one is the error, before anything is changed.
func setAttrs(q *sqsQueue, attrs map[string]string, creating bool) *opErr {
	props := maps.Clone(q.props)
	policy := q.policy
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		v := attrs[name]
		a, ok := sqsAttrs[name]
		if !ok {
			return opError("InvalidAttributeName", "Unknown Attribute %s.", name)
		}
		if !creating && (name == "FifoQueue") {
			return opError("InvalidAttributeName", "Unknown Attribute %s.", name)
		}
		switch a.kind {
		case 'i':
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil || n < a.min || n > a.max {
				return opError("InvalidAttributeValue", "Invalid value for the parameter %s.", name)
			}
			props[name] = json.Number(strconv.FormatInt(n, 10))
		case 'b':
			b, err := strconv.ParseBool(v)
			if err != nil {
				return opError("InvalidAttributeValue", "Invalid value for the parameter %s.", name)
			}
			props[name] = b
		case 'j':
			if v == "" {
				delete(props, name)
				continue
			}
			doc, err := decodeJSONValue([]byte(v))
			if _, isObj := doc.(map[string]any); err != nil || !isObj {
				return opError("InvalidAttributeValue", "Invalid value for the parameter %s.", name)
			}
			props[name] = doc
		default:
			if name == "Policy" {
				if v != "" {
					if doc, err := decodeJSONValue([]byte(v)); err != nil {
						return opError("InvalidAttributeValue", "Invalid value for the parameter Policy.")
					} else if _, ok := doc.(map[string]any); !ok {
						return opError("InvalidAttributeValue", "Invalid value for the parameter Policy.")
					}
				}
				policy = v
				continue
			}
			if v == "" {
				delete(props, name)
				continue
			}
			props[name] = v
		}
	}
	q.props, q.policy = props, policy
	return nil
}

// attrString is a queue property as SQS's API gives it.
func attrString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		return x.String()
	case nil:
		return ""
	}
	b, _ := json.Marshal(v)
	return string(b)
}

var sqsNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,80}$`)

// newQueue makes a queue of a region; the caller holds mu and has checked
// the name is free.
func (s *sqsService) newQueue(region, name string, props map[string]any, now time.Time) *sqsQueue {
	q := &sqsQueue{
		name: name, region: region, url: sqsURL(region, s.account, name),
		arn:     "arn:aws:sqs:" + region + ":" + s.account + ":" + name,
		created: now, modified: now, props: props, arrived: make(chan struct{}),
	}
	q.props["QueueName"], q.props["QueueUrl"], q.props["Arn"] = name, q.url, q.arn
	if s.queues[region] == nil {
		s.queues[region] = map[string]*sqsQueue{}
	}
	s.queues[region][name] = q
	return q
}

// createQueue: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_CreateQueue.html
// (an existing queue of the name is answered when every attribute given
// has the queue's value; else QueueNameExists).
func (s *sqsService) createQueue(c jsonCall) (any, *opErr) {
	var in struct {
		QueueName  string
		Attributes map[string]string
		Tags       map[string]string `json:"tags"`
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	base, fifoName := strings.CutSuffix(in.QueueName, ".fifo")
	if !sqsNamePattern.MatchString(base) || len(in.QueueName) > 80 {
		return nil, opError("InvalidParameterValue", "Can only include alphanumeric characters, hyphens, or underscores. 1 to 80 in length")
	}
	if fifo := in.Attributes["FifoQueue"] == "true"; fifo != fifoName {
		return nil, opError("InvalidParameterValue", "The name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length; FifoQueue must be true for it.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if q := s.queues[c.region][in.QueueName]; q != nil {
		probe := &sqsQueue{props: maps.Clone(q.props), policy: q.policy}
		if e := setAttrs(probe, in.Attributes, true); e != nil {
			return nil, e
		}
		for name := range in.Attributes {
			if name == "Policy" && probe.policy != q.policy || name != "Policy" && attrString(probe.props[name]) != attrString(q.props[name]) {
				return nil, opError("QueueNameExists", "A queue already exists with the same name and a different value for attribute %s", name)
			}
		}
		return map[string]string{"QueueUrl": q.url}, nil
	}
	probe := &sqsQueue{props: maps.Clone(sqsDefaults)}
	if e := setAttrs(probe, in.Attributes, true); e != nil {
		return nil, e
	}
	if len(in.Tags) > 0 {
		tags := []any{}
		for _, k := range slices.Sorted(maps.Keys(in.Tags)) {
			tags = append(tags, map[string]any{"Key": k, "Value": in.Tags[k]})
		}
		probe.props["Tags"] = tags
	}
	q := s.newQueue(c.region, in.QueueName, probe.props, time.Now())
	q.policy = probe.policy
	return map[string]string{"QueueUrl": q.url}, nil
}

func (s *sqsService) getQueueURL(c jsonCall) (any, *opErr) {
	var in struct{ QueueName, QueueOwnerAWSAccountId string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[c.region][in.QueueName]
	if q == nil || (in.QueueOwnerAWSAccountId != "" && in.QueueOwnerAWSAccountId != s.account) {
		return nil, noQueue()
	}
	return map[string]string{"QueueUrl": q.url}, nil
}

// sqsReadOnlyAttrs are the attributes GetQueueAttributes computes.
var sqsReadOnlyAttrs = []string{
	"QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
	"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp",
}

// getQueueAttributes: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_GetQueueAttributes.html
func (s *sqsService) getQueueAttributes(c jsonCall) (any, *opErr) {
	var in struct {
		QueueUrl       string
		AttributeNames []string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	for _, name := range in.AttributeNames {
		if name != "All" && !slices.Contains(sqsReadOnlyAttrs, name) && sqsAttrs[name].kind == 0 {
			return nil, opError("InvalidAttributeName", "Unknown Attribute %s.", name)
		}
	}
	return s.onQueue(c.region, in.QueueUrl, true, func(q *sqsQueue, now time.Time) (any, *opErr) {
		q.expire(now)
		all := slices.Contains(in.AttributeNames, "All")
		want := func(name string) bool { return all || slices.Contains(in.AttributeNames, name) }
		visible, inflight, delayed := q.counts(now)
		out := map[string]string{}
		for name, v := range map[string]string{
			"QueueArn":                              q.arn,
			"ApproximateNumberOfMessages":           strconv.Itoa(visible),
			"ApproximateNumberOfMessagesNotVisible": strconv.Itoa(inflight),
			"ApproximateNumberOfMessagesDelayed":    strconv.Itoa(delayed),
			"CreatedTimestamp":                      strconv.FormatInt(q.created.Unix(), 10),
			"LastModifiedTimestamp":                 strconv.FormatInt(q.modified.Unix(), 10),
		} {
			if want(name) {
				out[name] = v
			}
		}
		for name := range sqsAttrs {
			switch {
			case !want(name):
			case name == "Policy":
				if q.policy != "" {
					out[name] = q.policy
				}
			default:
				if v, ok := q.props[name]; ok {
					out[name] = attrString(v)
				}
			}
		}
		if len(out) == 0 {
			return map[string]any{}, nil
		}
		return map[string]any{"Attributes": out}, nil
	})
}

// onQueue runs f on the queue a URL names, under mu, after delivering the
// events due when deliver; QueueDoesNotExist when there is none.
func (s *sqsService) onQueue(region, url string, deliver bool, f func(q *sqsQueue, now time.Time) (any, *opErr)) (any, *opErr) {
	now := time.Now()
	if deliver {
		s.bus.deliverDue(now)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q, e := s.byURL(region, url)
	if e != nil {
		return nil, e
	}
	return f(q, now)
}

func (s *sqsService) setQueueAttributes(c jsonCall) (any, *opErr) {
	var in struct {
		QueueUrl   string
		Attributes map[string]string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onQueue(c.region, in.QueueUrl, false, func(q *sqsQueue, now time.Time) (any, *opErr) {
		if e := setAttrs(q, in.Attributes, false); e != nil {
			return nil, e
		}
		q.modified = now
		return map[string]any{}, nil
	})
}

// remove deletes a queue and wakes its long polls; the caller holds mu.
func (s *sqsService) remove(q *sqsQueue) {
	delete(s.queues[q.region], q.name)
	q.wake()
}

func (s *sqsService) deleteQueue(c jsonCall) (any, *opErr) {
	var in struct{ QueueUrl string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onQueue(c.region, in.QueueUrl, false, func(q *sqsQueue, _ time.Time) (any, *opErr) {
		s.remove(q)
		return map[string]any{}, nil
	})
}

// purgeQueue: "The message deletion process takes up to 60 seconds...
// you can't call PurgeQueue on it again" within 60 s
// (PurgeQueueInProgress): https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_PurgeQueue.html
func (s *sqsService) purgeQueue(c jsonCall) (any, *opErr) {
	var in struct{ QueueUrl string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onQueue(c.region, in.QueueUrl, true, func(q *sqsQueue, now time.Time) (any, *opErr) {
		if !q.purged.IsZero() && now.Sub(q.purged) < time.Minute {
			return nil, opError("PurgeQueueInProgress", "Only one PurgeQueue operation on %s is allowed every 60 seconds.", q.name)
		}
		q.purged = now
		q.messages = nil
		return map[string]any{}, nil
	})
}

func (s *sqsService) listQueues(c jsonCall) (any, *opErr) {
	var in struct {
		QueueNamePrefix, NextToken string
		MaxResults                 *int
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	limit := 1000
	if in.MaxResults != nil {
		if *in.MaxResults < 1 || *in.MaxResults > 1000 {
			return nil, opError("InvalidParameterValue", "Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *in.MaxResults)
		}
		limit = *in.MaxResults
	}
	tag := "sqs:" + c.region + ":"
	after := ""
	if in.NextToken != "" {
		var ok bool
		if after, ok = pageAfter(tag, in.NextToken); !ok {
			return nil, opError("InvalidParameterValue", "Invalid NextToken value.")
		}
	}
	s.mu.Lock()
	var names []string
	for name := range s.queues[c.region] {
		if strings.HasPrefix(name, in.QueueNamePrefix) {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	slices.Sort(names)
	page, next := paginate(names, after, limit, tag)
	urls := make([]string, len(page))
	for i, name := range page {
		urls[i] = sqsURL(c.region, s.account, name)
	}
	out := map[string]any{"QueueUrls": urls}
	if next != "" && in.MaxResults != nil {
		out["NextToken"] = next
	}
	return out, nil
}

// intProp is an integer property of a queue.
func (q *sqsQueue) intProp(name string) int64 {
	n, _ := strconv.ParseInt(attrString(q.props[name]), 10, 64)
	return n
}

// expire drops the messages kept longer than the retention period.
func (q *sqsQueue) expire(now time.Time) {
	keep := time.Duration(q.intProp("MessageRetentionPeriod")) * time.Second
	if keep <= 0 {
		return
	}
	q.messages = slices.DeleteFunc(q.messages, func(m *sqsMessage) bool { return now.Sub(m.sent) > keep })
}

// counts are the queue's visible, in-flight and delayed messages.
func (q *sqsQueue) counts(now time.Time) (visible, inflight, delayed int) {
	for _, m := range q.messages {
		switch {
		case !m.visibleAt.After(now):
			visible++
		case m.receives > 0:
			inflight++
		default:
			delayed++
		}
	}
	return visible, inflight, delayed
}

// add puts a message on the queue and wakes its long polls; the caller
// holds mu.
func (q *sqsQueue) add(body string, delay time.Duration, now time.Time) *sqsMessage {
	sum := md5.Sum([]byte(body))
	m := &sqsMessage{id: newRequestID(), body: body, md5: hex.EncodeToString(sum[:]), sent: now, visibleAt: now.Add(delay)}
	q.messages = append(q.messages, m)
	q.wake()
	return m
}

// wake wakes the queue's long polls; the caller holds mu.
func (q *sqsQueue) wake() {
	close(q.arrived)
	q.arrived = make(chan struct{})
}

// sendMessage: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_SendMessage.html
func (s *sqsService) sendMessage(c jsonCall) (any, *opErr) {
	var in struct {
		QueueUrl, MessageBody string
		DelaySeconds          *int64
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if in.MessageBody == "" {
		return nil, opError("MissingParameter", "The request must contain the parameter MessageBody.")
	}
	if in.DelaySeconds != nil && (*in.DelaySeconds < 0 || *in.DelaySeconds > 900) {
		return nil, opError("InvalidParameterValue", "Value %d for parameter DelaySeconds is invalid. Reason: must be between 0 and 900, if provided.", *in.DelaySeconds)
	}
	return s.onQueue(c.region, in.QueueUrl, false, func(q *sqsQueue, now time.Time) (any, *opErr) {
		if max := q.intProp("MaximumMessageSize"); max > 0 && int64(len(in.MessageBody)) > max {
			return nil, opError("InvalidParameterValue", "One or more parameters are invalid. Reason: Message must be shorter than %d bytes.", max)
		}
		delay := q.intProp("DelaySeconds")
		if in.DelaySeconds != nil {
			delay = *in.DelaySeconds
		}
		m := q.add(in.MessageBody, time.Duration(delay)*time.Second, now)
		return map[string]string{"MessageId": m.id, "MD5OfMessageBody": m.md5}, nil
	})
}

type sqsMessageJSON struct {
	MessageID     string            `json:"MessageId"`
	ReceiptHandle string            `json:"ReceiptHandle"`
	MD5OfBody     string            `json:"MD5OfBody"`
	Body          string            `json:"Body"`
	Attributes    map[string]string `json:"Attributes,omitempty"`
}

// receiveMessage: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ReceiveMessage.html
// Long polling waits up to WaitTimeSeconds for a message and answers as
// soon as one is visible:
// https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-short-and-long-polling.html
func (s *sqsService) receiveMessage(c jsonCall) (any, *opErr) {
	var in struct {
		QueueUrl                    string
		MaxNumberOfMessages         *int
		VisibilityTimeout           *int64
		WaitTimeSeconds             *int64
		AttributeNames              []string
		MessageSystemAttributeNames []string
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	max := 1
	if in.MaxNumberOfMessages != nil {
		if *in.MaxNumberOfMessages < 1 || *in.MaxNumberOfMessages > 10 {
			return nil, opError("InvalidParameterValue", "Value %d for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and 10, if provided.", *in.MaxNumberOfMessages)
		}
		max = *in.MaxNumberOfMessages
	}
	if in.WaitTimeSeconds != nil && (*in.WaitTimeSeconds < 0 || *in.WaitTimeSeconds > 20) {
		return nil, opError("InvalidParameterValue", "Value %d for parameter WaitTimeSeconds is invalid. Reason: Must be >= 0 and <= 20, if provided.", *in.WaitTimeSeconds)
	}
	if in.VisibilityTimeout != nil && (*in.VisibilityTimeout < 0 || *in.VisibilityTimeout > 43200) {
		return nil, opError("InvalidParameterValue", "Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", *in.VisibilityTimeout)
	}
	names := append(slices.Clone(in.AttributeNames), in.MessageSystemAttributeNames...)
	start := time.Now()
	var deadline time.Time
	for {
		now := time.Now()
		next, busWake := s.bus.deliverDue(now)
		s.mu.Lock()
		q, e := s.byURL(c.region, in.QueueUrl)
		if e != nil {
			s.mu.Unlock()
			return nil, e
		}
		if deadline.IsZero() {
			wait := q.intProp("ReceiveMessageWaitTimeSeconds")
			if in.WaitTimeSeconds != nil {
				wait = *in.WaitTimeSeconds
			}
			deadline = start.Add(time.Duration(wait) * time.Second)
		}
		vt := q.intProp("VisibilityTimeout")
		if in.VisibilityTimeout != nil {
			vt = *in.VisibilityTimeout
		}
		q.expire(now)
		msgs, wake := q.receive(now, max, time.Duration(vt)*time.Second, names)
		arrived := q.arrived
		s.mu.Unlock()
		if len(msgs) > 0 || !now.Before(deadline) {
			if len(msgs) == 0 {
				return map[string]any{}, nil
			}
			return map[string]any{"Messages": msgs}, nil
		}
		until := deadline
		for _, t := range []time.Time{wake, next} {
			if !t.IsZero() && t.Before(until) {
				until = t
			}
		}
		timer := time.NewTimer(until.Sub(now))
		select {
		case <-arrived:
		case <-busWake:
		case <-timer.C:
		case <-c.ctx.Done():
			timer.Stop()
			return map[string]any{}, nil
		}
		timer.Stop()
	}
}

// receive takes up to max visible messages, hiding them for vt; wake is
// when the next hidden message becomes visible (zero when none). The
// caller holds mu.
func (q *sqsQueue) receive(now time.Time, max int, vt time.Duration, names []string) (out []sqsMessageJSON, wake time.Time) {
	all := slices.Contains(names, "All")
	for _, m := range q.messages {
		if m.visibleAt.After(now) {
			if wake.IsZero() || m.visibleAt.Before(wake) {
				wake = m.visibleAt
			}
			continue
		}
		if len(out) == max {
			continue
		}
		m.receives++
		if m.firstReceive.IsZero() {
			m.firstReceive = now
		}
		m.visibleAt = now.Add(vt)
		m.handle = m.id + "#" + randomString("abcdefghijklmnopqrstuvwxyz0123456789", 24)
		attrs := map[string]string{}
		for name, v := range map[string]string{
			"SenderId": "AIDAEMULATOR", "SentTimestamp": strconv.FormatInt(m.sent.UnixMilli(), 10),
			"ApproximateReceiveCount":          strconv.Itoa(m.receives),
			"ApproximateFirstReceiveTimestamp": strconv.FormatInt(m.firstReceive.UnixMilli(), 10),
		} {
			if all || slices.Contains(names, name) {
				attrs[name] = v
			}
		}
		if len(attrs) == 0 {
			attrs = nil
		}
		out = append(out, sqsMessageJSON{MessageID: m.id, ReceiptHandle: m.handle, MD5OfBody: m.md5, Body: m.body, Attributes: attrs})
	}
	return out, wake
}

// message is the message a receipt handle was given for: nil (and no
// error) when it is gone or the handle is not its latest.
func (q *sqsQueue) message(handle string) (*sqsMessage, *opErr) {
	id, _, ok := strings.Cut(handle, "#")
	if !ok || id == "" {
		return nil, opError("ReceiptHandleIsInvalid", "The input receipt handle \"%s\" is not a valid receipt handle.", handle)
	}
	for _, m := range q.messages {
		if m.id == id && m.handle == handle {
			return m, nil
		}
	}
	return nil, nil
}

// deleteMessage: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_DeleteMessage.html
func (s *sqsService) deleteMessage(c jsonCall) (any, *opErr) {
	var in struct{ QueueUrl, ReceiptHandle string }
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	return s.onQueue(c.region, in.QueueUrl, false, func(q *sqsQueue, _ time.Time) (any, *opErr) {
		m, e := q.message(in.ReceiptHandle)
		if e != nil {
			return nil, e
		}
		if m != nil {
			q.messages = slices.DeleteFunc(q.messages, func(x *sqsMessage) bool { return x == m })
		}
		return map[string]any{}, nil
	})
}

// changeMessageVisibility: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_ChangeMessageVisibility.html
// (MessageNotInflight for a message that is not in flight).
func (s *sqsService) changeMessageVisibility(c jsonCall) (any, *opErr) {
	var in struct {
		QueueUrl, ReceiptHandle string
		VisibilityTimeout       int64
	}
	if e := c.decode(&in); e != nil {
		return nil, e
	}
	if in.VisibilityTimeout < 0 || in.VisibilityTimeout > 43200 {
		return nil, opError("InvalidParameterValue", "Value %d for parameter VisibilityTimeout is invalid. Reason: Must be >= 0 and <= 43200, if provided.", in.VisibilityTimeout)
	}
	return s.onQueue(c.region, in.QueueUrl, false, func(q *sqsQueue, now time.Time) (any, *opErr) {
		m, e := q.message(in.ReceiptHandle)
		if e != nil {
			return nil, e
		}
		if m == nil || !m.visibleAt.After(now) {
			return nil, opError("MessageNotInflight", "The message referred to is not in flight.")
		}
		m.visibleAt = now.Add(time.Duration(in.VisibilityTimeout) * time.Second)
		if in.VisibilityTimeout == 0 {
			q.wake()
		}
		return map[string]any{}, nil
	})
}

// deliver puts an EventBridge event of the rule ruleARN on the queue of
// an ARN when the queue's policy lets events.amazonaws.com send to it for
// that rule; false when it cannot.
func (s *sqsService) deliver(queueARN, ruleARN string, body []byte, now time.Time) (bool, string) {
	parts := strings.Split(queueARN, ":")
	if len(parts) != 6 || parts[2] != "sqs" {
		return false, "not an SQS queue ARN"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.queues[parts[3]][parts[5]]
	if q == nil || parts[4] != s.account {
		return false, "the queue does not exist"
	}
	if !allowsEvents(q.policy, q.arn, ruleARN, s.account) {
		return false, "the queue's policy does not allow events.amazonaws.com to sqs:SendMessage"
	}
	q.add(string(body), time.Duration(q.intProp("DelaySeconds"))*time.Second, now)
	return true, ""
}

// allowsEvents reports whether a queue policy allows EventBridge
// (principal service events.amazonaws.com) sqs:SendMessage on the queue,
// as AWS requires of an SQS target:
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-use-resource-based.html#eb-sqs-permissions
// A statement's conditions on aws:SourceArn (the rule's ARN) and
// aws:SourceAccount are evaluated (ArnEquals, ArnLike, StringEquals,
// StringLike and their Not forms; a negated operator holds when no value
// matches); others are not: they hold.
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_multi-value-conditions.html
func allowsEvents(policy, queueARN, sourceARN, sourceAccount string) bool {
	if policy == "" {
		return false
	}
	var doc struct {
		Statement json.RawMessage
	}
	if json.Unmarshal([]byte(policy), &doc) != nil {
		return false
	}
	var stmts []map[string]any
	if json.Unmarshal(doc.Statement, &stmts) != nil {
		var one map[string]any
		if json.Unmarshal(doc.Statement, &one) != nil {
			return false
		}
		stmts = []map[string]any{one}
	}
	allowed := false
	for _, st := range stmts {
		if st["Effect"] != "Allow" && st["Effect"] != "Deny" {
			continue
		}
		principal := st["Principal"] == "*"
		if p, ok := st["Principal"].(map[string]any); ok {
			principal = slices.ContainsFunc(stringsOf(p["Service"]), func(s string) bool { return s == "events.amazonaws.com" }) ||
				slices.Contains(stringsOf(p["AWS"]), "*")
		}
		action := slices.ContainsFunc(stringsOf(st["Action"]), func(a string) bool {
			return a == "*" || strings.EqualFold(a, "sqs:*") || strings.EqualFold(a, "sqs:SendMessage")
		})
		resource := st["Resource"] == nil || slices.ContainsFunc(stringsOf(st["Resource"]), func(r string) bool { return r == "*" || r == queueARN })
		if principal && action && resource && conditionHolds(st["Condition"], map[string]string{"aws:sourcearn": sourceARN, "aws:sourceaccount": sourceAccount}) {
			if st["Effect"] == "Deny" {
				return false
			}
			allowed = true
		}
	}
	return allowed
}

// conditionHolds reports whether a statement's Condition holds for the
// request context ctx (condition keys in lower case; keys are not case
// sensitive): every operator, every key of it (AND); any value of a key
// (OR), none for a negated operator (NOR). Operators and keys the
// emulator does not know hold.
func conditionHolds(cond any, ctx map[string]string) bool {
	ops, _ := cond.(map[string]any)
	for op, keys := range ops {
		negated := strings.Contains(op, "Not")
		var match func(want, got string) bool
		switch strings.Replace(op, "Not", "", 1) {
		case "ArnEquals", "StringEquals":
			match = func(want, got string) bool { return want == got }
		case "ArnLike", "StringLike":
			match = globMatch
		default:
			continue
		}
		km, _ := keys.(map[string]any)
		for key, values := range km {
			got, known := ctx[strings.ToLower(key)]
			if !known {
				continue
			}
			matched := slices.ContainsFunc(stringsOf(values), func(w string) bool { return match(w, got) })
			if matched == negated {
				return false
			}
		}
	}
	return true
}

// globMatch matches a policy value with * and ? wildcards.
func globMatch(pattern, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	ok, _ := regexp.MatchString(re, s)
	return ok
}

// stringsOf is a policy element that is a string or a list of strings.
func stringsOf(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}
