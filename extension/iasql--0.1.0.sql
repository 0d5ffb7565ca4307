-- Generated from sql/ by 'make extension'; do not edit.
\echo Use "CREATE EXTENSION iasql" to load this file. \quit

-- 000_version.sql
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

-- 005_roles.sql
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

-- 006_locks.sql
-- The sidecar's locks (see iasql_holds_lock). Any role can take any
-- advisory lock, so a role with no grants could hold the sidecar's and stall
-- it; these locks are rows of a table in iasql_private, which only the
-- sidecar's role (and the role that installed iasql) may read or update, and
-- no grant on the tables of schema public reaches.
--   1 = the capture writer (the one sidecar consuming the slot, writing the audit trail),
--   2 = the running cycle (at most one per database),
--   3 = publication maintenance (iasql_sync_publication: a row lock for the transaction),
--   4 = the engine's service session (answers requests, keeps engine state),
--   5 = installs and upgrades of iasql's objects and of modules (a row lock for the transaction).
-- 1, 2 and 4 are held by a session, across its transactions, until it
-- releases them (iasql_release_locks) or ends: the row names the holder
-- (pid, role, start, and a token only that session knows), and a holder
-- that is no longer alive holds nothing. 3 and 5 are row locks (SELECT ...
-- FOR UPDATE, which needs UPDATE on the table) held until the transaction
-- ends.
CREATE TABLE iasql_private.iasql_locks (
  lock_id      integer PRIMARY KEY CONSTRAINT iasql_locks_known CHECK (lock_id BETWEEN 1 AND 5),
  holder_pid   integer,
  holder_role  oid,
  holder_start timestamptz,
  holder_token text,
  taken_at     timestamptz
);
COMMENT ON TABLE iasql_private.iasql_locks IS 'The sidecar''s locks, one row each (1 capture, 2 cycle, 3 publication, 4 engine service, 5 install): a session holds 1, 2 or 4 while its row names it and it is alive (iasql_take_lock); 3 and 5 are row locks for a transaction. Only the sidecar''s role and the installing role may take them.';
COMMENT ON COLUMN iasql_private.iasql_locks.lock_id IS 'Which lock: 1 capture writer, 2 running cycle, 3 publication maintenance, 4 engine service session, 5 install and upgrade.';
COMMENT ON COLUMN iasql_private.iasql_locks.holder_pid IS 'Server process id of the session that holds it (NULL: free).';
COMMENT ON COLUMN iasql_private.iasql_locks.holder_role IS 'Session user of the holder: with holder_start, tells the holder from a later session that reuses its pid.';
COMMENT ON COLUMN iasql_private.iasql_locks.holder_start IS 'When the holder''s session started (pg_stat_activity.backend_start).';
COMMENT ON COLUMN iasql_private.iasql_locks.holder_token IS 'A random token the holder keeps in its setting iasql.lock_token: only that session passes iasql_holds_lock.';
COMMENT ON COLUMN iasql_private.iasql_locks.taken_at IS 'When the holder took it.';
COMMENT ON CONSTRAINT iasql_locks_known ON iasql_private.iasql_locks IS 'Known locks.';
REVOKE ALL ON iasql_private.iasql_locks FROM PUBLIC;
INSERT INTO iasql_private.iasql_locks (lock_id) VALUES (1), (2), (3), (4), (5);

-- Whether a holder named by a lock row is alive: a session of this
-- database with that pid, of that role, started then (a start this role may
-- not see counts). The database too: a plain install's dump carries the
-- rows, and a copy restored beside its source on the same server must not
-- take the source's sessions for its own holders.
CREATE FUNCTION public.iasql_lock_holder_alive(holder integer, holder_role oid, holder_start timestamptz) RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT holder IS NOT NULL AND EXISTS (
    SELECT 1 FROM pg_catalog.pg_stat_get_activity(holder) a
     WHERE a.pid = holder AND a.usesysid = holder_role AND (a.backend_start IS NULL OR a.backend_start = holder_start)
       AND a.datid = (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()))
$$;
COMMENT ON FUNCTION public.iasql_lock_holder_alive(integer, oid, timestamptz) IS
  'True when the session a lock row names (pid, session user, backend start) is alive, in this database.';

-- Takes lock 1, 2 or 4 for this session if it is free (or this session
-- holds it already); never waits. Needs UPDATE on iasql_private.iasql_locks.
CREATE FUNCTION public.iasql_take_lock(which integer) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  token text := pg_catalog.current_setting('iasql.lock_token', true);
  started timestamptz;
BEGIN
  IF which NOT IN (1, 2, 4) THEN
    RAISE EXCEPTION 'iasql lock % is not held by a session (1, 2 and 4 are)', which USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF token IS NULL OR token = '' THEN
    token := pg_catalog.gen_random_uuid()::text;
    PERFORM pg_catalog.set_config('iasql.lock_token', token, false);
  END IF;
  IF EXISTS (SELECT 1 FROM iasql_private.iasql_locks l
              WHERE l.lock_id = which AND l.holder_pid = pg_catalog.pg_backend_pid() AND l.holder_token = token) THEN
    RETURN true;
  END IF;
  PERFORM pg_catalog.pg_stat_clear_snapshot(); -- see sessions as they are now
  SELECT a.backend_start INTO started FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a;
  UPDATE iasql_private.iasql_locks l
     SET holder_pid = pg_catalog.pg_backend_pid(), holder_role = (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname = session_user),
         holder_start = started, holder_token = token, taken_at = pg_catalog.clock_timestamp()
   WHERE l.lock_id = which
     AND NOT public.iasql_lock_holder_alive(l.holder_pid, l.holder_role, l.holder_start);
  RETURN FOUND;
END $$;
COMMENT ON FUNCTION public.iasql_take_lock(integer) IS
  'Takes the sidecar''s lock 1, 2 or 4 (iasql_private.iasql_locks) for this session if no other live session holds it; true when this session holds it. Never waits. Only the sidecar''s role (and the installing role) may.';

CREATE FUNCTION public.iasql_release_locks(which integer DEFAULT NULL) RETURNS void
LANGUAGE sql AS $$
  UPDATE iasql_private.iasql_locks
     SET holder_pid = NULL, holder_role = NULL, holder_start = NULL, holder_token = NULL, taken_at = NULL
   WHERE holder_pid = pg_catalog.pg_backend_pid() AND holder_token = pg_catalog.current_setting('iasql.lock_token', true)
     AND (which IS NULL OR lock_id = which)
$$;
COMMENT ON FUNCTION public.iasql_release_locks(integer) IS
  'Releases the lock of that number this session holds (iasql_take_lock), or every one (NULL); a session''s locks are also free once it ends.';

-- Who holds the sidecar's locks, for iasql_reader (iasql status, metrics,
-- tests): no token. DISTINCT keeps the view from being updatable, so a grant
-- on it (GRANT ALL ON ALL TABLES IN SCHEMA public) writes nothing.
CREATE VIEW public.iasql_lock_holders AS
  SELECT DISTINCT l.lock_id, l.holder_pid, l.taken_at
    FROM iasql_private.iasql_locks l
   WHERE l.lock_id IN (1, 2, 4) AND public.iasql_lock_holder_alive(l.holder_pid, l.holder_role, l.holder_start);
COMMENT ON VIEW public.iasql_lock_holders IS 'The sidecar''s locks held by live sessions (1 capture writer, 2 running cycle, 4 engine service session): which session holds each, since when.';
COMMENT ON COLUMN public.iasql_lock_holders.lock_id IS 'Which lock (iasql_private.iasql_locks).';
COMMENT ON COLUMN public.iasql_lock_holders.holder_pid IS 'Server process id of the session that holds it.';
COMMENT ON COLUMN public.iasql_lock_holders.taken_at IS 'When it took it.';
REVOKE ALL ON public.iasql_lock_holders FROM PUBLIC;
GRANT SELECT ON public.iasql_lock_holders TO iasql_reader;

-- 010_registry.sql
-- The registry of tables whose changes are user intent, and the publication
-- that makes logical replication carry exactly those tables.
CREATE TABLE public.iasql_tables (
  table_name    text PRIMARY KEY,
  module        text,
  registered_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE public.iasql_tables IS
  'Tables whose changes the sidecar captures as user intent. Insert a row to register a table (it needs a primary key); delete it to stop capturing.';
COMMENT ON COLUMN public.iasql_tables.table_name IS 'The table''s canonical name (iasql_table_name): bare in public, schema-qualified elsewhere.';
COMMENT ON COLUMN public.iasql_tables.module IS 'The module that registered the table; NULL for tables a user registered.';
COMMENT ON COLUMN public.iasql_tables.registered_at IS 'When the table was registered.';
GRANT SELECT ON public.iasql_tables TO PUBLIC;

CREATE FUNCTION public.iasql_publication() RETURNS name
LANGUAGE sql IMMUTABLE AS $$ SELECT 'iasql'::name $$;
COMMENT ON FUNCTION public.iasql_publication() IS 'Name of the publication that carries the registered tables.';

-- A table's name as iasql_tables and iasql_audit_log spell it, whatever the
-- search_path: bare for tables in public, schema-qualified otherwise.
CREATE FUNCTION public.iasql_table_name(rel regclass) RETURNS text
LANGUAGE sql STABLE STRICT AS $$
  SELECT CASE WHEN n.nspname = 'public' THEN pg_catalog.quote_ident(c.relname)
              ELSE pg_catalog.quote_ident(n.nspname) || '.' || pg_catalog.quote_ident(c.relname) END
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE c.oid = rel
$$;
COMMENT ON FUNCTION public.iasql_table_name(regclass) IS
  'The canonical name of a table in iasql_tables and the audit trail: bare in public, schema-qualified elsewhere, independent of search_path.';

-- The table a canonical name denotes (NULL when it does not exist).
CREATE FUNCTION public.iasql_table_regclass(table_name text) RETURNS regclass
LANGUAGE sql STABLE STRICT AS $$
  SELECT CASE WHEN pg_catalog.array_length(pg_catalog.parse_ident(table_name), 1) = 1
              THEN pg_catalog.to_regclass('public.' || table_name)
              ELSE pg_catalog.to_regclass(table_name) END
$$;
COMMENT ON FUNCTION public.iasql_table_regclass(text) IS
  'Resolves a canonical iasql table name (see iasql_table_name) to the table, independent of search_path; NULL when it does not exist.';

-- The table a name given to a function denotes: as in FROM (the caller's
-- search_path), else as a canonical name; NULL when there is none, or the
-- name is not a table name at all.
CREATE FUNCTION public.iasql_resolve_table(table_name text) RETURNS regclass
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN coalesce(pg_catalog.to_regclass(table_name), public.iasql_table_regclass(table_name));
EXCEPTION WHEN invalid_name OR invalid_parameter_value OR syntax_error THEN
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_resolve_table(text) IS
  'The table a name denotes: as in FROM (search_path), else as a canonical iasql name; NULL when none (or not a table name).';

-- Validate and normalise a registration; make UPDATE and DELETE carry the
-- whole old row (and with it unchanged TOASTed values).
CREATE FUNCTION public.iasql_tables_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  kind "char";
BEGIN
  -- The caller's search_path first (a bare name may mean another schema),
  -- then the canonical spelling (pg_dump restores with an empty search_path).
  BEGIN
    rel := coalesce(pg_catalog.to_regclass(NEW.table_name), public.iasql_table_regclass(NEW.table_name));
  EXCEPTION WHEN invalid_name OR invalid_parameter_value OR syntax_error THEN
    RAISE EXCEPTION 'cannot register table "%": it is not a valid table name', NEW.table_name
      USING ERRCODE = 'invalid_name', HINT = 'Give the name as in FROM: bucket, or schema.table, quoted where needed.';
  END;
  IF rel IS NULL THEN
    RAISE EXCEPTION 'cannot register table "%": it does not exist', NEW.table_name
      USING ERRCODE = 'undefined_table', HINT = 'Create the table first, then insert it into iasql_tables.';
  END IF;
  SELECT relkind INTO kind FROM pg_catalog.pg_class WHERE oid = rel;
  IF kind = 'p' THEN
    RAISE EXCEPTION 'cannot register "%": partitioned tables are not captured', NEW.table_name
      USING ERRCODE = 'feature_not_supported',
            HINT = 'Changes to a partitioned table arrive under its partitions'' names; register an ordinary table.';
  END IF;
  IF kind <> 'r' THEN
    RAISE EXCEPTION 'cannot register "%": it is not a table', NEW.table_name
      USING ERRCODE = 'wrong_object_type', HINT = 'Only ordinary tables can be captured.';
  END IF;
  IF public.iasql_table_name(rel) LIKE 'iasql\_%' AND public.iasql_table_name(rel) <> 'iasql_mode' THEN
    RAISE EXCEPTION 'cannot register "%": iasql''s own tables are not captured', NEW.table_name
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Register your own tables; iasql''s tables belong to iasql (only iasql_mode is captured, as user intent).';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_index WHERE indrelid = rel AND indisprimary) THEN
    RAISE EXCEPTION 'cannot register table "%": it has no primary key', NEW.table_name
      USING ERRCODE = 'invalid_table_definition',
            HINT = pg_catalog.format('Add one (ALTER TABLE %s ADD PRIMARY KEY (...)), then register it.', rel);
  END IF;
  NEW.table_name := public.iasql_table_name(rel);
  EXECUTE pg_catalog.format('ALTER TABLE %s REPLICA IDENTITY FULL', rel);
  RETURN NEW;
END $$;
COMMENT ON FUNCTION public.iasql_tables_check() IS
  'Refuses registrations of missing, partitioned or iasql tables and tables without a primary key; stores the canonical name and sets REPLICA IDENTITY FULL.';
CREATE TRIGGER iasql_tables_check BEFORE INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_check();
COMMENT ON TRIGGER iasql_tables_check ON public.iasql_tables IS 'Validates and prepares each registered table.';

-- Make the publication hold exactly the registered tables that exist.
CREATE FUNCTION public.iasql_sync_publication() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  pub name := public.iasql_publication();
  r record;
BEGIN
  -- Serialise with concurrent registrations and sidecars: lock 3, a row
  -- lock only the sidecar's and the installing role may take (006_locks.sql).
  PERFORM 1 FROM iasql_private.iasql_locks l WHERE l.lock_id = 3 FOR UPDATE;
  IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_publication WHERE pubname = pub) THEN
    EXECUTE pg_catalog.format('CREATE PUBLICATION %I', pub);
  END IF;
  FOR r IN
    SELECT public.iasql_table_regclass(t.table_name) AS rel FROM public.iasql_tables t
     WHERE public.iasql_table_regclass(t.table_name) IS NOT NULL
    EXCEPT
    SELECT pr.prrelid::regclass FROM pg_catalog.pg_publication_rel pr
      JOIN pg_catalog.pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = pub
  LOOP
    EXECUTE pg_catalog.format('ALTER PUBLICATION %I ADD TABLE %s', pub, r.rel);
  END LOOP;
  FOR r IN
    SELECT pr.prrelid::regclass AS rel FROM pg_catalog.pg_publication_rel pr
      JOIN pg_catalog.pg_publication p ON p.oid = pr.prpubid WHERE p.pubname = pub
    EXCEPT
    SELECT public.iasql_table_regclass(t.table_name) FROM public.iasql_tables t
  LOOP
    EXECUTE pg_catalog.format('ALTER PUBLICATION %I DROP TABLE %s', pub, r.rel);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_sync_publication() IS
  'Creates the iasql publication if missing and makes it carry exactly the tables in iasql_tables.';

CREATE FUNCTION public.iasql_tables_publish() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM public.iasql_sync_publication();
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_tables_publish() IS
  'Statement trigger: a registration takes effect in the publication in the same transaction.';
