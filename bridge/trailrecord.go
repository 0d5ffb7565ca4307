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
	"strings"

	"github.com/iasql/iasql/bridge/snapshot"
	"github.com/iasql/iasql/modules/module"
)

// trailRecord is the part of a CloudTrail record the engine reads.
type trailRecord struct {
	EventID string `json:"eventID"`
	// ErrorCode: the call failed (AccessDenied and the like): it changed
	// nothing. CloudTrail records failed calls with errorCode and
	// errorMessage, and EventBridge delivers them.
	ErrorCode          string `json:"errorCode"`
	RecipientAccountID string `json:"recipientAccountId"`
	EventTime          string `json:"eventTime"`
	SourceIP           string `json:"sourceIPAddress"`
	ReadOnly           *bool  `json:"readOnly"`
	UserIdentity       struct {
		Type        string `json:"type"`
		ARN         string `json:"arn"`
		AccessKeyID string `json:"accessKeyId"`
		InvokedBy   string `json:"invokedBy"`
	} `json:"userIdentity"`
	module.EventRecord        // what the tables' Noticers read (Event)
	account            string // the EventBridge envelope's (parseEnvelope)
}

// cloudTrailDetailType is the detail-type of the EventBridge events that
// carry CloudTrail's records of API calls.
const cloudTrailDetailType = "AWS API Call via CloudTrail"

// errNotCloudTrail: a message that is not an EventBridge event of a
// CloudTrail record (dropped, and counted).
var errNotCloudTrail = errors.New("not an EventBridge event of a CloudTrail record (detail-type " + cloudTrailDetailType + ")")

// parseEnvelope reads an EventBridge event (an SQS message's body) whose
// detail is a CloudTrail record. Only AWS's services put events whose
// source starts with "aws." (any principal allowed events:PutEvents can
// put any other source, and any detail-type): an event of another source
// is refused, whatever its detail-type says. Its account (the envelope's,
// and the record's recipientAccountId) is kept for the engine to compare
// with the database's (trailRecord.Account).
// https://docs.aws.amazon.com/eventbridge/latest/ref/events-structure.html
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-service-event-cloudtrail.html
func parseEnvelope(body []byte) (trailRecord, error) {
	var env struct {
		DetailType string          `json:"detail-type"`
		Source     string          `json:"source"`
		Account    string          `json:"account"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return trailRecord{}, fmt.Errorf("%w: %w", errNotCloudTrail, err)
	}
	if env.DetailType != cloudTrailDetailType || len(env.Detail) == 0 {
		return trailRecord{}, errNotCloudTrail
	}
	if !strings.HasPrefix(env.Source, "aws.") {
		return trailRecord{}, fmt.Errorf("%w: source %.64q is not an AWS service's (aws.*): put by someone, not by CloudTrail", errNotCloudTrail, env.Source)
	}
	r, err := parseRecord(env.Detail)
	if err != nil {
		return r, err
	}
	r.account = env.Account
	return r, nil
}

// foreignTo reports why the event is not of the account account ("" when
// it is): the envelope's account, and the record's recipientAccountId
// when it has one, must be it.
func (r trailRecord) foreignTo(account string) string {
	switch {
	case account == "":
		return ""
	case r.account != account:
		return fmt.Sprintf("event of account %.16q, not the database's %s", r.account, account)
	case r.RecipientAccountID != "" && r.RecipientAccountID != account:
		return fmt.Sprintf("record of account %.16q, not the database's %s", r.RecipientAccountID, account)
	}
	return ""
}

// parseRecord reads a CloudTrail record, each field it attributes with
// bounded (snapshot.Bound).
func parseRecord(js []byte) (trailRecord, error) {
	var r trailRecord
	if err := json.Unmarshal(js, &r); err != nil {
		return r, fmt.Errorf("%w: %w", errNotCloudTrail, err)
	}
	if r.EventName == "" || r.EventSource == "" {
		return r, fmt.Errorf("%w: no eventName or eventSource", errNotCloudTrail)
	}
	r.UserIdentity.ARN = snapshot.Bound(r.UserIdentity.ARN, snapshot.MaxARN)
	r.UserIdentity.InvokedBy = snapshot.Bound(r.UserIdentity.InvokedBy, snapshot.MaxSource)
	r.UserIdentity.AccessKeyID = snapshot.Bound(r.UserIdentity.AccessKeyID, snapshot.MaxEventID)
	r.EventName = snapshot.Bound(r.EventName, snapshot.MaxEventName)
	r.EventSource = snapshot.Bound(r.EventSource, snapshot.MaxSource)
	r.SourceIP = snapshot.Bound(r.SourceIP, snapshot.MaxSource)
	r.EventID = snapshot.Bound(r.EventID, snapshot.MaxEventID)
	r.EventTime = snapshot.Bound(r.EventTime, snapshot.MaxEventTime)
	return r, nil
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

// mutating reports whether the call may have changed something: CloudTrail
// says readOnly false, or does not say, and the call did not fail (no
// errorCode: a failed call changed nothing).
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
func (r trailRecord) mutating() bool {
	return (r.ReadOnly == nil || !*r.ReadOnly) && r.ErrorCode == ""
}

// byIdentity reports whether the call was made with the identity arn or
// the access key key (the sidecar's own calls).
func (r trailRecord) byIdentity(arn, key string) bool {
	return (arn != "" && r.UserIdentity.ARN == arn) || (key != "" && r.UserIdentity.AccessKeyID == key)
}
