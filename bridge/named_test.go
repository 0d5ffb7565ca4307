package bridge_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/iasql/iasql/internal/enginetest"
	"github.com/iasql/iasql/modules/module"
)

// keyCloud is a cloud of keys (their ids and ARNs the cloud's) and vaults
// that name a key by ARN, as a Cloud Control resource names another by a
// property: the test bed of named references (module.Column.Names).
type keyCloud struct {
	mu     sync.Mutex
	n      int
	keys   map[string]module.Record // by key_id
	vaults map[string]module.Record // by name
}

type (
	keyMapper   struct{ c *keyCloud }
	vaultMapper struct{ c *keyCloud }
)

func (m keyMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return clones(m.c.keys), nil
}

func (m keyMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	m.c.n++
	id := fmt.Sprintf("k-%d", m.c.n)
	r := module.Record{"key_id": id, "arn": "arn:test:key/" + id, "alias": want["alias"]}
	m.c.keys[id] = r
	return maps.Clone(r), nil
}

// Update: the alias is create-only, so any change needs a new key.
func (m keyMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return nil, module.ErrReplace
}

// Delete refuses a key a vault still names, as AWS refuses to delete what
// is in use: the engine must delete or repoint the vault first.
func (m keyMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	arn := m.c.keys[have.String("key_id")].String("arn")
	for name, v := range m.c.vaults {
		if v.String("kms_key") == arn {
			return &module.TerminalError{Err: fmt.Errorf("DependencyViolation: key %s is used by vault %s", arn, name)}
		}
	}
	delete(m.c.keys, have.String("key_id"))
	return nil
}

func (m vaultMapper) Read(ctx context.Context, call module.Call) ([]module.Record, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	return clones(m.c.vaults), nil
}

// Create and Update take the vault's properties only: the key it uses is
// kms_key (an ARN), whatever else the record holds.
func (m vaultMapper) Create(ctx context.Context, call module.Call, want module.Record) (module.Record, error) {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	r := module.Record{"name": want["name"], "kms_key": want["kms_key"]}
	m.c.vaults[want.String("name")] = r
	return maps.Clone(r), nil
}

func (m vaultMapper) Update(ctx context.Context, call module.Call, want, have module.Record) (module.Record, error) {
	return m.Create(ctx, call, want)
}

func (m vaultMapper) Delete(ctx context.Context, call module.Call, have module.Record) error {
	m.c.mu.Lock()
	defer m.c.mu.Unlock()
	delete(m.c.vaults, have.String("name"))
	return nil
}

func clones(in map[string]module.Record) []module.Record {
	out := make([]module.Record, 0, len(in))
	for _, r := range in {
		out = append(out, maps.Clone(r))
	}
	return out
}

func keyModule(c *keyCloud) module.Module {
	keys := module.Table{Name: "test_key", Comment: "Keys.", Columns: []module.Column{
		{Name: "key_id", Type: "text", Kind: module.Feedback, CloudID: true, Comment: "The cloud's id."},
		{Name: "arn", Type: "text", Kind: module.Feedback, Comment: "The cloud's ARN."},
		{Name: "alias", Type: "text", Kind: module.Declarative, CreateOnly: true, Comment: "Alias: a change replaces the key."},
	}}.Declare()
	vaults := module.Table{Name: "test_vault", Comment: "Vaults.", Columns: []module.Column{
		{Name: "name", Type: "text", Kind: module.Declarative, CloudID: true, NotNull: true, Comment: "Name."},
		{Name: "kms_key", Type: "text", Kind: module.Declarative, Comment: "ARN of the key (the cloud's property)."},
		{Name: "kms_key_ref", Type: "integer", Kind: module.Declarative, Ref: "test_key", Names: "kms_key", NamedBy: "arn", Comment: "The key's row."},
	}}.Declare()
	return module.Module{
		Name: "key_test", Version: "0.0.1",
		SQL: `ALTER TABLE public.test_vault ADD CONSTRAINT test_vault_key_fk FOREIGN KEY (kms_key_ref) REFERENCES public.test_key (id);
		      COMMENT ON CONSTRAINT test_vault_key_fk ON public.test_vault IS 'A vault''s key row.';`,
		Tables: []module.Table{keys, vaults},
		Mappers: func(context.Context, aws.Config) (map[string]module.Reader, error) {
			return map[string]module.Reader{"test_key": keyMapper{c}, "test_vault": vaultMapper{c}}, nil
		},
	}
}