CREATE TRIGGER iasql_tables_publish AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_tables
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_tables_publish();
COMMENT ON TRIGGER iasql_tables_publish ON public.iasql_tables IS 'Keeps the publication equal to the registry.';

-- The publication must exist before the replication slot: a change decoded
-- at a point where the publication did not exist yet stops decoding for good.
SELECT public.iasql_sync_publication();

-- 020_audit.sql
-- The audit trail: one row per captured change, written by the sidecar from
-- the replication stream, and the lifecycle records later parts add.
CREATE TABLE public.iasql_audit_log (
  id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  lsn         pg_lsn,
  seq         integer NOT NULL DEFAULT 0,
  xid         bigint,
  ts          timestamptz NOT NULL,
  table_name  text,
  record_id   text,
  change_type text NOT NULL CONSTRAINT iasql_audit_log_change_type
                CHECK (change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'CYCLE_START', 'CYCLE_END')),
  old_row     jsonb,
  new_row     jsonb,
  origin      text NOT NULL CONSTRAINT iasql_audit_log_origin CHECK (origin IN ('user', 'engine', 'cloud')),
  message     text,
  actor       text,
  attribution jsonb,
  captured_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  CONSTRAINT iasql_audit_log_position UNIQUE (lsn, seq)
);
CREATE INDEX iasql_audit_log_record ON public.iasql_audit_log (table_name, record_id, id) INCLUDE (ts, change_type);
COMMENT ON TABLE public.iasql_audit_log IS
  'Every captured change to a registered table, in commit order; written only by the iasql sidecar, readable by iasql_reader.';
COMMENT ON SEQUENCE public.iasql_audit_log_id_seq IS 'Generates iasql_audit_log.id (an identity: the order changes were recorded in).';
COMMENT ON COLUMN public.iasql_audit_log.id IS 'Increases with commit order (then position in the transaction).';
COMMENT ON COLUMN public.iasql_audit_log.lsn IS 'Commit LSN of the transaction that made the change.';
COMMENT ON COLUMN public.iasql_audit_log.seq IS 'Position of the change within its transaction, from 1.';
COMMENT ON COLUMN public.iasql_audit_log.xid IS 'Transaction id of the change.';
COMMENT ON COLUMN public.iasql_audit_log.ts IS 'Commit time of the transaction.';
COMMENT ON COLUMN public.iasql_audit_log.table_name IS 'The registered table changed (as in iasql_tables).';
COMMENT ON COLUMN public.iasql_audit_log.record_id IS 'Primary key of the row: its value as text, or a JSON array of texts for a composite key; NULL for TRUNCATE.';
COMMENT ON COLUMN public.iasql_audit_log.change_type IS 'INSERT, UPDATE, DELETE or TRUNCATE (one row per truncated table) for captured changes; CYCLE_START and CYCLE_END for the engine''s cycles (message holds what started it and how it ended).';
COMMENT ON COLUMN public.iasql_audit_log.old_row IS 'The row before an UPDATE or DELETE. Booleans, numbers, json and jsonb keep their JSON types; other values are their PostgreSQL text form.';
COMMENT ON COLUMN public.iasql_audit_log.new_row IS 'The row after an INSERT or UPDATE (unchanged TOASTed values filled from the old row), as old_row.';
COMMENT ON COLUMN public.iasql_audit_log.origin IS 'user for intent; cloud for a change the sidecar pulled from the cloud into the row (an import, an update, a delete); engine for the sidecar''s other writes (feedback after its own calls). The sidecar marks its transactions with iasql_engine_mark.';
COMMENT ON COLUMN public.iasql_audit_log.message IS 'Free text: for engine and cloud changes, the marker''s message (which cycle).';
COMMENT ON COLUMN public.iasql_audit_log.actor IS 'Who made the change: for user and engine changes the role (current_user) that wrote the row; for cloud changes the AWS identity (an ARN) when AWS says, else NULL.';
COMMENT ON COLUMN public.iasql_audit_log.attribution IS 'For cloud changes, what AWS says of the change when it says (CloudTrail): {"actor", "event", "at", "source"}; else NULL.';
COMMENT ON COLUMN public.iasql_audit_log.captured_at IS 'When the sidecar wrote the row; captured_at - ts is the capture lag.';
COMMENT ON INDEX public.iasql_audit_log_record IS 'Finds the changes to one record in order (iasql_history); with ts and change_type, iasql_as_of and the pruning pick versions from the index alone.';
COMMENT ON CONSTRAINT iasql_audit_log_position ON public.iasql_audit_log IS 'A change is recorded at most once.';
REVOKE ALL ON public.iasql_audit_log FROM PUBLIC;
GRANT SELECT ON public.iasql_audit_log TO iasql_reader;
CREATE TRIGGER iasql_audit_log_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('1', '2');
COMMENT ON TRIGGER iasql_audit_log_guard ON public.iasql_audit_log IS 'Only the capture leader and the running cycle write the audit trail.';

-- Engine writes: the sidecar calls this first in every transaction that
-- writes module tables. It emits a transactional logical-decoding message
-- (no replication origin, no superuser), so the decoder records that
-- transaction's changes with origin engine. Any role can emit such a message
-- with pg_logical_emit_message, so the marker carries the key in
-- iasql_private.iasql_engine_key ("key:message"), which only the sidecar's
-- role may read; capture ignores a marker without it. Not executable by
-- PUBLIC.
CREATE FUNCTION public.iasql_engine_mark(message text DEFAULT '') RETURNS pg_lsn
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  k text;
BEGIN
  SELECT e.mark_key INTO STRICT k FROM iasql_private.iasql_engine_key e;
  RETURN pg_catalog.pg_logical_emit_message(true, 'iasql_engine', k || ':' || coalesce(message, ''));
END $$;
COMMENT ON FUNCTION public.iasql_engine_mark(text) IS
  'Marks the current transaction as the engine''s: its changes are captured with origin engine, so they are not user intent. Only the sidecar''s role may call it.';
REVOKE ALL ON FUNCTION public.iasql_engine_mark(text) FROM PUBLIC;

-- 030_capture.sql
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

-- 040_engine.sql
-- The engine's state and the SQL API that calls into the sidecar.
--
-- Requests travel as non-transactional logical-decoding messages (prefix
-- iasql_request): they reach the sidecar through its replication stream at
-- once, even from inside an open transaction, and need no write the caller
-- would have to commit. The sidecar answers in iasql_requests, which the
-- caller polls (READ COMMITTED: each poll sees the newest answer).

-- Modules this sidecar offers, and which are installed.
CREATE TABLE public.iasql_modules (
  name         text PRIMARY KEY,
  version      text NOT NULL,
  depends_on   text[] NOT NULL DEFAULT '{}',
  tables       text[] NOT NULL DEFAULT '{}',
  installed_at timestamptz,
  definition   jsonb,
  installed_version text,
  columns      jsonb NOT NULL DEFAULT '{}'
);
COMMENT ON TABLE public.iasql_modules IS 'Modules the sidecar offers (written by it at start), and when each was installed.';
COMMENT ON COLUMN public.iasql_modules.name IS 'Module name, as iasql_install takes it.';
COMMENT ON COLUMN public.iasql_modules.version IS 'Module version.';
COMMENT ON COLUMN public.iasql_modules.depends_on IS 'Modules installed before this one.';
COMMENT ON COLUMN public.iasql_modules.tables IS 'Tables the module creates, in dependency order.';
COMMENT ON COLUMN public.iasql_modules.installed_at IS 'When it was installed; NULL when it is not.';
COMMENT ON COLUMN public.iasql_modules.columns IS 'Per table, each column''s kind: declarative (the user''s, which a mode rule may name), identity (the resource''s identity in the cloud), feedback (the cloud''s), initial (the database''s own) or read-only (a read-only table''s).';
COMMENT ON COLUMN public.iasql_modules.installed_version IS 'The version whose SQL the module''s tables have: set at install, moved by the upgrades a newer sidecar applies at start; NULL when not installed.';
COMMENT ON COLUMN public.iasql_modules.definition IS 'For a module made from a cloud resource type (AWS::Logs::LogGroup): the type''s schema as fetched at its first install (or its last iasql_refresh_schema); its table, previews, restarts and reinstalls use this one. NULL for the modules built into the sidecar.';
REVOKE ALL ON public.iasql_modules FROM PUBLIC;
GRANT SELECT ON public.iasql_modules TO iasql_reader;
CREATE TRIGGER iasql_modules_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_modules
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_modules_guard ON public.iasql_modules IS 'Only the sidecar writes the module registry.';

