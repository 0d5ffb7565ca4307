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
