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