-- What the engine knows of each record: its cloud identity, and up to
-- which LSN its user intent has been enacted (XOS's enacted version).
CREATE TABLE public.iasql_records (
  table_name  text NOT NULL,
  record_id   text NOT NULL,
  cloud_id    text,
  enacted_lsn pg_lsn NOT NULL,
  enacted_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  PRIMARY KEY (table_name, record_id)
);
CREATE INDEX iasql_records_cloud_id ON public.iasql_records (table_name, cloud_id);
COMMENT ON TABLE public.iasql_records IS 'Per module record: its cloud identity and the LSN up to which its user intent is enacted. A user change newer than enacted_lsn is pending intent.';
COMMENT ON COLUMN public.iasql_records.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_records.record_id IS 'The row''s id.';
COMMENT ON COLUMN public.iasql_records.cloud_id IS 'The resource''s identity in the cloud when last in sync.';
COMMENT ON COLUMN public.iasql_records.enacted_lsn IS 'User changes to the record up to this LSN are enacted (or were decided otherwise).';
COMMENT ON COLUMN public.iasql_records.enacted_at IS 'When enacted_lsn last moved.';
COMMENT ON INDEX public.iasql_records_cloud_id IS 'Finds the record a cloud resource belonged to.';
REVOKE ALL ON public.iasql_records FROM PUBLIC;
GRANT SELECT ON public.iasql_records TO iasql_reader;
CREATE TRIGGER iasql_records_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_records
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_records_guard ON public.iasql_records IS 'Only the sidecar writes record state.';

-- Replacements in progress: a record whose change can only be made by a new
-- resource, created before the old one is deleted so that what depends on
-- it can move over (the dance of the apply/sync walkthrough). Kept until the
-- old (and any temporary) resource is gone, so a restart finishes the work.
CREATE TABLE public.iasql_replacements (
  table_name    text NOT NULL,
  record_id     text NOT NULL,
  old_cloud_id  text NOT NULL,
  temp_cloud_id text,
  phase         text NOT NULL,
  started_at    timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  PRIMARY KEY (table_name, record_id),
  CONSTRAINT iasql_replacements_phase CHECK (phase IN ('temporary', 'final'))
);
COMMENT ON TABLE public.iasql_replacements IS 'Replacements of cloud resources the engine has begun and not finished: the new resource is created first, what references the record moves to it, then the old resource is deleted. A resource whose identity must stay unique (a security group''s name) goes through a temporary resource first.';
COMMENT ON COLUMN public.iasql_replacements.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_replacements.record_id IS 'The row being replaced.';
COMMENT ON COLUMN public.iasql_replacements.old_cloud_id IS 'Identity of the resource being replaced; deleted once nothing depends on it.';
COMMENT ON COLUMN public.iasql_replacements.temp_cloud_id IS 'Identity of the temporary resource standing in while the old one is deleted (NULL when none is needed); deleted at the end.';
COMMENT ON COLUMN public.iasql_replacements.phase IS 'temporary: the temporary resource stands in for the record; final: the record''s own new resource does.';
COMMENT ON COLUMN public.iasql_replacements.started_at IS 'When the replacement began.';
COMMENT ON CONSTRAINT iasql_replacements_phase ON public.iasql_replacements IS 'The two phases of a replacement.';
REVOKE ALL ON public.iasql_replacements FROM PUBLIC;
GRANT SELECT ON public.iasql_replacements TO iasql_reader;
CREATE TRIGGER iasql_replacements_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_replacements
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_replacements_guard ON public.iasql_replacements IS 'Only the sidecar writes replacements.';

-- Requests from the SQL API and the sidecar's answers.
CREATE TABLE public.iasql_requests (
  id           uuid PRIMARY KEY,
  kind         text NOT NULL,
  args         jsonb NOT NULL DEFAULT '{}',
  requested_by name NOT NULL,
  accepted_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  finished_at  timestamptz,
  status       text NOT NULL CONSTRAINT iasql_requests_status CHECK (status IN ('accepted', 'done', 'failed')),
  result       jsonb,
  error        text,
  progress     text,
  taken_by_pid integer NOT NULL
);
COMMENT ON TABLE public.iasql_requests IS 'Requests made through the SQL API (iasql_commit, iasql_preview, ...) and the sidecar''s answers.';
COMMENT ON COLUMN public.iasql_requests.id IS 'Request id, chosen by the caller.';
COMMENT ON COLUMN public.iasql_requests.kind IS 'begin, commit, rollback, preview, install, uninstall or cycle.';
COMMENT ON COLUMN public.iasql_requests.args IS 'Arguments of the request.';
COMMENT ON COLUMN public.iasql_requests.requested_by IS 'Role that made the request: the session user of the session that sent it, as the sidecar verified it (iasql_request_key).';
COMMENT ON COLUMN public.iasql_requests.accepted_at IS 'When the sidecar received it (or refused it); the rate limit of the role that made it counts it from then.';
COMMENT ON COLUMN public.iasql_requests.finished_at IS 'When the sidecar finished it.';
COMMENT ON COLUMN public.iasql_requests.status IS 'accepted (being worked on by the session taken_by_pid), done or failed.';
COMMENT ON COLUMN public.iasql_requests.result IS 'The answer (JSON), when done.';
COMMENT ON COLUMN public.iasql_requests.progress IS 'What the request waits for, while it runs (the caller shows it as a NOTICE).';
COMMENT ON COLUMN public.iasql_requests.error IS 'What went wrong, when failed.';
COMMENT ON COLUMN public.iasql_requests.taken_by_pid IS 'Server process id (pg_backend_pid) of the sidecar''s engine session that took the request. While the request is accepted, the caller checks that this session is alive: if it ends before answering, the caller fails at once, and the next engine to lead marks the request failed.';
COMMENT ON CONSTRAINT iasql_requests_status ON public.iasql_requests IS 'Known request states.';
-- A sidecar that starts leading reads the requests of the last seconds to
-- seed each role's rate bucket (bridge.RecentRequests).
CREATE INDEX iasql_requests_accepted_at ON public.iasql_requests (accepted_at);
COMMENT ON INDEX public.iasql_requests_accepted_at IS 'Recent requests by time: a sidecar that starts leading seeds each role''s rate limit from them, so a failover does not reset it.';
REVOKE ALL ON public.iasql_requests FROM PUBLIC;
GRANT SELECT ON public.iasql_requests TO iasql_admin;
CREATE TRIGGER iasql_requests_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_requests
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_requests_guard ON public.iasql_requests IS 'Only the sidecar answers requests.';

-- Refused requests are counted, not stored (a flood of them must cost the
-- sidecar almost nothing): one row per role and reason, which the sidecar
-- updates at most a few times a second, with the ids of the latest refused
-- requests so that a waiting caller hears why at once (iasql_request).
CREATE TABLE public.iasql_request_refusals (
  role_name name NOT NULL,
  reason    text NOT NULL CONSTRAINT iasql_request_refusals_reason CHECK (reason IN ('role', 'rate')),
  refused   bigint NOT NULL,
  first_at  timestamptz NOT NULL,
  last_at   timestamptz NOT NULL,
  message   text NOT NULL,
  recent    uuid[] NOT NULL,
  PRIMARY KEY (role_name, reason)
);
COMMENT ON TABLE public.iasql_request_refusals IS 'Requests the sidecar refused, counted per role and reason (none is stored in iasql_requests).';
COMMENT ON COLUMN public.iasql_request_refusals.role_name IS 'Role that sent them, as the sidecar verified it (iasql_request_key).';
COMMENT ON COLUMN public.iasql_request_refusals.reason IS 'role: the role lacks the one the request needs (iasql_request_role); rate: the role sent more than its rate allows (refused requests count towards it too).';
COMMENT ON COLUMN public.iasql_request_refusals.refused IS 'How many were refused.';
COMMENT ON COLUMN public.iasql_request_refusals.first_at IS 'When the first was refused.';
COMMENT ON COLUMN public.iasql_request_refusals.last_at IS 'When the latest was refused.';
COMMENT ON COLUMN public.iasql_request_refusals.message IS 'The latest refusal, in one line (what iasql_request raises).';
COMMENT ON COLUMN public.iasql_request_refusals.recent IS 'Ids of the latest refused requests (at most 64, newest first): a caller waiting for one of them raises the message.';
COMMENT ON CONSTRAINT iasql_request_refusals_reason ON public.iasql_request_refusals IS 'Known reasons.';
REVOKE ALL ON public.iasql_request_refusals FROM PUBLIC;
GRANT SELECT ON public.iasql_request_refusals TO iasql_reader;
CREATE TRIGGER iasql_request_refusals_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_request_refusals
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('4');
COMMENT ON TRIGGER iasql_request_refusals_guard ON public.iasql_request_refusals IS 'Only the sidecar counts refusals.';

-- The database's one iasql transaction (iasql_begin .. iasql_commit/rollback).
CREATE TABLE public.iasql_transaction (
  open          boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_transaction_one CHECK (open),
  opened_by     name NOT NULL,
  opened_at     timestamptz NOT NULL,
  begin_lsn     pg_lsn NOT NULL,
  owner_pid     integer NOT NULL,
  owner_started timestamptz NOT NULL
);
COMMENT ON TABLE public.iasql_transaction IS 'The open iasql transaction, if any: automatic cycles pause while it is open.';
COMMENT ON COLUMN public.iasql_transaction.open IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN public.iasql_transaction.opened_by IS 'Role that called iasql_begin (its session user, as the sidecar verified it).';
COMMENT ON COLUMN public.iasql_transaction.opened_at IS 'When iasql_begin opened it.';
COMMENT ON COLUMN public.iasql_transaction.owner_pid IS 'The session (backend pid) that called iasql_begin: only it writes module tables, commits or rolls back while the transaction is open (and an iasql_admin may end it).';
COMMENT ON COLUMN public.iasql_transaction.owner_started IS 'When the owning session started (pg_stat_activity.backend_start): tells it from a later session that reuses its pid.';
COMMENT ON COLUMN public.iasql_transaction.begin_lsn IS 'User changes after this LSN belong to the transaction (iasql_rollback discards them).';
COMMENT ON CONSTRAINT iasql_transaction_one ON public.iasql_transaction IS 'At most one iasql transaction per database.';
REVOKE ALL ON public.iasql_transaction FROM PUBLIC;
GRANT SELECT ON public.iasql_transaction TO iasql_reader;
CREATE TRIGGER iasql_transaction_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_transaction
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_transaction_guard ON public.iasql_transaction IS 'Only the sidecar opens and closes iasql transactions.';

-- Calls of deprecated functions, counted by the sidecar.
CREATE TABLE public.iasql_deprecated_calls (
  function_name text PRIMARY KEY,
  calls         bigint NOT NULL DEFAULT 0,
  last_called   timestamptz
);
COMMENT ON TABLE public.iasql_deprecated_calls IS 'How often each deprecated function (iasql_apply, iasql_sync, ...) was called.';
COMMENT ON COLUMN public.iasql_deprecated_calls.function_name IS 'The deprecated function.';
COMMENT ON COLUMN public.iasql_deprecated_calls.calls IS 'Calls counted so far.';
COMMENT ON COLUMN public.iasql_deprecated_calls.last_called IS 'When it was last called.';
REVOKE ALL ON public.iasql_deprecated_calls FROM PUBLIC;
GRANT SELECT ON public.iasql_deprecated_calls TO iasql_reader;
CREATE TRIGGER iasql_deprecated_calls_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_deprecated_calls
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_deprecated_calls_guard ON public.iasql_deprecated_calls IS 'Only the sidecar counts.';

-- True when a sidecar consumes this database's capture slot.
CREATE FUNCTION public.iasql_sidecar_connected() RETURNS boolean
LANGUAGE sql STABLE AS $$
  SELECT EXISTS (
    SELECT 1 FROM public.iasql_capture_progress p
      JOIN pg_catalog.pg_replication_slots s ON s.slot_name = p.slot_name
     WHERE s.active AND s.database = pg_catalog.current_database())
$$;
COMMENT ON FUNCTION public.iasql_sidecar_connected() IS 'True when an iasql sidecar is consuming this database''s capture slot.';

-- Who may ask for what. The sidecar checks the same (bridge/privileges.go),
-- against the role of the session that sent the request; this check only
-- refuses at once, before anything is sent.
CREATE FUNCTION public.iasql_request_role(kind text) RETURNS name
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE kind
    WHEN 'preview' THEN 'iasql_reader'
    WHEN 'begin' THEN 'iasql_writer' WHEN 'commit' THEN 'iasql_writer'
    WHEN 'rollback' THEN 'iasql_writer' WHEN 'refresh' THEN 'iasql_writer' WHEN 'cycle' THEN 'iasql_writer'
    ELSE 'iasql_admin' END::name
$$;
COMMENT ON FUNCTION public.iasql_request_role(text) IS
  'The role a request of this kind needs: iasql_reader (preview), iasql_writer (begin, commit, rollback, refresh) or iasql_admin (install, uninstall, rebind_account, anything else).';

CREATE FUNCTION public.iasql_request_max_bytes() RETURNS integer
LANGUAGE sql IMMUTABLE AS $$ SELECT 65536 $$;
COMMENT ON FUNCTION public.iasql_request_max_bytes() IS
  'Largest request (its JSON, in bytes) iasql_request sends; the sidecar drops larger messages.';

-- The advisory lock (bigint form) a request's sender holds while it waits:
-- the first 8 bytes of the SHA-256 of the message. The sidecar acts on a
-- request only when the session the message names (pid) holds that lock, and
-- as that session's role: no role can hold a lock in another's session, and
-- seeing a lock in pg_locks does not help to forge another message with it.
CREATE FUNCTION public.iasql_request_key(message bytea) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT ('x' || pg_catalog.encode(pg_catalog.substr(pg_catalog.sha256(message), 1, 8), 'hex'))::bit(64)::bigint
$$;
COMMENT ON FUNCTION public.iasql_request_key(bytea) IS
  'The advisory lock key that proves who sent a request message: its SHA-256''s first 8 bytes, as a bigint.';

-- Send a request to the sidecar and wait for its answer. Refuses at once
-- where it cannot work: no sidecar, REPEATABLE READ or SERIALIZABLE (the
-- answer would never become visible), uncommitted writes (the sidecar could
-- not see them). While it waits, it tells a busy sidecar from a missing or
-- dead one. Before the request is taken: with no sidecar connected it fails
-- at once; while the slot's confirmed position is below the request's
-- message, capture is behind (a backlog) and it waits, saying how far behind
-- every 5 seconds; once capture has read past the message, the answer is due
-- within 5 seconds. After the request is taken: the engine session that took
-- it (taken_by_pid) must stay alive until it answers, or it fails at once.
-- pg_stat_activity is read afresh each time (pg_stat_clear_snapshot: a
-- transaction otherwise sees the sessions as they were at its first read).
-- The answer is read from iasql_my_requests, the caller's own requests: only
-- iasql_admin reads everyone's (070_privileges.sql).
CREATE FUNCTION public.iasql_request(kind text, args jsonb DEFAULT '{}', timeout_s integer DEFAULT 3600) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
  req uuid := pg_catalog.gen_random_uuid();
  needs name;
  message bytea;
  sent pg_lsn;
  st text;
  res jsonb;
  err text;
  taker integer;
  confirmed pg_lsn;
  answer_by timestamptz;
  next_check timestamptz;
  next_notice timestamptz;
  said text;
  now_doing text;
  give_up timestamptz := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => timeout_s);
BEGIN
  needs := public.iasql_request_role(kind);
  IF NOT pg_catalog.pg_has_role(session_user, needs, 'MEMBER') THEN
    RAISE EXCEPTION 'permission denied for iasql %: role % is not a member of %', kind, session_user, needs
      USING ERRCODE = 'insufficient_privilege',
            HINT = pg_catalog.format('An administrator grants it: GRANT %I TO %I;', needs, session_user);
  END IF;
  -- The answer is read with the current role's privileges (after SET ROLE,
  -- not the session's).
  IF NOT pg_catalog.pg_has_role('iasql_reader', 'USAGE') THEN
    RAISE EXCEPTION 'permission denied for iasql %: the current role % is not a member of iasql_reader, so it cannot read the answer', kind, current_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = pg_catalog.format('RESET ROLE, or an administrator grants it: GRANT iasql_reader TO %I;', current_user);
  END IF;
  IF pg_catalog.current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'iasql % cannot run at % isolation: its snapshot would never see the sidecar''s answer', kind,
        pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'Call it outside a transaction block, or in one at READ COMMITTED.';
  END IF;
  IF pg_catalog.pg_current_xact_id_if_assigned() IS NOT NULL THEN
    RAISE EXCEPTION 'iasql % cannot run in a transaction block with uncommitted writes: the sidecar cannot see them', kind
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'COMMIT (or ROLLBACK) first, then call it again.';
  END IF;
  IF NOT public.iasql_sidecar_connected() THEN
    RAISE EXCEPTION 'iasql % needs the iasql sidecar, and none is connected to this database', kind
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start it: iasql run --dsn <this database>; iasql status shows its state.';
  END IF;
  -- The sidecar takes the sender's role from the session pid names, once it
  -- has seen that session hold the message's lock (iasql_request_key).
  message := pg_catalog.convert_to(pg_catalog.jsonb_build_object('id', req, 'kind', kind, 'args', coalesce(args, '{}'),
    'pid', pg_catalog.pg_backend_pid())::text, 'UTF8');
  IF pg_catalog.octet_length(message) > public.iasql_request_max_bytes() THEN
    RAISE EXCEPTION 'iasql % request is too large: % bytes, at most %', kind, pg_catalog.octet_length(message), public.iasql_request_max_bytes()
      USING ERRCODE = 'program_limit_exceeded', HINT = 'Split it into smaller requests (e.g. fewer modules at a time).';
  END IF;
  PERFORM pg_catalog.pg_advisory_xact_lock(public.iasql_request_key(message));
  sent := pg_catalog.pg_logical_emit_message(false, 'iasql_request', message);
  next_check := pg_catalog.clock_timestamp();
  next_notice := pg_catalog.clock_timestamp() + interval '5 seconds';
  LOOP
    SELECT r.status, r.result, r.error, r.taken_by_pid, r.progress INTO st, res, err, taker, now_doing FROM public.iasql_my_requests r WHERE r.id = req;
    EXIT WHEN st IN ('done', 'failed');
    IF now_doing IS DISTINCT FROM said AND now_doing IS NOT NULL THEN
      RAISE NOTICE 'iasql %: %', kind, now_doing;
      said := now_doing;
    END IF;
    IF pg_catalog.clock_timestamp() >= next_check THEN
      next_check := pg_catalog.clock_timestamp() + interval '100 milliseconds';
      IF st IS NULL THEN
        -- Refused: not stored, but counted with its id (iasql_request_refusals).
        SELECT f.message INTO err FROM public.iasql_request_refusals f
         WHERE f.role_name = session_user AND req = ANY (f.recent) LIMIT 1;
        IF FOUND THEN
          RAISE EXCEPTION '%', err USING ERRCODE = 'external_routine_exception';
        END IF;
        -- Not taken yet. (Each check looks at the row again before it
        -- raises: the sidecar may have taken the request meanwhile.)
        IF NOT public.iasql_sidecar_connected()
           AND NOT EXISTS (SELECT 1 FROM public.iasql_my_requests r WHERE r.id = req) THEN
          RAISE EXCEPTION 'iasql % needs the iasql sidecar, and none is connected to this database (it disconnected before taking the request)', kind
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Start it: iasql run --dsn <this database> (it may then carry out this request); iasql status shows its state.';
        END IF;
        IF answer_by IS NULL THEN
          SELECT max(s.confirmed_flush_lsn) INTO confirmed
            FROM public.iasql_capture_progress p
            JOIN pg_catalog.pg_replication_slots s ON s.slot_name = p.slot_name
           WHERE s.active AND s.database = pg_catalog.current_database();
          IF confirmed >= sent THEN
            -- Capture has read past the request: the answer is due.
            answer_by := pg_catalog.clock_timestamp() + interval '5 seconds';
          ELSIF pg_catalog.clock_timestamp() >= next_notice THEN
            RAISE NOTICE 'iasql %: the sidecar is connected but busy: its capture is % of WAL behind this request; waiting', kind,
              coalesce(pg_catalog.pg_size_pretty(sent - confirmed), 'an unknown amount');
            next_notice := pg_catalog.clock_timestamp() + interval '5 seconds';
          END IF;
        ELSIF pg_catalog.clock_timestamp() > answer_by
              AND NOT EXISTS (SELECT 1 FROM public.iasql_my_requests r WHERE r.id = req) THEN
          RAISE EXCEPTION 'iasql %: the sidecar received the request but did not answer within 5 seconds', kind
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Check the sidecar with iasql status and its logs (is its engine running?), then call it again.';
        END IF;
      ELSE
        -- Taken: the engine session that took it must live until it answers.
        PERFORM pg_catalog.pg_stat_clear_snapshot();
        IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_stat_activity a
                        WHERE a.pid = taker AND a.datname = pg_catalog.current_database())
           AND EXISTS (SELECT 1 FROM public.iasql_my_requests r WHERE r.id = req AND r.status = 'accepted') THEN
          RAISE EXCEPTION 'iasql %: the sidecar that took the request (server process %) ended before answering; it may or may not have acted', kind, taker
            USING ERRCODE = 'object_not_in_prerequisite_state',
                  HINT = 'Check iasql status and the sidecar''s logs, then call it again: a commit is idempotent (it does what is left to do).';
        END IF;
      END IF;
    END IF;
    IF pg_catalog.clock_timestamp() > give_up THEN
      RAISE EXCEPTION 'iasql % did not finish within % seconds (request %)', kind, timeout_s, req
        USING ERRCODE = 'query_canceled',
              HINT = 'It may still finish: see iasql_my_requests.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.005);
  END LOOP;
  IF st = 'failed' THEN
    RAISE EXCEPTION '%', err USING ERRCODE = 'external_routine_exception';
  END IF;
  RETURN res;
END $$;
COMMENT ON FUNCTION public.iasql_request(text, jsonb, integer) IS
  'Sends a request to the sidecar (as a non-transactional logical-decoding message, holding the advisory lock iasql_request_key that proves the sender) and waits for its answer in iasql_my_requests (its own requests); raises its error. Refuses at once a role that lacks the role the request needs (iasql_request_role). Waits (with a NOTICE every 5 seconds) while the sidecar''s capture is behind the request; fails at once when no sidecar is connected or the engine session that took the request has ended.';

CREATE PROCEDURE public.iasql_begin()
LANGUAGE plpgsql AS $$
BEGIN
  -- The transaction belongs to this session (its pid is in the request;
  -- its start tells it from a later session that reuses the pid).
  PERFORM public.iasql_request('begin', pg_catalog.jsonb_build_object('backend_start',
    (SELECT a.backend_start FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a)));
