-- What each of iasql's roles (005_roles.sql) may do, and what the sidecar's
-- role needs.
--
-- Reading. A role without a grant reads nothing of iasql's state: the
-- engine's tables name every resource (iasql_records.cloud_id), the audit
-- trail holds every module row, and answers show them too (a preview's
-- descriptions). Each table grants SELECT to iasql_reader (so to every role
-- of iasql) where it is made; PUBLIC keeps only iasql_sidecar and
-- iasql_tables, which say what pg_roles and pg_publication_tables show
-- anyway, and which the sidecar's preflight and guards read in any session.
-- Requests are per role: a member of iasql_reader reads its own
-- (iasql_my_requests, below), iasql_admin everyone's (iasql_requests). The
-- functions that read these tables run as their caller (none is SECURITY
-- DEFINER): iasql_request as a member of the role the request needs,
-- iasql_status and iasql_wait_for_all as a member of iasql_reader.
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
-- What the calling role needs is checked before anything changes: to hand
-- the publication and the module tables over (ALTER ... OWNER TO), it must
-- hold their owners' privileges and be able to SET ROLE to the sidecar's
-- (CREATEROLE alone is not that); to grant on schema public and on the
-- database, their grant options (owners have them), unless the sidecar's
-- role holds those rights already. A refusal names in one line every GRANT
-- that is missing. (The call is one statement, so a failure part way would
-- change nothing either, but would name only the first missing right, in
-- PostgreSQL's words.)
CREATE FUNCTION public.iasql_grant_sidecar(sidecar name) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  missing text := '';
  target oid;
  moving oid[];
  owner oid;
  owners oid[];
  can_set boolean;
  needs text[] := '{}';
  db name := pg_catalog.current_database();
  grant_ns boolean := pg_catalog.has_schema_privilege('public', 'USAGE WITH GRANT OPTION')
                      AND pg_catalog.has_schema_privilege('public', 'CREATE WITH GRANT OPTION');
  grant_db boolean := pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CONNECT WITH GRANT OPTION')
                      AND pg_catalog.has_database_privilege(pg_catalog.current_database(), 'CREATE WITH GRANT OPTION');
BEGIN
  SELECT r.oid INTO target FROM pg_catalog.pg_roles r WHERE r.rolname = sidecar;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'role "%" does not exist', sidecar
      USING ERRCODE = 'undefined_object',
            HINT = pg_catalog.format('Create it first: CREATE ROLE %I LOGIN REPLICATION PASSWORD ...;', sidecar);
  END IF;
  IF NOT grant_ns AND NOT (pg_catalog.has_schema_privilege(sidecar, 'public', 'USAGE') AND pg_catalog.has_schema_privilege(sidecar, 'public', 'CREATE')) THEN
    needs := needs || pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA public TO %I (as the owner of schema public)', sidecar);
  END IF;
  IF NOT grant_db AND NOT (pg_catalog.has_database_privilege(sidecar, db, 'CONNECT') AND pg_catalog.has_database_privilege(sidecar, db, 'CREATE')) THEN
    needs := needs || pg_catalog.format('GRANT CONNECT, CREATE ON DATABASE %I TO %I (as the owner of database %I)', db, sidecar, db);
  END IF;
  -- What moves to the sidecar's role (ALTER ... OWNER TO): the module
  -- tables and the publication, which this role creates when it is missing.
  SELECT pg_catalog.array_agg(DISTINCT x.o) INTO moving FROM (
      SELECT c.relowner AS o FROM public.iasql_tables t
        JOIN pg_catalog.pg_class c ON c.oid = public.iasql_table_regclass(t.table_name)
       WHERE t.module IS NOT NULL
      UNION ALL
      SELECT p.pubowner FROM pg_catalog.pg_publication p WHERE p.pubname = public.iasql_publication()
      UNION ALL
      SELECT r.oid FROM pg_catalog.pg_roles r
       WHERE r.rolname = current_user AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication p WHERE p.pubname = public.iasql_publication())
    ) x WHERE x.o <> target;
  -- Whose privileges this role needs: the installer's (iasql's tables) and
  -- those of the owners of what moves.
  owners := ARRAY[(SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = 'public.iasql_sidecar'::regclass)] || coalesce(moving, '{}');
  FOREACH owner IN ARRAY ARRAY(SELECT DISTINCT o FROM pg_catalog.unnest(owners) o) LOOP
    IF NOT pg_catalog.pg_has_role(owner, 'USAGE') THEN
      needs := needs || CASE WHEN (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.oid = owner)
        THEN pg_catalog.format('run it as a superuser (%s, which owns iasql''s objects here, is one)', owner::regrole)
        ELSE pg_catalog.format('GRANT %s TO %I (it owns iasql''s objects here)', owner::regrole, current_user) END;
    END IF;
  END LOOP;
  IF moving IS NOT NULL THEN
    -- ALTER ... OWNER TO needs membership in the new owner (PostgreSQL 16
    -- and later: the SET option of it).
    IF pg_catalog.current_setting('server_version_num')::integer >= 160000 THEN
      can_set := pg_catalog.pg_has_role(target, 'SET');
    ELSE
      can_set := pg_catalog.pg_has_role(target, 'MEMBER');
    END IF;
    IF NOT can_set THEN
      needs := needs || pg_catalog.format('GRANT %I TO %I (to hand it the publication %I and the module tables)',
        sidecar, current_user, public.iasql_publication());
    END IF;
  END IF;
  IF pg_catalog.array_length(needs, 1) > 0 THEN
    RAISE EXCEPTION 'role % may not make % the iasql sidecar''s role, and nothing was changed: %; then run it again',
        current_user, sidecar, pg_catalog.array_to_string(needs, '; ')
      USING ERRCODE = 'insufficient_privilege';
  END IF;

  UPDATE public.iasql_sidecar SET role_name = sidecar, granted_at = pg_catalog.clock_timestamp();
  IF grant_ns THEN
    EXECUTE pg_catalog.format('GRANT USAGE, CREATE ON SCHEMA public TO %I', sidecar);
  END IF;
  IF grant_db THEN
    EXECUTE pg_catalog.format('GRANT CONNECT, CREATE ON DATABASE %I TO %I', db, sidecar);
  END IF;
  FOR rel IN
    SELECT c.oid::regclass FROM pg_catalog.pg_class c
     WHERE c.relnamespace = 'public'::regnamespace AND c.relkind = 'r'
       AND c.relname LIKE 'iasql\_%' AND c.relname <> 'iasql_sidecar'
  LOOP
    EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s TO %I', rel, sidecar);
  END LOOP;
  -- The metrics count the records not in sync.
  EXECUTE pg_catalog.format('GRANT SELECT ON public.iasql_status TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT SELECT ON public.iasql_lock_holders TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT USAGE ON SEQUENCE public.iasql_mode_id_seq TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA iasql_private TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT SELECT ON iasql_private.iasql_engine_key TO %I', sidecar);
  -- A restored database's adoption (iasql_adopt_restore) moves where iasql
  -- counts as installed to this server's position.
  EXECUTE pg_catalog.format('GRANT UPDATE (installed_lsn) ON iasql_private.iasql_engine_key TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION public.iasql_engine_mark(text) TO %I', sidecar);
  -- It links (and unlinks) Cloud Control tables' references as modules are
  -- installed and uninstalled (sql/080_references.sql).
  EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION public.iasql_link_reference(text, text, text, boolean) TO %I', sidecar);
  EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION public.iasql_unlink_reference(text, text) TO %I', sidecar);
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
  -- The publication is made, or brought up to date while this role may
  -- (one restored from a dump lacks tables only their owner may add, and the
  -- sidecar would fail to add them), before it is handed over.
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication p WHERE p.pubname = public.iasql_publication())
     OR EXISTS (SELECT 1 FROM pg_catalog.pg_publication p
                 WHERE p.pubname = public.iasql_publication() AND pg_catalog.pg_has_role(p.pubowner, 'USAGE')) THEN
    PERFORM public.iasql_sync_publication();
  END IF;
  EXECUTE pg_catalog.format('ALTER PUBLICATION %I OWNER TO %I', public.iasql_publication(), sidecar);
  IF NOT (SELECT r.rolreplication OR r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = sidecar) THEN
    missing := missing || pg_catalog.format('; it still needs REPLICATION: ALTER ROLE %I REPLICATION (on RDS: GRANT rds_replication TO %I)', sidecar, sidecar);
  END IF;
  RETURN pg_catalog.format('role %s is the iasql sidecar''s role in database %s', sidecar, db) || missing;
