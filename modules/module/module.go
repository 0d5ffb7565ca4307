// Package module is the contract between the engine and a cloud module: the
// tables a module installs, which of their columns are the user's and which
// the cloud's, and a mapper per table that reads, compares and writes one
// resource type in the cloud. A module says nothing about direction, intent
// or scheduling; the engine decides those.
package module

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Module is one installable module: a package under modules/.
type Module struct {
	Name      string   // e.g. "aws_s3"
	Version   string   // the module's own version
	DependsOn []string // modules that must be installed first
	// Prelude runs first at install: functions the tables' column defaults
	// call.
	Prelude string
	// SQL runs at install after the DDL of the tables (InstallSQL): their
	// constraints, triggers and functions, with COMMENT ON for every
	// object. Everything runs in one transaction; the engine registers
	// Tables in iasql_tables afterwards. Uninstall drops Tables in reverse
	// order, then runs Uninstall.
	SQL string
	// Checks runs at install after SQL, and again after the engine
	// migrates a table made from a definition to the module's declaration
	// (a new column added: a Cloud Control type's new property or new
	// reference): the checks and triggers of columns that may be added
	// later. It must be idempotent (CREATE OR REPLACE, IF EXISTS).
	Checks string
	// Uninstall runs at uninstall after the tables are dropped: it drops
	// every other object SQL and Prelude created (functions, triggers on
	// other modules' tables), so that nothing of the module is left to
	// break other modules or a later install (UninstallSQL). DROP ... IF
	// EXISTS, without CASCADE: an object another module still uses stops
	// the uninstall.
	Uninstall string
	Tables    []Table // in dependency order: a table after the tables it references
	// Upgrades are the module's SQL upgrades, each from one version to the
	// next (UpgradesFrom reads them from files named FROM--TO.sql). A
	// sidecar that starts on a database where the module is installed at
	// an older version applies the chain from there to Version, in one
	// transaction, before anything else touches the module's tables.
	Upgrades []Upgrade
	// Mappers builds the mappers, one per table name (a Mapper, or for a
	// read-only table a Reader), for a cloud
	// configuration (the SDK's standard chain: region, credentials,
	// AWS_ENDPOINT_URL and per-service endpoint overrides).
	Mappers func(ctx context.Context, cfg aws.Config) (map[string]Reader, error)
	// Prepare, when set, fills in what every mapper call of a cycle may
	// need from the module's own tables as the cycle read them (database
	// form, by table name): aws_account sets call.Scope, a Cloud Control
	// type listed under parents its call.Parents. It runs for each cycle
	// read, after the read-only tables are read and before any other mapper
	// reads the cloud; the engine passes the Call on to every mapper call.
	Prepare func(rows map[string][]Record, call *Call)
}

