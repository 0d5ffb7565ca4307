package sql

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DB is a connection or a transaction.
type DB interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// What outlives iasql's objects in a database, for 'iasql uninstall' and
// for a sidecar that finds iasql removed (DROP EXTENSION iasql): the
// pg_cron job that asks for cycles, the publication and the replication
// slots. Each says whether it found something to remove.

// UnscheduleCron removes this database's pg_cron job iasql_cycle, where
// pg_cron is installed (only the job's owner, the sidecar's role, or a
// superuser may).
func UnscheduleCron(ctx context.Context, db DB) (bool, error) {
	var has bool
	if err := db.QueryRow(ctx, `SELECT pg_catalog.to_regclass('cron.job') IS NOT NULL`).Scan(&has); err != nil || !has {
		return false, err
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(cron.unschedule(j.jobid)) FROM cron.job j
		WHERE j.jobname = 'iasql_cycle' AND j.database = pg_catalog.current_database()`).Scan(&n); err != nil {
		return false, fmt.Errorf("remove the pg_cron job iasql_cycle (its owner, the sidecar's role, or a superuser may): %w", err)
	}
	return n > 0, nil
}

// DropPublication drops the publication iasql when it exists (its owner,
// or a superuser, may).
func DropPublication(ctx context.Context, db DB) (bool, error) {
	var has bool
	if err := db.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = 'iasql')`).Scan(&has); err != nil {
		return false, fmt.Errorf("look for the publication iasql: %w", err)
	}
	if !has {
		return false, nil
	}
	if _, err := db.Exec(ctx, `DROP PUBLICATION iasql`); err != nil {
		return false, fmt.Errorf("drop the publication iasql (as a superuser or a member of its owner): %w", err)
	}
	return true, nil
}

// DropSlots drops those of slots that exist in this database, last in any
// transaction (a slot's drop cannot be undone). It returns the ones it
// dropped. Dropping a slot needs REPLICATION or superuser; an active slot
// (a process streams from it) cannot be dropped.
func DropSlots(ctx context.Context, db DB, slots []string) ([]string, error) {
	rows, err := db.Query(ctx, `SELECT s.slot_name::text FROM pg_catalog.pg_replication_slots s
		WHERE s.database = pg_catalog.current_database() AND s.slot_name::text = ANY($1::text[]) ORDER BY 1`, slots)
	if err != nil {
		return nil, fmt.Errorf("look for iasql's replication slots: %w", err)
	}
	found, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("look for iasql's replication slots: %w", err)
	}
	var dropped []string
	for _, s := range found {
		if _, err := db.Exec(ctx, `SELECT pg_catalog.pg_drop_replication_slot($1)`, s); err != nil {
			return dropped, fmt.Errorf("drop the replication slot %s (dropping a slot needs a role with REPLICATION, or a superuser): %w", s, err)
		}
		dropped = append(dropped, s)
	}
	return dropped, nil
}