END $$;
COMMENT ON FUNCTION public.iasql_grant_sidecar(name) IS
  'Makes a role the iasql sidecar''s (iasql_sidecar) and grants it what the sidecar needs (engine tables, the mark key, the publication, CREATE on schema public and database, the module tables, its locks in iasql_private); says when it still lacks REPLICATION. Run it as the role that installed iasql (iasql install --sidecar-role does); it checks first what that role needs (to hand the publication and module tables over it must be able to SET ROLE to the sidecar''s role) and refuses in one line naming each missing GRANT, changing nothing.';
REVOKE ALL ON FUNCTION public.iasql_grant_sidecar(name) FROM PUBLIC;

-- A role's own requests and their answers: the rows of iasql_requests made by
-- the session's login role (session_user, as the sidecar records the sender),
-- so SET ROLE shows no other role's. iasql_request waits for its answer here.
-- A security barrier view rather than row-level security on the table:
-- pg_dump repeats the policies of an extension's tables, and restoring them
-- after CREATE EXTENSION has made them fails; and no function a caller puts
-- in its WHERE sees another role's rows.
CREATE VIEW public.iasql_my_requests WITH (security_barrier) AS
  SELECT r.id, r.kind, r.args, r.requested_by, r.accepted_at, r.finished_at, r.status, r.result, r.error, r.progress, r.taken_by_pid
    FROM public.iasql_requests r
   WHERE r.requested_by = session_user;