END $$;
COMMENT ON PROCEDURE public.iasql_begin() IS
  'Waits for a running cycle to end, then opens the database''s one iasql transaction, owned by this session: automatic cycles pause, and only this session writes module tables, until it calls iasql_commit or iasql_rollback (or an iasql_admin does). It is rolled back when this session ends or stays idle longer than the sidecar''s --transaction-timeout (30 minutes).';

CREATE PROCEDURE public.iasql_commit()
LANGUAGE plpgsql AS $$
DECLARE
  res jsonb;
  part text;
BEGIN
  res := public.iasql_request('commit');
  -- A part of the cloud whose reads failed (a region not enabled, an
  -- outage) is a WARNING, one per table and region with the error, not an
  -- error: the commit did everything else, and failing it would fail every
  -- commit for as long as the part is out. A change of the caller's that
  -- such a part holds back is a failure of the commit (raised above).
  FOR part IN SELECT pg_catalog.jsonb_array_elements_text(coalesce(res->'unverified', '[]'::jsonb)) LOOP
    RAISE WARNING 'iasql_commit: unverified, nothing was done there: %', part
      USING HINT = 'SELECT * FROM iasql_status WHERE state = ''unverified'' shows what is still unverified; it clears once the reads work (or once the region is disabled in aws_regions).';
  END LOOP;
  RAISE NOTICE 'iasql_commit: %', res->>'summary';
END $$;
COMMENT ON PROCEDURE public.iasql_commit() IS
  'Runs a cycle now and returns when it has ended (so the cloud ids are in the rows), then closes the iasql transaction if one is open. Raises the failures with the records they concern, and warns of the parts of the cloud it could not read (unverified).';

CREATE PROCEDURE public.iasql_rollback()
LANGUAGE plpgsql AS $$
DECLARE
  res jsonb;
BEGIN
  res := public.iasql_request('rollback');
  RAISE NOTICE 'iasql_rollback: %', res->>'summary';
END $$;
COMMENT ON PROCEDURE public.iasql_rollback() IS
  'Discards the user changes made since iasql_begin by restoring those records from the cloud, then closes the iasql transaction.';

CREATE PROCEDURE public.iasql_refresh()
LANGUAGE plpgsql AS $$
DECLARE
  res jsonb;
BEGIN
  res := public.iasql_request('refresh');
  RAISE NOTICE 'iasql_refresh: %', res->>'summary';
END $$;
COMMENT ON PROCEDURE public.iasql_refresh() IS
  'Runs a cycle now that reads the whole cloud as it is (every detail of every resource), and returns when it has ended. iasql_commit reads fresh only what it acts on and reuses recent reads of the rest; after changes made outside iasql, call this to see them at once.';

CREATE FUNCTION public.iasql_preview()
RETURNS TABLE (action text, direction text, table_name text, id text, cloud_id text, description text, mode text, step integer, waits_for text[])
LANGUAGE sql AS $$
  SELECT a->>'action', a->>'direction', a->>'table_name', a->>'id', a->>'cloud_id', a->>'description', a->>'mode',
         (a->>'step')::integer,
         ARRAY(SELECT pg_catalog.jsonb_array_elements_text(COALESCE(a->'waits_for', '[]'::jsonb)))
    FROM pg_catalog.jsonb_array_elements(public.iasql_request('preview')->'actions') WITH ORDINALITY AS p(a, n)
   ORDER BY p.n
$$;
COMMENT ON FUNCTION public.iasql_preview() IS
  'Every action the cycle of a commit now would take, in the order it takes them, one row per action: create, update, replace or delete, towards the cloud or the database, and the mode (and rule) that decided it. step is the pass of the cycle that takes it (2: once what it references has been made in pass 1), waits_for the actions it waits for, each named "action table id" (create vpc 7). An identity the cloud has not given yet shows as (not known yet: vpc 7), and the description of an action that uses one says which. Not shown: what the cloud''s answers bring back (feedback written into the rows, what the cloud makes by itself, such as a new VPC''s default security group).';

CREATE FUNCTION public.iasql_install(VARIADIC modules text[])
RETURNS TABLE (module text, installed boolean, note text)
LANGUAGE sql AS $$
  SELECT m->>'module', (m->>'installed')::boolean, m->>'note'
    FROM pg_catalog.jsonb_array_elements(public.iasql_request('install', pg_catalog.jsonb_build_object('modules', modules))->'modules') m
$$;
COMMENT ON FUNCTION public.iasql_install(text[]) IS
  'Installs modules (and the modules they depend on): creates their tables, registers them for capture, imports what exists in the cloud. A CloudFormation resource type name (AWS::Logs::LogGroup) installs that type as a table, through the Cloud Control API.';

CREATE FUNCTION public.iasql_uninstall(VARIADIC modules text[])
RETURNS TABLE (module text, installed boolean, note text)
LANGUAGE sql AS $$
  SELECT m->>'module', (m->>'installed')::boolean, m->>'note'
    FROM pg_catalog.jsonb_array_elements(public.iasql_request('uninstall', pg_catalog.jsonb_build_object('modules', modules))->'modules') m
$$;
-- An install request with refresh: the sidecar serves it (Engine.install).
CREATE FUNCTION public.iasql_refresh_schema(VARIADIC types text[])
RETURNS TABLE (module text, installed boolean, note text)
LANGUAGE sql AS $$
  SELECT m->>'module', (m->>'installed')::boolean, m->>'note'
    FROM pg_catalog.jsonb_array_elements(public.iasql_request('install', pg_catalog.jsonb_build_object('modules', types, 'refresh', true))->'modules') m
$$;
COMMENT ON FUNCTION public.iasql_refresh_schema(text[]) IS
  'Fetches the current schema of installed resource types (AWS::Logs::LogGroup) and migrates their tables: columns for new properties are added, columns whose property is gone are kept with their values and say so in their comment; the stored schema and the module version follow. Refused in one line when the primary identifier changed (uninstall and install the type instead).';

COMMENT ON FUNCTION public.iasql_uninstall(text[]) IS
  'Uninstalls modules: drops their tables and touches nothing in the cloud. Refused while an installed module depends on one of them.';

CREATE FUNCTION public.iasql_modules_list()
RETURNS TABLE (module text, version text, depends_on text[], tables text[], installed boolean)
LANGUAGE sql STABLE AS $$
  SELECT name, version, depends_on, tables, installed_at IS NOT NULL FROM public.iasql_modules ORDER BY name
$$;
COMMENT ON FUNCTION public.iasql_modules_list() IS 'The modules the sidecar offers, and whether each is installed.';

