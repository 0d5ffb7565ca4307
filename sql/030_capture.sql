-- Where the LSNs in this database's iasql state come from: the server (its
-- system identifier) and the database (its oid). LSNs are positions in one
-- server's WAL; in a database restored from a dump (or copied with CREATE
-- DATABASE ... TEMPLATE) the recorded ones belong to another server or
-- database and mean nothing here (iasql_adopt_restore).
CREATE FUNCTION public.iasql_lsn_origin() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT (SELECT s.system_identifier::text FROM pg_catalog.pg_control_system() s) || '/' ||
         (SELECT d.oid::text FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database())
$$;
COMMENT ON FUNCTION public.iasql_lsn_origin() IS
  'This server''s system identifier and this database''s oid (''SYSID/OID''): the origin of the LSNs capture records here. A database restored from a dump finds another origin in iasql_capture_progress.';

-- How far capture has got, written in the same transaction as the audit rows
-- it covers, so that a restart resumes exactly after the last recorded change.
CREATE TABLE public.iasql_capture_progress (
  slot_name   name PRIMARY KEY,
  end_lsn     pg_lsn NOT NULL,
  commit_lsn  pg_lsn,
  commit_ts   timestamptz,
  changes     bigint NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  lsn_origin  text NOT NULL DEFAULT public.iasql_lsn_origin()
);
COMMENT ON TABLE public.iasql_capture_progress IS
  'Per replication slot: the last transaction whose changes are in the audit trail. Written only by the sidecar.';
COMMENT ON COLUMN public.iasql_capture_progress.slot_name IS 'The logical replication slot capture consumes.';
COMMENT ON COLUMN public.iasql_capture_progress.end_lsn IS 'End LSN of the last captured transaction; capture resumes after it.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_lsn IS 'Commit LSN of the last captured transaction; NULL until one is captured.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_ts IS 'Commit time of the last captured transaction; NULL until one is captured.';
COMMENT ON COLUMN public.iasql_capture_progress.changes IS 'Changes captured through this slot so far.';
COMMENT ON COLUMN public.iasql_capture_progress.updated_at IS 'When capture last advanced.';
COMMENT ON COLUMN public.iasql_capture_progress.lsn_origin IS 'The server and database (iasql_lsn_origin) whose WAL the LSNs belong to; another than this database''s means it was restored from a dump.';
REVOKE ALL ON public.iasql_capture_progress FROM PUBLIC;
GRANT SELECT ON public.iasql_capture_progress TO iasql_reader;
CREATE TRIGGER iasql_capture_progress_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_capture_progress
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('1');
COMMENT ON TRIGGER iasql_capture_progress_guard ON public.iasql_capture_progress IS 'Only the capture leader writes capture progress.';
