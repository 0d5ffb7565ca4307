-- Generated from sql/ by 'make extension'; do not edit.
\echo Use "CREATE EXTENSION iasql" to load this file. \quit

-- 000_version.sql
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
  IF public.iasql_table_name(rel) LIKE 'iasql\_%' THEN
    RAISE EXCEPTION 'cannot register "%": iasql''s own tables are not captured', NEW.table_name
      USING ERRCODE = 'invalid_parameter_value',
            HINT = 'Register your own tables; iasql_tables, iasql_audit_log and iasql_capture_progress belong to iasql.';
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
  -- Serialise with concurrent registrations and sidecars.
  PERFORM pg_catalog.pg_advisory_xact_lock(public.iasql_lock_namespace(), 3);
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
                CHECK (change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')),
  old_row     jsonb,
  new_row     jsonb,
  origin      text NOT NULL CONSTRAINT iasql_audit_log_origin CHECK (origin IN ('user', 'engine')),
  message     text,
  captured_at timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  CONSTRAINT iasql_audit_log_position UNIQUE (lsn, seq)
);
CREATE INDEX iasql_audit_log_record ON public.iasql_audit_log (table_name, record_id, id);
COMMENT ON TABLE public.iasql_audit_log IS
  'Every captured change to a registered table, in commit order; written only by the iasql sidecar, readable by all.';
COMMENT ON COLUMN public.iasql_audit_log.id IS 'Increases with commit order (then position in the transaction).';
COMMENT ON COLUMN public.iasql_audit_log.lsn IS 'Commit LSN of the transaction that made the change.';
COMMENT ON COLUMN public.iasql_audit_log.seq IS 'Position of the change within its transaction, from 1.';
COMMENT ON COLUMN public.iasql_audit_log.xid IS 'Transaction id of the change.';
COMMENT ON COLUMN public.iasql_audit_log.ts IS 'Commit time of the transaction.';
COMMENT ON COLUMN public.iasql_audit_log.table_name IS 'The registered table changed (as in iasql_tables).';
COMMENT ON COLUMN public.iasql_audit_log.record_id IS 'Primary key of the row: its value as text, or a JSON array of texts for a composite key; NULL for TRUNCATE.';
COMMENT ON COLUMN public.iasql_audit_log.change_type IS 'INSERT, UPDATE, DELETE or TRUNCATE (one row per truncated table).';
COMMENT ON COLUMN public.iasql_audit_log.old_row IS 'The row before an UPDATE or DELETE. Booleans, numbers, json and jsonb keep their JSON types; other values are their PostgreSQL text form.';
COMMENT ON COLUMN public.iasql_audit_log.new_row IS 'The row after an INSERT or UPDATE (unchanged TOASTed values filled from the old row), as old_row.';
COMMENT ON COLUMN public.iasql_audit_log.origin IS 'user for intent; engine for writes the sidecar made (marked with iasql_engine_mark).';
COMMENT ON COLUMN public.iasql_audit_log.message IS 'Free text: for engine changes, the marker''s message.';
COMMENT ON COLUMN public.iasql_audit_log.captured_at IS 'When the sidecar wrote the row; captured_at - ts is the capture lag.';
COMMENT ON INDEX public.iasql_audit_log_record IS 'Finds the changes to one record in order.';
COMMENT ON CONSTRAINT iasql_audit_log_position ON public.iasql_audit_log IS 'A change is recorded at most once.';
REVOKE ALL ON public.iasql_audit_log FROM PUBLIC;
GRANT SELECT ON public.iasql_audit_log TO PUBLIC;
CREATE TRIGGER iasql_audit_log_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_audit_log
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables();
COMMENT ON TRIGGER iasql_audit_log_guard ON public.iasql_audit_log IS 'Only the capture leader writes the audit trail.';

-- Engine writes: the sidecar calls this first in every transaction that
-- writes module tables. It emits a transactional logical-decoding message,
-- which any role may do (no replication origin, no superuser), so the
-- decoder records that transaction's changes with origin engine.
CREATE FUNCTION public.iasql_engine_mark(message text DEFAULT '') RETURNS pg_lsn
LANGUAGE sql VOLATILE AS $$
  SELECT pg_catalog.pg_logical_emit_message(true, 'iasql_engine', coalesce(message, ''))
$$;
COMMENT ON FUNCTION public.iasql_engine_mark(text) IS
  'Marks the current transaction as the engine''s: its changes are captured with origin engine, so they are not user intent.';

-- 030_capture.sql
-- How far capture has got, written in the same transaction as the audit rows
-- it covers, so that a restart resumes exactly after the last recorded change.
CREATE TABLE public.iasql_capture_progress (
  slot_name   name PRIMARY KEY,
  end_lsn     pg_lsn NOT NULL,
  commit_lsn  pg_lsn NOT NULL,
  commit_ts   timestamptz NOT NULL,
  changes     bigint NOT NULL DEFAULT 0,
  updated_at  timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp()
);
COMMENT ON TABLE public.iasql_capture_progress IS
  'Per replication slot: the last transaction whose changes are in the audit trail. Written only by the sidecar.';
COMMENT ON COLUMN public.iasql_capture_progress.slot_name IS 'The logical replication slot capture consumes.';
COMMENT ON COLUMN public.iasql_capture_progress.end_lsn IS 'End LSN of the last captured transaction; capture resumes after it.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_lsn IS 'Commit LSN of the last captured transaction.';
COMMENT ON COLUMN public.iasql_capture_progress.commit_ts IS 'Commit time of the last captured transaction.';
COMMENT ON COLUMN public.iasql_capture_progress.changes IS 'Changes captured through this slot so far.';
COMMENT ON COLUMN public.iasql_capture_progress.updated_at IS 'When capture last advanced.';
REVOKE ALL ON public.iasql_capture_progress FROM PUBLIC;
GRANT SELECT ON public.iasql_capture_progress TO PUBLIC;
CREATE TRIGGER iasql_capture_progress_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_capture_progress
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables();
COMMENT ON TRIGGER iasql_capture_progress_guard ON public.iasql_capture_progress IS 'Only the capture leader writes capture progress.';

-- extension_only.sql
-- Only in the extension script: pg_dump keeps the rows of these tables, and
-- the audit log's id sequence so that ids continue after a restore.
SELECT pg_catalog.pg_extension_config_dump('public.iasql_tables', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_capture_progress', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log_id_seq', '');