-- Deprecated: they warn, do nothing else, and are counted (the count is
-- sent as a non-transactional message, so it works in read-only transactions).
CREATE FUNCTION public.iasql_deprecated(function_name text, replacement text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_catalog.pg_logical_emit_message(false, 'iasql_deprecated', function_name);
  RAISE WARNING '% is deprecated and does nothing: %', function_name, replacement;
END $$;
COMMENT ON FUNCTION public.iasql_deprecated(text, text) IS 'Warns that a deprecated function was called, naming its replacement, and counts the call.';

CREATE FUNCTION public.iasql_apply() RETURNS void LANGUAGE sql AS $$
  SELECT public.iasql_deprecated('iasql_apply', 'changes are applied continuously; use CALL iasql_commit() to apply now and wait')
$$;
COMMENT ON FUNCTION public.iasql_apply() IS 'Deprecated: warns and does nothing. Changes apply continuously; CALL iasql_commit() applies now.';
CREATE FUNCTION public.iasql_sync() RETURNS void LANGUAGE sql AS $$
  SELECT public.iasql_deprecated('iasql_sync', 'the cloud is synced continuously; use CALL iasql_commit() to sync now and wait')
$$;
COMMENT ON FUNCTION public.iasql_sync() IS 'Deprecated: warns and does nothing. The cloud syncs continuously; CALL iasql_commit() syncs now.';
CREATE FUNCTION public.iasql_preview_apply() RETURNS void LANGUAGE sql AS $$
  SELECT public.iasql_deprecated('iasql_preview_apply', 'use SELECT * FROM iasql_preview()')
$$;
COMMENT ON FUNCTION public.iasql_preview_apply() IS 'Deprecated: warns and does nothing. Use SELECT * FROM iasql_preview().';
CREATE FUNCTION public.iasql_preview_sync() RETURNS void LANGUAGE sql AS $$
  SELECT public.iasql_deprecated('iasql_preview_sync', 'use SELECT * FROM iasql_preview()')
$$;
COMMENT ON FUNCTION public.iasql_preview_sync() IS 'Deprecated: warns and does nothing. Use SELECT * FROM iasql_preview().';

-- pg_cron's job (where pg_cron is installed in this database) calls this on
-- the schedule: it asks the sidecar for an automatic cycle and returns at
-- once. With no sidecar connected it does nothing and says so (pg_cron keeps
-- the message in cron.job_run_details).
CREATE FUNCTION public.iasql_cycle_tick() RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  IF NOT public.iasql_sidecar_connected() THEN
    RETURN 'no iasql sidecar is connected: nothing to do';
  END IF;
  PERFORM pg_catalog.pg_logical_emit_message(false, 'iasql_request',
    pg_catalog.jsonb_build_object('id', pg_catalog.gen_random_uuid(), 'kind', 'tick', 'role', current_user)::text);
  RETURN 'cycle requested';
END $$;
COMMENT ON FUNCTION public.iasql_cycle_tick() IS
  'Called by the pg_cron job iasql_cycle on the schedule: asks the sidecar for an automatic cycle (skipped while an iasql transaction is open).';

-- 045_operations.sql
-- Work the engine has under way or could not finish, per record, and the
-- status of every record that is not in sync.

-- One row per record the engine is acting on in the cloud, or failed to
-- bring in sync: written before each cloud call (so the idempotency token
-- of a create survives any crash) and after it; removed once a read shows
-- the record in sync.
CREATE TABLE public.iasql_operations (
  table_name text NOT NULL,
  record_key text NOT NULL,
  record_id  text,
  cloud_id   text,
  action     text NOT NULL,
  state      text NOT NULL CONSTRAINT iasql_operations_state CHECK (state IN ('in progress', 'failed', 'waiting')),
  token      text,
  handle     text,
  poll_after timestamptz,
  attempts   integer NOT NULL DEFAULT 0,
  last_error text,
  next_retry timestamptz,
  since      timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  updated_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  PRIMARY KEY (table_name, record_key)
);
COMMENT ON TABLE public.iasql_operations IS 'Cloud work the engine has under way or could not finish, one row per record: written before each cloud call (a create''s idempotency token survives any crash) and after it, removed once a read shows the record in sync.';
COMMENT ON COLUMN public.iasql_operations.table_name IS 'The module table.';
COMMENT ON COLUMN public.iasql_operations.record_key IS 'The row''s id, or ''cloud '' and the cloud id for a resource with no row.';
COMMENT ON COLUMN public.iasql_operations.record_id IS 'The row''s id (NULL for a resource with no row).';
COMMENT ON COLUMN public.iasql_operations.cloud_id IS 'The resource''s identity in the cloud, when known.';
COMMENT ON COLUMN public.iasql_operations.action IS 'create, update, replace or delete, in the cloud.';
COMMENT ON COLUMN public.iasql_operations.state IS 'in progress (called, or waiting for a read to show the result), failed (see last_error and next_retry), or waiting (for a record it depends on).';
COMMENT ON COLUMN public.iasql_operations.token IS 'Idempotency token of a create: sent as the ClientToken or tagged on the resource, so that a retry after a crash adopts what it made.';
COMMENT ON COLUMN public.iasql_operations.handle IS 'The cloud''s handle of an operation that runs long (a request token, an instance id), while it runs: the engine asks about it at poll_after, and leaves the record alone meanwhile.';
COMMENT ON COLUMN public.iasql_operations.poll_after IS 'When the engine next asks the cloud about the operation in handle.';
COMMENT ON COLUMN public.iasql_operations.attempts IS 'Cloud calls made for this action so far.';
COMMENT ON COLUMN public.iasql_operations.last_error IS 'The last failure, in one line.';
COMMENT ON COLUMN public.iasql_operations.next_retry IS 'When an automatic cycle tries a failed action again (iasql_commit tries at once).';
COMMENT ON COLUMN public.iasql_operations.since IS 'When the engine began this action.';
COMMENT ON COLUMN public.iasql_operations.updated_at IS 'When this row last changed.';
COMMENT ON CONSTRAINT iasql_operations_state ON public.iasql_operations IS 'Known operation states.';
REVOKE ALL ON public.iasql_operations FROM PUBLIC;
GRANT SELECT ON public.iasql_operations TO iasql_reader;
CREATE TRIGGER iasql_operations_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_operations
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_operations_guard ON public.iasql_operations IS 'Only the sidecar writes operations.';

-- What the engine keeps between its runs.
CREATE TABLE public.iasql_engine_state (
  singleton  boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_engine_state_one CHECK (singleton),
  intent_low pg_lsn NOT NULL,
  pruned_at  timestamptz,
  history_from timestamptz,
  updated_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE public.iasql_engine_state IS 'What the engine keeps between runs (one row): where its search for pending user changes starts, and when it last pruned the audit trail.';
COMMENT ON COLUMN public.iasql_engine_state.singleton IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN public.iasql_engine_state.intent_low IS 'Every user change below this LSN is enacted or was decided otherwise: a restarted engine reads the audit trail from here, not from its start.';
COMMENT ON COLUMN public.iasql_engine_state.pruned_at IS 'When the engine last deleted audit rows older than its retention (--audit-retention).';
COMMENT ON COLUMN public.iasql_engine_state.history_from IS 'The cutoff of the last pruning: from then on the audit trail holds every version of every record (each live record''s newest older version is kept), so iasql_as_of answers for any time since; NULL when nothing was pruned.';
COMMENT ON COLUMN public.iasql_engine_state.updated_at IS 'When this row last changed.';
COMMENT ON CONSTRAINT iasql_engine_state_one ON public.iasql_engine_state IS 'One row at most.';
REVOKE ALL ON public.iasql_engine_state FROM PUBLIC;
GRANT SELECT ON public.iasql_engine_state TO iasql_reader;
CREATE TRIGGER iasql_engine_state_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_engine_state
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_engine_state_guard ON public.iasql_engine_state IS 'Only the sidecar writes its state.';

-- 047_account.sql
-- The cloud account the database is bound to. On first use the sidecar
-- records the AWS account its credentials belong to (STS GetCallerIdentity)
-- and the endpoint it syncs with; a sidecar whose credentials or endpoint
-- differ runs no cycle (capture goes on) until an administrator rebinds the
-- database deliberately with iasql_rebind_account().
CREATE TABLE public.iasql_account (
  singleton           boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_account_one CHECK (singleton),
  account_id          text NOT NULL,
  arn                 text,
  endpoint            text,
  bound_at            timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  previous_account_id text,
  previous_endpoint   text
);
COMMENT ON TABLE public.iasql_account IS 'The AWS account (and endpoint) this database syncs with, one row, recorded by the first sidecar that ran a cycle: a sidecar with other credentials or another endpoint runs no cycle. SELECT iasql_rebind_account() binds it to the running sidecar''s account.';
COMMENT ON COLUMN public.iasql_account.singleton IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN public.iasql_account.account_id IS 'The AWS account id the sidecar''s credentials belonged to (STS GetCallerIdentity).';
COMMENT ON COLUMN public.iasql_account.arn IS 'The identity that bound the database (its ARN), for the record; later sidecars may use other identities of the same account.';
COMMENT ON COLUMN public.iasql_account.endpoint IS 'The endpoint the sidecar synced with (AWS_ENDPOINT_URL); NULL for AWS''s own endpoints.';
COMMENT ON COLUMN public.iasql_account.bound_at IS 'When the database was bound (first use, or the last rebind).';
COMMENT ON COLUMN public.iasql_account.previous_account_id IS 'The account the database was bound to before the last rebind (NULL when never rebound).';
COMMENT ON COLUMN public.iasql_account.previous_endpoint IS 'The endpoint the database was bound to before the last rebind.';
COMMENT ON CONSTRAINT iasql_account_one ON public.iasql_account IS 'One row at most.';
REVOKE ALL ON public.iasql_account FROM PUBLIC;
GRANT SELECT ON public.iasql_account TO iasql_reader;
CREATE TRIGGER iasql_account_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_account
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_account_guard ON public.iasql_account IS 'Only the sidecar records the account binding.';

-- The deliberate rebind: the running sidecar binds the database to the
-- account and endpoint of its own credentials. Not executable by PUBLIC.
CREATE FUNCTION public.iasql_rebind_account() RETURNS text
LANGUAGE sql AS $$
  SELECT public.iasql_request('rebind_account')->>'message'
$$;
COMMENT ON FUNCTION public.iasql_rebind_account() IS
  'Binds the database to the AWS account and endpoint of the running sidecar''s credentials, replacing the binding that made it refuse cycles. Its next cycle syncs the tables with that account (in NORMAL mode, rows of the old account''s resources are removed and the new account''s imported). Only roles granted EXECUTE may call it.';
REVOKE ALL ON FUNCTION public.iasql_rebind_account() FROM PUBLIC;

-- 050_wait.sql
-- Waiting for the cloud without an iasql transaction: poll a generated query
-- until a record satisfies a condition (e.g. its cloud id is back).

CREATE FUNCTION public.iasql_wait_for(table_name text, id integer, condition text, timeout_s integer DEFAULT 300)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  rel regclass;
  query text;
  ok boolean;
  give_up timestamptz;
BEGIN
  IF pg_catalog.current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'iasql_wait_for cannot run at % isolation: its snapshot would never see the change it waits for',
        pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'Call it outside a transaction block, or in one at READ COMMITTED.';
  END IF;
  IF timeout_s IS NULL OR timeout_s < 0 THEN
    RAISE EXCEPTION 'iasql_wait_for: timeout_s must be zero or more seconds, not %', timeout_s
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  rel := public.iasql_resolve_table(table_name);
  IF rel IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: table "%" does not exist', table_name
      USING ERRCODE = 'undefined_table', HINT = 'Give a table name as in FROM, e.g. bucket or schema.table.';
  END IF;
  IF id IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: id is NULL, so no row of % can satisfy (%)', rel, condition
      USING ERRCODE = 'null_value_not_allowed',
            HINT = pg_catalog.format('Give the id of an existing row, e.g. SELECT iasql_wait_for(%L, id, %L) FROM %s WHERE ...', table_name, condition, rel);
  END IF;
  IF condition IS NULL THEN
    RAISE EXCEPTION 'iasql_wait_for: condition is NULL'
      USING ERRCODE = 'null_value_not_allowed', HINT = 'Give SQL over the row''s columns, e.g. ''created_at IS NOT NULL''.';
  END IF;
  -- The table is quoted (regclass output); the condition is the caller's
  -- SQL and runs with the caller's privileges (this is not SECURITY DEFINER).
  query := pg_catalog.format('SELECT count(*) > 0 FROM %s WHERE id = $1 AND (%s)', rel, condition);
  give_up := pg_catalog.clock_timestamp() + pg_catalog.make_interval(secs => timeout_s);
  LOOP
    -- A condition that does not parse raises here, on the first round.
    EXECUTE query INTO ok USING id;
    IF ok THEN
      RETURN true;
    END IF;
    -- A row that does not exist (or was deleted meanwhile) never will.
    EXECUTE pg_catalog.format('SELECT EXISTS (SELECT 1 FROM %s WHERE id = $1)', rel) INTO ok USING id;
    IF NOT ok THEN
      RAISE EXCEPTION 'iasql_wait_for: % has no row with id %', rel, id
        USING ERRCODE = 'no_data_found',
              HINT = pg_catalog.format('Give the id of an existing row (SELECT id FROM %s); a row deleted while waiting ends the wait too.', rel);
    END IF;
    IF pg_catalog.clock_timestamp() >= give_up THEN
      RAISE EXCEPTION 'iasql_wait_for: % id % did not satisfy (%) within % seconds', rel, id, condition, timeout_s
        USING ERRCODE = 'query_canceled',
              HINT = 'Check the record and the sidecar (iasql status), or wait longer with a larger timeout_s.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_wait_for(text, integer, text, integer) IS
  'Waits until the row of table_name with this id satisfies condition (SQL over its columns, e.g. ''created_at IS NOT NULL''), polling; returns true, or raises after timeout_s seconds. Raises at once when id is NULL or no row has it (also when the row is deleted while waiting).';

-- The user changes to module tables committed before lsn that are not yet
-- enacted: a record with a state whose enacted LSN is older, or a row with
-- no state yet (never synced). A record gone from both sides is done.
CREATE FUNCTION public.iasql_pending_intent(upto pg_lsn)
RETURNS TABLE (table_name text, record_id text, lsn pg_lsn)
LANGUAGE plpgsql STABLE AS $$
DECLARE
  t text;
BEGIN
  FOR t IN SELECT unnest(m.tables) FROM public.iasql_modules m WHERE m.installed_at IS NOT NULL LOOP
    RETURN QUERY EXECUTE pg_catalog.format($q$
      SELECT a.table_name, a.record_id, max(a.lsn)
        FROM public.iasql_audit_log a
        LEFT JOIN public.iasql_records r ON r.table_name = a.table_name AND r.record_id = a.record_id
       WHERE a.origin = 'user' AND a.table_name = $1 AND a.lsn < $2 AND a.record_id IS NOT NULL
         AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE')
         AND (r.enacted_lsn < a.lsn
              OR (r.record_id IS NULL AND EXISTS (SELECT 1 FROM %s x WHERE x.id::text = a.record_id)))
       GROUP BY 1, 2$q$, public.iasql_table_regclass(t)) USING t, upto;
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_pending_intent(pg_lsn) IS
  'User changes to module tables committed before upto that are not enacted yet, per record (the newest).';

CREATE FUNCTION public.iasql_wait_for_all(timeout_s integer DEFAULT 300)
RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  target pg_lsn := pg_catalog.pg_current_wal_insert_lsn();
  called timestamptz := pg_catalog.clock_timestamp();
  give_up timestamptz;
  covered boolean;
  pending text;
  failed text;
  gone_since timestamptz;
BEGIN
  -- It reads iasql's tables with the caller's privileges (iasql_reader's).
  IF NOT pg_catalog.pg_has_role('iasql_reader', 'USAGE') THEN
    RAISE EXCEPTION 'permission denied for iasql_wait_for_all: role % is not a member of iasql_reader', current_user
      USING ERRCODE = 'insufficient_privilege',
            HINT = pg_catalog.format('An administrator grants it: GRANT iasql_reader TO %I;', current_user);
  END IF;
  IF pg_catalog.current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
    RAISE EXCEPTION 'iasql_wait_for_all cannot run at % isolation: its snapshot would never see the changes enacted',
        pg_catalog.upper(pg_catalog.current_setting('transaction_isolation'))
      USING ERRCODE = 'invalid_transaction_state',
            HINT = 'Call it outside a transaction block, or in one at READ COMMITTED.';
  END IF;
  IF timeout_s IS NULL OR timeout_s < 0 THEN
    RAISE EXCEPTION 'iasql_wait_for_all: timeout_s must be zero or more seconds, not %', timeout_s
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Nothing is captured or enacted without a sidecar: refuse at once, like
  -- the procedures (iasql_request); one that goes away while we wait (a
  -- restart, a standby taking over) gets 5 seconds to come back.
  IF NOT public.iasql_sidecar_connected() THEN
    RAISE EXCEPTION 'iasql_wait_for_all needs the iasql sidecar, and none is connected to this database'
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Start it: iasql run --dsn <this database>; iasql status shows its state.';
  END IF;
  give_up := called + pg_catalog.make_interval(secs => timeout_s);
  LOOP
    IF public.iasql_sidecar_connected() THEN
      gone_since := NULL;
    ELSIF gone_since IS NULL THEN
      gone_since := pg_catalog.clock_timestamp();
    ELSIF pg_catalog.clock_timestamp() >= gone_since + interval '5 seconds' THEN
      RAISE EXCEPTION 'iasql_wait_for_all: the iasql sidecar disconnected and none has connected for 5 seconds'
        USING ERRCODE = 'object_not_in_prerequisite_state',
              HINT = 'Start it: iasql run --dsn <this database> (it carries on with what is pending); iasql status shows its state.';
    END IF;
    -- Every change committed before the call must be in the audit trail.
    SELECT coalesce(bool_and(s.confirmed_flush_lsn >= target), false) INTO covered
      FROM public.iasql_capture_progress p
      JOIN pg_catalog.pg_replication_slots s ON s.slot_name = p.slot_name AND s.database = pg_catalog.current_database();
    IF covered THEN
      SELECT pg_catalog.string_agg(pg_catalog.format('%s id %s', q.table_name, q.record_id), ', ' ORDER BY q.table_name, q.record_id)
        INTO pending FROM public.iasql_pending_intent(target) q;
      IF pending IS NULL THEN
        RETURN true;
      END IF;
      -- What iasql_status shows failed since its newest change (iasql_operations)
      -- is done with: when every pending record has failed, raise with their
      -- errors rather than wait for retries (automatic cycles back off).
      SELECT CASE WHEN pg_catalog.count(*) = pg_catalog.count(o.record_key)
                  THEN pg_catalog.string_agg(pg_catalog.format('%s id %s: %s', q.table_name, q.record_id, o.last_error), '; ' ORDER BY q.table_name, q.record_id) END
        INTO failed
        FROM public.iasql_pending_intent(target) q
        LEFT JOIN public.iasql_operations o
          ON o.table_name = q.table_name AND o.record_key = q.record_id AND o.state = 'failed'
         AND o.updated_at >= (SELECT pg_catalog.max(a.ts) FROM public.iasql_audit_log a
                               WHERE a.table_name = q.table_name AND a.record_id = q.record_id AND a.lsn = q.lsn);
      IF failed IS NOT NULL THEN
        RAISE EXCEPTION 'iasql_wait_for_all: changes failed: %', failed
          USING ERRCODE = 'external_routine_exception',
                HINT = 'Fix the records (or the cloud) and wait again; SELECT * FROM iasql_status shows what is not in sync.';
      END IF;
      SELECT a.message::jsonb->>'error' INTO failed
        FROM public.iasql_audit_log a
       WHERE a.change_type = 'CYCLE_END' AND a.ts >= called AND a.message::jsonb->>'outcome' IN ('failed', 'timeout')
       ORDER BY a.id DESC LIMIT 1;
      IF failed IS NOT NULL THEN
        RAISE EXCEPTION 'iasql_wait_for_all: changes failed: %', failed
          USING ERRCODE = 'external_routine_exception',
                DETAIL = pg_catalog.format('Still pending: %s.', pending),
                HINT = 'Fix the records (or the cloud) and wait again; iasql_audit_log has the cycle records.';
      END IF;
    END IF;
    IF pg_catalog.clock_timestamp() >= give_up THEN
      RAISE EXCEPTION 'iasql_wait_for_all: not enacted within % seconds: %', timeout_s,
          coalesce(pending, 'the sidecar has not yet captured every change made before the call')
        USING ERRCODE = 'query_canceled',
              HINT = 'Check the sidecar (iasql status) and the cycle records in iasql_audit_log, or wait longer.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.1);
  END LOOP;
END $$;
COMMENT ON FUNCTION public.iasql_wait_for_all(integer) IS
  'Waits until every user change committed before the call is enacted in the cloud (or decided otherwise by its mode); raises with the failures, or on timeout with what is still pending. Raises at once when no sidecar is connected, and when none has been for 5 seconds while it waits.';

-- 055_status.sql
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

-- 060_mode.sql
-- Modes: NORMAL (two-way), ENFORCE (the database is the truth), TRACK (the
-- cloud is the truth), as rules for the whole database, a table or one
-- record, and for one column of a table or of a record. The most specific
-- rule wins (column of a record, column of a table, record, table,
-- database); a tie resolves TRACK > NORMAL > ENFORCE (never break things);
-- no rule means NORMAL.

CREATE TYPE public.iasql_mode_kind AS ENUM ('NORMAL', 'ENFORCE', 'TRACK');
COMMENT ON TYPE public.iasql_mode_kind IS 'NORMAL: two-way sync; ENFORCE: the database is the truth; TRACK: the cloud is the truth.';

CREATE TABLE public.iasql_mode (
  id         serial PRIMARY KEY,
  table_name text REFERENCES public.iasql_tables (table_name) ON UPDATE CASCADE ON DELETE CASCADE,
  record_id  integer,
  column_name text,
  mode       public.iasql_mode_kind NOT NULL,
  CONSTRAINT iasql_mode_one_rule_per_level UNIQUE NULLS NOT DISTINCT (table_name, record_id, column_name),
  CONSTRAINT iasql_mode_record_needs_table CHECK (record_id IS NULL OR table_name IS NOT NULL),
  CONSTRAINT iasql_mode_column_needs_table CHECK (column_name IS NULL OR table_name IS NOT NULL)
);
COMMENT ON TABLE public.iasql_mode IS
  'Mode rules: table_name and record_id NULL for the whole database, record_id NULL for a table, both for one record; column_name narrows a table''s or a record''s rule to one declarative column (TRACK: the cloud owns it: used at create, then refused to user updates and never reverted; ENFORCE: the database owns it: cloud changes to it are reverted). Most specific wins; no rule means NORMAL.';
COMMENT ON COLUMN public.iasql_mode.id IS 'Rule id.';
COMMENT ON COLUMN public.iasql_mode.table_name IS 'The module table the rule covers; NULL for every table.';
COMMENT ON COLUMN public.iasql_mode.record_id IS 'The record (its id) the rule covers; NULL for every record of the table.';
COMMENT ON COLUMN public.iasql_mode.column_name IS 'The declarative column the rule covers (as iasql_modules.columns lists them); NULL for whole records.';
COMMENT ON COLUMN public.iasql_mode.mode IS 'NORMAL, ENFORCE or TRACK.';
COMMENT ON CONSTRAINT iasql_mode_one_rule_per_level ON public.iasql_mode IS 'One rule per level: the database, each table, each record, each column of a table or of a record.';
COMMENT ON CONSTRAINT iasql_mode_record_needs_table ON public.iasql_mode IS 'A record rule names its table.';
COMMENT ON CONSTRAINT iasql_mode_column_needs_table ON public.iasql_mode IS 'A column rule names its table.';
COMMENT ON CONSTRAINT iasql_mode_table_name_fkey ON public.iasql_mode IS 'Rules cover registered tables; unregistering (uninstalling) a table removes its rules.';
COMMENT ON SEQUENCE public.iasql_mode_id_seq IS 'Rule ids.';
GRANT SELECT ON public.iasql_mode TO iasql_reader;

-- Clear messages for the mistakes the constraints would only name.
CREATE FUNCTION public.iasql_mode_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  kind text;
BEGIN
  IF NEW.record_id IS NOT NULL AND NEW.table_name IS NULL THEN
    RAISE EXCEPTION 'a mode rule for record % needs its table_name: record ids are per table', NEW.record_id
      USING ERRCODE = 'check_violation',
            HINT = 'INSERT INTO iasql_mode (table_name, record_id, mode) VALUES (''bucket'', 42, ''TRACK'').';
  END IF;
  IF NEW.table_name IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM public.iasql_tables t WHERE t.table_name = NEW.table_name AND t.module IS NOT NULL) THEN
    RAISE EXCEPTION 'a mode rule needs a module table, and "%" is not one', NEW.table_name
      USING ERRCODE = 'foreign_key_violation',
            HINT = 'SELECT table_name FROM iasql_tables WHERE module IS NOT NULL lists them.';
  END IF;
  IF NEW.column_name IS NOT NULL THEN
    IF NEW.table_name IS NULL THEN
      RAISE EXCEPTION 'a mode rule for column % needs its table_name: columns are per table', NEW.column_name
        USING ERRCODE = 'check_violation',
              HINT = 'INSERT INTO iasql_mode (table_name, column_name, mode) VALUES (''instance'', ''tags'', ''TRACK'').';
    END IF;
    SELECT m.columns -> NEW.table_name ->> NEW.column_name INTO kind
      FROM public.iasql_tables t JOIN public.iasql_modules m ON m.name = t.module
     WHERE t.table_name = NEW.table_name;
    IF kind IS DISTINCT FROM 'declarative' THEN
      RAISE EXCEPTION 'a mode rule cannot name column % of %: %', NEW.column_name, NEW.table_name, CASE kind
          WHEN 'feedback' THEN 'it is a feedback column (the cloud''s, written by the engine): it is never pushed to the cloud, so it has no mode'
          WHEN 'identity' THEN 'it is the resource''s identity in the cloud: a change of it is another resource, so it follows its record''s mode'
          WHEN 'initial' THEN 'it is the database''s own (set from the cloud at import only), so it has no mode'
          WHEN 'read-only' THEN 'the table is read-only (the cloud is always its truth)'
          ELSE 'the table has no such column' END
        USING ERRCODE = 'invalid_column_reference',
              HINT = pg_catalog.format('Columns a rule may name: SELECT jsonb_object_keys(columns -> %L) FROM iasql_modules WHERE columns -> %L IS NOT NULL, those of kind declarative.', NEW.table_name, NEW.table_name);
    END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM public.iasql_mode m
              WHERE m.table_name IS NOT DISTINCT FROM NEW.table_name AND m.record_id IS NOT DISTINCT FROM NEW.record_id
                AND m.column_name IS NOT DISTINCT FROM NEW.column_name
                AND m.id <> NEW.id) THEN
    RAISE EXCEPTION 'there is already a mode rule for %', CASE
        WHEN NEW.column_name IS NOT NULL AND NEW.record_id IS NOT NULL THEN pg_catalog.format('column %s of record %s of %s', NEW.column_name, NEW.record_id, NEW.table_name)
        WHEN NEW.column_name IS NOT NULL THEN pg_catalog.format('column %s of table %s', NEW.column_name, NEW.table_name)
        WHEN NEW.record_id IS NOT NULL THEN pg_catalog.format('record %s of %s', NEW.record_id, NEW.table_name)
        WHEN NEW.table_name IS NOT NULL THEN pg_catalog.format('table %s', NEW.table_name)
        ELSE 'the whole database' END
      USING ERRCODE = 'unique_violation',
            HINT = 'One rule per level: UPDATE that rule''s mode instead.';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION public.iasql_mode_check() IS 'Explains mode rules the constraints refuse: a record or column without its table, a table that is not a module''s, a column that is not declarative, a second rule at one level.';
CREATE TRIGGER iasql_mode_check BEFORE INSERT OR UPDATE ON public.iasql_mode
  FOR EACH ROW EXECUTE FUNCTION public.iasql_mode_check();
COMMENT ON TRIGGER iasql_mode_check ON public.iasql_mode IS 'Clear messages for refused mode rules.';

-- The mode a record (or one of its columns) gets, and which rule gave it.
CREATE FUNCTION public.iasql_effective_mode(table_name text, record_id integer DEFAULT NULL, column_name text DEFAULT NULL)
RETURNS TABLE (mode public.iasql_mode_kind, rule text)
LANGUAGE sql STABLE AS $$
  SELECT r.mode, r.rule FROM (
    SELECT m.mode,
           CASE WHEN m.column_name IS NOT NULL AND m.record_id IS NOT NULL
                  THEN pg_catalog.format('column rule %s (%s.%s id %s)', m.id, m.table_name, m.column_name, m.record_id)
                WHEN m.column_name IS NOT NULL THEN pg_catalog.format('column rule %s (%s.%s)', m.id, m.table_name, m.column_name)
                WHEN m.record_id IS NOT NULL THEN pg_catalog.format('record rule %s (%s id %s)', m.id, m.table_name, m.record_id)
                WHEN m.table_name IS NOT NULL THEN pg_catalog.format('table rule %s (%s)', m.id, m.table_name)
                ELSE pg_catalog.format('database rule %s', m.id) END AS rule,
           CASE WHEN m.column_name IS NOT NULL AND m.record_id IS NOT NULL THEN 0
                WHEN m.column_name IS NOT NULL THEN 1
                WHEN m.record_id IS NOT NULL THEN 2 WHEN m.table_name IS NOT NULL THEN 3 ELSE 4 END AS level,
           CASE m.mode WHEN 'TRACK' THEN 1 WHEN 'NORMAL' THEN 2 ELSE 3 END AS tie
      FROM public.iasql_mode m
     WHERE (m.table_name IS NULL OR m.table_name = $1)
       AND (m.record_id IS NULL OR m.record_id = $2)
       AND (m.column_name IS NULL OR m.column_name = $3)
    UNION ALL
    SELECT 'NORMAL', 'no rule', 5, 4
  ) r
  ORDER BY r.level, r.tie
  LIMIT 1
$$;
COMMENT ON FUNCTION public.iasql_effective_mode(text, integer, text) IS
  'The mode of a record (or of a table, record_id NULL; or of one column of either, column_name given) and the rule that gives it: column rule of the record, else column rule of the table, else record rule, else table rule, else database rule, else NORMAL; ties resolve TRACK > NORMAL > ENFORCE.';

-- Changes to the rules are user changes like any other: captured in the
-- audit trail (they take effect from the next cycle, which reads them).
-- REPLICA IDENTITY FULL is also set here, not only by the registration's
-- trigger: a restore runs CREATE EXTENSION with session_replication_role =
-- replica, where triggers do not fire.
ALTER TABLE public.iasql_mode REPLICA IDENTITY FULL;
INSERT INTO public.iasql_tables (table_name) VALUES ('iasql_mode');

-- TRACK refuses user writes when they are written (the RFC's "blocking
-- mutation"): a write to a record whose effective mode is TRACK fails,
-- naming the rule; so does an UPDATE that changes a column whose effective
-- mode is TRACK (a column rule: the cloud owns that column; its value at
-- INSERT is used to create the resource), and an UPDATE of a TRACK record
-- is let through when every column it changes has a column rule of another
-- mode (the most specific rule wins). The running cycle (the session
-- holding the cycle lock, role 2) writes what it pulls from the cloud and
-- is let through. Undoing a tracked change at the next cycle stays as the
-- backstop for writes that bypass this (session_replication_role =
-- replica, a table registered by hand), logged at WARNING.
CREATE FUNCTION public.iasql_track_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  rid integer;
  tbl text;
  m public.iasql_mode_kind;
  why text;
  col text;
  n jsonb;
  o jsonb;
  changed boolean;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM public.iasql_mode r WHERE r.mode = 'TRACK') OR public.iasql_holds_lock(2) THEN
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
  END IF;
  rid := (pg_catalog.to_jsonb(CASE TG_OP WHEN 'INSERT' THEN NEW ELSE OLD END)->>'id')::integer;
  tbl := public.iasql_table_name(TG_RELID::regclass);
  IF TG_OP = 'UPDATE' THEN
    n := pg_catalog.to_jsonb(NEW);
    o := pg_catalog.to_jsonb(OLD);
    changed := false;
    FOR col IN SELECT k.key FROM pg_catalog.jsonb_each(n) k WHERE k.value IS DISTINCT FROM o -> k.key ORDER BY k.key LOOP
      changed := true;
      SELECT e.mode, e.rule INTO m, why FROM public.iasql_effective_mode(tbl, rid, col) e;
      IF m = 'TRACK' AND why LIKE 'column rule%' THEN
        RAISE EXCEPTION 'update of %.% id % is refused: % puts the column in TRACK mode (the cloud owns it)',
            tbl, col, coalesce(rid::text, '(none)'), why
          USING ERRCODE = 'object_not_in_prerequisite_state',
                HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id, column) names it).';
      ELSIF m = 'TRACK' THEN
        RAISE EXCEPTION 'update % id % is refused: % puts it in TRACK mode (the cloud is its truth)',
            tbl, coalesce(rid::text, '(none)'), why
          USING ERRCODE = 'object_not_in_prerequisite_state',
                HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id) names it).';
      END IF;
    END LOOP;
    IF changed THEN
      RETURN NEW;
    END IF;
    -- An UPDATE that changes nothing is the record's, as a DELETE is.
  END IF;
  SELECT e.mode, e.rule INTO m, why FROM public.iasql_effective_mode(tbl, rid) e;
  IF m = 'TRACK' THEN
    RAISE EXCEPTION '% % id % is refused: % puts it in TRACK mode (the cloud is its truth)',
        pg_catalog.lower(TG_OP), tbl, coalesce(rid::text, '(none)'), why
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id) names it).';
  END IF;
  RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END $$;
