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
  BEGIN
    rel := coalesce(pg_catalog.to_regclass(table_name), public.iasql_table_regclass(table_name));
  EXCEPTION WHEN invalid_name OR invalid_parameter_value OR syntax_error THEN
    rel := NULL;
  END;
  IF rel IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: table "%" does not exist', table_name
      USING ERRCODE = 'undefined_table', HINT = 'Give a table name as in FROM, e.g. bucket or schema.table.';
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
    IF pg_catalog.clock_timestamp() >= give_up THEN
      RAISE EXCEPTION 'iasql_wait_for: % id % did not satisfy (%) within % seconds', rel, id, condition, timeout_s
        USING ERRCODE = 'query_canceled',
              HINT = 'Check the record and the sidecar (iasql status), or wait longer with a larger timeout_s.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_wait_for(text, integer, text, integer) IS
  'Waits until the row of table_name with this id satisfies condition (SQL over its columns, e.g. ''created_at IS NOT NULL''), polling; returns true, or raises after timeout_s seconds.';
