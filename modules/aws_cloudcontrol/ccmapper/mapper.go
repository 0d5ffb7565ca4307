// Package ccmapper is the mapper of one Cloud Control resource type's
// table: it reads the type with ListResources (all pages) and, where a
// list item is partial, GetResource (a type without a list handler: the
// resources its rows name, one GetResource each); it creates, updates (with an RFC 6902
// patch) and deletes with Cloud Control's asynchronous requests, answering
// *module.Pending while a request runs and settling it in Poll
// (GetResourceRequestStatus). Every call waits on one shared rate limiter.
//
// Regions: Cloud Control works in the region of its endpoint
// (https://docs.aws.amazon.com/general/latest/gr/cloudcontrolapi.html:
// one endpoint per region), so the mapper has a client per region
// (regional.Clients): a read covers every region of the cycle's scope
// (aws_account's enabled regions, else the sidecar's), each region's
// failure leaving the others (a *module.PartialError); a create goes to
// the row's region, the rest to the record's. Every record carries its
// region (schema.RegionColumn), part of its identity.
//
// AWS's reference: https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/Welcome.html
// and the user guide's resource-operations pages
// (https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-operations.html).
package ccmapper

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudcontrol"
	cctypes "github.com/aws/aws-sdk-go-v2/service/cloudcontrol/types"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/diff"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ratelimit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/internal/detail"
	"github.com/iasql/iasql/modules/internal/regional"
	"github.com/iasql/iasql/modules/module"
)

// Options tune a Mapper; the zero value is the default.
type Options struct {
	// DetailTTL is how long automatic cycles reuse a GetResource read of a
	// resource whose list item was partial (and unchanged);
	// IASQL_CC_DETAIL_TTL (a Go duration) or 5 minutes when 0.
	DetailTTL time.Duration
	// ReadBackPolls is how many polls a request that ended SUCCESS may
	// find its resource not yet readable (AWS is eventually consistent
	// there) before the poll fails (retryable); 5 when 0.
	ReadBackPolls int
	// Parents returns, for a type whose list handler needs parent
	// properties (schema.Type.ListParents), the parents to list under:
	// one map of those properties per parent, and its region under
	// schema.RegionColumn (the engine's integration gives those the
	// type's rows name, from call.Parents); each region is listed under
	// its own parents. Read fails for such a type without it.
	Parents func(call module.Call) ([]map[string]any, error)
	// Concurrency bounds the GetResource calls of one Read; 8 when 0.
	Concurrency int
	// Identities returns, for a type without a list handler
	// (schema.Type.Listable false), the resources to read: records holding
	// at least the identifier's columns and the region (none: the
	// sidecar's region) (the engine's integration gives
	// those of the type's rows and of the resources it still knows them
	// by, from call.Parents). Read fails for such a type without it.
	Identities func(call module.Call) ([]module.Record, error)
	// Budget is how many Cloud Control calls a scheduled cycle with
	// nothing to act on may spend reading the types (module.Budgeted);
	// 0: no limit.
	Budget int
}

// Mapper is the module.Mapper, module.Getter and module.Poller of one
// Cloud Control resource type.
type Mapper struct {
	clients *regional.Clients[*cloudcontrol.Client]
	t       *schema.Type
	lim     *ratelimit.Limiter
	opts    Options
	// details: GetResource reads of resources whose list item was
	// partial, by identity (module.CloudIDOf), versioned by the list item.
	details *detail.Cache[module.Record]

	mu       sync.Mutex
	notFound map[string]int // request token -> polls that found no resource after SUCCESS

	calls    atomic.Int64 // Cloud Control calls made (each passes wait)
	lastRead atomic.Int64 // calls the last whole Read made (ReadCalls)
}

var (
	_ module.Mapper      = (*Mapper)(nil)
	_ module.Comparer    = (*Mapper)(nil)
	_ module.Paged       = (*Mapper)(nil)
	_ module.DeleteFirst = (*Mapper)(nil)
	_ module.Getter      = (*Mapper)(nil)
	_ module.Poller      = (*Mapper)(nil)
	_ module.Budgeted    = (*Mapper)(nil)
)