COMMENT ON FUNCTION public.iasql_track_guard() IS
  'Row trigger on module tables: refuses a user INSERT, UPDATE or DELETE of a record in TRACK mode, and an UPDATE of a column in TRACK mode (a column rule), naming the rule; the running cycle''s writes pass.';

-- Each module table gets a guard trigger when it is registered (install):
-- the trigger named by the arguments (name, events, FOR EACH level, the
-- function, its comment). The TRACK guard is one; the transaction owner's
-- guard (065_transaction_owner.sql) another.
CREATE FUNCTION public.iasql_tables_add_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.module IS NOT NULL THEN
    EXECUTE pg_catalog.format('CREATE OR REPLACE TRIGGER %I BEFORE %s ON %s FOR EACH %s EXECUTE FUNCTION %s()',
      TG_ARGV[0], TG_ARGV[1], public.iasql_table_regclass(NEW.table_name), TG_ARGV[2], TG_ARGV[3]::regproc);
    EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON %s IS %L',
      TG_ARGV[0], public.iasql_table_regclass(NEW.table_name), TG_ARGV[4]);
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_tables_add_guard() IS
  'Trigger function on iasql_tables: gives a registered module table the guard trigger its arguments describe (name, events, level, function, comment).';
CREATE TRIGGER iasql_tables_track_guard AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_add_guard('iasql_track_guard', 'INSERT OR UPDATE OR DELETE', 'ROW',
    'public.iasql_track_guard', 'Refuses user writes to records in TRACK mode (iasql_track_guard()).');
COMMENT ON TRIGGER iasql_tables_track_guard ON public.iasql_tables IS 'Puts the TRACK guard on each registered module table.';

-- 065_transaction_owner.sql
-- An iasql transaction belongs to the session that opened it. While it is
-- open, only that session writes module tables: another session's write is
-- refused when it is written, naming the owner, so that the owner's
-- iasql_rollback (or the rollback when the transaction expires) never
-- discards work another session committed. The running cycle (the session
-- holding the cycle lock, role 2) writes what it pulls from the cloud.

-- The running session is the transaction's owner: same pid, same start.
CREATE FUNCTION public.iasql_transaction_owner_session() RETURNS boolean
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN EXISTS (
    SELECT 1 FROM public.iasql_transaction t
     WHERE t.owner_pid = pg_catalog.pg_backend_pid()
       AND t.owner_started = (SELECT a.backend_start FROM pg_catalog.pg_stat_get_activity(pg_catalog.pg_backend_pid()) a));
END $$;
COMMENT ON FUNCTION public.iasql_transaction_owner_session() IS
  'True when the current session opened the open iasql transaction.';

CREATE FUNCTION public.iasql_transaction_write_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  t public.iasql_transaction;
BEGIN
  SELECT * INTO t FROM public.iasql_transaction;
  IF NOT FOUND OR public.iasql_holds_lock(2) OR public.iasql_transaction_owner_session() THEN
    RETURN NULL;
  END IF;
  RAISE EXCEPTION '% on % is refused: an iasql transaction is open (opened by % in session % at %); until it ends only that session writes module tables',
      pg_catalog.lower(TG_OP), public.iasql_table_name(TG_RELID::regclass), t.opened_by, t.owner_pid,
      pg_catalog.to_char(t.opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
    USING ERRCODE = 'object_not_in_prerequisite_state',
          HINT = 'Retry once it has committed or rolled back (SELECT * FROM iasql_transaction shows it; it expires when idle too long or when its session ends).';
END $$;
COMMENT ON FUNCTION public.iasql_transaction_write_guard() IS
  'Statement trigger on module tables: while an iasql transaction is open, refuses writes from any session but its owner''s (the running cycle''s pass).';

-- Each module table gets the guard when it is registered (install).
CREATE TRIGGER iasql_tables_transaction_guard AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_add_guard('iasql_transaction_guard', 'INSERT OR UPDATE OR DELETE OR TRUNCATE', 'STATEMENT',
    'public.iasql_transaction_write_guard', 'While an iasql transaction is open, only its owner''s session writes (iasql_transaction_write_guard()).');
COMMENT ON TRIGGER iasql_tables_transaction_guard ON public.iasql_tables IS 'Puts the transaction owner''s guard on each registered module table.';

-- 066_actor.sql
-- Who made each user change: capture cannot see the role that wrote a row
-- (the replication stream does not carry it), so a statement trigger on
-- every module table names it in the stream, at each statement, with a
-- transactional logical-decoding message that precedes the statement's
-- changes (logical.ActorMessagePrefix). The message carries
-- the engine marker's key, which only this function may read, so no role
-- can emit one naming another: iasql_emit_actor names the calling role
-- only when the session's login role may act as it (it is a member), and
-- the login role otherwise (a write made inside another role's SECURITY
-- DEFINER function).
CREATE FUNCTION public.iasql_emit_actor(role_name name) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  k text;
  r name := role_name;
BEGIN
  IF r IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r)
     OR NOT pg_catalog.pg_has_role(session_user, r, 'MEMBER') THEN
    r := session_user;
  END IF;
  SELECT e.mark_key INTO STRICT k FROM iasql_private.iasql_engine_key e;
  PERFORM pg_catalog.pg_logical_emit_message(true, 'iasql_actor', k || ':' || r);
END $$;
COMMENT ON FUNCTION public.iasql_emit_actor(name) IS
  'Names, in the replication stream, the role making the changes that follow in this transaction (the audit trail''s actor): the role given when the session''s login role is a member of it, else the login role.';

-- Every statement names its role: a cache of what was named (a setting)
-- would be a setting any role may change, and so a way to write unnamed.
CREATE FUNCTION public.iasql_note_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM public.iasql_emit_actor(current_user);
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_note_actor() IS
  'Statement trigger on module tables: names the writing role in the replication stream (iasql_emit_actor) before each statement''s changes.';

CREATE TRIGGER iasql_tables_note_actor AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_add_guard('iasql_note_actor', 'INSERT OR UPDATE OR DELETE OR TRUNCATE', 'STATEMENT',
    'public.iasql_note_actor', 'Names the writing role for the audit trail (iasql_note_actor()).');
COMMENT ON TRIGGER iasql_tables_note_actor ON public.iasql_tables IS 'Puts the actor trigger on each registered module table.';

