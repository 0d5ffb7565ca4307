-- What each of iasql's roles (005_roles.sql) may do, and what the sidecar's
-- role needs. Reading the engine's tables (iasql_requests, iasql_status, ...)
-- stays open to PUBLIC: the SQL API polls them as its caller. The audit trail
-- holds the rows of every module table, so only iasql_reader (and the roles
-- that include it) read it.
REVOKE ALL ON public.iasql_audit_log FROM PUBLIC;
GRANT SELECT ON public.iasql_audit_log TO iasql_reader;
GRANT SELECT, INSERT, UPDATE, DELETE ON public.iasql_mode TO iasql_admin;
GRANT USAGE ON SEQUENCE public.iasql_mode_id_seq TO iasql_admin;
GRANT EXECUTE ON FUNCTION public.iasql_rebind_account() TO iasql_admin;

-- Module tables get the roles' grants when they are registered, so that an
-- application role that is a member of one keeps its rights after an
-- uninstall and install. Runs as the role that registers them (the sidecar,
-- which creates and owns them).
CREATE FUNCTION public.iasql_grant_module_table(rel regclass) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  seq regclass;
BEGIN
  EXECUTE pg_catalog.format('GRANT SELECT ON %s TO iasql_reader', rel);
  EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO iasql_writer', rel);
  EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON %s TO iasql_admin', rel);
  FOR seq IN
    SELECT d.objid::regclass FROM pg_catalog.pg_depend d
      JOIN pg_catalog.pg_class s ON s.oid = d.objid AND s.relkind = 'S'
     WHERE d.classid = 'pg_catalog.pg_class'::regclass AND d.refclassid = 'pg_catalog.pg_class'::regclass
       AND d.refobjid = rel AND d.deptype IN ('a', 'i')
  LOOP
    EXECUTE pg_catalog.format('GRANT USAGE, SELECT ON SEQUENCE %s TO iasql_writer', seq);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_grant_module_table(regclass) IS
  'Grants a module table to iasql''s roles: SELECT to iasql_reader, DML (and its sequences) to iasql_writer, DML and TRUNCATE to iasql_admin.';

CREATE FUNCTION public.iasql_tables_grant() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.module IS NOT NULL THEN
    PERFORM public.iasql_grant_module_table(public.iasql_table_regclass(NEW.table_name));
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_tables_grant() IS
  'Trigger function: grants each registered module table to iasql_reader, iasql_writer and iasql_admin.';
CREATE TRIGGER iasql_tables_grant AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_grant();
COMMENT ON TRIGGER iasql_tables_grant ON public.iasql_tables IS 'Grants each registered module table to iasql''s roles.';

-- Makes a role the sidecar's and grants it what the sidecar needs to run
-- without superuser: its engine tables, the mark key, the publication (it
-- adds and drops module tables), CREATE on schema public (it creates module
-- tables) and the module tables already there (it drops them on uninstall).
-- Run by the role that installed iasql (or a superuser); the REPLICATION
-- attribute is not a grant, so it is only checked. The previous sidecar
-- role keeps its grants (revoke them by hand) but no longer passes the
-- guards.
CREATE FUNCTION public.iasql_grant_sidecar(sidecar name) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  missing text := '';
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = sidecar) THEN
    RAISE EXCEPTION 'role "%" does not exist', sidecar
      USING ERRCODE = 'undefined_object',
            HINT = pg_catalog.format('Create it first: CREATE ROLE %I LOGIN REPLICATION PASSWORD ...;', sidecar);
  END IF;
  UPDATE public.iasql_sidecar SET role_name = sidecar, granted_at = pg_catalog.clock_timestamp();
  EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA public TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT CONNECT, CREATE ON DATABASE %I TO %I', pg_catalog.current_database(), sidecar);
  FOR rel IN
    SELECT c.oid::regclass FROM pg_catalog.pg_class c
     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
       AND c.relname LIKE 'iasql\_%' AND c.relname <> 'iasql_sidecar'
  LOOP
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %I', rel, sidecar);
  END LOOP;
  EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE public.iasql_mode_id_seq TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA iasql_private TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT SELECT ON iasql_private.iasql_engine_key TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION public.iasql_engine_mark(text) TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT SELECT, UPDATE ON iasql_private.iasql_locks TO %I', sidecar);
  -- To tell when an iasql transaction's session is idle (it then expires).
  IF NOT pg_catalog.pg_has_role(sidecar, 'pg_read_all_stats', 'MEMBER') THEN
    BEGIN
      EXECUTE pg_catalog.format('GRANT pg_read_all_stats TO %I', sidecar);
    EXCEPTION WHEN insufficient_privilege OR invalid_grant_operation THEN
      missing := missing || pg_catalog.format('; it cannot tell idle iasql transactions (only ended sessions expire them) until granted pg_read_all_stats (GRANT pg_read_all_stats TO %I)', sidecar);
    END;
  END IF;
  FOR rel IN
    SELECT public.iasql_table_regclass(t.table_name) FROM public.iasql_tables t
     WHERE t.module IS NOT NULL AND public.iasql_table_regclass(t.table_name) IS NOT NULL
  LOOP
    EXECUTE pg_catalog.format('ALTER TABLE %s OWNER TO %I', rel, sidecar);
  END LOOP;
  PERFORM public.iasql_sync_publication();
  EXECUTE pg_catalog.format('ALTER PUBLICATION %I OWNER TO %I', public.iasql_publication(), sidecar);
  IF NOT (SELECT r.rolreplication OR r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = sidecar) THEN
    missing := missing || pg_catalog.format('; it still needs REPLICATION: ALTER ROLE %I REPLICATION (on RDS: GRANT rds_replication TO %I)', sidecar, sidecar);
  END IF;
  RETURN pg_catalog.format('role %s is the iasql sidecar''s role in database %s', sidecar, pg_catalog.current_database()) || missing;
END $$;
COMMENT ON FUNCTION public.iasql_grant_sidecar(name) IS
  'Makes a role the iasql sidecar''s (iasql_sidecar) and grants it what the sidecar needs (engine tables, the mark key, the publication, CREATE on schema public and database, the module tables, its locks in iasql_private); says when it still lacks REPLICATION. Run it as the role that installed iasql (iasql install --sidecar-role does).';
REVOKE ALL ON FUNCTION public.iasql_grant_sidecar(name) FROM PUBLIC;