// New returns the mapper of type t over the clients of each region
// (NewClients); lim is shared by every mapper of the sidecar, whatever
// the region (nil: no limit).
func New(clients *regional.Clients[*cloudcontrol.Client], t *schema.Type, lim *ratelimit.Limiter, opts Options) *Mapper {
	if opts.DetailTTL == 0 {
		opts.DetailTTL = 5 * time.Minute
		if d, err := time.ParseDuration(os.Getenv("IASQL_CC_DETAIL_TTL")); err == nil && d >= 0 {
			opts.DetailTTL = d
		}
	}
	if opts.ReadBackPolls <= 0 {
		opts.ReadBackPolls = 5
	}
	if opts.Concurrency <= 0 {
		opts.Concurrency = 8
	}
	return &Mapper{clients: clients, t: t, lim: lim, opts: opts, details: detail.NewCache[module.Record](opts.DetailTTL), notFound: map[string]int{}}
}

// NewClients are Cloud Control clients of cfg, one per region, made on
// first use; a call that has no scope works in cfg's region.
func NewClients(cfg aws.Config) *regional.Clients[*cloudcontrol.Client] {
	return regional.NewClients(cfg, func(region string) *cloudcontrol.Client {
		return cloudcontrol.NewFromConfig(cfg, func(o *cloudcontrol.Options) { o.Region = region })
	})
}

// Type is the mapper's resource type.
func (m *Mapper) Type() *schema.Type { return m.t }

func (m *Mapper) wait(ctx context.Context) error {
	m.calls.Add(1)
	return m.lim.Wait(ctx)
}

// ReadBudget is the catalog's list budget (Options.Budget), shared by every
// Cloud Control type: AWS's request rate is per account and region.
func (m *Mapper) ReadBudget() (string, int) { return "Cloud Control", m.opts.Budget }

// ReadCalls is how many Cloud Control calls the last whole Read made.
func (m *Mapper) ReadCalls() int { return int(m.lastRead.Load()) }

// DeleteBeforeCreate reports whether the schema's replacementStrategy is
// delete_then_create: a replacement deletes the old resource first
// (create_then_delete, the default, lets the engine create first).
func (m *Mapper) DeleteBeforeCreate() bool { return m.t.ReplacementStrategy == "delete_then_create" }

// PageSize is how many resources a ListResources page holds: AWS answers
// pages of 25 whatever MaxResults asks. A type without a list handler has
// no pages (0): its Read costs a GetResource per row, never less than
// getting the records a cycle acts on.
func (m *Mapper) PageSize() int {
	if !m.t.Listable {
		return 0
	}
	return 25
}

// Differing names the columns of cols in which db and cloud differ by the
// schema's rules (package diff: defaults, sets, JSON documents); read-only
// and write-only columns never differ.
func (m *Mapper) Differing(cols []string, db, cloud module.Record) []string {
	var out []string
	for _, name := range cols {
		if name == schema.RegionColumn {
			if otherRegion(db, cloud) {
				out = append(out, name)
			}
			continue
		}
		c, ok := m.t.ColumnNamed(name)
		if !ok || c.ReadOnly || c.WriteOnly {
			continue
		}
		if !diff.ColumnEqual(c, db[name], cloud[name]) {
			out = append(out, name)
		}
	}
	return out
}

// Equal compares a database record and a cloud record by the schema's
// rules (package diff), and their regions.
func (m *Mapper) Equal(db, cloud module.Record) bool {
	return !otherRegion(db, cloud) && diff.Equal(m.t, db, cloud)
}

// otherRegion reports whether a row names a region other than the
// resource's (a row that names none is where the resource is: the
// database fills it in).
func otherRegion(db, cloud module.Record) bool {
	r := db.String(schema.RegionColumn)
	return r != "" && r != cloud.String(schema.RegionColumn)
}

