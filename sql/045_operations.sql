-- Work the engine has under way or could not finish, per record, and the
-- status of every record that is not in sync.

-- One row per record the engine is acting on in the cloud, or failed to
-- bring in sync: written before each cloud call (so the idempotency token
-- of a create survives any crash) and after it; removed once a read shows
-- the record in sync.
CREATE TABLE public.iasql_operations (
  table_name text NOT NULL,
  record_key text NOT NULL,
  record_id  text,
  cloud_id   text,
  action     text NOT NULL,
  state      text NOT NULL CONSTRAINT iasql_operations_state CHECK (state IN ('in progress', 'failed', 'waiting')),
  token      text,
  handle     text,
  poll_after timestamptz,
  attempts   integer NOT NULL DEFAULT 0,
  last_error text,
  next_retry timestamptz,
  since      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  PRIMARY KEY (table_name, record_key)
);
COMMENT ON TABLE public.iasql_operations IS 'Cloud work the engine has under way or could not finish, one row per record: written before each cloud call (a create''s idempotency token survives any crash) and after it, removed once a read shows the record in sync.';
COMMENT ON COLUMN public.iasql_operations.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_operations.record_key IS 'The row''s id, or ''cloud '' and the cloud id for a resource with no row.';
COMMENT ON COLUMN public.iasql_operations.record_id IS 'The row''s id (NULL for a resource with no row).';
COMMENT ON COLUMN public.iasql_operations.cloud_id IS 'The resource''s identity in the cloud, when known.';
COMMENT ON COLUMN public.iasql_operations.action IS 'create, update, replace or delete, in the cloud.';
COMMENT ON COLUMN public.iasql_operations.state IS 'in progress (called, or waiting for a read to show the result), failed (see last_error and next_retry), or waiting (for a record it depends on).';
COMMENT ON COLUMN public.iasql_operations.token IS 'Idempotency token of a create: sent as the ClientToken or tagged on the resource, so that a retry after a crash adopts what it made.';
COMMENT ON COLUMN public.iasql_operations.handle IS 'The cloud''s handle of an operation that runs long (a request token, an instance id), while it runs: the engine asks about it at poll_after, and leaves the record alone meanwhile.';
COMMENT ON COLUMN public.iasql_operations.poll_after IS 'When the engine next asks the cloud about the operation in handle.';
COMMENT ON COLUMN public.iasql_operations.attempts IS 'Cloud calls made for this action so far.';
COMMENT ON COLUMN public.iasql_operations.last_error IS 'The last failure, in one line.';
COMMENT ON COLUMN public.iasql_operations.next_retry IS 'When an automatic cycle tries a failed action again (iasql_commit tries at once).';
COMMENT ON COLUMN public.iasql_operations.since IS 'When the engine began this action.';
COMMENT ON COLUMN public.iasql_operations.updated_at IS 'When this row last changed.';
COMMENT ON CONSTRAINT iasql_operations_state ON public.iasql_operations IS 'Known operation states.';
REVOKE ALL ON public.iasql_operations FROM PUBLIC;
GRANT SELECT ON public.iasql_operations TO iasql_reader;
CREATE TRIGGER iasql_operations_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_operations
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_operations_guard ON public.iasql_operations IS 'Only the sidecar writes operations.';

-- What the engine keeps between its runs.
CREATE TABLE public.iasql_engine_state (
  singleton  boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_engine_state_one CHECK (singleton),
  intent_low pg_lsn NOT NULL,
  pruned_at  timestamptz,
  history_from timestamptz,
  updated_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE public.iasql_engine_state IS 'What the engine keeps between runs (one row): where its search for pending user changes starts, and when it last pruned the audit trail.';
COMMENT ON COLUMN public.iasql_engine_state.singleton IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN public.iasql_engine_state.intent_low IS 'Every user change below this LSN is enacted or was decided otherwise: a restarted engine reads the audit trail from here, not from its start.';
COMMENT ON COLUMN public.iasql_engine_state.pruned_at IS 'When the engine last deleted audit rows older than its retention (--audit-retention).';
COMMENT ON COLUMN public.iasql_engine_state.history_from IS 'The cutoff of the last pruning: from then on the audit trail holds every version of every record (each live record''s newest older version is kept), so iasql_as_of answers for any time since; NULL when nothing was pruned.';
COMMENT ON COLUMN public.iasql_engine_state.updated_at IS 'When this row last changed.';
COMMENT ON CONSTRAINT iasql_engine_state_one ON public.iasql_engine_state IS 'One row at most.';
REVOKE ALL ON public.iasql_engine_state FROM PUBLIC;
GRANT SELECT ON public.iasql_engine_state TO iasql_reader;
CREATE TRIGGER iasql_engine_state_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_engine_state
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_engine_state_guard ON public.iasql_engine_state IS 'Only the sidecar writes its state.';
