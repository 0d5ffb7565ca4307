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