// Read lists every resource of the type in every region of the scope
// (regions concurrently; a region whose reads fail leaves the others, and
// is named by the *module.PartialError): ListResources, every page (AWS
// answers pages of its own size whatever MaxResults says, so none is
// asked), under each of the region's parents for a type listed per
// parent, and GetResource for each item whose list model is partial.
func (m *Mapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	before := m.calls.Load()
	defer func() { m.lastRead.Store(m.calls.Load() - before) }()
	if !m.t.Listable {
		return m.readByID(ctx, call)
	}
	var parents []map[string]any
	if len(m.t.ListParents) > 0 {
		if m.opts.Parents == nil {
			return nil, fmt.Errorf("list %s: its list handler needs %v of a parent, and no parents were given", m.t.TypeName, m.t.ListParents)
		}
		ps, err := m.opts.Parents(call)
		if err != nil {
			return nil, fmt.Errorf("list %s: parents: %w", m.t.TypeName, err)
		}
		parents = ps
	}
	return regional.Each(ctx, m.clients, call.Scope, func(ctx context.Context, region string, cl *cloudcontrol.Client) ([]module.Record, error) {
		models := []map[string]any{nil}
		if len(m.t.ListParents) > 0 {
			models = m.inRegion(call.Scope, region, parents)
		}
		var items []cctypes.ResourceDescription
		for _, parent := range models {
			got, err := m.list(ctx, cl, region, parent)
			if parent != nil && IsNotFound(err) {
				// The parent is gone (the parent of a row deleted since, still
				// named while the engine settles it): it holds nothing, since
				// its children cannot outlive it. List handlers that describe
				// the parent first fail so (the handler's NotFound is Cloud
				// Control's ResourceNotFoundException,
				// https://docs.aws.amazon.com/cloudcontrolapi/latest/APIReference/API_ListResources.html#API_ListResources_Errors);
				// other handlers answer an empty list.
				continue
			}
			if err != nil {
				return nil, err
			}
			items = append(items, got...)
		}
		return m.complete(ctx, call.Fresh, cl, region, items)
	})
}

// inRegion are the records of recs in region (those without a region are
// in the scope's default one), without their region.
func (m *Mapper) inRegion(s module.Scope, region string, recs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if m.clients.RegionOr(s, module.Record(r).String(schema.RegionColumn)) != region {
			continue
		}
		p := make(map[string]any, len(r))
		for k, v := range r {
			if k != schema.RegionColumn {
				p[k] = v
			}
		}
		out = append(out, p)
	}
	return out
}

// readByID reads a type without a list handler: the resources
// Options.Identities names, one GetResource each in its region (those
// gone are absent; a region whose reads fail leaves the others), so
// nothing the rows do not name is read, and none is imported.
// AWS: a type without a list handler answers ListResources with
// UnsupportedActionException; GetResource reads one resource by its
// identifier (https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-operations-read.html,
// https://docs.aws.amazon.com/cloudcontrolapi/latest/userguide/resource-operations-list.html).
func (m *Mapper) readByID(ctx context.Context, call module.Call) ([]module.Record, error) {
	if m.opts.Identities == nil {
		return nil, fmt.Errorf("read %s: it has no list handler, and no identities to read were given", m.t.TypeName)
	}
	recs, err := m.opts.Identities(call)
	if err != nil {
		return nil, fmt.Errorf("read %s: identities: %w", m.t.TypeName, err)
	}
	byRegion := map[string][]string{}
	seen := map[string]bool{}
	for _, r := range recs {
		id := m.t.IdentifierOf(r)
		if id == "" {
			continue
		}
		for _, region := range m.regionsOf(call.Scope, r.String(schema.RegionColumn), id) {
			if !seen[region+"\x00"+id] {
				seen[region+"\x00"+id] = true
				byRegion[region] = append(byRegion[region], id)
			}
		}
	}
	return regional.Each(ctx, m.clients, call.Scope, func(ctx context.Context, region string, cl *cloudcontrol.Client) ([]module.Record, error) {
		return regional.Records(ctx, m.opts.Concurrency, byRegion[region], func(ctx context.Context, id string) (module.Record, error) {
			return m.get(ctx, cl, region, id)
		})
	})
}

