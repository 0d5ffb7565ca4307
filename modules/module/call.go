package module

import (
	"github.com/aws/aws-sdk-go-v2/aws"
)

// Call is what the engine gives every call of a mapper beside the
// context.Context (which carries only cancellation and deadlines): the
// cycle's scope, what modules derived from their tables for the cycle, how
// fresh a read must be, and a create's client token. A mapper takes it as a
// parameter and hands it on to what it calls; nothing of it travels in the
// context.
type Call struct {
	// Scope is the part of the account the cycle works in, as aws_account's
	// Prepare derives it from aws_regions; zero when aws_account is not
	// installed (or no region is enabled yet): Scope.Or then gives the SDK
	// configuration's region.
	Scope Scope
	// Parents are, by table, the parents a table's rows name when its
	// listing needs a parent (a Cloud Control type whose list handler needs
	// parent properties: one map of those properties per parent, as
	// ListResources takes them); the table's module's Prepare sets them
	// (SetParents).
	Parents map[string][]map[string]any
	// Fresh says which resources a Read or Get must read anew instead of
	// reusing what the mapper remembered of them.
	Fresh Fresh
	// Token is a Create's client token, and the one a Find looks for (""
	// elsewhere; see TokenTag for how mappers use it).
	Token string
}

// SetParents sets the parents of table's listing (Call.Parents).
func (c *Call) SetParents(table string, parents []map[string]any) {
	if c.Parents == nil {
		c.Parents = map[string][]map[string]any{}
	}
	c.Parents[table] = parents
}

// AllFresh is c asking every read for the cloud's present state: what a
// mapper reads back after a change, or when a Get must be fresh.
func (c Call) AllFresh() Call {
	c.Fresh = Fresh{All: true}
	return c
}

// Fresh says which resources a read must read anew rather than reuse what
// a mapper remembered (per-resource details read recently, internal/detail).
// Explicit cycles (iasql_commit, iasql_rollback, iasql_preview, install)
// read everything fresh; a commit scoped to the records it acts on reads
// those fresh and may reuse, for every other resource, what was read
// recently, as automatic cycles do: a commit beside 10,000 unchanged
// buckets then costs list calls, not 10,000 detail reads.
type Fresh struct {
	// All: every resource.
	All bool
	// Names: the resources known by these identity values (a bucket's
	// name, a role's name: what the records a commit acts on are known by).
	Names map[string]bool
}

// For reports whether a read must not reuse what a mapper remembered of the
// resource known by any of names.
func (f Fresh) For(names ...string) bool {
	if f.All {
		return true
	}
	for _, n := range names {
		if f.Names[n] {
			return true
		}
	}
	return false
}

// Scope is the part of the account a cycle works in: the regions whose
// resources the mappers read and write, and the default region. The
// aws_account module sets it from its aws_regions table (Module.Prepare);
// without it, the scope is the SDK configuration's region (Or).
type Scope struct {
	Regions []string // enabled regions, sorted
	Default string   // the default region; one of Regions
}

// Set reports whether s holds regions: false when aws_account is not
// installed, and then a mapper whose listing covers every region (S3's
// ListBuckets) keeps everything it lists.
func (s Scope) Set() bool { return len(s.Regions) > 0 }

// Or returns s when it is set, else the one region of cfg (us-east-1 when
// cfg names none).
func (s Scope) Or(cfg aws.Config) Scope {
	if s.Set() {
		return s
	}
	r := cfg.Region
	if r == "" {
		r = "us-east-1"
	}
	return Scope{Regions: []string{r}, Default: r}
}