// Table describes a module table. Every module table has an integer primary
// key column "id" that only the database knows; references between module
// tables are foreign keys on ids.
type Table struct {
	Name string
	// Comment is the table's COMMENT ON TABLE.
	Comment string
	// Columns declare the table's columns but id (Column); Declare derives
	// the fields below from them, and DDL the CREATE TABLE.
	Columns  []Column
	declared bool
	// CloudID are the columns whose values identify the resource in the
	// cloud (e.g. a bucket's name). A Ref column may be part of it. They
	// are declarative columns, or one feedback column when the cloud
	// generates the identity (a VPC's vpc_id): a row whose identity is
	// still NULL is a resource to create, and the identity is written
	// back into it once created.
	CloudID []string
	// Declarative columns are the user's: the desired state, compared by
	// the mapper's Equal and written to the cloud.
	Declarative []string
	// Feedback columns are the cloud's (generated ids, ARNs, timestamps):
	// written back into rows by the engine, never written to the cloud,
	// never a reason to change the cloud.
	Feedback []string
	// CreateOnly are the declarative columns that cannot change in place:
	// a change to any of them replaces the resource (the mapper's Update
	// returns ErrReplace for it). Preview and the cycle records say so
	// before anything is done.
	CreateOnly []string
	// Refs maps a column that references another module table by id to
	// that table. In cloud records the column holds the referenced
	// resource's cloud id (as CloudIDOf renders it) instead of the database id.
	Refs map[string]string
	// RefsMany maps a column that references several records of another
	// module table to that table (an instance's security groups): the
	// column is bigint[] of ids; in cloud records it holds a []any of the
	// referenced resources' cloud ids (as CloudIDOf renders them), in any
	// order (compared as a set). The engine orders, replaces and repoints
	// through it as through Refs.
	RefsMany map[string]string
	// Named maps a reference column (of Refs or RefsMany) whose resource
	// names the referenced one in a column of its own (a Cloud Control
	// property holding a role's ARN, an API's id) to that naming: the
	// engine fills the naming column from the referenced rows, and finds
	// the reference from it in what the cloud reads (Column.Names).
	Named map[string]Naming
	// Initial columns are the database's own (not the cloud's, not
	// compared), given a value from the cloud record when a resource is
	// imported and left to the user afterwards: aws_regions.is_default.
	Initial []string
	// ReadOnly tables mirror what users cannot change in the cloud (the
	// list of regions): every difference is settled from the cloud, whatever
	// the mode, and the mapper's Create, Update and Delete are never called.
	ReadOnly bool
	// Region names the column (or, in a table that has no such column, the
	// key of its cloud records) that holds the region a resource lives in
	// ("" for a global resource). The engine uses it to tell which rows and
	// resources a region whose reads failed (PartialError) leaves
	// unverified. A row without it is in its parent's region (Refs).
	Region string
	// MadeByCloud: the cloud makes resources of this table by itself when
	// it creates or changes a parent (a VPC's default security group, a new
	// group's default egress rule). A cycle someone waits for reads such a
	// table whole after it changed a parent, so what the cloud added shows
	// when the commit returns; other tables under a changed parent are left
	// to the next automatic cycle.
	MadeByCloud bool
	// Created names the feedback column that holds when the cloud made a
	// resource (an instance's launch_time), if the table has one. Of the
	// resources one create's client token made more than once (an endpoint
	// that ignored the token), the engine keeps the one a row holds, else
	// the oldest (then the least identity), and deletes the others.
	Created string
}

// CloudIDOf renders the identity of a record in cloud form: the value of
// the one CloudID column, or a JSON array of the values (as strings, ""
// for NULL) when there are several. Mappers whose records reference
// another table use it to render the referenced resource's identity.
func CloudIDOf(t Table, r Record) string {
	if len(t.CloudID) == 1 {
		return r.String(t.CloudID[0])
	}
	parts := make([]string, len(t.CloudID))
	for i, c := range t.CloudID {
		parts[i] = r.String(c)
	}
	js, _ := json.Marshal(parts)
	return string(js)
}

// SplitCloudID reads an identity CloudIDOf rendered for a table of n
// CloudID columns back into its n values; false when id is no such
// identity (no record CloudIDOf renders has it).
func SplitCloudID(id string, n int) ([]string, bool) {
	if n == 1 {
		return []string{id}, true
	}
	var parts []string
	if err := json.Unmarshal([]byte(id), &parts); err != nil || len(parts) != n {
		return nil, false
	}
	return parts, true
}

// IdentityOf reads an identity CloudIDOf rendered back into a record of
// t's CloudID columns (a Getter's ids, a reference's value); false when id
// is no identity of t.
func IdentityOf(t Table, id string) (Record, bool) {
	parts, ok := SplitCloudID(id, len(t.CloudID))
	if !ok {
		return nil, false
	}
	r := make(Record, len(parts))
	for i, c := range t.CloudID {
		r[c] = parts[i]
	}
	return r, true
}

// Record is one resource as column name -> value, in the table's shape. The
// values are JSON-like: nil, bool, string, json.Number, []any, map[string]any.
// Timestamps are RFC 3339 strings. Columns a record lacks are NULL.
type Record map[string]any

// Reader reads one resource type in the cloud. Every table's mapper is a
// Reader; a read-only table's (Table.ReadOnly) is nothing more.
type Reader interface {
	// Read returns every resource of the type in the cloud. Values may be
	// in any natural form (an int32, a *string, a time.Time, an SDK enum):
	// the engine makes them canonical by the table's columns
	// (Table.Canonical) before it compares anything. call says the
	// scope and how fresh the read must be (call.Fresh).
	Read(ctx context.Context, call Call) ([]Record, error)
}

// Mapper reads and writes one resource type in the cloud: the mapper of
// every table that is not read-only.
type Mapper interface {
	Reader
	// Create creates the resource and returns it as the cloud now has it
	// (feedback columns filled). call.Token is its client token.
	Create(ctx context.Context, call Call, want Record) (Record, error)
	// Update makes the cloud resource have match want's declarative
	// columns, and returns it as the cloud now has it. It returns
	// ErrReplace when the difference can only be made by a new resource.
	Update(ctx context.Context, call Call, want, have Record) (Record, error)
	// Delete deletes the resource.
	Delete(ctx context.Context, call Call, have Record) error
}