// list reads every page of ListResources in a region (under parent's
// properties).
func (m *Mapper) list(ctx context.Context, cl *cloudcontrol.Client, region string, parent map[string]any) ([]cctypes.ResourceDescription, error) {
	in := &cloudcontrol.ListResourcesInput{TypeName: aws.String(m.t.TypeName)}
	if parent != nil {
		b, err := json.Marshal(parent)
		if err != nil {
			return nil, fmt.Errorf("list %s: parent model: %w", m.t.TypeName, err)
		}
		in.ResourceModel = aws.String(string(b))
	}
	var out []cctypes.ResourceDescription
	for {
		if err := m.wait(ctx); err != nil {
			return nil, err
		}
		page, err := cl.ListResources(ctx, in)
		if err != nil {
			return nil, terminalAPI.Classify(err, "list %s in %s", m.t.TypeName, region)
		}
		out = append(out, page.ResourceDescriptions...)
		if aws.ToString(page.NextToken) == "" {
			return out, nil
		}
		in.NextToken = page.NextToken
	}
}

// partial reports whether a list item's model lacks what a read returns:
// a required property or a read-only one (read-only properties, such as
// ARNs and generated ids, are set by AWS on every resource), or anything
// beyond the identifier. List handlers of many types return the primary
// identifier only; others return the whole model, and then no per-item
// read is needed.
func (m *Mapper) partial(model map[string]any) bool {
	beyond := false
	for _, c := range m.t.Columns {
		_, has := model[c.Property]
		if (c.Required || c.ReadOnly) && !c.WriteOnly && !has {
			return true
		}
		if has && !contains(m.t.Identifier, c.Property) {
			beyond = true
		}
	}
	return !beyond
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

// complete turns list items of a region into records, reading partial
// ones with GetResource (or reusing a recent read of the same list item,
// in cycles that allow it).
func (m *Mapper) complete(ctx context.Context, fresh module.Fresh, cl *cloudcontrol.Client, region string, items []cctypes.ResourceDescription) ([]module.Record, error) {
	out := make([]module.Record, len(items))
	keep := make([]bool, len(items))
	type job struct {
		i       int
		id, ver string
	}
	var jobs []job
	due := m.details.Due()
	table := m.t.ModuleTable()
	for i, it := range items {
		model, err := schema.DecodeModel(aws.ToString(it.Properties))
		if err != nil {
			return nil, fmt.Errorf("list %s: item %s: %w", m.t.TypeName, aws.ToString(it.Identifier), err)
		}
		rec := m.record(region, model)
		if !m.partial(model) {
			out[i], keep[i] = rec, true
			continue
		}
		name, ver := module.CloudIDOf(table, rec), aws.ToString(it.Properties)
		if got, ok := m.details.Get(fresh, name, ver, due); ok {
			out[i], keep[i] = got, true
			continue
		}
		jobs = append(jobs, job{i, aws.ToString(it.Identifier), ver})
	}
	if len(jobs) > 0 {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var firstErr error
		sem := make(chan struct{}, m.opts.Concurrency)
		for _, j := range jobs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				rec, err := m.get(ctx, cl, region, j.id)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err != nil:
					if firstErr == nil {
						firstErr = err
					}
				case rec != nil: // nil: deleted since it was listed
					out[j.i], keep[j.i] = rec, true
					m.details.Put(module.CloudIDOf(table, rec), j.ver, rec)
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return nil, firstErr
		}
	}
	recs := out[:0]
	for i, r := range out {
		if keep[i] {
			recs = append(recs, r)
		}
	}
	return recs, nil
}

// record is a resource model found in region as a record.
func (m *Mapper) record(region string, model map[string]any) module.Record {
	r := m.t.ToRecord(model)
	r[schema.RegionColumn] = region
	return r
}

// identity is the record of only the identity an identifier names in a
// region (nil when the identifier has not as many parts).
func (m *Mapper) identity(region, identifier string) module.Record {
	r := m.t.IdentityRecord(identifier)
	if r != nil {
		r[schema.RegionColumn] = region
	}
	return r
}

// get reads one resource by Cloud Control identifier in a region; nil
// when it does not exist.
func (m *Mapper) get(ctx context.Context, cl *cloudcontrol.Client, region, identifier string) (module.Record, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := cl.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(m.t.TypeName), Identifier: aws.String(identifier)})
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, terminalAPI.Classify(err, "read %s %s in %s", m.t.TypeName, identifier, region)
	}
	if out.ResourceDescription == nil {
		return nil, fmt.Errorf("read %s %s in %s: no resource description in the answer", m.t.TypeName, identifier, region)
	}
	model, err := schema.DecodeModel(aws.ToString(out.ResourceDescription.Properties))
	if err != nil {
		return nil, fmt.Errorf("read %s %s in %s: %w", m.t.TypeName, identifier, region, err)
	}
	return m.record(region, model), nil
}

