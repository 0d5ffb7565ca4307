// Package testkit is what the tests of every package share to run the
// product: waiting for a condition with a deadline, the iasql binary as a
// child process with its log, the AWS emulator on a loopback port and SDK
// clients for it. PostgreSQL is pgtest's; a whole sidecar in the test's own
// process is enginetest's (built on this).
package testkit

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Interval is how long Poll waits between two tries of a condition.
const Interval = 20 * time.Millisecond

// ErrNotYet is the last error of a condition that has none of its own to
// report (Until).
var ErrNotYet = errors.New("the condition did not hold")

// Poll tries cond until it returns nil, every Interval, for timeout at the
// most or until ctx ends. It returns nil once cond has, else an error that
// says what it waited for, for how long, and cond's last error. It does not
// touch a testing.T, so goroutines other than the test's may use it.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := cond()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("stopped waiting for %s (%w): %w", what, context.Cause(ctx), err)
		case <-time.After(Interval):
		}
	}
}

// Wait is Poll failing t when cond has not held within timeout.
func Wait(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	if err := Poll(context.Background(), timeout, what, cond); err != nil {
		t.Fatal(err)
	}
}

// Until is Wait for a condition that has no error to report.
func Until(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	Wait(t, timeout, what, func() error {
		if cond() {
			return nil
		}
		return ErrNotYet
	})
}

// WaitQuery waits until query, which returns one boolean, returns true on
// conn; a failing query is tried again, and its error is the last one
// reported.
func WaitQuery(t testing.TB, conn *pgx.Conn, timeout time.Duration, what, query string, args ...any) {
	t.Helper()
	Wait(t, timeout, what, func() error {
		var ok bool
		if err := conn.QueryRow(context.Background(), query, args...).Scan(&ok); err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%s returned false", query)
		}
		return nil
	})
}
