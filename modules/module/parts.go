package module

import "context"

// Parts are the questions a table's mapper answers: Reader always, and
// each optional interface of the engine's, nil where the mapper does not
// answer it. The engine asks a mapper through PartsOf, never by a type
// assertion of its own, so that a mapper assembled from parts (a typed
// table's adapter) answers exactly the questions its parts do,
// whichever combination they are.
type Parts struct {
	Reader      Reader
	Mapper      Mapper      // writes: every table that is not read-only
	Equaler     Equaler     // compares otherwise than by value
	Comparer    Comparer    // names the columns that differ, as it compares them
	Getter      Getter      // reads by identity
	Paged       Paged       // a Getter that reads in small pages
	Finder      Finder      // finds what a create's token made
	Poller      Poller      // long operations (*Pending)
	Temporary   Temporary   // a stand-in while replaced
	DeleteFirst DeleteFirst // a replacement deletes before it creates
	Budgeted    Budgeted    // reads spend a shared budget
	Noticer     Noticer     // tells which of its resources an AWS event names
	// Canonical: every record the parts return is in the table's canonical
	// form already (a typed table's: Typed.Record writes it), so the
	// engine does not convert it again (Table.Canonical).
	Canonical bool
}

// Read is the Reader's: Parts is itself the table's mapper (a Reader) the
// engine holds, and PartsOf gives it back as it is.
func (p Parts) Read(ctx context.Context, call Call) ([]Record, error) {
	return p.Reader.Read(ctx, call)
}

// PartsOf is what r answers: r's own parts when r is a Parts (a typed
// table's adapter, Compose's result), else each interface r implements.
func PartsOf(r Reader) Parts {
	if p, ok := r.(Parts); ok {
		return p
	}
	p := Parts{Reader: r}
	p.Mapper, _ = r.(Mapper)
	p.Equaler, _ = r.(Equaler)
	p.Comparer, _ = r.(Comparer)
	p.Getter, _ = r.(Getter)
	p.Paged, _ = r.(Paged)
	p.Finder, _ = r.(Finder)
	p.Poller, _ = r.(Poller)
	p.Temporary, _ = r.(Temporary)
	p.DeleteFirst, _ = r.(DeleteFirst)
	p.Budgeted, _ = r.(Budgeted)
	p.Noticer, _ = r.(Noticer)
	return p
}

// Event is a change AWS reported: a CloudTrail record of an API call (as
// EventBridge delivers "AWS API Call via CloudTrail", or LookupEvents
// returns it), with the parts a table's mapper needs to tell which of its
// resources the call made, changed or deleted.
// https://docs.aws.amazon.com/awscloudtrail/latest/userguide/cloudtrail-event-reference-record-contents.html
type Event struct {
	Source    string         // eventSource, e.g. "s3.amazonaws.com"
	Name      string         // eventName, e.g. "DeleteBucket"
	Region    string         // awsRegion
	Request   map[string]any // requestParameters (nil when AWS leaves it out)
	Response  map[string]any // responseElements (nil for most deletes)
	Resources []string       // the ARNs of resources[], where AWS fills it
}

// EventRecord is the part of a CloudTrail record an Event holds (the
// record's JSON decodes into it; the engine's reader of records embeds it).
type EventRecord struct {
	EventSource       string         `json:"eventSource"`
	EventName         string         `json:"eventName"`
	AWSRegion         string         `json:"awsRegion"`
	RequestParameters map[string]any `json:"requestParameters"`
	ResponseElements  map[string]any `json:"responseElements"`
	Resources         []struct {
		ARN string `json:"ARN"`
	} `json:"resources"`
}

// Event is the record as a table's Noticer reads it.
func (r EventRecord) Event() Event {
	ev := Event{Source: r.EventSource, Name: r.EventName, Region: r.AWSRegion, Request: r.RequestParameters, Response: r.ResponseElements}
	for _, res := range r.Resources {
		if res.ARN != "" {
			ev.Resources = append(ev.Resources, res.ARN)
		}
	}
	return ev
}

// Noticer is implemented by a mapper that can tell which resources of its
// table an AWS event names: the engine then reads those alone (Getter),
// instead of the whole table, to bring the change into the rows.
type Noticer interface {
	// Noticed returns the cloud ids (as CloudIDOf gives them) of the
	// table's resources ev made, changed or deleted; none when ev is not
	// about the table.
	Noticed(ev Event) []string
}
