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
