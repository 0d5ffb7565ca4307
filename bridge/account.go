package bridge

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/iasql/iasql/bridge/store"
	"github.com/jackc/pgx/v5"
)

// The database is bound to one cloud account: on first use the engine
// records (iasql_account) the AWS account its credentials belong to and the
// endpoint it syncs with. A sidecar that finds other credentials (another
// account, another endpoint) runs no cycle, automatic or requested, and
// answers every request that would run one with one line naming the
// database's account and how to rebind it; capture goes on. The rebind is
// deliberate: an administrator calls SELECT iasql_rebind_account(), which
// binds the database to the running sidecar's account.
//
// The account comes from STS GetCallerIdentity (query protocol, POST
// Action=GetCallerIdentity&Version=2011-06-15; the answer's
// GetCallerIdentityResult holds Account, Arn and UserId; no permission is
// needed): https://docs.aws.amazon.com/STS/latest/APIReference/API_GetCallerIdentity.html

// accountCheck caches the outcome of the check for one engine leadership
// (Lead resets it).
type accountCheck struct {
	mu      sync.Mutex
	checked bool
	err     error    // nil: bound to this sidecar's account
	me      identity // this sidecar's, as STS said (once checked)
}

// identity is an account and endpoint, as recorded or as found.
// Endpoint "" is AWS's own endpoints.
type identity store.Account

func (i identity) String() string {
	if i.Endpoint == "" {
		return "AWS account " + i.Account + " (AWS's own endpoints)"
	}
	return "AWS account " + i.Account + " at endpoint " + i.Endpoint
}

// runsCycle reports whether a request runs (or reads for) a cycle: those
// are refused while the binding mismatches.
func runsCycle(kind string) bool {
	switch kind {
	case "commit", "rollback", "refresh", "preview", "install", "cycle":
		return true
	}
	return false
}

// resetAccount forgets the last leadership's check.
func (e *Engine) resetAccount() {
	e.acct.mu.Lock()
	e.acct.checked, e.acct.err = false, nil
	e.acct.mu.Unlock()
}

// whoAmI asks STS which account the sidecar's credentials belong to.
func (e *Engine) whoAmI(ctx context.Context) (identity, error) {
	out, err := sts.NewFromConfig(e.aws).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return identity{}, fmt.Errorf("cannot tell which AWS account the sidecar's credentials belong to (STS GetCallerIdentity): %w", err)
	}
	if aws.ToString(out.Account) == "" {
		return identity{}, errors.New("STS GetCallerIdentity named no account")
	}
	return identity{Account: aws.ToString(out.Account), Arn: aws.ToString(out.Arn), Endpoint: aws.ToString(e.aws.BaseEndpoint)}, nil
}

// checkAccount says whether this sidecar may run cycles: nil when the
// database is bound to its account and endpoint (binding it on first use),
// otherwise the one line to answer with. The outcome is cached for the
// leadership; a failure to ask STS or the database is not.
func (e *Engine) checkAccount(ctx context.Context) error {
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	if e.acct.checked {
		return e.acct.err
	}
	me, err := e.whoAmI(ctx)
	if err != nil {
		return err
	}
	var bound identity
	var found bool
	err = e.service(ctx, func(c *pgx.Conn) error {
		acc, ok, err := store.ReadAccount(ctx, c)
		if err != nil || ok {
			bound, found = identity(acc), ok
			return err
		}
		if err := store.BindAccount(ctx, c, store.Account(me)); err != nil {
			return err
		}
		e.log.Info("database bound to the sidecar's account", "account", me.Account, "endpoint", me.Endpoint, "arn", me.Arn)
		return nil
	})
	if err != nil {
		return err
	}
	e.acct.checked, e.acct.me = true, me
	if found && (bound.Account != me.Account || bound.Endpoint != me.Endpoint) {
		e.acct.err = fmt.Errorf("this database is bound to %s, but this sidecar's credentials are for %s: it runs no cycle; check AWS_ENDPOINT_URL and the credentials, or to sync this database with %s from now on, an administrator runs SELECT iasql_rebind_account()",
			bound, me, me)
		e.log.Error(e.acct.err.Error())
	}
	return e.acct.err
}

// rebindAccount binds the database to this sidecar's account and endpoint,
// for a role that may execute iasql_rebind_account().
func (e *Engine) rebindAccount(ctx context.Context, role string) (any, error) {
	var allowed bool
	if err := e.service(ctx, func(c *pgx.Conn) (err error) {
		allowed, err = store.MayExecute(ctx, c, role, "public.iasql_rebind_account()")
		return err
	}); err != nil {
		return nil, err
	}
	if !allowed {
		return nil, fmt.Errorf("role %q may not rebind the database's account: it needs EXECUTE on iasql_rebind_account()", role)
	}
	me, err := e.whoAmI(ctx)
	if err != nil {
		return nil, err
	}
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	var was identity
	err = e.service(ctx, func(c *pgx.Conn) (err error) {
		prev, err := store.RebindAccount(ctx, c, store.Account(me))
		was = identity(prev)
		return err
	})
	if err != nil {
		return nil, err
	}
	e.acct.checked, e.acct.err = true, nil
	msg := "the database is bound to " + me.String()
	if was.Account != "" {
		msg += "; it was bound to " + was.String()
	}
	e.log.Warn("account rebound by "+role, "account", me.Account, "endpoint", me.Endpoint, "previous_account", was.Account, "previous_endpoint", was.Endpoint)
	return map[string]string{"message": msg}, nil
}

// ownARN is the sidecar's identity (STS GetCallerIdentity's Arn), as the
// leadership's account check found it ("" before).
func (e *Engine) ownARN() string {
	e.acct.mu.Lock()
	defer e.acct.mu.Unlock()
	return e.acct.me.Arn
}
