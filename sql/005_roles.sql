-- The roles iasql ships, and which role is the sidecar's.
--
-- Roles are cluster-wide: the first database that installs iasql creates
-- them (NOLOGIN), later installs find them and leave them as they are. The
-- installing role needs CREATEROLE only while they are missing. Each role
-- includes the one below it:
--   iasql_admin   install and uninstall modules, write modes, rebind the
--                 account, read every role's requests; everything
--                 iasql_writer may do;
--   iasql_writer  INSERT, UPDATE, DELETE on module tables and the
--                 transaction procedures (begin, commit, rollback, refresh);
--   iasql_reader  SELECT on module tables and iasql's tables and views (the
--                 audit trail, iasql_status, records, ...; its own requests
--                 in iasql_my_requests), and iasql_preview().
-- A role with none of them reads nothing of iasql's state (070_privileges.sql).
-- Application roles are granted one of them (GRANT iasql_writer TO app).
DO $$
DECLARE
  r record;
  recipe constant text := 'As a role with CREATEROLE: CREATE ROLE iasql_reader NOLOGIN; CREATE ROLE iasql_writer NOLOGIN IN ROLE iasql_reader; CREATE ROLE iasql_admin NOLOGIN IN ROLE iasql_writer; then install iasql again.';
BEGIN
  FOR r IN SELECT * FROM (VALUES
      ('iasql_reader', NULL, 'iasql: reads module tables and iasql''s tables (audit trail, iasql_status, records, its own requests), and may call iasql_preview().'),
      ('iasql_writer', 'iasql_reader', 'iasql: writes module tables and runs iasql_begin, iasql_commit, iasql_rollback and iasql_refresh; includes iasql_reader.'),
      ('iasql_admin', 'iasql_writer', 'iasql: installs and uninstalls modules, writes iasql_mode, rebinds the account, reads every request; includes iasql_writer.')
    ) v(name, below, about)
  LOOP
    IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r.name) THEN
      BEGIN
        EXECUTE pg_catalog.format('CREATE ROLE %I NOLOGIN', r.name);
        EXECUTE pg_catalog.format('COMMENT ON ROLE %I IS %L', r.name, r.about);
      EXCEPTION
        WHEN duplicate_object OR unique_violation THEN
          NULL; -- another database's install created it meanwhile
        WHEN insufficient_privilege THEN
          RAISE EXCEPTION 'iasql needs the role %, which does not exist, and role % may not create it. %', r.name, current_user, recipe
            USING ERRCODE = 'insufficient_privilege';
      END;
    END IF;
    IF r.below IS NOT NULL AND NOT EXISTS (
         SELECT 1 FROM pg_catalog.pg_auth_members m
          WHERE m.roleid = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = r.below)
            AND m.member = (SELECT oid FROM pg_catalog.pg_roles WHERE rolname = r.name)) THEN
      BEGIN
        EXECUTE pg_catalog.format('GRANT %I TO %I', r.below, r.name);
      EXCEPTION
        WHEN unique_violation THEN
          NULL; -- granted meanwhile
        WHEN insufficient_privilege OR invalid_grant_operation THEN
          RAISE EXCEPTION 'iasql needs role % to include %, and role % may not grant it. %', r.name, r.below, current_user, recipe
            USING ERRCODE = 'insufficient_privilege';
      END;
    END IF;
  END LOOP;
END $$;