// Get reads the resources of ids (identities as module.CloudIDOf renders
// them: the identifier's columns and the region) fresh, one GetResource
// each in its region, one at a time; those that do not exist, or whose
// region is not in the scope, are absent.
func (m *Mapper) Get(ctx context.Context, call module.Call, ids []string) ([]module.Record, error) {
	regions := m.clients.Scope(call.Scope).Regions
	return regional.Records(ctx, 1, ids, func(ctx context.Context, id string) (module.Record, error) {
		ident, region, ok := m.t.CloudIDToIdentifier(id)
		if !ok {
			// No resource has it; but the identity of a type whose
			// identifier is below a property cannot be read back (its
			// column holds an object): that says nothing of the resource.
			if m.t.NestedIdentifier() {
				return nil, fmt.Errorf("read %s by identity: its identifier is below a property, which an identity does not name alone; read the table whole", m.t.TypeName)
			}
			return nil, nil
		}
		if region != "" && !slices.Contains(regions, region) {
			return nil, nil
		}
		for _, r := range m.regionsOf(call.Scope, region, ident) {
			rec, err := m.get(ctx, m.clients.Region(r), r, ident)
			if rec != nil || err != nil {
				return rec, err
			}
		}
		return nil, nil
	})
}

// regionsOf are the regions of the scope where a resource may be: its
// region when known; else (a generated identity, which does not hold the
// region: RegionInIdentity) those the identifier names (an ARN or a URL
// names its region), else every region of the scope.
func (m *Mapper) regionsOf(s module.Scope, region, identifier string) []string {
	if region != "" {
		return []string{region}
	}
	regions := m.clients.Scope(s).Regions
	var named []string
	for _, r := range regions {
		if strings.Contains(identifier, r) {
			named = append(named, r)
		}
	}
	if len(named) > 0 {
		return named
	}
	return regions
}

// regionOf is the region of a record (a row that names none: the
// scope's default region).
func (m *Mapper) regionOf(call module.Call, r module.Record) string {
	return m.clients.RegionOr(call.Scope, r.String(schema.RegionColumn))
}

// handle is a request's Pending handle: its region and its token
// (request tokens are the region's: GetResourceRequestStatus is asked in
// the region the request was made in).
func handle(region, token string) string { return region + "/" + token }

// splitHandle reads a handle back; a handle without a region (made before
// the mapper knew regions) is the call's default region's.
func (m *Mapper) splitHandle(call module.Call, h string) (region, token string) {
	if region, token, ok := strings.Cut(h, "/"); ok {
		return region, token
	}
	return m.clients.Scope(call.Scope).Default, h
}

