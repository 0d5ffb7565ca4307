-- The version of the iasql SQL objects installed in this database.
CREATE FUNCTION public.iasql_version() RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT '0.1.0'::text $$;
COMMENT ON FUNCTION public.iasql_version() IS
  'Version of the iasql SQL objects in this database; the sidecar upgrades them when it is older than itself.';

-- Advisory-lock keys. The first key is iasql''s namespace (0x69617371, "iasq");
-- the second names the role: 1 = the capture writer (the one sidecar that
-- consumes the replication slot and writes the audit trail).
CREATE FUNCTION public.iasql_lock_namespace() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1767994225 $$;
COMMENT ON FUNCTION public.iasql_lock_namespace() IS
  'First key of the advisory locks iasql takes; pg_locks.classid of those locks.';

CREATE FUNCTION public.iasql_is_capture_writer() RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
     WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() AND granted
       AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
       AND mode = 'ExclusiveLock'
       AND classid = public.iasql_lock_namespace()::oid AND objid = 1 AND objsubid = 2)
$$;
COMMENT ON FUNCTION public.iasql_is_capture_writer() IS
  'True when this session holds the capture leadership lock, the only session allowed to write the audit trail.';

CREATE FUNCTION public.iasql_guard_capture_tables() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT public.iasql_is_capture_writer() THEN
    RAISE EXCEPTION '% is written only by the iasql sidecar', TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'Read it with SELECT; it changes when the sidecar captures changes to registered tables.';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_guard_capture_tables() IS
  'Statement trigger that refuses writes to the audit trail and capture progress from any session but the capture leader.';
