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
