-- Waiting for the cloud without an iasql transaction: poll a generated query
-- until a record satisfies a condition (e.g. its cloud id is back).

CREATE FUNCTION public.iasql_wait_for(table_name text, id integer, condition text, timeout_s integer DEFAULT 300)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  query text;
  ok boolean;
  give_up timestamptz;
BEGIN
  IF pg_catalog.current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'iasql_wait_for cannot run at % isolation: its snapshot would never see the change it waits for',
        pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'Call it outside a transaction block, or in one at READ COMMITTED.';
  END IF;
  IF timeout_s IS NULL OR timeout_s < 0 THEN
    RAISE EXCEPTION 'iasql_wait_for: timeout_s must be zero or more seconds, not %', timeout_s
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  rel := public.iasql_resolve_table(table_name);
  IF rel IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: table "%" does not exist', table_name
      USING ERRCODE = 'undefined_table', HINT = 'Give a table name as in FROM, e.g. bucket or schema.table.';
  END IF;
  IF id IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: id is NULL, so no row of % can satisfy (%)', rel, condition
      USING ERRCODE = 'null_value_not_allowed',
            HINT = pg_catalog.format('Give the id of an existing row, e.g. SELECT iasql_wait_for(%L, id, %L) FROM %s WHERE ...', table_name, condition, rel);
  END IF;
  IF condition IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: condition is NULL'
      USING ERRCODE = 'null_value_not_allowed', HINT = 'Give SQL over the row''s columns, e.g. ''created_at IS NOT NULL''.';
  END IF;
  -- The table is quoted (regclass output); the condition is the caller's
  -- SQL and runs with the caller's privileges (this is not SECURITY DEFINER).
  query := pg_catalog.format('SELECT count(*) > 0 FROM %s WHERE id = $1 AND (%s)', rel, condition);
  give_up := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => timeout_s);
  LOOP
    -- A condition that does not parse raises here, on the first round.
    EXECUTE query INTO ok USING id;
    IF ok THEN
      RETURN true;
    END IF;
    -- A row that does not exist (or was deleted meanwhile) never will.
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT 1 FROM %s WHERE id = $1)', rel) INTO ok USING id;
    IF NOT ok THEN
      RAISE EXCEPTION 'iasql_wait_for: % has no row with id %', rel, id
        USING ERRCODE = 'no_data_found',
              HINT = pg_catalog.format('Give the id of an existing row (SELECT id FROM %s); a row deleted while waiting ends the wait too.', rel);
    END IF;
    IF pg_catalog.clock_timestamp() >= give_up THEN
      RAISE EXCEPTION 'iasql_wait_for: % id % did not satisfy (%) within % seconds', rel, id, condition, timeout_s
        USING ERRCODE = 'query_canceled',
              HINT = 'Check the record and the sidecar (iasql status), or wait longer with a larger timeout_s.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_wait_for(text, integer, text, integer) IS
  'Waits until the row of table_name with this id satisfies condition (SQL over its columns, e.g. ''created_at IS NOT NULL''), polling; returns true, or raises after timeout_s seconds. Raises at once when id is NULL or no row has it (also when the row is deleted while waiting).';

-- The user changes to module tables committed before lsn that are not yet
-- enacted: a record with a state whose enacted LSN is older, or a row with
-- no state yet (never synced). A record gone from both sides is done.
CREATE FUNCTION public.iasql_pending_intent(upto pg_lsn)
RETURNS TABLE (table_name text, record_id text, lsn pg_lsn)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  t text;
BEGIN
  FOR t IN SELECT unnest(m.tables) FROM public.iasql_modules m WHERE m.installed_at IS NOT NULL LOOP
    RETURN QUERY EXECUTE pg_catalog.format($q$
      SELECT a.table_name, a.record_id, max(a.lsn)
        FROM public.iasql_audit_log a
        LEFT JOIN public.iasql_records r ON r.table_name = a.table_name AND r.record_id = a.record_id
       WHERE a.origin = 'user' AND a.table_name = $1 AND a.lsn < $2 AND a.record_id IS NOT NULL
         AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE')
         AND (r.enacted_lsn < a.lsn
              OR (r.record_id IS NULL AND EXISTS (SELECT 1 FROM %s x WHERE x.id::text = a.record_id)))
       GROUP BY 1, 2$q$, public.iasql_table_regclass(t)) USING t, upto;
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_pending_intent(pg_lsn) IS
  'User changes to module tables committed before upto that are not enacted yet, per record (the newest).';

CREATE FUNCTION public.iasql_wait_for_all(timeout_s integer DEFAULT 300)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  target pg_lsn := pg_catalog.pg_current_wal_insert_lsn();
  called timestamptz := pg_catalog.clock_timestamp();
  give_up timestamptz;
  covered boolean;
  pending text;
  failed text;
  gone_since timestamptz;
