package bridge

// A CloudTrail record, as EventBridge delivers it ("AWS API Call via
// CloudTrail": the record is the envelope's detail) and as LookupEvents
// returns it (Event.CloudTrailEvent, a JSON string): what a table's
// mapper needs to tell which of its resources the call named
// (module.Event), and who made the call (snapshot.Attribution).
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
// https://docs.aws.amazon.com/eventbridge/latest/ref/events-structure.html

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// trailRecord is the part of a CloudTrail record the engine reads.
type trailRecord struct {
	EventID      string `json:"eventID"`
	EventName    string `json:"eventName"`
	EventSource  string `json:"eventSource"`
	EventTime    string `json:"eventTime"`
	AWSRegion    string `json:"awsRegion"`
	SourceIP     string `json:"sourceIPAddress"`
	ReadOnly     *bool  `json:"readOnly"`
	UserIdentity struct {
		Type        string `json:"type"`
		ARN         string `json:"arn"`
		AccessKeyID string `json:"accessKeyId"`
		InvokedBy   string `json:"invokedBy"`
	} `json:"userIdentity"`
	RequestParameters map[string]any `json:"requestParameters"`
	ResponseElements  map[string]any `json:"responseElements"`
	Resources         []struct {
		ARN string `json:"ARN"`
	} `json:"resources"`
}

// cloudTrailDetailType is the detail-type of the EventBridge events that
// carry CloudTrail's records of API calls.
const cloudTrailDetailType = "AWS API Call via CloudTrail"

// errNotCloudTrail: a message that is not an EventBridge event of a
// CloudTrail record (dropped, and counted).
var errNotCloudTrail = errors.New("not an EventBridge event of a CloudTrail record (detail-type " + cloudTrailDetailType + ")")

// parseEnvelope reads an EventBridge event (an SQS message's body) whose
// detail is a CloudTrail record.
func parseEnvelope(body []byte) (trailRecord, error) {
	var env struct {
		DetailType string          `json:"detail-type"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return trailRecord{}, fmt.Errorf("%w: %w", errNotCloudTrail, err)
	}
	if env.DetailType != cloudTrailDetailType || len(env.Detail) == 0 {
		return trailRecord{}, errNotCloudTrail
	}
	return parseRecord(env.Detail)
}

// parseRecord reads a CloudTrail record.
func parseRecord(js []byte) (trailRecord, error) {
	var r trailRecord
	if err := json.Unmarshal(js, &r); err != nil {
		return r, fmt.Errorf("%w: %w", errNotCloudTrail, err)
	}
	if r.EventName == "" || r.EventSource == "" {
		return r, fmt.Errorf("%w: no eventName or eventSource", errNotCloudTrail)
	}
	return r, nil
}

// event is the record as the tables' Noticers read it.
func (r trailRecord) event() module.Event {
	ev := module.Event{Source: r.EventSource, Name: r.EventName, Region: r.AWSRegion, Request: r.RequestParameters, Response: r.ResponseElements}
	for _, res := range r.Resources {
		if res.ARN != "" {
			ev.Resources = append(ev.Resources, res.ARN)
		}
	}
	return ev
}

// attribution is who made the call, as the audit trail records it: the
// caller's ARN, or, for a call AWS made itself (userIdentity type
// AWSService), the service that made it.
func (r trailRecord) attribution() *snapshot.Attribution {
	actor := r.UserIdentity.ARN
	if actor == "" {
		actor = r.UserIdentity.InvokedBy
	}
	if actor == "" && r.UserIdentity.Type == "AWSService" {
		actor = r.SourceIP // the service's name, for a call AWS made
	}
	source := r.SourceIP
	if source == "" {
		source = r.UserIdentity.InvokedBy
	}
	return &snapshot.Attribution{Actor: actor, Event: r.EventName, At: r.EventTime, Source: source, EventID: r.EventID}
}

// mutating reports whether the call may have changed something (CloudTrail
// says readOnly false, or does not say).
func (r trailRecord) mutating() bool { return r.ReadOnly == nil || !*r.ReadOnly }

// byIdentity reports whether the call was made with the identity arn or
// the access key key (the sidecar's own calls).
func (r trailRecord) byIdentity(arn, key string) bool {
	return (arn != "" && r.UserIdentity.ARN == arn) || (key != "" && r.UserIdentity.AccessKeyID == key)
}