// Equaler is implemented by a mapper whose declarative columns are not
// all compared by value (policy documents by meaning). Equal reports
// whether the database record and the cloud record agree on every
// declarative column. Without it, the engine asks the mapper's Comparer,
// or compares by value (Table.Differing: Same, many-valued references as
// sets): see module.Equal.
type Equaler interface {
	Equal(db, cloud Record) bool
}

// ErrReplace is returned by Update when the change needs a new resource
// (create-only properties).
var ErrReplace = errors.New("change needs a replacement")

// Temporary is implemented by the mapper of a resource that can only be
// replaced and whose identity must stay unique while two exist (a security
// group's name in its VPC). Temporary returns want under a temporary
// identity, the same for the same old cloud id (so a retried create finds
// the one already made): the engine creates that stand-in, moves what
// references the record to it, deletes the old resource, creates want, moves
// everything back and deletes the stand-in.
type Temporary interface {
	Temporary(want Record, oldCloudID string) Record
}

// StandInName is the name of a stand-in (what a Temporary of a resource
// known by name returns under): name given a suffix derived from the old
// resource's cloud id (so that a retried create finds the same stand-in),
// cut to at most max characters.
func StandInName(name, oldCloudID string, max int) string {
	sum := sha256.Sum256([]byte(oldCloudID))
	suffix := "-iasql-" + hex.EncodeToString(sum[:4])
	if len(name)+len(suffix) > max {
		name = name[:max-len(suffix)]
	}
	return name + suffix
}

// DeleteFirst is implemented by the mapper of a resource whose
// replacement must delete the old resource before creating the new one
// (a CloudFormation schema's replacementStrategy delete_then_create), where
// the engine would otherwise create the new one first.
type DeleteFirst interface {
	DeleteBeforeCreate() bool
}

// ErrKeep is returned by Delete for a resource the cloud does not let
// anyone delete (a VPC's default security group): the engine imports it
// back into the database instead of trying again.
var ErrKeep = errors.New("the cloud does not allow deleting this resource")

// TerminalError is a cloud failure that retrying cannot fix (bad input,
// permissions): the engine reports it and does not retry the task in the
// cycle.
type TerminalError struct{ Err error }

func (e *TerminalError) Error() string { return e.Err.Error() }
func (e *TerminalError) Unwrap() error { return e.Err }

// Idempotency of creates. Before a create, the engine persists a client
// token for the record and passes it to the Create call (Call.Token). A
// mapper whose API takes an idempotency token (ClientToken) sends it; a
// mapper whose API takes none but whose resources take tags at creation
// tags the resource with TokenTag = the token, reports it in the records it
// reads under TokenTag, and implements Finder. After any crash the engine
// then finds the resource that token made and adopts it, instead of
// creating a second one or importing it as a second row.

// TokenTag is the tag key (and the key in read records) that carries the
// client token of the create that made a resource.
const TokenTag = "iasql:client-token"

// ReservedTag reports whether a tag key is AWS's own: keys starting with
// aws: (in any case) are reserved for AWS (CloudFormation's
// aws:cloudformation:stack-name, Auto Scaling's aws:autoscaling:groupName);
// no one can set, change or delete them, and they do not count against a
// resource's tag limit. "Tag your Amazon EC2 resources", Tag restrictions:
// https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions;
// ELB: https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-tags.html.
// Mappers leave them out of tags columns, whose constraints refuse them
// (aws_account's aws_tags_check), so that reading them back never fails an
// import and a tag update never tries to delete them.
func ReservedTag(key string) bool {
	return len(key) >= 4 && strings.EqualFold(key[:4], "aws:")
}

// Finder is implemented by the mapper of a resource whose identity the
// cloud generates and whose create call takes no idempotency token (an EC2
// VPC or subnet). Its Create tags the resource with the call's client
// token and must not be retried by the SDK (a retry of a create that AWS
// did act on would make a second resource); the engine retries it, after
// Find reports (nil, nil) that no resource carries call.Token.
type Finder interface {
	Find(ctx context.Context, call Call, want Record) (Record, error)
}

