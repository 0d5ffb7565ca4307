package emulator

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// CloudTrail's API: LookupEvents only, AWS JSON 1.1 (X-Amz-Target
// CloudTrail_20131101.LookupEvents, or with the namespace
// com.amazonaws.cloudtrail.v20131101., signed as "cloudtrail"), over the events the emulator recorded in the
// request's region. AWS's reference:
// https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html
// (at most one lookup attribute; MaxResults 1 to 50, 50 by default; newest
// first; "The rate of lookup requests is limited to two per second, per
// account, per Region. If this limit is exceeded, a throttling error
// occurs.": ThrottlingException, which Options.LookupEventsRate can
// raise for tests and benchmarks).

const ctTargetPrefix = "CloudTrail_20131101."

// ctService answers LookupEvents from the trail.
type ctService struct {
	jsonProto
	trail *cloudTrail
	rate  float64 // lookups per second per region; 0 for no limit

	mu      sync.Mutex
	buckets map[string]*tokenBucket // by region
}

// tokenBucket allows rate requests a second, in bursts of at most rate.
type tokenBucket struct {
	tokens float64
	last   time.Time
}

func newCloudTrailAPI(opts Options, trail *cloudTrail) *ctService {
	rate := opts.LookupEventsRate
	switch {
	case rate == 0:
		rate = 2
	case rate < 0:
		rate = 0
	}
	return &ctService{jsonProto: jsonProto{"application/x-amz-json-1.1"}, trail: trail, rate: rate, buckets: map[string]*tokenBucket{}}
}

func (s *ctService) operation(r *http.Request) string {
	// The SDK sends the target without the namespace
	// (CloudTrail_20131101.LookupEvents).
	t := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "com.amazonaws.cloudtrail.v20131101.")
	if op, ok := strings.CutPrefix(t, ctTargetPrefix); ok && op != "" {
		return op
	}
	return "Unknown"
}

