-- How far capture has got, written in the same transaction as the audit rows
-- it covers, so that a restart resumes exactly after the last recorded change.
CREATE TABLE public.iasql_capture_progress (
  slot_name   name PRIMARY KEY,
  end_lsn     pg_lsn NOT NULL,
  commit_lsn  pg_lsn,
  commit_ts   timestamptz,
  changes     bigint NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE public.iasql_capture_progress IS
  'Per replication slot: the last transaction whose changes are in the audit trail. Written only by the sidecar.';
COMMENT ON COLUMN public.iasql_capture_progress.slot_name IS 'The logical replication slot capture consumes.';
COMMENT ON COLUMN public.iasql_capture_progress.end_lsn IS 'End LSN of the last captured transaction; capture resumes after it.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_lsn IS 'Commit LSN of the last captured transaction; NULL until one is captured.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_ts IS 'Commit time of the last captured transaction; NULL until one is captured.';
COMMENT ON COLUMN public.iasql_capture_progress.changes IS 'Changes captured through this slot so far.';
COMMENT ON COLUMN public.iasql_capture_progress.updated_at IS 'When capture last advanced.';
REVOKE ALL ON public.iasql_capture_progress FROM PUBLIC;
GRANT SELECT ON public.iasql_capture_progress TO PUBLIC;
CREATE TRIGGER iasql_capture_progress_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_capture_progress
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('1');
COMMENT ON TRIGGER iasql_capture_progress_guard ON public.iasql_capture_progress IS 'Only the capture leader writes capture progress.';