// Getter is implemented by a mapper that can read its resources one by one.
// A cycle someone waits for (a commit beside thousands of resources) asks it
// for the resources it acts on instead of listing the whole table. Get
// returns those of ids (identities as CloudIDOf renders them) that exist,
// read fresh and as Read would return them (the same columns, the same
// scope: a resource Read would leave out is left out); one that does not
// exist is simply absent. An error means nothing can be said of any of
// them (the engine then treats the table as unverified for the cycle).
type Getter interface {
	Get(ctx context.Context, call Call, ids []string) ([]Record, error)
}

// Comparer is implemented by a mapper whose columns are compared
// otherwise than by their values alone (absent equal to a schema's
// default, arrays as sets): it names the columns of cols in which a
// database record and a cloud record differ, as its Equal sees them. The
// engine asks it to tell a create-only change (a replacement) from none,
// and to describe changes.
type Comparer interface {
	Differing(cols []string, db, cloud Record) []string
}

// Catalog offers modules made on demand: a name the sidecar's built-in
// modules lack (a CloudFormation resource type such as
// AWS::Logs::LogGroup) becomes a module from a definition the cloud
// describes (the type's schema). The engine stores the definition at the
// first install (iasql_modules.definition), so the table, previews,
// restarts and reinstalls are made from the same one.
type Catalog interface {
	// Offers reports whether name is of the catalog's form.
	Offers(name string) bool
	// Describe fetches name's definition from the cloud; an error in one
	// line for what cannot be a module (unknown, not provisionable).
	Describe(ctx context.Context, cfg aws.Config, name string) ([]byte, error)
	// Module builds the module of a definition Describe returned.
	Module(name string, definition []byte) (Module, error)
}

// Paged is implemented by a Getter whose Read lists the resources in pages
// of PageSize (Cloud Control: 25). A cycle that acts on more records than
// listing the whole table takes pages reads the table whole instead of
// getting them one by one.
type Paged interface {
	PageSize() int
}

// Pending is returned, as the error, by Create, Update or Delete when the
// cloud has taken the request and works on it for a while (an instance in
// pending, a Cloud Control request in progress). The engine persists the
// handle before it moves on and asks the mapper's Poll about it in later
// passes or cycles; nothing waits on it meanwhile.
type Pending struct {
	// Handle names the operation for Poll: a request token, an instance id.
	Handle string
	// RetryAfter is when to ask first (the cloud's advice); 0 lets the
	// engine choose.
	RetryAfter time.Duration
	// Record is what is known of the resource already (at least its
	// identity, when the cloud has given it one), or nil.
	Record Record
}

func (p *Pending) Error() string { return "in progress in the cloud (" + p.Handle + ")" }

// Poller is implemented by the mapper of a resource whose changes can take
// long (its Create, Update or Delete may return *Pending).
type Poller interface {
	// Poll asks about an operation: the resource as the cloud has it once
	// done (nil after a delete), a *Pending while it still runs (with a new
	// handle or advice if the cloud gave them), or the error it failed with
	// (a TerminalError when retrying cannot help).
	Poll(ctx context.Context, call Call, handle string) (Record, error)
}

// Ref is one reference column of a table: the column, the table it
// references, and whether it holds several references (Table.RefsMany).
type Ref struct {
	Column, Table string
	Many          bool
	// Named: the resource names the referenced one in a column of its own
	// (Table.Named); zero for a reference whose cloud form is the
	// referenced identity alone.
	Named Naming
}

// Naming is how a resource names the one a reference column points at:
// Column is the referencing table's column that holds the name as the
// cloud writes it, By the referenced table's column whose value it is
// ("" for its cloud identity, as CloudIDOf renders it).
type Naming struct {
	Column, By string
}

// RefsOf lists a table's reference columns, single (Refs) and many
// (RefsMany), by column name.
func RefsOf(t Table) []Ref {
	out := make([]Ref, 0, len(t.Refs)+len(t.RefsMany))
	for col, parent := range t.Refs {
		out = append(out, Ref{Column: col, Table: parent, Named: t.Named[col]})
	}
	for col, parent := range t.RefsMany {
		out = append(out, Ref{Column: col, Table: parent, Many: true, Named: t.Named[col]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Column < out[j].Column })
	return out
}

// Values are the references a record's column holds, as strings: the one
// value of a single reference, each element of a many-valued one; none
// for NULL (or an empty array).
func (r Ref) Values(rec Record) []string {
	v := rec[r.Column]
	if v == nil {
		return nil
	}
	if !r.Many {
		return []string{rec.String(r.Column)}
	}
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, e := range list {
		if e != nil {
			out = append(out, Record{"v": e}.String("v"))
		}
	}
	return out
}