BEGIN
  -- It reads iasql's tables with the caller's privileges (iasql_reader's).
  IF NOT pg_catalog.pg_has_role('iasql_reader', 'USAGE') THEN
    RAISE EXCEPTION 'permission denied for iasql_wait_for_all: role % is not a member of iasql_reader', current_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = pg_catalog.format('An administrator grants it: GRANT iasql_reader TO %I;', current_user);
  END IF;
  IF pg_catalog.current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'iasql_wait_for_all cannot run at % isolation: its snapshot would never see the changes enacted',
        pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'Call it outside a transaction block, or in one at READ COMMITTED.';
  END IF;
  IF timeout_s IS NULL OR timeout_s < 0 THEN
    RAISE EXCEPTION 'iasql_wait_for_all: timeout_s must be zero or more seconds, not %', timeout_s
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Nothing is captured or enacted without a sidecar: refuse at once, like
  -- the procedures (iasql_request); one that goes away while we wait (a
  -- restart, a standby taking over) gets 5 seconds to come back.
  IF NOT public.iasql_sidecar_connected() THEN
    RAISE EXCEPTION 'iasql_wait_for_all needs the iasql sidecar, and none is connected to this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start it: iasql run --dsn <this database>; iasql status shows its state.';
  END IF;
  give_up := called + pg_catalog.make_interval(secs => timeout_s);
  LOOP
    IF public.iasql_sidecar_connected() THEN
      gone_since := NULL;
    ELSIF gone_since IS NULL THEN
      gone_since := pg_catalog.clock_timestamp();
    ELSIF pg_catalog.clock_timestamp() >= gone_since + interval '5 seconds' THEN
      RAISE EXCEPTION 'iasql_wait_for_all: the iasql sidecar disconnected and none has connected for 5 seconds'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'Start it: iasql run --dsn <this database> (it carries on with what is pending); iasql status shows its state.';
    END IF;
    -- Every change committed before the call must be in the audit trail.
    SELECT coalesce(bool_and(s.confirmed_flush_lsn >= target), false) INTO covered
      FROM public.iasql_capture_progress p
      JOIN pg_catalog.pg_replication_slots s ON s.slot_name = p.slot_name AND s.database = pg_catalog.current_database();
    IF covered THEN
      SELECT pg_catalog.string_agg(pg_catalog.format('%s id %s', q.table_name, q.record_id), ', ' ORDER BY q.table_name, q.record_id)
        INTO pending FROM public.iasql_pending_intent(target) q;
      IF pending IS NULL THEN
        RETURN true;
      END IF;
      -- What iasql_status shows failed since its newest change (iasql_operations)
      -- is done with: when every pending record has failed, raise with their
      -- errors rather than wait for retries (automatic cycles back off).
      SELECT CASE WHEN pg_catalog.count(*) = pg_catalog.count(o.record_key)
                  THEN pg_catalog.string_agg(pg_catalog.format('%s id %s: %s', q.table_name, q.record_id, o.last_error), '; ' ORDER BY q.table_name, q.record_id) END
        INTO failed
        FROM public.iasql_pending_intent(target) q
        LEFT JOIN public.iasql_operations o
          ON o.table_name = q.table_name AND o.record_key = q.record_id AND o.state = 'failed'
         AND o.updated_at >= (SELECT pg_catalog.max(a.ts) FROM public.iasql_audit_log a
                               WHERE a.table_name = q.table_name AND a.record_id = q.record_id AND a.lsn = q.lsn);
      IF failed IS NOT NULL THEN
        RAISE EXCEPTION 'iasql_wait_for_all: changes failed: %', failed
          USING ERRCODE = 'external_routine_exception',
                HINT = 'Fix the records (or the cloud) and wait again; SELECT * FROM iasql_status shows what is not in sync.';
      END IF;
      SELECT a.message::jsonb->>'error' INTO failed
        FROM public.iasql_audit_log a
       WHERE a.change_type = 'CYCLE_END' AND a.ts >= called AND a.message::jsonb->>'outcome' IN ('failed', 'timeout')
       ORDER BY a.id DESC LIMIT 1;
      IF failed IS NOT NULL THEN
        RAISE EXCEPTION 'iasql_wait_for_all: changes failed: %', failed
          USING ERRCODE = 'external_routine_exception',
                DETAIL = pg_catalog.format('Still pending: %s.', pending),
                HINT = 'Fix the records (or the cloud) and wait again; iasql_audit_log has the cycle records.';
      END IF;
    END IF;
    IF pg_catalog.clock_timestamp() >= give_up THEN
      RAISE EXCEPTION 'iasql_wait_for_all: not enacted within % seconds: %', timeout_s,
          coalesce(pending, 'the sidecar has not yet captured every change made before the call')
        USING ERRCODE = 'query_canceled',
              HINT = 'Check the sidecar (iasql status) and the cycle records in iasql_audit_log, or wait longer.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_wait_for_all(integer) IS
  'Waits until every user change committed before the call is enacted in the cloud (or decided otherwise by its mode); raises with the failures, or on timeout with what is still pending. Raises at once when no sidecar is connected, and when none has been for 5 seconds while it waits.';