COMMENT ON VIEW public.iasql_my_requests IS 'The requests this session''s login role made through the SQL API (iasql_commit, iasql_preview, ...) and the sidecar''s answers; iasql_admin reads everyone''s in iasql_requests.';
COMMENT ON COLUMN public.iasql_my_requests.id IS 'Request id, chosen by the caller.';
COMMENT ON COLUMN public.iasql_my_requests.kind IS 'begin, commit, rollback, refresh, preview, install, uninstall, ...';
COMMENT ON COLUMN public.iasql_my_requests.args IS 'Arguments of the request.';
COMMENT ON COLUMN public.iasql_my_requests.requested_by IS 'The role that made it: this session''s login role.';
COMMENT ON COLUMN public.iasql_my_requests.accepted_at IS 'When the sidecar received it (or refused it).';
COMMENT ON COLUMN public.iasql_my_requests.finished_at IS 'When the sidecar finished it.';
COMMENT ON COLUMN public.iasql_my_requests.status IS 'accepted (being worked on), done or failed.';
COMMENT ON COLUMN public.iasql_my_requests.result IS 'The answer (JSON), when done.';
COMMENT ON COLUMN public.iasql_my_requests.error IS 'What went wrong, when failed.';
COMMENT ON COLUMN public.iasql_my_requests.progress IS 'What the request waits for, while it runs.';
COMMENT ON COLUMN public.iasql_my_requests.taken_by_pid IS 'Server process id of the sidecar''s engine session that took the request.';
GRANT SELECT ON public.iasql_my_requests TO iasql_reader;
