-- What 'iasql uninstall' runs to remove iasql's own objects from a database,
-- in the transaction that has dropped the module tables already when asked
-- (--module-tables). Not an installed object: this block runs once and
-- leaves nothing. It removes:
-- - the guard triggers iasql put on module tables that stay (their
--   functions are iasql's), so that the tables work on as plain tables;
-- - what iasql_grant_sidecar granted the sidecar's role on the database and
--   on schema public (its grants on iasql's tables go with them), unless
--   that role is a superuser, the database's owner or the installer;
-- - the extension (DROP EXTENSION iasql), or, installed as plain SQL, every
--   relation, routine and type in schema public named iasql_*, and the
--   schema iasql_private. Nothing is dropped with CASCADE: an object of
--   someone else's that uses one of them stops the uninstall instead.
-- The pg_cron job, the publication, the replication slot and, on request,
-- the roles are 'iasql uninstall''s next statements.
DO $uninstall$
DECLARE
  r record;
  sidecar name;
  installer name;
  list text;
BEGIN
  FOR r IN
    SELECT t.tgname, pg_catalog.format('%I.%I', n.nspname, c.relname) AS rel
      FROM pg_catalog.pg_trigger t
      JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
      JOIN pg_catalog.pg_class c ON c.oid = t.tgrelid
      JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE p.pronamespace = 'public'::regnamespace AND p.proname LIKE 'iasql\_%'
       AND NOT (c.relnamespace = 'public'::regnamespace AND c.relname LIKE 'iasql\_%')
       AND NOT t.tgisinternal
  LOOP
    EXECUTE pg_catalog.format('DROP TRIGGER %I ON %s', r.tgname, r.rel);
  END LOOP;

  IF pg_catalog.to_regclass('public.iasql_sidecar') IS NOT NULL THEN
    SELECT s.role_name, pg_catalog.pg_get_userbyid(c.relowner) INTO sidecar, installer
      FROM public.iasql_sidecar s, pg_catalog.pg_class c WHERE c.oid = 'public.iasql_sidecar'::regclass;
    IF sidecar IS DISTINCT FROM installer
       AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = sidecar AND NOT rolsuper)
       AND sidecar <> (SELECT pg_catalog.pg_get_userbyid(d.datdba) FROM pg_catalog.pg_database d WHERE d.datname = pg_catalog.current_database()) THEN
      EXECUTE pg_catalog.format('REVOKE USAGE, CREATE ON SCHEMA public FROM %I', sidecar);
      EXECUTE pg_catalog.format('REVOKE CONNECT, CREATE ON DATABASE %I FROM %I', pg_catalog.current_database(), sidecar);
    END IF;
  END IF;

  IF EXISTS (SELECT 1 FROM pg_catalog.pg_extension WHERE extname = 'iasql') THEN
    DROP EXTENSION iasql;
    RETURN;
  END IF;

  SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, c.relname), ', ') INTO list
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND c.relname LIKE 'iasql\_%' AND c.relkind = 'v';
  IF list IS NOT NULL THEN
    EXECUTE 'DROP VIEW ' || list;
  END IF;
  SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, c.relname), ', ') INTO list
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE ((n.nspname = 'public' AND c.relname LIKE 'iasql\_%') OR n.nspname = 'iasql_private') AND c.relkind IN ('r', 'p');
  IF list IS NOT NULL THEN
    EXECUTE 'DROP TABLE ' || list;
  END IF;
  SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, c.relname), ', ') INTO list
    FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
   WHERE ((n.nspname = 'public' AND c.relname LIKE 'iasql\_%') OR n.nspname = 'iasql_private') AND c.relkind = 'S';
  IF list IS NOT NULL THEN
    EXECUTE 'DROP SEQUENCE ' || list;
  END IF;
  SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I(%s)', n.nspname, p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid)), ', ') INTO list
    FROM pg_catalog.pg_proc p JOIN pg_catalog.pg_namespace n ON n.oid = p.pronamespace
   WHERE ((n.nspname = 'public' AND p.proname LIKE 'iasql\_%') OR n.nspname = 'iasql_private') AND p.prokind IN ('f', 'p');
  IF list IS NOT NULL THEN
    EXECUTE 'DROP ROUTINE ' || list;
  END IF;
  SELECT pg_catalog.string_agg(pg_catalog.format('%I.%I', n.nspname, t.typname), ', ') INTO list
    FROM pg_catalog.pg_type t JOIN pg_catalog.pg_namespace n ON n.oid = t.typnamespace
   WHERE ((n.nspname = 'public' AND t.typname LIKE 'iasql\_%') OR n.nspname = 'iasql_private')
     AND (t.typtype IN ('e', 'd', 'r') OR (t.typtype = 'c' AND (SELECT c.relkind FROM pg_catalog.pg_class c WHERE c.oid = t.typrelid) = 'c'));
  IF list IS NOT NULL THEN
    EXECUTE 'DROP TYPE ' || list;
  END IF;
  DROP SCHEMA IF EXISTS iasql_private;
END $uninstall$;
