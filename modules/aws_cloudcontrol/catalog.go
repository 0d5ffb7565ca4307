// Package aws_cloudcontrol makes any resource type the AWS Cloud Control
// API can provision a table: SELECT * FROM iasql_install('AWS::Logs::LogGroup')
// fetches the type's CloudFormation resource schema
// (cloudformation:DescribeType), and the engine stores it, creates the
// table the schema describes (package schema) and syncs it both ways
// through Cloud Control (package ccmapper), with the same modes, preview,
// commit and wait_for as the hand-written modules.
//
// The catalog is one per sidecar: its rate limit (IASQL_CC_RATE requests a
// second, 25 by default: AWS publishes none, and about 25 is what other
// tools settled on) is shared by every type's mapper and their polls.
// Every type's table has a region column (part of the identity, like the
// hand-written tables'): a type's resources are read in every enabled
// region of aws_regions where aws_account is installed (call.Scope), else
// in the sidecar's region (SetRegion), with one Cloud Control client per
// region and the one rate limit for all; a row is created in its region. A
// type whose list needs a parent (handlers.list.handlerSchema.required, as
// AWS::Logs::SubscriptionFilter needs a log group) is listed in each
// region under the parents its own rows there name, so one made in the
// cloud under a parent no row names is not imported. A type without a list handler (AWS::EC2::Instance,
// AWS::IAM::RolePolicy) holds only what is created from its table: the
// resources its rows name are read one by one (GetResource), and nothing
// is imported.
package aws_cloudcontrol

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"

	"github.com/iasql/iasql/modules/aws_cloudcontrol/ccmapper"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/ratelimit"
	"github.com/iasql/iasql/modules/aws_cloudcontrol/schema"
	"github.com/iasql/iasql/modules/module"
)

// typeName is the form of a CloudFormation resource type name:
// Organization::Service::Resource (AWS's "TypeName" pattern,
// https://docs.aws.amazon.com/AWSCloudFormation/latest/APIReference/API_DescribeType.html:
// [A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}).
var typeName = regexp.MustCompile(`^[A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}::[A-Za-z0-9]{2,64}$`)

// RegionsVersion ends the version of every type's module whose table has
// the region column (issue 22): a table installed before has the schema's
// digest alone as its version, and is upgraded
// (schema.Type.RegionUpgradeSQL).
const RegionsVersion = " regions"

// catalog is the module.Catalog of Cloud Control resource types.
type catalog struct {
	lim    *ratelimit.Limiter
	log    *slog.Logger
	budget int // Cloud Control calls a scheduled cycle may spend reading (ccmapper.Options.Budget)

	mu     sync.Mutex
	region string // the sidecar's (SetRegion); "" until set
}

// SetRegion tells the catalog the sidecar's region (its AWS
// configuration's): the region of the tables' rows where aws_account is
// not installed, and of the rows of a table installed before the tables
// had a region column. The sidecar sets it before its engine runs.
func (c *catalog) SetRegion(region string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.region = region
}

// sidecarRegion is the region SetRegion gave, else us-east-1 (the SDK
// configuration's fallback the mappers use too: module.Scope.Or).
func (c *catalog) sidecarRegion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.region == "" {
		return module.Scope{}.Or(aws.Config{}).Default
	}
	return c.region
}

// DefaultBudget is the Cloud Control calls a scheduled cycle with nothing
// to act on may spend reading the types: one second of the default rate.
const DefaultBudget = 25

