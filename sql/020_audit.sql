-- The audit trail: one row per captured change, written by the sidecar from
-- the replication stream, and the lifecycle records later parts add.
CREATE TABLE public.iasql_audit_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lsn         pg_lsn,
  seq         integer NOT NULL DEFAULT 0,
  xid         bigint,
  ts          timestamptz NOT NULL,
  table_name  text,
  record_id   text,
  change_type text NOT NULL CONSTRAINT iasql_audit_log_change_type
                CHECK (change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'CYCLE_START', 'CYCLE_END')),
  old_row     jsonb,
  new_row     jsonb,
  origin      text NOT NULL CONSTRAINT iasql_audit_log_origin CHECK (origin IN ('user', 'engine', 'cloud')),
  message     text,
  actor       text,
  attribution jsonb,
  captured_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  CONSTRAINT iasql_audit_log_position UNIQUE (lsn, seq)
);
CREATE INDEX iasql_audit_log_record ON public.iasql_audit_log (table_name, record_id, id) INCLUDE (ts, change_type);
COMMENT ON TABLE public.iasql_audit_log IS
  'Every captured change to a registered table, in commit order; written only by the iasql sidecar, readable by iasql_reader.';
COMMENT ON SEQUENCE public.iasql_audit_log_id_seq IS 'Generates iasql_audit_log.id (an identity: the order changes were recorded in).';
COMMENT ON COLUMN public.iasql_audit_log.id IS 'Increases with commit order (then position in the transaction).';
COMMENT ON COLUMN public.iasql_audit_log.lsn IS 'Commit LSN of the transaction that made the change.';
COMMENT ON COLUMN public.iasql_audit_log.seq IS 'Position of the change within its transaction, from 1.';
COMMENT ON COLUMN public.iasql_audit_log.xid IS 'Transaction id of the change.';
COMMENT ON COLUMN public.iasql_audit_log.ts IS 'Commit time of the transaction.';
COMMENT ON COLUMN public.iasql_audit_log.table_name IS 'The registered table changed (as in iasql_tables).';
COMMENT ON COLUMN public.iasql_audit_log.record_id IS 'Primary key of the row: its value as text, or a JSON array of texts for a composite key; NULL for TRUNCATE.';
COMMENT ON COLUMN public.iasql_audit_log.change_type IS 'INSERT, UPDATE, DELETE or TRUNCATE (one row per truncated table) for captured changes; CYCLE_START and CYCLE_END for the engine''s cycles (message holds what started it and how it ended).';
COMMENT ON COLUMN public.iasql_audit_log.old_row IS 'The row before an UPDATE or DELETE. Booleans, numbers, json and jsonb keep their JSON types; other values are their PostgreSQL text form.';
COMMENT ON COLUMN public.iasql_audit_log.new_row IS 'The row after an INSERT or UPDATE (unchanged TOASTed values filled from the old row), as old_row.';
COMMENT ON COLUMN public.iasql_audit_log.origin IS 'user for intent; cloud for a change the sidecar pulled from the cloud into the row (an import, an update, a delete); engine for the sidecar''s other writes (feedback after its own calls). The sidecar marks its transactions with iasql_engine_mark.';
COMMENT ON COLUMN public.iasql_audit_log.message IS 'Free text: for engine and cloud changes, the marker''s message (which cycle).';
COMMENT ON COLUMN public.iasql_audit_log.actor IS 'Who made the change: for user and engine changes the role (current_user) that wrote the row; for cloud changes the AWS identity (an ARN) when AWS says, else NULL.';
COMMENT ON COLUMN public.iasql_audit_log.attribution IS 'For cloud changes, what AWS says of the change when it says (CloudTrail): {"actor", "event", "at", "source"}; else NULL.';
COMMENT ON COLUMN public.iasql_audit_log.captured_at IS 'When the sidecar wrote the row; captured_at - ts is the capture lag.';
COMMENT ON INDEX public.iasql_audit_log_record IS 'Finds the changes to one record in order (iasql_history); with ts and change_type, iasql_as_of and the pruning pick versions from the index alone.';
COMMENT ON CONSTRAINT iasql_audit_log_position ON public.iasql_audit_log IS 'A change is recorded at most once.';
REVOKE ALL ON public.iasql_audit_log FROM PUBLIC;
GRANT SELECT ON public.iasql_audit_log TO iasql_reader;
CREATE TRIGGER iasql_audit_log_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('1', '2');
COMMENT ON TRIGGER iasql_audit_log_guard ON public.iasql_audit_log IS 'Only the capture leader and the running cycle write the audit trail.';

-- Engine writes: the sidecar calls this first in every transaction that
-- writes module tables. It emits a transactional logical-decoding message
-- (no replication origin, no superuser), so the decoder records that
-- transaction's changes with origin engine. Any role can emit such a message
-- with pg_logical_emit_message, so the marker carries the key in
-- iasql_private.iasql_engine_key ("key:message"), which only the sidecar's
-- role may read; capture ignores a marker without it. Not executable by
-- PUBLIC.
CREATE FUNCTION public.iasql_engine_mark(message text DEFAULT '') RETURNS pg_lsn
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k text;
BEGIN
  SELECT e.mark_key INTO STRICT k FROM iasql_private.iasql_engine_key e;
  RETURN pg_catalog.pg_logical_emit_message(true, 'iasql_engine', k || ':' || coalesce(message, ''));
END $$;
COMMENT ON FUNCTION public.iasql_engine_mark(text) IS
  'Marks the current transaction as the engine''s: its changes are captured with origin engine, so they are not user intent. Only the sidecar''s role may call it.';
REVOKE ALL ON FUNCTION public.iasql_engine_mark(text) FROM PUBLIC;