-- 067_history.sql
-- History: every version of a record, and a table as it stood at a moment,
-- read from the audit trail (iasql_audit_log).
--
-- Caller's rights. A role that may SELECT a module table may read who
-- changed it and how, without SELECT on iasql_audit_log (which also holds
-- the cycles' records and every other table's rows). The functions run as
-- their owner (SECURITY DEFINER), who reads the audit trail, for the role
-- named by their last argument, `reader`, whose default (current_user,
-- evaluated where the call is written, so the caller's role, SET ROLE
-- included) is what a caller normally leaves it: they check that the
-- session's login role may act as that role (it is a member of it, as SET
-- ROLE requires), and that it may SELECT the whole table (a version holds
-- the whole row: SELECT on some columns is not enough) with no row-level
-- security hiding rows from it (the audit trail holds every row). Nothing
-- of the audit trail is a relation other roles may query, so no planner
-- detail (EXPLAIN ANALYZE's row counts) tells anything past these checks.

-- From when the audit trail holds complete history: the engine's last
-- pruning's cutoff (NULL when it never pruned). SECURITY DEFINER: only
-- this one value of iasql_engine_state is shown to every role.
CREATE FUNCTION public.iasql_history_start() RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT s.history_from FROM public.iasql_engine_state s
$$;
COMMENT ON FUNCTION public.iasql_history_start() IS
  'The oldest time iasql_as_of can answer for: the engine pruned the audit trail''s older rows (its --audit-retention), keeping each live record''s newest version before it. NULL when nothing was pruned.';

-- The canonical name of a table whose history reader asks for (through
-- caller), once reader may read it: a missing table, a role the session
-- may not act as, a missing SELECT and row-level security are one line
-- each, naming the table.
CREATE FUNCTION public.iasql_history_table(table_name text, caller text, reader name) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  rel regclass;
  c pg_catalog.pg_class;
  r pg_catalog.pg_roles;
BEGIN
  SELECT * INTO r FROM pg_catalog.pg_roles WHERE rolname = reader;
  IF NOT FOUND OR NOT pg_catalog.pg_has_role(session_user, r.oid, 'MEMBER') THEN
    RAISE EXCEPTION '%: role % may not read as %: it is not a member of it', caller, session_user, coalesce(reader::text, 'NULL')
      USING ERRCODE = 'insufficient_privilege', HINT = 'Leave the reader argument out: it is the role you are.';
  END IF;
  rel := public.iasql_resolve_table(table_name);
  IF rel IS NULL THEN
    RAISE EXCEPTION '%: table "%" does not exist', caller, table_name
      USING ERRCODE = 'undefined_table', HINT = 'Give the table''s name as in FROM: bucket, or schema.table.';
  END IF;
  IF NOT EXISTS (SELECT 1 FROM public.iasql_tables t WHERE t.table_name = public.iasql_table_name(rel)) THEN
    RAISE EXCEPTION '%: table % is not registered in iasql_tables, so the audit trail holds no history of it', caller, public.iasql_table_name(rel)
      USING ERRCODE = 'undefined_table', HINT = 'SELECT table_name FROM iasql_tables lists the tables with history.';
  END IF;
  IF NOT pg_catalog.has_table_privilege(r.oid, rel, 'SELECT') THEN
    RAISE EXCEPTION 'permission denied for table %: % needs SELECT on it', public.iasql_table_name(rel), caller
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  SELECT * INTO c FROM pg_catalog.pg_class WHERE oid = rel;
  IF c.relrowsecurity AND NOT r.rolsuper AND NOT r.rolbypassrls
     AND (c.relforcerowsecurity OR NOT pg_catalog.pg_has_role(r.oid, c.relowner, 'USAGE')) THEN
    RAISE EXCEPTION 'permission denied for the history of table %: row-level security limits which of its rows % sees, and the audit trail holds them all', public.iasql_table_name(rel), reader
      USING ERRCODE = 'insufficient_privilege', HINT = 'Read it as a role row-level security does not limit (the table''s owner, or one with BYPASSRLS).';
  END IF;
  RETURN public.iasql_table_name(rel);
END $$;
COMMENT ON FUNCTION public.iasql_history_table(text, text, name) IS
  'Resolves a table named to iasql_history or iasql_as_of (caller) to its canonical name, once the reader may read its history: refuses in one line a reader the session may not act as, a missing table, a reader without SELECT on it, and a table whose rows row-level security limits for the reader (42501).';
REVOKE ALL ON FUNCTION public.iasql_history_table(text, text, name) FROM PUBLIC;

-- The columns of a row (jsonb) in the table's column order, then any the
-- table no longer has, by name.
CREATE FUNCTION public.iasql_row_columns(table_name text, r jsonb) RETURNS text[]
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
  SELECT pg_catalog.array_agg(k.key ORDER BY a.attnum NULLS LAST, k.key)
    FROM pg_catalog.jsonb_object_keys(r) AS k(key)
    LEFT JOIN pg_catalog.pg_attribute a
      ON a.attrelid = public.iasql_table_regclass(table_name) AND a.attname = k.key AND a.attnum > 0 AND NOT a.attisdropped
$$;
COMMENT ON FUNCTION public.iasql_row_columns(text, jsonb) IS
  'The keys of an audit row (jsonb) in the table''s column order; columns the table no longer has come last, by name.';

CREATE FUNCTION public.iasql_history(table_name text, id bigint, reader name DEFAULT current_user)
RETURNS TABLE (at timestamptz, origin text, actor text, changed text[], "row" jsonb)
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  t text := public.iasql_history_table(table_name, 'iasql_history', reader);
  rid text := id::text;
BEGIN
  RETURN QUERY
  WITH v AS (
    SELECT c.id, c.ts, c.change_type, c.origin, c.actor, c.old_row, c.new_row
      FROM public.iasql_audit_log c
     WHERE c.table_name = t AND c.record_id = rid AND c.change_type IN ('INSERT', 'UPDATE', 'DELETE')
    UNION ALL
    SELECT c.id, c.ts, c.change_type, c.origin, c.actor, NULL, NULL
      FROM public.iasql_audit_log c
     WHERE c.table_name = t AND c.record_id IS NULL AND c.change_type = 'TRUNCATE'
  ), w AS (
    SELECT v.*, pg_catalog.lag(v.new_row) OVER (ORDER BY v.id) AS before,
           pg_catalog.lag(v.change_type) OVER (ORDER BY v.id) AS before_type
      FROM v
  )
  SELECT w.ts, w.origin, w.actor,
         CASE w.change_type
           WHEN 'INSERT' THEN public.iasql_row_columns(t, w.new_row)
           WHEN 'UPDATE' THEN coalesce((
             SELECT pg_catalog.array_agg(u.k ORDER BY u.n) FROM pg_catalog.unnest(public.iasql_row_columns(t, w.new_row)) WITH ORDINALITY AS u(k, n)
              WHERE w.old_row IS NULL OR (w.new_row -> u.k) IS DISTINCT FROM (w.old_row -> u.k)), '{}')
           WHEN 'DELETE' THEN public.iasql_row_columns(t, w.old_row)
           ELSE public.iasql_row_columns(t, w.before)
         END,
         CASE WHEN w.change_type IN ('INSERT', 'UPDATE') THEN w.new_row END
    FROM w
   WHERE w.change_type <> 'TRUNCATE' OR w.before_type IN ('INSERT', 'UPDATE')
   ORDER BY w.id;
END $$;
COMMENT ON FUNCTION public.iasql_history(text, bigint, name) IS
  'Every version of one record of a table (by its id), oldest first, records since deleted included: when (commit time), origin (user, cloud, engine), actor (the role for user and engine changes; the AWS identity for cloud ones when known), changed (the columns whose value differs from the version before: every column for an INSERT, a DELETE or a TRUNCATE) and row (the row then; NULL once deleted or truncated). Needs SELECT on the whole table (and no row-level security limiting it), not on the audit trail; reader, left out, is the caller''s role. Once the audit trail was pruned (iasql_history_start), the first version shown may be the oldest kept: the record''s newest version before the pruning''s cutoff, an UPDATE whose changed compares with the version it replaced.';

CREATE FUNCTION public.iasql_as_of(table_name text, at timestamptz, reader name DEFAULT current_user) RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  t text := public.iasql_history_table(table_name, 'iasql_as_of', reader);
  start timestamptz := public.iasql_history_start();
  truncated bigint;
  wanted bigint[];
BEGIN
  IF at IS NULL THEN
    RAISE EXCEPTION 'iasql_as_of: give a time, not NULL' USING ERRCODE = 'null_value_not_allowed';
  END IF;
  IF at < start THEN
    RAISE EXCEPTION 'iasql_as_of: the audit trail keeps history from % on; % is before it', start, at
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Ask for a later time. The sidecar prunes older history (iasql run --audit-retention; 0 keeps everything).';
  END IF;
  SELECT pg_catalog.max(c.id) INTO truncated
    FROM public.iasql_audit_log c
   WHERE c.table_name = t AND c.record_id IS NULL AND c.change_type = 'TRUNCATE' AND c.ts <= at;
  -- The versions wanted first, from the audit trail's index alone (it
  -- includes ts and change_type), then their rows by primary key: the
  -- table's older versions are never read from the heap.
  SELECT pg_catalog.array_agg(l.id) INTO wanted FROM (
    SELECT DISTINCT ON (c.record_id) c.id, c.change_type
      FROM public.iasql_audit_log c
     WHERE c.table_name = t AND c.record_id IS NOT NULL AND c.change_type IN ('INSERT', 'UPDATE', 'DELETE')
       AND c.ts <= at AND c.id > coalesce(truncated, 0)
     ORDER BY c.record_id, c.id DESC) l
   WHERE l.change_type <> 'DELETE';
  RETURN QUERY
  SELECT c.new_row FROM public.iasql_audit_log c
   WHERE c.id = ANY (wanted) AND c.table_name = t
   ORDER BY pg_catalog.length(c.record_id), c.record_id;  -- ids in numeric order (9 before 10)
END $$;
COMMENT ON FUNCTION public.iasql_as_of(text, timestamptz, name) IS
  'The table''s rows (jsonb, by their id as text) as they stood at a moment: each record''s newest version committed at or before it, less the deleted ones; a TRUNCATE of the table at or before it leaves only rows written after. Changes not yet captured are not in it. Needs SELECT on the whole table (and no row-level security limiting it), not on the audit trail; reader, left out, is the caller''s role. A time before iasql_history_start (the audit trail was pruned) is refused, naming that time.';

-- 070_privileges.sql
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

