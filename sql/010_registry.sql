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
