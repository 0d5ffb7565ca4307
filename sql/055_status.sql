-- The status of every module record that is not in sync: what the engine
-- does or could not do about it (iasql_operations), and user changes not
-- yet taken up (pending).
CREATE VIEW public.iasql_status AS
  SELECT o.table_name, o.record_id, o.cloud_id, o.state, o.action, o.attempts, o.last_error, o.next_retry, o.since
    FROM public.iasql_operations o
  UNION ALL
  SELECT p.table_name, p.record_id, r.cloud_id, 'pending'::text, NULL::text, 0, NULL::text, NULL::timestamptz,
         (SELECT min(a.ts) FROM public.iasql_audit_log a
           WHERE a.origin = 'user' AND a.table_name = p.table_name AND a.record_id = p.record_id
             AND a.lsn > coalesce(r.enacted_lsn, '0/0'::pg_lsn))
    FROM public.iasql_pending_intent(pg_catalog.pg_current_wal_insert_lsn()) p
    LEFT JOIN public.iasql_records r ON r.table_name = p.table_name AND r.record_id = p.record_id
   WHERE NOT EXISTS (SELECT 1 FROM public.iasql_operations o WHERE o.table_name = p.table_name AND o.record_key = p.record_id);
COMMENT ON VIEW public.iasql_status IS 'One row per module record that is not in sync: pending (a user change not yet taken up), in progress, failed (last_error, next_retry) or waiting (for a record it depends on).';
COMMENT ON COLUMN public.iasql_status.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_status.record_id IS 'The row''s id (NULL for a resource with no row, e.g. one being deleted from the cloud).';
COMMENT ON COLUMN public.iasql_status.cloud_id IS 'The resource''s identity in the cloud, when known.';
COMMENT ON COLUMN public.iasql_status.state IS 'pending, in progress, failed or waiting.';
COMMENT ON COLUMN public.iasql_status.action IS 'create, update, replace or delete, in the cloud (NULL while pending).';
COMMENT ON COLUMN public.iasql_status.attempts IS 'Cloud calls made for the action so far.';
COMMENT ON COLUMN public.iasql_status.last_error IS 'The last failure, in one line.';
COMMENT ON COLUMN public.iasql_status.next_retry IS 'When an automatic cycle tries a failed action again.';
COMMENT ON COLUMN public.iasql_status.since IS 'Since when the record has been out of sync.';
GRANT SELECT ON public.iasql_status TO PUBLIC;