-- 070_restore.sql
-- A database restored from a dump (pg_dump, then pg_restore or psql into an
-- empty database) holds the iasql state of the database it was dumped from:
-- audit trail, registry, modes, records, operations. Replication slots are
-- not dumped, and the LSNs in that state are positions in the other server's
-- WAL (or the other database's share of it), meaningless here: compared with
-- this server's, they would make new changes look enacted or already
-- captured. The capture leader calls iasql_adopt_restore() before it
-- prepares its slot; when the capture progress names another origin
-- (iasql_lsn_origin), the state is adopted:
-- - every recorded LSN (audit trail, enacted watermarks, the engine's intent
--   watermark, an open transaction's start) is renumbered 0/0, 0/1, ... in
--   its order, so everything recorded compares as it did, and below every
--   position of this server: pending intent stays pending, enacted stays
--   enacted, and any change made here is newer;
-- - the audit trail's transaction ids become the adopting transaction's, so
--   that every restored change counts as committed in the past here;
-- - module rows that differ from the trail's newest change to their record
--   (changes not captured yet when the dump was taken) are recorded as user
--   changes, after every restored position: pending intent;
-- - the capture progress of the old slots is removed (a new slot is made
--   here, capturing from its creation on);
-- - requests the old sidecar had not answered fail (their callers are gone);
-- - the iasql transaction that was open is closed (its session is gone); its
--   changes stay pending intent and are enacted like any other.
-- Operations (idempotency tokens, failures, long operations' handles),
-- replacements, modes and the account binding are kept as they are.
CREATE FUNCTION public.iasql_adopt_restore() RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
  here text := public.iasql_lsn_origin();
  origins text;
  slots text;
  positions bigint;
  top pg_lsn;
  lowest pg_lsn;
  failed bigint;
  tx record;
  said text;
  rel regclass;
  tname text;
  same text;
  render text;
  found bigint;
  missed bigint := 0;
BEGIN
  SELECT pg_catalog.string_agg(DISTINCT p.lsn_origin, ', '), pg_catalog.string_agg(p.slot_name, ', ' ORDER BY p.slot_name)
    INTO origins, slots
    FROM public.iasql_capture_progress p WHERE p.lsn_origin <> here;
  IF origins IS NULL THEN
    RETURN NULL;
  END IF;
  IF NOT public.iasql_holds_lock(1) THEN
    RAISE EXCEPTION 'iasql_adopt_restore is called by the capturing iasql sidecar only'
      USING ERRCODE = 'insufficient_privilege', HINT = 'Start the sidecar (iasql run): it adopts a restored database before it captures.';
  END IF;
  -- The cycle lock: the engine's tables are written by its holder only. A
  -- cycle another sidecar still runs is waited for (up to a minute); this
  -- session gives the lock back when it is done.
  WHILE NOT public.iasql_take_lock(2) LOOP
    IF pg_catalog.clock_timestamp() > pg_catalog.statement_timestamp() + interval '1 minute' THEN
      RAISE EXCEPTION 'iasql_adopt_restore waited a minute for a running cycle to end'
        USING ERRCODE = 'lock_not_available', HINT = 'Stop the other sidecars of this database, then start this one again.';
    END IF;
    PERFORM pg_catalog.pg_sleep(0.05);
  END LOOP;

  CREATE TEMP TABLE iasql_restored_lsn ON COMMIT DROP AS
    SELECT v.lsn AS old, '0/0'::pg_lsn + (pg_catalog.dense_rank() OVER (ORDER BY v.lsn) - 1) AS new
      FROM (SELECT '0/0'::pg_lsn AS lsn
            UNION SELECT a.lsn FROM public.iasql_audit_log a WHERE a.lsn IS NOT NULL
            UNION SELECT r.enacted_lsn FROM public.iasql_records r
            UNION SELECT s.intent_low FROM public.iasql_engine_state s
            UNION SELECT t.begin_lsn FROM public.iasql_transaction t) v;
  SELECT pg_catalog.count(*), pg_catalog.max(m.new), pg_catalog.min(m.old) FILTER (WHERE m.old <> '0/0')
    INTO positions, top, lowest FROM iasql_restored_lsn m;
  -- The new numbers must lie below the old ones (the audit trail's unique
  -- (lsn, seq) is checked row by row) and below this server's WAL position.
  -- Real positions start at 0/1000000: only 16 million distinct positions
  -- could reach that.
  IF top >= coalesce(lowest, top + 1) OR top >= pg_catalog.pg_current_wal_insert_lsn() THEN
    RAISE EXCEPTION 'cannot adopt the restored database: its iasql state holds % distinct positions, too many to renumber below %', positions, coalesce(lowest, pg_catalog.pg_current_wal_insert_lsn())
      USING ERRCODE = 'program_limit_exceeded',
            HINT = 'Shorten the audit trail (iasql run --audit-retention) on the source database, dump it again and restore that.';
  END IF;
  UPDATE public.iasql_audit_log a SET lsn = m.new FROM iasql_restored_lsn m WHERE a.lsn = m.old AND m.old <> m.new;
  -- Transaction ids are the other server's too: the engine keeps the audit
  -- rows whose transaction its snapshot saw, and an id from the source may
  -- lie in this server's future (never seen: the change would be ignored,
  -- and a pending insert taken for a resource the cloud deleted). The
  -- restored changes are committed as of this transaction, so they take its
  -- id (32 bits, as logical decoding gives them).
  UPDATE public.iasql_audit_log a
     SET xid = (pg_catalog.pg_current_xact_id()::text::numeric % 4294967296)::bigint
   WHERE a.xid IS NOT NULL;
  UPDATE public.iasql_records r SET enacted_lsn = m.new FROM iasql_restored_lsn m WHERE r.enacted_lsn = m.old AND m.old <> m.new;
  UPDATE public.iasql_engine_state s SET intent_low = m.new, updated_at = pg_catalog.clock_timestamp()
    FROM iasql_restored_lsn m WHERE s.intent_low = m.old;
  UPDATE public.iasql_transaction t SET begin_lsn = m.new FROM iasql_restored_lsn m WHERE t.begin_lsn = m.old;
  DROP TABLE iasql_restored_lsn;

  -- Changes committed before the dump that capture had not recorded yet
  -- are in the restored rows but not in the restored trail: compared with
  -- each record's newest change in the trail, a module row that differs
  -- (value by value, each read back as its column's type, so that text
  -- forms do not matter), that exists where the trail says it was deleted
  -- (or has no record and no change at all: an insert), or that is gone
  -- where the trail has it, is recorded as a user change now, after every
  -- restored position: intent the next cycle enacts. (A write of the engine
  -- not captured yet becomes intent too; the engine's writes show the cloud,
  -- so enacting them changes nothing there.) A record whose history was
  -- pruned (--audit-retention) has no change in the trail but a record: it
  -- is not compared.
  FOR tname, rel IN
    SELECT t.table_name, public.iasql_table_regclass(t.table_name) FROM public.iasql_tables t
     WHERE t.module IS NOT NULL AND public.iasql_table_regclass(t.table_name) IS NOT NULL
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a
                    WHERE a.attrelid = public.iasql_table_regclass(t.table_name) AND a.attname = 'id' AND NOT a.attisdropped)
     ORDER BY t.table_name
  LOOP
    SELECT pg_catalog.string_agg(CASE WHEN a.atttypid IN ('json'::regtype, 'jsonb'::regtype)
             THEN pg_catalog.format('coalesce(l.new_row->%L, ''null'') = coalesce(r.%I::jsonb, ''null'')', a.attname, a.attname)
             ELSE pg_catalog.format('((l.new_row->>%L)::%s)::text IS NOT DISTINCT FROM (r.%I)::text', a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), a.attname)
           END, ' AND ' ORDER BY a.attnum),
           'pg_catalog.to_jsonb(r)' || coalesce(pg_catalog.string_agg(CASE WHEN a.atttypid NOT IN ('bool'::regtype, 'int2'::regtype, 'int4'::regtype, 'int8'::regtype, 'oid'::regtype,
                 'float4'::regtype, 'float8'::regtype, 'numeric'::regtype, 'json'::regtype, 'jsonb'::regtype)
             THEN pg_catalog.format(' || pg_catalog.jsonb_build_object(%L, (r.%I)::text)', a.attname, a.attname) END, '' ORDER BY a.attnum), '')
      INTO same, render
      FROM pg_catalog.pg_attribute a WHERE a.attrelid = rel AND a.attnum > 0 AND NOT a.attisdropped;
    EXECUTE pg_catalog.format($q$
      WITH l AS (
        SELECT DISTINCT ON (a.record_id) a.record_id, a.id, a.new_row,
               a.change_type = 'DELETE' OR a.id < coalesce((SELECT pg_catalog.max(x.id) FROM public.iasql_audit_log x
                                                             WHERE x.table_name = $1 AND x.change_type = 'TRUNCATE'), 0) AS gone
          FROM public.iasql_audit_log a
         WHERE a.table_name = $1 AND a.record_id IS NOT NULL AND a.change_type IN ('INSERT', 'UPDATE', 'DELETE')
         ORDER BY a.record_id, a.id DESC),
      missed AS (
        SELECT coalesce(r.id::text, l.record_id) AS record_id,
               CASE WHEN r.id IS NULL THEN 'DELETE' WHEN l.record_id IS NULL OR l.gone THEN 'INSERT' ELSE 'UPDATE' END AS change_type,
               CASE WHEN NOT coalesce(l.gone, true) THEN l.new_row END AS old_row,
               CASE WHEN r.id IS NOT NULL THEN %s END AS new_row
          FROM %s r FULL JOIN l ON l.record_id = r.id::text
         WHERE (r.id IS NULL AND NOT l.gone)
            OR (r.id IS NOT NULL AND l.record_id IS NULL
                AND NOT EXISTS (SELECT 1 FROM public.iasql_records k WHERE k.table_name = $1 AND k.record_id = r.id::text))
            OR (r.id IS NOT NULL AND l.gone)
            OR (r.id IS NOT NULL AND NOT l.gone AND NOT (%s)))
      INSERT INTO public.iasql_audit_log (lsn, seq, xid, ts, table_name, record_id, change_type, old_row, new_row, origin, message)
      SELECT $2::pg_lsn, $3 + pg_catalog.row_number() OVER (ORDER BY m.record_id), (pg_catalog.pg_current_xact_id()::text::numeric %% 4294967296)::bigint,
             pg_catalog.clock_timestamp(), $1, m.record_id, m.change_type, m.old_row, m.new_row, 'user',
             'restore: changed before the dump, not captured by then'
        FROM missed m$q$, render, rel, same)
      USING tname, top + 1, missed;
    GET DIAGNOSTICS found = ROW_COUNT;
    missed := missed + found;
  END LOOP;

  DELETE FROM public.iasql_capture_progress p WHERE p.lsn_origin <> here;
  -- Where iasql was installed is a position of the source's WAL too: here
  -- it is now (the slot capture makes next starts after it). Left as it
  -- was, it could lie in this server's future, and a restart before
  -- capture records progress would take the new slot for one left by an
  -- earlier install and drop it, with the changes made meanwhile.
  UPDATE iasql_private.iasql_engine_key SET installed_lsn = pg_catalog.pg_current_wal_insert_lsn();
  UPDATE public.iasql_requests r
     SET status = 'failed', finished_at = pg_catalog.clock_timestamp(),
         error = 'the database was restored from a dump before the iasql sidecar answered; make the request again'
   WHERE r.status = 'accepted';
  GET DIAGNOSTICS failed = ROW_COUNT;
  said := pg_catalog.format('restored from a dump (LSN origin %s, here %s): %s recorded positions renumbered in their order below this server''s; capture progress of slot %s removed (capture starts at a new slot)',
    origins, here, positions, slots);
  IF missed > 0 THEN
    said := said || pg_catalog.format('; %s changes made before the dump and not captured by then recorded as pending intent', missed);
  END IF;
  IF failed > 0 THEN
    said := said || pg_catalog.format('; %s unanswered requests failed', failed);
  END IF;
  FOR tx IN DELETE FROM public.iasql_transaction RETURNING opened_by, opened_at LOOP
    said := said || pg_catalog.format('; the iasql transaction opened by %s at %s is closed (its changes stay pending and are enacted by the next cycle)', tx.opened_by, tx.opened_at);
  END LOOP;
  PERFORM public.iasql_release_locks(2);
  RETURN said;
END $$;
COMMENT ON FUNCTION public.iasql_adopt_restore() IS
  'Called by the capturing sidecar before it prepares its slot. When iasql_capture_progress holds another LSN origin than this database''s (it was restored from a dump), renumbers every recorded LSN in its order below this server''s positions, gives the audit trail''s rows this transaction''s id, records module rows that differ from the trail (changes not captured before the dump) as pending user changes, removes the old slots'' progress and counts iasql as installed at this server''s position (iasql_engine_key.installed_lsn), fails unanswered requests and closes the open iasql transaction; returns what it did, or NULL when there was nothing to adopt.';

-- 080_references.sql
-- References of tables made at run time (Cloud Control types) to other
-- module tables by id. A type's table is installed whether or not the
-- table it references is: its reference column (<column>_ref, integer or
-- bigint[] of ids) is checked by iasql_reference_check (its trigger is the
-- type's SQL), which refuses a reference to a table that is not installed;
-- and iasql_link_reference adds, once both tables exist, what makes the
-- reference a foreign key: a FOREIGN KEY for one id, or a trigger on the
-- referenced table (iasql_reference_in_use) for an array of ids, as the
-- hand-written tables check theirs (instance.security_group_ids). The
-- sidecar links every reference after each install, so a type installed
-- before the table it references is linked when that one is installed.
-- Both raise foreign_key_violation naming <table>_<column>_fk
-- (iasql_reference_name). Uninstalling the referenced module while rows
-- point at it is refused; otherwise iasql_unlink_reference drops the key.

CREATE FUNCTION public.iasql_reference_name(child text, col text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN pg_catalog.length(n) > 63 THEN pg_catalog.left(n, 54) || '_' || pg_catalog.left(pg_catalog.md5(n), 8) ELSE n END
    FROM (SELECT pg_catalog.format('%s_%s_fk', child, col) AS n) f
$$;
COMMENT ON FUNCTION public.iasql_reference_name(text, text) IS
  'The name of what makes child.col a foreign key (its FOREIGN KEY, or its trigger on the referenced table): <child>_<col>_fk, cut to 54 characters and given 8 of its md5 when longer than 63.';

CREATE FUNCTION public.iasql_reference_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
  target text := TG_ARGV[1];
  names text := TG_ARGV[2];
  many boolean := TG_ARGV[3]::boolean;
  ids bigint[];
  missing bigint;
  fk text := public.iasql_reference_name(TG_TABLE_NAME, col);
BEGIN
  IF many THEN
    EXECUTE pg_catalog.format('SELECT ($1).%I::bigint[]', col) USING NEW INTO ids;
  ELSE
    EXECUTE pg_catalog.format('SELECT ARRAY[($1).%I::bigint]', col) USING NEW INTO ids;
    ids := pg_catalog.array_remove(ids, NULL);
  END IF;
  IF pg_catalog.cardinality(ids) = 0 OR ids IS NULL THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.array_position(ids, NULL) IS NOT NULL THEN
    RAISE EXCEPTION '%.% lists NULL', TG_TABLE_NAME, col
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('%s lists %s.id values: leave NULL out.', col, target);
  END IF;
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', target)) IS NULL THEN
    RAISE EXCEPTION '%.% points at rows of %, which is not installed', TG_TABLE_NAME, col, target
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('Install the module of %s first, or leave %s NULL and name the resource in %s.', target, col, names);
  END IF;
  -- The rows named are locked FOR KEY SHARE, as a foreign key's check
  -- does, so that a concurrent delete of one waits for this transaction.
  EXECUTE pg_catalog.format('SELECT 1 FROM public.%I t WHERE t.id = ANY ($1) FOR KEY SHARE', target) USING ids;
  EXECUTE pg_catalog.format('SELECT x FROM pg_catalog.unnest($1) AS x WHERE NOT EXISTS (SELECT 1 FROM public.%I t WHERE t.id = x) LIMIT 1', target)
    USING ids INTO missing;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION '%.%: % is not a row of %', TG_TABLE_NAME, col, missing, target
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('%s lists %s.id values: create the row first (in the same transaction is fine), or name the resource in %s instead.', col, target, names);
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_check() IS
  'Trigger function (arguments: column, referenced table, naming column, many): the ids a reference column of a Cloud Control type''s table holds are rows of the referenced table, which is installed; raises foreign_key_violation otherwise.';

CREATE FUNCTION public.iasql_reference_in_use() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  child text := TG_ARGV[0];
  col text := TG_ARGV[1];
  users bigint[];
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL THEN
    RETURN OLD;
  END IF;
  EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(c.id ORDER BY c.id) FROM public.%I c WHERE $1 = ANY (c.%I)', child, col)
    USING OLD.id INTO users;
  IF users IS NOT NULL THEN
    RAISE EXCEPTION '% row % is still referenced by % row(s) %', TG_TABLE_NAME, OLD.id, child,
        pg_catalog.array_to_string(users[1:10], ', ') || CASE WHEN pg_catalog.cardinality(users) > 10 THEN pg_catalog.format(' and %s more', pg_catalog.cardinality(users) - 10) ELSE '' END
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('Remove the id from those rows'' %s, or delete those rows, before deleting this one (in the same transaction is fine).', col);
  END IF;
  RETURN OLD;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_in_use() IS
  'Trigger function (arguments: referencing table, its column): refuses to delete a row that a reference array of a Cloud Control type''s table still lists.';

CREATE FUNCTION public.iasql_reference_named() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
  names text := TG_ARGV[1];
  o jsonb := pg_catalog.to_jsonb(OLD);
  n jsonb := pg_catalog.to_jsonb(NEW);
BEGIN
  -- A user's change of the naming column alone names another resource:
  -- the reference, which would fill the old name back in, lets go (the
  -- engine finds it again from the new name). The running cycle's own
  -- writes (it fills the name from the reference) are let through.
  IF n -> names IS DISTINCT FROM o -> names AND n -> col IS NOT DISTINCT FROM o -> col
     AND n -> col <> 'null'::jsonb AND NOT public.iasql_holds_lock(2) THEN
    NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(col, NULL));
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_named() IS
  'Trigger function (arguments: reference column, naming column): a user''s UPDATE that changes the naming column of a Cloud Control type''s row and not its reference sets the reference NULL, so that the name the user gave is the one sent to the cloud.';

CREATE FUNCTION public.iasql_link_reference(child text, col text, target text, many boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL
     OR pg_catalog.to_regclass(pg_catalog.format('public.%I', target)) IS NULL THEN
    RETURN false;
  END IF;
  IF NOT many THEN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
                WHERE c.conname = fk AND c.conrelid = pg_catalog.format('public.%I', child)::regclass) THEN
      RETURN false;
    END IF;
    EXECUTE pg_catalog.format('ALTER TABLE public.%I ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES public.%I (id)', child, fk, col, target);
    EXECUTE pg_catalog.format('COMMENT ON CONSTRAINT %I ON public.%I IS %L', fk, child,
      pg_catalog.format('%s is a row of %s (linked once both tables were installed).', col, target));
    RETURN true;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
              WHERE t.tgname = fk AND t.tgrelid = pg_catalog.format('public.%I', target)::regclass) THEN
    RETURN false;
  END IF;
  EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE DELETE ON public.%I FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_in_use(%L, %L)', fk, target, child, col);
  EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON public.%I IS %L', fk, target,
    pg_catalog.format('A row that %s.%s lists cannot be deleted (the other half of %s''s check).', child, col, child));
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.iasql_link_reference(text, text, text, boolean) IS
  'Makes the reference column col of table child (ids of target rows; many: an array) a foreign key once both tables exist: a FOREIGN KEY <child>_<col>_fk, or for an array a trigger of that name on target refusing to delete a listed row. Returns whether it added one; the sidecar calls it after each install.';
REVOKE ALL ON FUNCTION public.iasql_link_reference(text, text, text, boolean) FROM PUBLIC;

CREATE FUNCTION public.iasql_unlink_reference(child text, col text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL
     OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
                     WHERE c.conname = fk AND c.conrelid = pg_catalog.format('public.%I', child)::regclass) THEN
    RETURN false;
  END IF;
  EXECUTE pg_catalog.format('ALTER TABLE public.%I DROP CONSTRAINT %I', child, fk);
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.iasql_unlink_reference(text, text) IS
  'Drops the FOREIGN KEY iasql_link_reference made for child.col (the referenced table is being uninstalled; no row may point at it any more). Returns whether there was one.';
REVOKE ALL ON FUNCTION public.iasql_unlink_reference(text, text) FROM PUBLIC;

-- extension_only.sql
-- Only in the extension script: pg_dump keeps the rows of these tables (and
-- the values of their sequences, so that ids continue after a restore).
-- Rows this script inserts itself are left out of the dump, or restoring it
-- into a database where CREATE EXTENSION has just inserted them again would
-- fail on the primary key: iasql_mode's own registration.
SELECT pg_catalog.pg_extension_config_dump('public.iasql_tables', 'WHERE table_name <> ''iasql_mode''');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_capture_progress', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_modules', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_records', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_replacements', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_operations', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_engine_state', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_deprecated_calls', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_account', '');
