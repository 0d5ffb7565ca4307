-- History: every version of a record, and a table as it stood at a moment,
-- read from the audit trail (iasql_audit_log).
--
-- Caller's rights. A role that may SELECT a module table may read who
-- changed it and how, without SELECT on iasql_audit_log (which also holds
-- the cycles' records and every other table's rows). The functions are
-- SECURITY INVOKER, so current_user is the caller (SET ROLE included), and
-- read the audit trail through iasql_changes: a security-barrier view,
-- granted to PUBLIC, whose owner reads iasql_audit_log and which shows the
-- row changes of the registered tables the querying role may SELECT (a
-- view's has_table_privilege checks the querying role, not the owner).
-- Column privileges: the audit rows hold whole rows, so a table's history
-- needs SELECT on the table; SELECT on some of its columns is not enough.

CREATE VIEW public.iasql_changes WITH (security_barrier) AS
  SELECT a.id, a.ts, a.table_name, a.record_id, a.change_type, a.old_row, a.new_row, a.origin, a.actor, a.attribution
    FROM public.iasql_audit_log a
   WHERE a.change_type IN ('INSERT', 'UPDATE', 'DELETE', 'TRUNCATE')
     AND a.table_name IN (SELECT t.table_name FROM public.iasql_tables t
                           WHERE pg_catalog.has_table_privilege(public.iasql_table_regclass(t.table_name), 'SELECT'));
COMMENT ON VIEW public.iasql_changes IS
  'The audit trail''s row changes (INSERT, UPDATE, DELETE, TRUNCATE) of the registered tables the querying role may SELECT (table-level SELECT); readable by every role. iasql_history and iasql_as_of read it.';
COMMENT ON COLUMN public.iasql_changes.id IS 'As iasql_audit_log.id: the order changes were recorded in.';
COMMENT ON COLUMN public.iasql_changes.ts IS 'Commit time of the change.';
COMMENT ON COLUMN public.iasql_changes.table_name IS 'The table changed (as in iasql_tables).';
COMMENT ON COLUMN public.iasql_changes.record_id IS 'Primary key of the row as text; NULL for TRUNCATE.';
COMMENT ON COLUMN public.iasql_changes.change_type IS 'INSERT, UPDATE, DELETE or TRUNCATE.';
COMMENT ON COLUMN public.iasql_changes.old_row IS 'The row before an UPDATE or DELETE.';
COMMENT ON COLUMN public.iasql_changes.new_row IS 'The row after an INSERT or UPDATE.';
COMMENT ON COLUMN public.iasql_changes.origin IS 'user, cloud or engine (see iasql_audit_log.origin).';
COMMENT ON COLUMN public.iasql_changes.actor IS 'Who made the change (see iasql_audit_log.actor).';
COMMENT ON COLUMN public.iasql_changes.attribution IS 'What AWS says of a cloud change (see iasql_audit_log.attribution).';
REVOKE ALL ON public.iasql_changes FROM PUBLIC;
GRANT SELECT ON public.iasql_changes TO PUBLIC;

-- From when the audit trail holds complete history: the engine's last
-- pruning's cutoff (NULL when it never pruned). SECURITY DEFINER: only
-- this one value of iasql_engine_state is shown to every role.
CREATE FUNCTION public.iasql_history_start() RETURNS timestamptz
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
  SELECT s.history_from FROM public.iasql_engine_state s
$$;
COMMENT ON FUNCTION public.iasql_history_start() IS
  'The oldest time iasql_as_of can answer for: the engine pruned the audit trail''s older rows (its --audit-retention), keeping each live record''s newest version before it. NULL when nothing was pruned.';

-- The canonical name of a table the caller asks the history of, once the
-- caller may read it: a missing table and a missing SELECT are one line
-- each, naming the table.
CREATE FUNCTION public.iasql_history_table(table_name text, caller text) RETURNS text
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  rel regclass;
BEGIN
  BEGIN
    rel := coalesce(pg_catalog.to_regclass(table_name), public.iasql_table_regclass(table_name));
  EXCEPTION WHEN invalid_name OR invalid_parameter_value OR syntax_error THEN
    rel := NULL;
  END;
  IF rel IS NULL THEN
    RAISE EXCEPTION '%: table "%" does not exist', caller, table_name
      USING ERRCODE = 'undefined_table', HINT = 'Give the table''s name as in FROM: bucket, or schema.table.';
  END IF;
  IF NOT pg_catalog.has_table_privilege(rel, 'SELECT') THEN
    RAISE EXCEPTION 'permission denied for table %: % needs SELECT on it', public.iasql_table_name(rel), caller
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RETURN public.iasql_table_name(rel);
END $$;
COMMENT ON FUNCTION public.iasql_history_table(text, text) IS
  'Resolves a table named to iasql_history or iasql_as_of (caller) to its canonical name, refusing in one line a missing table and a role without SELECT on it (42501).';

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

CREATE FUNCTION public.iasql_history(table_name text, id bigint)
RETURNS TABLE (at timestamptz, origin text, actor text, changed text[], "row" jsonb)
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  t text := public.iasql_history_table(table_name, 'iasql_history');
  rid text := id::text;
BEGIN
  RETURN QUERY
  WITH v AS (
    SELECT c.id, c.ts, c.change_type, c.origin, c.actor, c.old_row, c.new_row
      FROM public.iasql_changes c
     WHERE c.table_name = t AND c.record_id = rid AND c.change_type IN ('INSERT', 'UPDATE', 'DELETE')
    UNION ALL
    SELECT c.id, c.ts, c.change_type, c.origin, c.actor, NULL, NULL
      FROM public.iasql_changes c
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
COMMENT ON FUNCTION public.iasql_history(text, bigint) IS
  'Every version of one record of a table (by its id), oldest first, records since deleted included: when (commit time), origin (user, cloud, engine), actor (the role for user and engine changes; the AWS identity for cloud ones when known), changed (the columns whose value differs from the version before: every column for an INSERT, a DELETE or a TRUNCATE) and row (the row then; NULL once deleted or truncated). Needs SELECT on the table, not on the audit trail. Once the audit trail was pruned (iasql_history_start), the first version shown may be the oldest kept: the record''s newest version before the pruning''s cutoff, an UPDATE whose changed compares with the version it replaced.';

CREATE FUNCTION public.iasql_as_of(table_name text, at timestamptz) RETURNS SETOF jsonb
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  t text := public.iasql_history_table(table_name, 'iasql_as_of');
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
    FROM public.iasql_changes c
   WHERE c.table_name = t AND c.record_id IS NULL AND c.change_type = 'TRUNCATE' AND c.ts <= at;
  -- The versions wanted first, from the audit trail's index alone (it
  -- includes ts and change_type), then their rows by primary key: the
  -- table's older versions are never read from the heap.
  SELECT pg_catalog.array_agg(l.id) INTO wanted FROM (
    SELECT DISTINCT ON (c.record_id) c.id, c.change_type
      FROM public.iasql_changes c
     WHERE c.table_name = t AND c.record_id IS NOT NULL AND c.change_type IN ('INSERT', 'UPDATE', 'DELETE')
       AND c.ts <= at AND c.id > coalesce(truncated, 0)
     ORDER BY c.record_id, c.id DESC) l
   WHERE l.change_type <> 'DELETE';
  RETURN QUERY
  SELECT c.new_row FROM public.iasql_changes c
   WHERE c.id = ANY (wanted) AND c.table_name = t
   ORDER BY pg_catalog.length(c.record_id), c.record_id;  -- ids in numeric order (9 before 10)
END $$;
COMMENT ON FUNCTION public.iasql_as_of(text, timestamptz) IS
  'The table''s rows (jsonb, by their id as text) as they stood at a moment: each record''s newest version committed at or before it, less the deleted ones; a TRUNCATE of the table at or before it leaves only rows written after. Changes not yet captured are not in it. Needs SELECT on the table. A time before iasql_history_start (the audit trail was pruned) is refused, naming that time.';
