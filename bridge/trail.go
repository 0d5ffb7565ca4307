package bridge

// Who made a change a cycle found with no event: CloudTrail's
// LookupEvents, by ResourceName (the resource's cloud id), newest first,
// from when the resource was last seen in sync (StartTime) to now; the
// newest mutating event that succeeded (no errorCode) is taken, unless it
// is the sidecar's own: then the change found came after it (CloudTrail
// delivers events minutes after the call, with no bound; or the change was
// no logged call), and nobody is named rather than an older caller.
// LookupEvents allows 2 requests a second per account and region (AWS
// says so, and throttles past it): lookups wait their turn per region.
// https://docs.aws.amazon.com/awscloudtrail/latest/APIReference/API_LookupEvents.html

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudtrail"
	cttypes "github.com/aws/aws-sdk-go-v2/service/cloudtrail/types"

	"github.com/iasql/iasql/bridge/snapshot"
)

// lookupGap is the least time between two LookupEvents requests in one
// region: 2 a second.
const lookupGap = 500 * time.Millisecond

// trail is the engine's reconcile.Trail.
type trail struct {
	e *Engine

	mu      sync.Mutex
	clients map[string]*cloudtrail.Client
	next    map[string]time.Time // region -> when its next request may go
}

func (t *trail) client(region string) *cloudtrail.Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.clients[region]; c != nil {
		return c
	}
	if t.clients == nil {
		t.clients = map[string]*cloudtrail.Client{}
	}
	c := cloudtrail.NewFromConfig(t.e.aws, func(o *cloudtrail.Options) {
		if region != "" {
			o.Region = region
		}
	})
	t.clients[region] = c
	return c
}

// turn waits until a request may go to region (lookupGap apart).
func (t *trail) turn(ctx context.Context, region string) error {
	t.mu.Lock()
	if t.next == nil {
		t.next = map[string]time.Time{}
	}
	at := time.Now()
	if n := t.next[region]; n.After(at) {
		at = n
	}
	t.next[region] = at.Add(lookupGap)
	t.mu.Unlock()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(time.Until(at)):
		return nil
	}
}

// Lookup is reconcile.Trail's: one LookupEvents request.
func (t *trail) Lookup(ctx context.Context, region, name string, after, before time.Time) (*snapshot.Attribution, error) {
	if err := t.turn(ctx, region); err != nil {
		return nil, err
	}
	out, err := t.client(region).LookupEvents(ctx, &cloudtrail.LookupEventsInput{
		LookupAttributes: []cttypes.LookupAttribute{{AttributeKey: cttypes.LookupAttributeKeyResourceName, AttributeValue: aws.String(name)}},
		StartTime:        aws.Time(after),
		EndTime:          aws.Time(before),
		MaxResults:       aws.Int32(50),
	})
	if err != nil {
		return nil, fmt.Errorf("look up %s in CloudTrail: %w", name, err)
	}
	own, key := t.e.ownARN(), t.e.accessKey(ctx)
	for _, ev := range out.Events {
		if aws.ToString(ev.ReadOnly) == "true" || ev.CloudTrailEvent == nil {
			continue
		}
		r, err := parseRecord([]byte(aws.ToString(ev.CloudTrailEvent)))
		if err != nil || !r.mutating() {
			continue
		}
		if r.byIdentity(own, key) {
			return nil, nil // the newest change CloudTrail has is the sidecar's own
		}
		return r.attribution(), nil
	}
	return nil, nil
}

// accessKey is the access key of the sidecar's credentials ("" when it
// cannot be had).
func (e *Engine) accessKey(ctx context.Context) string {
	if e.aws.Credentials == nil {
		return ""
	}
	c, err := e.aws.Credentials.Retrieve(ctx)
	if err != nil {
		return ""
	}
	return c.AccessKeyID
}
