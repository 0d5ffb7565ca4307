package main

import (
	"context"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// floodRole is the role without grants that floods the sidecar in
// commitUnderFlood (roles are cluster-wide: created once, kept).
const floodRole = "iasql_bench_flood"

// floodBatch is how many requests the flooding session sends at a time; it
// holds each one's lock (so the sidecar verifies, then refuses it) until
// the sidecar has counted the batch, then sends the next.
const floodBatch = 500

// commitUnderFlood measures CALL iasql_commit() for one new bucket, as
// INSERT + commit (median of rounds), first alone (usual) and then while a
// role without grants floods the sidecar with install requests it proves
// as iasql_request does (flood): every one is refused, and the figure says
// what such a flood costs a writer (issue 20: within 1 s of usual).
// dsn is the database's, as the bench's superuser.
func commitUnderFlood(ctx context.Context, conn *pgx.Conn, dsn string, rounds int) (usual, flood float64, err error) {
	commit := func(name string) (float64, error) {
		t0 := time.Now()
		if _, err := conn.Exec(ctx, fmt.Sprintf(`INSERT INTO bucket (name) VALUES ('%s')`, name)); err != nil {
			return 0, err
		}
		if _, err := conn.Exec(ctx, `CALL iasql_commit()`); err != nil {
			return 0, fmt.Errorf("commit %s: %w", name, err)
		}
		return float64(time.Since(t0)) / float64(time.Millisecond), nil
	}
	var alone []float64
	for i := range rounds {
		ms, err := commit(fmt.Sprintf("usual-%02d", i))
		if err != nil {
			return 0, 0, err
		}
		alone = append(alone, ms)
	}

	if _, err := conn.Exec(ctx, fmt.Sprintf(`DO $$ BEGIN CREATE ROLE %s LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`, floodRole)); err != nil {
		return 0, 0, fmt.Errorf("create role %s: %w", floodRole, err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return 0, 0, fmt.Errorf("parse %s: %w", dsn, err)
	}
	u.User = url.User(floodRole)
	fc, err := pgx.Connect(ctx, u.String())
	if err != nil {
		return 0, 0, fmt.Errorf("connect as %s: %w", floodRole, err)
	}
	defer fc.Close(context.Background())
	// The flooding role cannot read how much of its flood was refused
	// (iasql_request_refusals is for iasql_reader): it sends each batch in
	// a transaction that holds the batch's locks (so none is dropped as
	// forged) while a session of the bench's watches the count.
	wc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return 0, 0, fmt.Errorf("connect to watch the flood: %w", err)
	}
	defer wc.Close(context.Background())
	refused := func(ctx context.Context) (n int64, err error) {
		err = wc.QueryRow(ctx, `SELECT coalesce(sum(refused), 0) FROM public.iasql_request_refusals WHERE role_name = $1`, floodRole).Scan(&n)
		return n, err
	}
	fctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var floodErr error
	wg.Go(func() {
		for fctx.Err() == nil {
			err := pgx.BeginFunc(fctx, fc, func(tx pgx.Tx) error {
				before, err := refused(fctx)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(fctx, fmt.Sprintf(`DO $$
				DECLARE m bytea;
				BEGIN
				  FOR i IN 1..%d LOOP
				    m := convert_to(jsonb_build_object('id', gen_random_uuid(), 'kind', 'install',
				      'args', jsonb_build_object('modules', jsonb_build_array('aws_s3')), 'pid', pg_backend_pid())::text, 'UTF8');
				    PERFORM pg_advisory_xact_lock(public.iasql_request_key(m));
				    PERFORM pg_logical_emit_message(false, 'iasql_request', m);
				  END LOOP;
				END $$`, floodBatch)); err != nil {
					return err
				}
				for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline) && fctx.Err() == nil; time.Sleep(10 * time.Millisecond) {
					if n, err := refused(fctx); err != nil || n >= before+floodBatch {
						return err
					}
				}
				return nil
			})
			if err != nil && fctx.Err() == nil {
				floodErr = fmt.Errorf("flood as %s: %w", floodRole, err)
				return
			}
		}
	})
	defer func() {
		stop()
		wg.Wait()
	}()
	// The flood is under way once the sidecar has refused some of it.
	if err := waitFor(ctx, time.Minute, func() (bool, error) {
		var n int64
		err := conn.QueryRow(ctx, `SELECT coalesce(sum(refused), 0) FROM iasql_request_refusals WHERE role_name = $1`, floodRole).Scan(&n)
		return n > 0, err
	}); err != nil {
		return 0, 0, fmt.Errorf("wait for the flood to be refused: %w", err)
	}
	var under []float64
	for i := range rounds {
		ms, err := commit(fmt.Sprintf("flood-%02d", i))
		if err != nil {
			return 0, 0, fmt.Errorf("under a flood of refused requests: %w", err)
		}
		under = append(under, ms)
	}
	stop()
	wg.Wait()
	if floodErr != nil {
		return 0, 0, floodErr
	}
	return percentile(alone, 0.5), percentile(under, 0.5), nil
}
