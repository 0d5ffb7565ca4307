-- The parts of the cloud whose reads failed at the last cycle (a region
-- the account has not enabled, a regional outage, a service down): the
-- engine leaves everything in them as it is until they can be read again.
-- Written by the engine after each read of a cycle.
CREATE TABLE public.iasql_unverified (
  table_name text NOT NULL,
  region     text NOT NULL DEFAULT '',
  error      text NOT NULL,
  since      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  checked_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  PRIMARY KEY (table_name, region)
);
COMMENT ON TABLE public.iasql_unverified IS 'Parts of the cloud whose reads failed at the last cycle, one row per module table and region: nothing is deleted, imported, created, changed or deleted there until a read works again.';
COMMENT ON COLUMN public.iasql_unverified.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_unverified.region IS 'The region whose reads failed ('''' when the whole table''s read failed).';
COMMENT ON COLUMN public.iasql_unverified.error IS 'Why the read failed, in one line.';
COMMENT ON COLUMN public.iasql_unverified.since IS 'Since when the part has been unverified.';
COMMENT ON COLUMN public.iasql_unverified.checked_at IS 'When a read last failed there.';
REVOKE ALL ON public.iasql_unverified FROM PUBLIC;
GRANT SELECT ON public.iasql_unverified TO iasql_reader;
CREATE TRIGGER iasql_unverified_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_unverified
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_unverified_guard ON public.iasql_unverified IS 'Only the sidecar writes what is unverified.';

-- The status of every module record that is not in sync: what the engine
-- does or could not do about it (iasql_operations), user changes not yet
-- taken up (pending), and the parts of the cloud that could not be read
-- (unverified: one row per table and region, record_id NULL).
CREATE VIEW public.iasql_status AS
  SELECT o.table_name, o.record_id, o.cloud_id, o.state, o.action, o.attempts, o.last_error, o.next_retry, o.since,
         NULL::text AS region
    FROM public.iasql_operations o
  UNION ALL
  SELECT p.table_name, p.record_id, r.cloud_id, 'pending'::text, NULL::text, 0, NULL::text, NULL::timestamptz,
         (SELECT min(a.ts) FROM public.iasql_audit_log a
           WHERE a.origin = 'user' AND a.table_name = p.table_name AND a.record_id = p.record_id
             AND a.lsn > coalesce(r.enacted_lsn, '0/0'::pg_lsn)),
         NULL::text
    FROM public.iasql_pending_intent(pg_catalog.pg_current_wal_insert_lsn()) p
    LEFT JOIN public.iasql_records r ON r.table_name = p.table_name AND r.record_id = p.record_id
   WHERE NOT EXISTS (SELECT 1 FROM public.iasql_operations o WHERE o.table_name = p.table_name AND o.record_key = p.record_id)
  UNION ALL
  SELECT u.table_name, NULL::text, NULL::text, 'unverified'::text, NULL::text, 0, u.error, NULL::timestamptz, u.since,
         NULLIF(u.region, '')
    FROM public.iasql_unverified u;
COMMENT ON VIEW public.iasql_status IS 'One row per module record that is not in sync: pending (a user change not yet taken up), in progress, failed (last_error, next_retry) or waiting (for a record it depends on); and one row per table and region whose reads fail (unverified: nothing is done there until they work).';
COMMENT ON COLUMN public.iasql_status.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_status.record_id IS 'The row''s id (NULL for a resource with no row, e.g. one being deleted from the cloud, and for an unverified part).';
COMMENT ON COLUMN public.iasql_status.cloud_id IS 'The resource''s identity in the cloud, when known.';
COMMENT ON COLUMN public.iasql_status.state IS 'pending, in progress, failed, waiting, or unverified (the table''s reads fail in region).';
COMMENT ON COLUMN public.iasql_status.action IS 'create, update, replace or delete, in the cloud (NULL while pending).';
COMMENT ON COLUMN public.iasql_status.attempts IS 'Cloud calls made for the action so far.';
COMMENT ON COLUMN public.iasql_status.last_error IS 'The last failure, in one line.';
COMMENT ON COLUMN public.iasql_status.next_retry IS 'When an automatic cycle tries a failed action again.';
COMMENT ON COLUMN public.iasql_status.since IS 'Since when the record has been out of sync, or the part unverified.';
COMMENT ON COLUMN public.iasql_status.region IS 'For an unverified part, the region whose reads fail (NULL: the whole table''s read fails, or a record''s row).';
GRANT SELECT ON public.iasql_status TO iasql_reader;
