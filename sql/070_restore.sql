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
  -- The cycle lock: the engine's tables are written by its holder only.
  PERFORM pg_catalog.pg_advisory_xact_lock(public.iasql_lock_namespace(), 2);

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

  DELETE FROM public.iasql_capture_progress p WHERE p.lsn_origin <> here;
  UPDATE public.iasql_requests r
     SET status = 'failed', finished_at = pg_catalog.clock_timestamp(),
         error = 'the database was restored from a dump before the iasql sidecar answered; make the request again'
   WHERE r.status = 'accepted';
  GET DIAGNOSTICS failed = ROW_COUNT;
  said := pg_catalog.format('restored from a dump (LSN origin %s, here %s): %s recorded positions renumbered in their order below this server''s; capture progress of slot %s removed (capture starts at a new slot)',
    origins, here, positions, slots);
  IF failed > 0 THEN
    said := said || pg_catalog.format('; %s unanswered requests failed', failed);
  END IF;
  FOR tx IN DELETE FROM public.iasql_transaction RETURNING opened_by, opened_at LOOP
    said := said || pg_catalog.format('; the iasql transaction opened by %s at %s is closed (its changes stay pending and are enacted by the next cycle)', tx.opened_by, tx.opened_at);
  END LOOP;
  RETURN said;
END $$;
COMMENT ON FUNCTION public.iasql_adopt_restore() IS
  'Called by the capturing sidecar before it prepares its slot. When iasql_capture_progress holds another LSN origin than this database''s (it was restored from a dump), renumbers every recorded LSN in its order below this server''s positions, gives the audit trail''s rows this transaction''s id, removes the old slots'' progress, fails unanswered requests and closes the open iasql transaction; returns what it did, or NULL when there was nothing to adopt.';
