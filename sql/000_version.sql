-- The version of the iasql SQL objects installed in this database.
CREATE FUNCTION public.iasql_version() RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT '0.1.0'::text $$;
COMMENT ON FUNCTION public.iasql_version() IS
  'Version of the iasql SQL objects in this database; the sidecar upgrades them when it is older than itself.';

-- Whether this session holds one of the sidecar's locks (1, 2, 4: see
-- 006_locks.sql) and runs as the sidecar's role (iasql_sidecar,
-- 005_roles.sql). PL/pgSQL, not SQL: the guard triggers call it for every
-- statement on iasql's tables, and a SQL function's query would be planned
-- again in each transaction, while PL/pgSQL keeps its plan for the session.
-- The role is checked first: other roles may not read iasql_private.
CREATE FUNCTION public.iasql_holds_lock(role integer) RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF NOT EXISTS (
    SELECT 1 FROM public.iasql_sidecar s JOIN pg_catalog.pg_roles r ON r.rolname = s.role_name
     WHERE pg_catalog.pg_has_role(r.oid, 'MEMBER')) THEN
    RETURN false;
  END IF;
  RETURN EXISTS (
    SELECT 1 FROM iasql_private.iasql_locks l
     WHERE l.lock_id = role AND l.holder_pid = pg_catalog.pg_backend_pid()
       AND l.holder_token = pg_catalog.current_setting('iasql.lock_token', true));
END $$;
COMMENT ON FUNCTION public.iasql_holds_lock(integer) IS
  'True when this session runs as the sidecar''s role (iasql_sidecar) and holds the sidecar''s lock of that number (iasql_take_lock; 1 capture, 2 cycle, 4 engine service).';

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