// allow takes a token of the region's bucket; false when there is none.
func (s *ctService) allow(region string, now time.Time) bool {
	if s.rate == 0 {
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.buckets[region]
	if b == nil {
		b = &tokenBucket{tokens: math.Max(s.rate, 1), last: now}
		s.buckets[region] = b
	}
	b.tokens = math.Min(math.Max(s.rate, 1), b.tokens+now.Sub(b.last).Seconds()*s.rate)
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

type ctEvent struct {
	EventID         string           `json:"EventId"`
	EventName       string           `json:"EventName"`
	ReadOnly        string           `json:"ReadOnly"`
	AccessKeyID     string           `json:"AccessKeyId"`
	EventTime       ecrEpoch         `json:"EventTime"`
	EventSource     string           `json:"EventSource"`
	Username        string           `json:"Username"`
	Resources       []lookupResource `json:"Resources"`
	CloudTrailEvent string           `json:"CloudTrailEvent"`
	seqNo           int
}

func (s *ctService) serve(w http.ResponseWriter, r *http.Request, op string) {
	if op != "LookupEvents" {
		s.writeError(w, r, http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("The emulator does not implement CloudTrail operation %q.", r.Header.Get("X-Amz-Target")))
		return
	}
	body, region, ok := s.read(w, r)
	if !ok {
		return
	}
	if !s.allow(region, time.Now()) {
		s.writeError(w, r, http.StatusBadRequest, "ThrottlingException", "Rate exceeded")
		return
	}
	var in struct {
		LookupAttributes []struct{ AttributeKey, AttributeValue string }
		StartTime        *float64
		EndTime          *float64
		MaxResults       *int
		NextToken        string
		EventCategory    string
	}
	if err := json.Unmarshal(body, &in); err != nil && len(body) > 0 {
		s.writeError(w, r, http.StatusBadRequest, "SerializationException", err.Error())
		return
	}
	out, code, msg := s.lookup(region, in.LookupAttributes, in.StartTime, in.EndTime, in.MaxResults, in.NextToken, in.EventCategory)
	s.answer(w, r, out, http.StatusBadRequest, code, msg)
}

// lookupKeys are the attributes LookupEvents filters on, and how.
var lookupKeys = map[string]func(ev *trailEvent, v string) bool{
	"EventId":     func(ev *trailEvent, v string) bool { return ev.id == v },
	"EventName":   func(ev *trailEvent, v string) bool { return ev.name == v },
	"EventSource": func(ev *trailEvent, v string) bool { return ev.source == v },
	"ReadOnly":    func(ev *trailEvent, v string) bool { return strconv.FormatBool(ev.readOnly) == v },
	"Username":    func(ev *trailEvent, v string) bool { return ev.username == v },
	"AccessKeyId": func(ev *trailEvent, v string) bool { return ev.key == v },
	"ResourceName": func(ev *trailEvent, v string) bool {
		for _, r := range ev.resources {
			if r.ResourceName == v {
				return true
			}
		}
		return false
	},
	"ResourceType": func(ev *trailEvent, v string) bool {
		for _, r := range ev.resources {
			if r.ResourceType == v {
				return true
			}
		}
		return false
	},
}

func epoch(f *float64) time.Time {
	sec, frac := math.Modf(*f)
	return time.Unix(int64(sec), int64(frac*1e9))
}

func (s *ctService) lookup(region string, attrs []struct{ AttributeKey, AttributeValue string }, start, end *float64, maxResults *int, next, category string) (any, string, string) {
	if len(attrs) > 1 {
		return nil, "InvalidLookupAttributesException", "You cannot specify more than one lookup attribute."
	}
	var match func(*trailEvent, string) bool
	value := ""
	if len(attrs) == 1 {
		var ok bool
		if match, ok = lookupKeys[attrs[0].AttributeKey]; !ok {
			return nil, "InvalidLookupAttributesException", fmt.Sprintf("%q is not a lookup attribute: use EventId, EventName, ReadOnly, Username, ResourceType, ResourceName, EventSource or AccessKeyId.", attrs[0].AttributeKey)
		}
		value = attrs[0].AttributeValue
	}
	limit := 50
	if maxResults != nil {
		if *maxResults < 1 || *maxResults > 50 {
			return nil, "InvalidMaxResultsException", "MaxResults must be between 1 and 50."
		}
		limit = *maxResults
	}
	if start != nil && end != nil && *start > *end {
		return nil, "InvalidTimeRangeException", "StartTime must be before EndTime."
	}
	tag := "ct:" + region + ":"
	before := math.MaxInt
	if next != "" {
		k, ok := pageAfter(tag, next)
		n, err := strconv.Atoi(k)
		if !ok || err != nil {
			return nil, "InvalidNextTokenException", "Invalid NextToken."
		}
		before = n
	}
	events := []ctEvent{}
	out := map[string]any{}
	if category == "insight" {
		out["Events"] = events
		return out, "", ""
	}
	s.trail.mu.Lock()
	defer s.trail.mu.Unlock()
	for i := len(s.trail.events) - 1; i >= 0; i-- {
		ev := s.trail.events[i]
		if ev.seq >= before || ev.region != region ||
			(start != nil && ev.time.Before(epoch(start))) || (end != nil && ev.time.After(epoch(end))) ||
			(match != nil && !match(ev, value)) {
			continue
		}
		if len(events) == limit {
			out["NextToken"] = pageToken(tag, strconv.Itoa(events[len(events)-1].seqNo))
			break
		}
		events = append(events, ctEvent{
			EventID: ev.id, EventName: ev.name, ReadOnly: strconv.FormatBool(ev.readOnly), AccessKeyID: ev.key,
			EventTime: ecrEpoch(ev.time), EventSource: ev.source, Username: ev.username,
			Resources: append([]lookupResource{}, ev.resources...), CloudTrailEvent: string(ev.json), seqNo: ev.seq,
		})
	}
	out["Events"] = events
	return out, "", ""
}