-- The sidecar's role: only it (and the roles that are members of it) may
-- write the engine's tables and mark transactions as the engine's. The
-- installing role is the sidecar's until an administrator names another
-- (iasql install --sidecar-role NAME, or SELECT iasql_grant_sidecar('NAME')).
CREATE TABLE public.iasql_sidecar (
  singleton  boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_sidecar_one CHECK (singleton),
  role_name  name NOT NULL,
  granted_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE public.iasql_sidecar IS 'The role the iasql sidecar runs as (one row): only it writes the engine''s tables and marks the engine''s transactions. Set by iasql install --sidecar-role (iasql_grant_sidecar); written only by the owner of this table.';
COMMENT ON COLUMN public.iasql_sidecar.singleton IS 'Always true: the table holds one row.';
COMMENT ON COLUMN public.iasql_sidecar.role_name IS 'The sidecar''s role; its members act as the sidecar too.';
COMMENT ON COLUMN public.iasql_sidecar.granted_at IS 'When the role was made the sidecar''s.';
COMMENT ON CONSTRAINT iasql_sidecar_one ON public.iasql_sidecar IS 'One row at most.';
REVOKE ALL ON public.iasql_sidecar FROM PUBLIC;
GRANT SELECT ON public.iasql_sidecar TO PUBLIC;
INSERT INTO public.iasql_sidecar (role_name) VALUES (current_user);

-- A grant of every table (GRANT ALL ON ALL TABLES IN SCHEMA public, common
-- enough) must not let a role name itself the sidecar: only the table's
-- owner (the role that installed iasql) and superusers write it.
CREATE FUNCTION public.iasql_guard_owner() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT pg_catalog.pg_has_role((SELECT c.relowner FROM pg_catalog.pg_class c WHERE c.oid = TG_RELID), 'MEMBER') THEN
    RAISE EXCEPTION '% is written only by its owner, the role that installed iasql', TG_TABLE_NAME
      USING ERRCODE = 'insufficient_privilege',
            HINT = 'As that role (or a superuser) run iasql install --sidecar-role NAME, or SELECT iasql_grant_sidecar(''NAME'').';
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_guard_owner() IS
  'Statement trigger that refuses writes to a table from any role but its owner (and superusers), whatever was granted.';
CREATE TRIGGER iasql_sidecar_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_sidecar
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_owner();
COMMENT ON TRIGGER iasql_sidecar_guard ON public.iasql_sidecar IS 'Only the owner names the sidecar''s role.';

-- The key that authenticates iasql_engine_mark's markers: capture counts a
-- transaction as the engine's only when its marker carries it. It lives in a
-- schema of its own, closed to PUBLIC, so that no grant on the tables of
-- schema public reveals it; only the sidecar's role is given it.
CREATE SCHEMA iasql_private;
COMMENT ON SCHEMA iasql_private IS 'iasql''s secrets (the engine marker''s key): closed to PUBLIC, open to the sidecar''s role.';
REVOKE ALL ON SCHEMA iasql_private FROM PUBLIC;
CREATE TABLE iasql_private.iasql_engine_key (
  singleton boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_engine_key_one CHECK (singleton),
  mark_key  text NOT NULL DEFAULT pg_catalog.md5(pg_catalog.gen_random_uuid()::text) || pg_catalog.md5(pg_catalog.gen_random_uuid()::text),
  installed_lsn pg_lsn NOT NULL DEFAULT pg_catalog.pg_current_wal_insert_lsn()
);
COMMENT ON TABLE iasql_private.iasql_engine_key IS 'The secret iasql_engine_mark() puts in its marker and capture checks, and where WAL was at install (one row); readable only by the sidecar''s role.';
COMMENT ON COLUMN iasql_private.iasql_engine_key.singleton IS 'Always true: the table holds one row.';
COMMENT ON COLUMN iasql_private.iasql_engine_key.mark_key IS 'The key: 64 random hex digits.';
COMMENT ON COLUMN iasql_private.iasql_engine_key.installed_lsn IS 'Where WAL was when iasql was installed here: a replication slot of iasql''s name that has recorded no progress and stopped before it was left by an earlier install (dropped since) and is made anew, or it would replay changes made while iasql was not installed.';
COMMENT ON CONSTRAINT iasql_engine_key_one ON iasql_private.iasql_engine_key IS 'One row at most.';
REVOKE ALL ON iasql_private.iasql_engine_key FROM PUBLIC;
INSERT INTO iasql_private.iasql_engine_key DEFAULT VALUES;

-- PL/pgSQL: called by the guard triggers (see iasql_holds_lock).
CREATE FUNCTION public.iasql_is_sidecar() RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM public.iasql_sidecar s JOIN pg_catalog.pg_roles r ON r.rolname = s.role_name
     WHERE pg_catalog.pg_has_role(r.oid, 'MEMBER'));
END $$;
COMMENT ON FUNCTION public.iasql_is_sidecar() IS
  'True when the current role is the sidecar''s (iasql_sidecar) or a member of it (superusers are members of every role).';