// clientToken is the token of a call: the engine's persisted create
// token when the call carries one, else a new one.
func clientToken(call module.Call) string {
	if t := call.Token; t != "" {
		return t
	}
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// maxTokenChain bounds the tokens one create walks (see Create).
const maxTokenChain = 20

// Create asks Cloud Control to create want and answers *module.Pending
// with the request token while the request runs.
//
// Idempotency: the call carries the engine's client token, so a create
// repeated after a crash answers the same request. Cloud Control keeps a
// token's request (and its outcome) for 36 hours, so the create that
// follows a FAILED (retryable) or cancelled request must use another
// token: the tokens are a chain, token, token-1, token-2, ...: each
// attempt walks it from the start, following the requests that ended
// FAILED or cancelled, and stops at the first token whose request is
// running or succeeded (answered as such) or not yet made (a new request).
// The walk is the same after a crash, so no attempt makes a second
// resource. A token that an earlier attempt used with other values
// (ClientTokenConflictException: the row changed in between) is passed
// over the same way.
func (m *Mapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	model := m.t.ToModel(want, nil)
	doc, err := json.Marshal(model)
	if err != nil {
		return nil, fmt.Errorf("create %s: desired state: %w", m.t.TypeName, err)
	}
	region := m.regionOf(call, want)
	if regions := m.clients.Scope(call.Scope).Regions; !slices.Contains(regions, region) {
		return nil, &module.TerminalError{Err: fmt.Errorf("create %s in %s: the region is not one this database syncs (%s); enable it in aws_regions (aws_account) or give one of those",
			m.t.TypeName, region, strings.Join(regions, ", "))}
	}
	cl := m.clients.Region(region)
	base := clientToken(call)
	for i := 0; i < maxTokenChain; i++ {
		token := base
		if i > 0 {
			token = fmt.Sprintf("%s-%d", base, i)
		}
		if err := m.wait(ctx); err != nil {
			return nil, err
		}
		out, err := cl.CreateResource(ctx, &cloudcontrol.CreateResourceInput{
			TypeName: aws.String(m.t.TypeName), DesiredState: aws.String(string(doc)), ClientToken: aws.String(token),
		})
		if module.IsCode(err, "ClientTokenConflictException") {
			continue
		}
		if err != nil {
			return nil, terminalAPI.Classify(err, "create %s in %s", m.t.TypeName, region)
		}
		ev := out.ProgressEvent
		if ev == nil {
			return nil, fmt.Errorf("create %s: no progress event in the answer", m.t.TypeName)
		}
		switch ev.OperationStatus {
		case cctypes.OperationStatusFailed:
			re := requestError(m.t.TypeName, ev)
			if re.Retryable() {
				continue // an earlier attempt's request: the next token makes a new one
			}
			return nil, classify(re)
		case cctypes.OperationStatusCancelComplete, cctypes.OperationStatusCancelInProgress:
			continue
		}
		return m.progress(ctx, cl, region, ev)
	}
	return nil, fmt.Errorf("create %s: %d attempts with client token %s failed in the cloud", m.t.TypeName, maxTokenChain, base)
}

// Update patches the resource from have to want: nothing is called when
// no compared property differs (write-only ones alone included), and
// module.ErrReplace is returned when a create-only path differs (or the
// type cannot be updated).
func (m *Mapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	if otherRegion(want, have) {
		return nil, fmt.Errorf("%s: the region changed: %w", m.t.TypeName, module.ErrReplace)
	}
	p := diff.Diff(m.t, have, want)
	if len(p.Replace) > 0 {
		return nil, fmt.Errorf("%s: create-only %s changed: %w", m.t.TypeName, strings.Join(p.Replace, ", "), module.ErrReplace)
	}
	if len(p.Ops) == 0 || p.WriteOnly {
		return have, nil
	}
	if !m.t.Updatable {
		return nil, fmt.Errorf("%s has no update handler: %w", m.t.TypeName, module.ErrReplace)
	}
	id := m.t.IdentifierOf(have)
	if id == "" {
		id = m.t.IdentifierOf(want)
	}
	if id == "" {
		return nil, &module.TerminalError{Err: fmt.Errorf("update %s: the record has no identifier", m.t.TypeName)}
	}
	region := m.regionOf(call, have)
	cl := m.clients.Region(region)
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := cl.UpdateResource(ctx, &cloudcontrol.UpdateResourceInput{
		TypeName: aws.String(m.t.TypeName), Identifier: aws.String(id), PatchDocument: aws.String(p.JSON()), ClientToken: aws.String(clientToken(call)),
	})
	if err != nil {
		return nil, terminalAPI.Classify(err, "update %s %s in %s", m.t.TypeName, id, region)
	}
	m.forget(region, id)
	return m.progress(ctx, cl, region, out.ProgressEvent)
}

// Delete asks Cloud Control to delete the resource; a resource already
// gone is deleted.
func (m *Mapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	id := m.t.IdentifierOf(have)
	if id == "" {
		return &module.TerminalError{Err: fmt.Errorf("delete %s: the record has no identifier", m.t.TypeName)}
	}
	region := m.regionOf(call, have)
	cl := m.clients.Region(region)
	if err := m.wait(ctx); err != nil {
		return err
	}
	out, err := cl.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{
		TypeName: aws.String(m.t.TypeName), Identifier: aws.String(id), ClientToken: aws.String(clientToken(call)),
	})
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return terminalAPI.Classify(err, "delete %s %s in %s", m.t.TypeName, id, region)
	}
	m.forget(region, id)
	_, err = m.progress(ctx, cl, region, out.ProgressEvent)
	return err
}

