// Package ccmapper is the mapper of one Cloud Control resource type's
// table: it reads the type with ListResources (all pages) and, where a
// list item is partial, GetResource (a type without a list handler: the
// resources its rows name, one GetResource each); it creates, updates (with an RFC 6902
// patch) and deletes with Cloud Control's asynchronous requests, answering
// *module.Pending while a request runs and settling it in Poll
// (GetResourceRequestStatus). Every call waits on one shared rate limiter.
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
	// one map of those properties per parent (the engine's integration
	// gives those the type's rows name, from call.Parents). Read fails for
	// such a type without it.
	Parents func(call module.Call) ([]map[string]any, error)
	// Concurrency bounds the GetResource calls of one Read; 8 when 0.
	Concurrency int
	// Identities returns, for a type without a list handler
	// (schema.Type.Listable false), the resources to read: records holding
	// at least the identifier's columns (the engine's integration gives
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
	client *cloudcontrol.Client
	t      *schema.Type
	lim    *ratelimit.Limiter
	opts   Options
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

// New returns the mapper of type t over client; lim is shared by every
// mapper of the sidecar (nil: no limit).
func New(client *cloudcontrol.Client, t *schema.Type, lim *ratelimit.Limiter, opts Options) *Mapper {
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
	return &Mapper{client: client, t: t, lim: lim, opts: opts, details: detail.NewCache[module.Record](opts.DetailTTL), notFound: map[string]int{}}
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
// rules (package diff).
func (m *Mapper) Equal(db, cloud module.Record) bool { return diff.Equal(m.t, db, cloud) }

// Read lists every resource of the type: ListResources, every page (AWS
// answers pages of its own size whatever MaxResults says, so none is
// asked), and GetResource for each item whose list model is partial.
func (m *Mapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	before := m.calls.Load()
	defer func() { m.lastRead.Store(m.calls.Load() - before) }()
	if !m.t.Listable {
		return m.readByID(ctx, call)
	}
	models := []map[string]any{nil}
	if len(m.t.ListParents) > 0 {
		if m.opts.Parents == nil {
			return nil, fmt.Errorf("list %s: its list handler needs %v of a parent, and no parents were given", m.t.TypeName, m.t.ListParents)
		}
		ps, err := m.opts.Parents(call)
		if err != nil {
			return nil, fmt.Errorf("list %s: parents: %w", m.t.TypeName, err)
		}
		models = ps
	}
	var items []cctypes.ResourceDescription
	for _, parent := range models {
		got, err := m.list(ctx, parent)
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
	return m.complete(ctx, call.Fresh, items)
}

// readByID reads a type without a list handler: the resources
// Options.Identities names, one GetResource each (those gone are absent),
// so nothing the rows do not name is read, and none is imported.
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
	var ids []string
	seen := map[string]bool{}
	for _, r := range recs {
		if id := m.t.IdentifierOf(r); id != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return regional.Records(ctx, m.opts.Concurrency, ids, m.get)
}

// list reads every page of ListResources (under parent's properties).
func (m *Mapper) list(ctx context.Context, parent map[string]any) ([]cctypes.ResourceDescription, error) {
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
		page, err := m.client.ListResources(ctx, in)
		if err != nil {
			return nil, terminalAPI.Classify(err, "list %s", m.t.TypeName)
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

// complete turns list items into records, reading partial ones with
// GetResource (or reusing a recent read of the same list item, in cycles
// that allow it).
func (m *Mapper) complete(ctx context.Context, fresh module.Fresh, items []cctypes.ResourceDescription) ([]module.Record, error) {
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
		rec := m.t.ToRecord(model)
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
				rec, err := m.get(ctx, j.id)
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

// get reads one resource by Cloud Control identifier; nil when it does
// not exist.
func (m *Mapper) get(ctx context.Context, identifier string) (module.Record, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := m.client.GetResource(ctx, &cloudcontrol.GetResourceInput{TypeName: aws.String(m.t.TypeName), Identifier: aws.String(identifier)})
	if IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, terminalAPI.Classify(err, "read %s %s", m.t.TypeName, identifier)
	}
	if out.ResourceDescription == nil {
		return nil, fmt.Errorf("read %s %s: no resource description in the answer", m.t.TypeName, identifier)
	}
	model, err := schema.DecodeModel(aws.ToString(out.ResourceDescription.Properties))
	if err != nil {
		return nil, fmt.Errorf("read %s %s: %w", m.t.TypeName, identifier, err)
	}
	return m.t.ToRecord(model), nil
}

// Get reads the resources of ids (identities as module.CloudIDOf renders
// them) fresh, one GetResource each, one at a time; those that do not
// exist are absent.
func (m *Mapper) Get(ctx context.Context, call module.Call, ids []string) ([]module.Record, error) {
	return regional.Records(ctx, 1, ids, func(ctx context.Context, id string) (module.Record, error) {
		ident, ok := m.t.CloudIDToIdentifier(id)
		if !ok {
			// No resource has it; but the identity of a type whose
			// identifier is below a property cannot be read back (its
			// column holds an object): that says nothing of the resource.
			if m.t.NestedIdentifier() {
				return nil, fmt.Errorf("read %s by identity: its identifier is below a property, which an identity does not name alone; read the table whole", m.t.TypeName)
			}
			return nil, nil
		}
		return m.get(ctx, ident)
	})
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
	base := clientToken(call)
	for i := 0; i < maxTokenChain; i++ {
		token := base
		if i > 0 {
			token = fmt.Sprintf("%s-%d", base, i)
		}
		if err := m.wait(ctx); err != nil {
			return nil, err
		}
		out, err := m.client.CreateResource(ctx, &cloudcontrol.CreateResourceInput{
			TypeName: aws.String(m.t.TypeName), DesiredState: aws.String(string(doc)), ClientToken: aws.String(token),
		})
		if module.IsCode(err, "ClientTokenConflictException") {
			continue
		}
		if err != nil {
			return nil, terminalAPI.Classify(err, "create %s", m.t.TypeName)
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
		return m.progress(ctx, ev)
	}
	return nil, fmt.Errorf("create %s: %d attempts with client token %s failed in the cloud", m.t.TypeName, maxTokenChain, base)
}

// Update patches the resource from have to want: nothing is called when
// no compared property differs (write-only ones alone included), and
// module.ErrReplace is returned when a create-only path differs (or the
// type cannot be updated).
func (m *Mapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
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
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := m.client.UpdateResource(ctx, &cloudcontrol.UpdateResourceInput{
		TypeName: aws.String(m.t.TypeName), Identifier: aws.String(id), PatchDocument: aws.String(p.JSON()), ClientToken: aws.String(clientToken(call)),
	})
	if err != nil {
		return nil, terminalAPI.Classify(err, "update %s %s", m.t.TypeName, id)
	}
	m.forget(id)
	return m.progress(ctx, out.ProgressEvent)
}

// Delete asks Cloud Control to delete the resource; a resource already
// gone is deleted.
func (m *Mapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	id := m.t.IdentifierOf(have)
	if id == "" {
		return &module.TerminalError{Err: fmt.Errorf("delete %s: the record has no identifier", m.t.TypeName)}
	}
	if err := m.wait(ctx); err != nil {
		return err
	}
	out, err := m.client.DeleteResource(ctx, &cloudcontrol.DeleteResourceInput{
		TypeName: aws.String(m.t.TypeName), Identifier: aws.String(id), ClientToken: aws.String(clientToken(call)),
	})
	if IsNotFound(err) {
		return nil
	}
	if err != nil {
		return terminalAPI.Classify(err, "delete %s %s", m.t.TypeName, id)
	}
	m.forget(id)
	_, err = m.progress(ctx, out.ProgressEvent)
	return err
}

func (m *Mapper) forget(identifier string) {
	if r := m.t.IdentityRecord(identifier); r != nil {
		m.details.Forget(module.CloudIDOf(m.t.ModuleTable(), r))
	}
}

// Poll asks about a request (its token, the Pending handle).
func (m *Mapper) Poll(ctx context.Context, call module.Call, handle string) (module.Record, error) {
	if err := m.wait(ctx); err != nil {
		return nil, err
	}
	out, err := m.client.GetResourceRequestStatus(ctx, &cloudcontrol.GetResourceRequestStatusInput{RequestToken: aws.String(handle)})
	if err != nil {
		return nil, terminalAPI.Classify(err, "status of %s request %s", m.t.TypeName, handle)
	}
	return m.progress(ctx, out.ProgressEvent)
}

// progress settles a progress event: still running (*module.Pending),
// done (the resource read back; nil after a delete) or failed.
func (m *Mapper) progress(ctx context.Context, ev *cctypes.ProgressEvent) (module.Record, error) {
	if ev == nil {
		return nil, fmt.Errorf("%s: no progress event in the answer", m.t.TypeName)
	}
	token, id := aws.ToString(ev.RequestToken), aws.ToString(ev.Identifier)
	switch ev.OperationStatus {
	case cctypes.OperationStatusPending, cctypes.OperationStatusInProgress, cctypes.OperationStatusCancelInProgress:
		return nil, &module.Pending{Handle: token, RetryAfter: retryAfter(ev), Record: m.t.IdentityRecord(id)}
	case cctypes.OperationStatusSuccess:
		if ev.Operation == cctypes.OperationDelete {
			return nil, nil
		}
		rec, err := m.get(ctx, id)
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
				return nil, &module.Pending{Handle: token, RetryAfter: time.Second, Record: m.t.IdentityRecord(id)}
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