// Catalog returns a catalog with a rate limit of its own (IASQL_CC_RATE
// requests a second, ratelimit.DefaultRate when unset) and a list budget
// (IASQL_CC_BUDGET calls a scheduled cycle, DefaultBudget when unset; 0
// reads every type every cycle).
func Catalog() module.Catalog {
	rate := 0.0
	if v, err := strconv.ParseFloat(os.Getenv("IASQL_CC_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	budget := DefaultBudget
	if v, err := strconv.Atoi(os.Getenv("IASQL_CC_BUDGET")); err == nil && v >= 0 {
		budget = v
	}
	return NewCatalog(rate, budget)
}

// NewCatalog is Catalog with its rate limit (requests a second; 0:
// ratelimit.DefaultRate) and list budget (calls a scheduled cycle; 0: no
// limit) given.
func NewCatalog(rate float64, budget int) module.Catalog {
	return &catalog{lim: ratelimit.New(rate, 0), log: slog.Default(), budget: budget}
}

// Offers reports whether name is a resource type name.
func (c *catalog) Offers(name string) bool { return typeName.MatchString(name) }

// Describe fetches the type's schema, refusing in one line a type that is
// unknown or that Cloud Control cannot provision, and warns once of each
// path the schema lists that names no property (ignored). It returns the
// schema in the form it is stored in (schema.ToStored: jsonb holds no
// NUL), which Module reads back.
func (c *catalog) Describe(ctx context.Context, cfg aws.Config, name string) ([]byte, error) {
	cl := cloudformation.NewFromConfig(cfg)
	t, err := schema.Describe(ctx, cl, name)
	if err != nil {
		return nil, err
	}
	for _, p := range t.Ignored {
		c.log.Warn("the resource schema lists a path that names no property; ignored", "type", t.TypeName, "list", p.List, "path", p.Path)
	}
	// A property named like the single identifier of another type of the
	// service names that type's resources: asked once, at the first
	// install, and kept with the schema (schema.StoredReferences).
	var refs []schema.StoredReference
	cands := t.NameCandidates()
	for _, prop := range slices.Sorted(maps.Keys(cands)) {
		other, err := schema.Describe(ctx, cl, cands[prop])
		switch {
		case errors.Is(err, schema.ErrNoSuchType), errors.Is(err, schema.ErrNotProvisionable):
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: look up %s, whose resources its property %s may name: %w", name, cands[prop], prop, err)
		}
		if schema.Referenced(other, prop) {
			refs = append(refs, schema.StoredReference{Property: prop, TypeName: other.TypeName})
		}
	}
	doc, err := schema.WithStoredReferences(t.Raw, refs)
	if err != nil {
		return nil, err
	}
	return schema.ToStored(doc)
}

// Module is the type's module: one table, made from the schema.
func (c *catalog) Module(name string, definition []byte) (module.Module, error) {
	doc, err := schema.FromStored(definition)
	if err != nil {
		return module.Module{}, fmt.Errorf("%s: %w", name, err)
	}
	t, err := schema.Parse(doc)
	if err != nil {
		return module.Module{}, fmt.Errorf("%s: %w", name, err)
	}
	if t.TypeName != name {
		return module.Module{}, fmt.Errorf("%s: the stored schema is of %s", name, t.TypeName)
	}
	spec := t.ModuleTable()
	digest, err := SchemaVersion(definition)
	if err != nil {
		return module.Module{}, fmt.Errorf("%s: %w", name, err)
	}
	region := c.sidecarRegion()
	version := digest + RegionsVersion
	m := module.Module{
		Name: name,
		// The schema it was made from, as a short digest: a type's table
		// changes only with its schema (and with the shape every table
		// has: RegionsVersion).
		Version: version,
		// The table's DDL comes from its declaration (InstallSQL); SQL
		// is the identity's constraint, its comments and the region's
		// default.
		SQL:       t.SQL() + t.RegionSQL(region),
		Uninstall: t.UninstallSQL(),
		// The reference columns' checks and links, again after a
		// migration adds one (iasql_refresh_schema, a table made by an
		// earlier sidecar).
		Checks: t.ChecksSQL(),
		Tables: []module.Table{spec},
		// A table installed before tables had a region column gets it
		// (whatever digest its sidecar recorded: the engine runs a made
		// module's upgrades to its version from any other; the step does
		// nothing to a table that has it).
		Upgrades: []module.Upgrade{{From: digest, To: version, SQL: t.RegionUpgradeSQL(region)}},
	}
	opts := ccmapper.Options{Budget: c.budget}
	switch {
	case !t.Listable:
		// No list handler: the resources to read are those the rows name
		// (and those the engine still knows by a record whose row is
		// gone, so a delete is seen), passed in call.Parents, the channel
		// modules have for what they derive from their rows.
		opts.Identities = func(call module.Call) ([]module.Record, error) {
			ps := call.Parents[spec.Name]
			out := make([]module.Record, len(ps))
			for i, p := range ps {
				out[i] = p
			}
			return out, nil
		}
		m.Prepare = func(rows map[string][]module.Record, call *module.Call) {
			call.SetParents(spec.Name, identitiesOf(t, rows[spec.Name]))
		}
	case len(t.ListParents) > 0:
		opts.Parents = func(call module.Call) ([]map[string]any, error) {
			return call.Parents[spec.Name], nil
		}
		m.Prepare = func(rows map[string][]module.Record, call *module.Call) {
			call.SetParents(spec.Name, parentsOf(t, rows[spec.Name]))
		}
	}
	m.Mappers = func(ctx context.Context, cfg aws.Config) (map[string]module.Reader, error) {
		return map[string]module.Reader{spec.Name: ccmapper.New(ccmapper.NewClients(cfg), t, c.lim, opts)}, nil
	}
	return m, nil
}

// SchemaVersion is the version of a type's module made from definition:
// "schema " and a short digest of the schema's canonical form, so that
// DescribeType's bytes (at the first install) and the text of the jsonb
// they are stored as (at every start after) give the same version. jsonb
// keeps neither whitespace, key order nor duplicate keys (the last one
// wins) and may print a number otherwise (1e2 as 100); the canonical form
// is the JSON value decoded and encoded again (keys sorted, numbers as
// float64 prints them), on which both agree.
func SchemaVersion(definition []byte) (string, error) {
	var v any
	if err := json.Unmarshal(definition, &v); err != nil {
		return "", fmt.Errorf("the schema is not JSON: %w", err)
	}
	canonical, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("encode the schema: %w", err)
	}
	sum := sha256.Sum256(canonical)
	return "schema " + hex.EncodeToString(sum[:6]), nil
}

// parentsOf are the distinct parents the rows name in each region: the
// values of the type's list-parent properties, as ListResources takes
// them, and the row's region under schema.RegionColumn.
func parentsOf(t *schema.Type, rows []module.Record) []map[string]any {
	var out []map[string]any
	var seen []string
	for _, r := range rows {
		p := map[string]any{schema.RegionColumn: r[schema.RegionColumn]}
		key := r.String(schema.RegionColumn) + "\x00"
		for _, prop := range t.ListParents {
			col, ok := t.Column(prop)
			if !ok || r[col.Name] == nil {
				p = nil
				break
			}
			p[prop] = col.ToProperty(r[col.Name])
			key += fmt.Sprint(p[prop]) + "\x00"
		}
		if p != nil && !slices.Contains(seen, key) {
			seen = append(seen, key)
			out = append(out, p)
		}
	}
	return out
}

// identitiesOf are the distinct identities the rows hold: each row's
// identifier columns and region, for the rows that have an identifier.
func identitiesOf(t *schema.Type, rows []module.Record) []map[string]any {
	var out []map[string]any
	seen := map[string]bool{}
	for _, r := range rows {
		id := t.IdentifierOf(r)
		key := r.String(schema.RegionColumn) + "\x00" + id
		if id == "" || seen[key] {
			continue
		}
		seen[key] = true
		p := map[string]any{schema.RegionColumn: r[schema.RegionColumn]}
		for _, col := range t.IdentifierColumns() {
			p[col] = r[col]
		}
		out = append(out, p)
	}
	return out
}