func (m *Mapper) forget(region, identifier string) {
	if r := m.identity(region, identifier); r != nil {
		m.details.Forget(module.CloudIDOf(m.t.ModuleTable(), r))
	}
}

// Poll asks about a request (the Pending handle: its region and token)
// in its region.
func (m *Mapper) Poll(ctx context.Context, call module.Call, h string) (module.Record, error) {
	region, token := m.splitHandle(call, h)
	cl := m.clients.Region(region)
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := cl.GetResourceRequestStatus(ctx, &cloudcontrol.GetResourceRequestStatusInput{RequestToken: aws.String(token)})
	if err != nil {
		return nil, terminalAPI.Classify(err, "status of %s request %s in %s", m.t.TypeName, token, region)
	}
	return m.progress(ctx, cl, region, out.ProgressEvent)
}

// progress settles a progress event of a request made in region: still
// running (*module.Pending), done (the resource read back; nil after a
// delete) or failed.
func (m *Mapper) progress(ctx context.Context, cl *cloudcontrol.Client, region string, ev *cctypes.ProgressEvent) (module.Record, error) {
	if ev == nil {
		return nil, fmt.Errorf("%s: no progress event in the answer", m.t.TypeName)
	}
	token, id := aws.ToString(ev.RequestToken), aws.ToString(ev.Identifier)
	switch ev.OperationStatus {
	case cctypes.OperationStatusPending, cctypes.OperationStatusInProgress, cctypes.OperationStatusCancelInProgress:
		return nil, &module.Pending{Handle: handle(region, token), RetryAfter: retryAfter(ev), Record: m.identity(region, id)}
	case cctypes.OperationStatusSuccess:
		if ev.Operation == cctypes.OperationDelete {
			return nil, nil
		}
		rec, err := m.get(ctx, cl, region, id)
		if err != nil {
			return nil, err
		}
		if rec == nil {
			// Read-after-write is eventually consistent: ask again a
			// few times before calling it a failure.
			m.mu.Lock()
			m.notFound[token]++
			n := m.notFound[token]
			m.mu.Unlock()
			if n <= m.opts.ReadBackPolls {
				return nil, &module.Pending{Handle: handle(region, token), RetryAfter: time.Second, Record: m.identity(region, id)}
			}
			return nil, fmt.Errorf("%s %s %s succeeded but the resource cannot be read", ev.Operation, m.t.TypeName, id)
		}
		m.mu.Lock()
		delete(m.notFound, token)
		m.mu.Unlock()
		return rec, nil
	case cctypes.OperationStatusFailed:
		re := requestError(m.t.TypeName, ev)
		if ev.Operation == cctypes.OperationDelete && re.Code == string(cctypes.HandlerErrorCodeNotFound) {
			return nil, nil
		}
		return nil, classify(re)
	case cctypes.OperationStatusCancelComplete:
		return nil, fmt.Errorf("%s %s %s: the request %s was cancelled", ev.Operation, m.t.TypeName, id, token)
	}
	return nil, fmt.Errorf("%s request %s: unknown status %q", m.t.TypeName, token, ev.OperationStatus)
}

func requestError(typeName string, ev *cctypes.ProgressEvent) *RequestError {
	return &RequestError{
		TypeName: typeName, Operation: string(ev.Operation), Identifier: aws.ToString(ev.Identifier),
		Code: string(ev.ErrorCode), Message: aws.ToString(ev.StatusMessage), Token: aws.ToString(ev.RequestToken),
	}
}

// retryAfter is the event's RetryAfter (a time) as a wait from now; 0
// (the engine chooses) when absent or past.
func retryAfter(ev *cctypes.ProgressEvent) time.Duration {
	if ev.RetryAfter == nil {
		return 0
	}
	d := time.Until(*ev.RetryAfter)
	if d < 0 {
		return 0
	}
	return d
}