// TestNamedReferences: a resource that names another by a property of its
// own (a vault naming its key by ARN, as Cloud Control types do) takes a
// reference on database ids: made with its key in one commit, the
// property filled from the key's ARN once the cloud gave it; imported
// with the reference found from the property (NULL for a key the database
// does not hold); repointed by a change of the reference; deleted before
// its key.
func TestNamedReferences(t *testing.T) {
	t.Parallel()
	c := &keyCloud{keys: map[string]module.Record{}, vaults: map[string]module.Record{}}
	e := enginetest.New(t, srv, enginetest.Options{Modules: []module.Module{keyModule(c)}, Install: []string{"key_test"}})
	vault := func(name string) module.Record {
		c.mu.Lock()
		defer c.mu.Unlock()
		return maps.Clone(c.vaults[name])
	}
	keyARN := func(alias string) string {
		var arn string
		if err := e.DB.QueryRow(context.Background(), `SELECT arn FROM test_key WHERE alias = $1`, alias).Scan(&arn); err != nil {
			t.Fatalf("key %s: %v", alias, err)
		}
		return arn
	}

	// One transaction, one commit: the key, then the vault named by it.
	e.Exec(`CALL iasql_begin()`,
		`INSERT INTO test_key (alias) VALUES ('a')`,
		`INSERT INTO test_vault (name, kms_key_ref) VALUES ('v1', currval('test_key_id_seq'))`,
		`CALL iasql_commit()`)
	arnA := keyARN("a")
	if got := vault("v1").String("kms_key"); got != arnA || arnA == "" {
		t.Fatalf("vault v1 in the cloud names key %q, want a's ARN %q", got, arnA)
	}
	if n := e.Count(`SELECT count(*) FROM test_vault WHERE name = 'v1' AND kms_key = '` + arnA + `' AND kms_key_ref = (SELECT id FROM test_key WHERE alias = 'a')`); n != 1 {
		t.Error("the row of v1 does not show the key's ARN beside its reference after the commit")
	}

	// Made elsewhere: the reference is found from the ARN; an ARN no row
	// holds leaves it NULL and stays.
	c.mu.Lock()
	c.vaults["v2"] = module.Record{"name": "v2", "kms_key": arnA}
	c.vaults["v3"] = module.Record{"name": "v3", "kms_key": "arn:test:key/elsewhere"}
	c.mu.Unlock()
	e.Exec(`CALL iasql_refresh()`)
	if n := e.Count(`SELECT count(*) FROM test_vault WHERE name = 'v2' AND kms_key_ref = (SELECT id FROM test_key WHERE alias = 'a')`); n != 1 {
		t.Error("v2, made in the cloud naming key a, was not imported with a's row as its reference")
	}
	if n := e.Count(`SELECT count(*) FROM test_vault WHERE name = 'v3' AND kms_key = 'arn:test:key/elsewhere' AND kms_key_ref IS NULL`); n != 1 {
		t.Error("v3, naming a key the database does not hold, was not imported with its ARN and no reference")
	}
	if got := vault("v3").String("kms_key"); got != "arn:test:key/elsewhere" {
		t.Errorf("the cloud's v3 was changed to %q", got)
	}

	// Repointed: the reference changed to another key's row.
	e.Exec(`INSERT INTO test_key (alias) VALUES ('b')`, `CALL iasql_commit()`)
	arnB := keyARN("b")
	e.Exec(`UPDATE test_vault SET kms_key_ref = (SELECT id FROM test_key WHERE alias = 'b') WHERE name = 'v1'`, `CALL iasql_commit()`)
	if got := vault("v1").String("kms_key"); got != arnB {
		t.Errorf("after repointing v1 to key b, the cloud's v1 names %q, want %q", got, arnB)
	}
	if n := e.Count(`SELECT count(*) FROM test_vault WHERE name = 'v1' AND kms_key = '` + arnB + `'`); n != 1 {
		t.Error("the row of v1 does not show key b's ARN after the repoint")
	}

	// The key replaced (a new id and ARN): the vault is repointed to the
	// new key before the old one is deleted (which AWS refuses while in use).
	e.Exec(`UPDATE test_key SET alias = 'b2' WHERE alias = 'b'`, `CALL iasql_commit()`)
	arnB2 := keyARN("b2")
	if got := vault("v1").String("kms_key"); arnB2 == arnB || got != arnB2 {
		t.Errorf("after key b's replacement, the cloud's v1 names %q, want the new key's %q (the old was %q)", got, arnB2, arnB)
	}
	c.mu.Lock()
	for _, k := range c.keys {
		if k.String("arn") == arnB {
			t.Error("the replaced key b is still in the cloud")
		}
	}
	c.mu.Unlock()

	// A commit with nothing to do changes nothing in the cloud.
	before := fmt.Sprint(vault("v1"), vault("v2"), vault("v3"))
	e.Exec(`CALL iasql_refresh()`)
	if after := fmt.Sprint(vault("v1"), vault("v2"), vault("v3")); after != before {
		t.Errorf("a refresh with nothing to do changed the cloud: %s -> %s", before, after)
	}

	// Deleted together: the vaults first, then the key they name.
	e.Exec(`CALL iasql_begin()`,
		`DELETE FROM test_vault WHERE kms_key_ref = (SELECT id FROM test_key WHERE alias = 'a')`,
		`DELETE FROM test_key WHERE alias = 'a'`,
		`CALL iasql_commit()`)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range c.keys {
		if k.String("arn") == arnA {
			t.Error("key a is still in the cloud after its delete was committed with its vault's")
		}
	}
	if _, ok := c.vaults["v2"]; ok {
		t.Error("vault v2 is still in the cloud")
	}
}
