-- The version of the iasql SQL objects installed in this database.
CREATE FUNCTION public.iasql_version() RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT '0.1.0'::text $$;
COMMENT ON FUNCTION public.iasql_version() IS
  'Version of the iasql SQL objects in this database; the sidecar upgrades them when it is older than itself.';

-- Advisory-lock keys. The first key is iasql's namespace (0x69617371, "iasq");
-- the second names the role:
--   1 = the capture writer (the one sidecar consuming the slot, writing the audit trail),
--   2 = the running cycle (at most one per database),
--   3 = publication maintenance (transaction lock),
--   4 = the engine's service session (answers requests, keeps engine state).
CREATE FUNCTION public.iasql_lock_namespace() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 1767994225 $$;
COMMENT ON FUNCTION public.iasql_lock_namespace() IS
  'First key of the advisory locks iasql takes; pg_locks.classid of those locks.';

-- PL/pgSQL, not SQL: the guard triggers call it for every statement on
-- iasql's tables, and a SQL function's query would be planned again in each
-- transaction, while PL/pgSQL keeps its plan for the session. The key is
-- iasql_lock_namespace(), written out for the same reason.
-- Any role may take an advisory lock, so the lock alone proves nothing: the
-- session must also run as the sidecar's role (iasql_sidecar, 005_roles.sql).
CREATE FUNCTION public.iasql_holds_lock(role integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM pg_catalog.pg_locks
     WHERE locktype = 'advisory' AND pid = pg_catalog.pg_backend_pid() AND granted
       AND database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = pg_catalog.current_database())
       AND mode = 'ExclusiveLock'
       AND classid = 1767994225::oid AND objid = role AND objsubid = 2)
    AND EXISTS (
    SELECT 1 FROM public.iasql_sidecar s JOIN pg_catalog.pg_roles r ON r.rolname = s.role_name
     WHERE pg_catalog.pg_has_role(r.oid, 'MEMBER'));
END $$;
COMMENT ON FUNCTION public.iasql_holds_lock(integer) IS
  'True when this session holds iasql''s exclusive advisory lock for the role (see iasql_lock_namespace) and runs as the sidecar''s role (iasql_sidecar): any role can take an advisory lock.';

CREATE FUNCTION public.iasql_is_capture_writer() RETURNS boolean
LANGUAGE sql STABLE AS $$ SELECT public.iasql_holds_lock(1) $$;
COMMENT ON FUNCTION public.iasql_is_capture_writer() IS
  'True when this session holds the capture leadership lock, the only session allowed to write the audit trail.';

-- Statement trigger: the table is written only by a session holding one of
-- the lock roles given as trigger arguments.
CREATE FUNCTION public.iasql_guard_capture_tables() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  r text;
BEGIN
  FOREACH r IN ARRAY TG_ARGV LOOP
    IF public.iasql_holds_lock(r::integer) THEN
      RETURN NULL;
    END IF;
  END LOOP;
  RAISE EXCEPTION '% is written only by the iasql sidecar', TG_TABLE_NAME
    USING ERRCODE = 'insufficient_privilege',
          HINT = 'Read it with SELECT; the sidecar keeps it.';
END $$;
COMMENT ON FUNCTION public.iasql_guard_capture_tables() IS
  'Statement trigger that refuses writes to iasql''s own tables from any session but the sidecar''s (the lock roles are the trigger''s arguments).';
