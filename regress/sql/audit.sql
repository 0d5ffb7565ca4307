-- audit: the audit trail and capture progress are readable by iasql_reader;
-- both are written only by the session holding the capture lock (the
-- sidecar).
CREATE EXTENSION iasql;
-- Context lines carry PL/pgSQL line numbers; keep them out of the output.
\set SHOW_CONTEXT never
SET client_min_messages = warning;
DROP ROLE IF EXISTS regress_iasql_reader;
RESET client_min_messages;
CREATE ROLE regress_iasql_reader;

-- A role without a grant reads the registry only; members of iasql_reader
-- read the audit trail and capture progress, and nobody but the owner has
-- write privileges
SELECT has_table_privilege('regress_iasql_reader', 'iasql_audit_log', 'SELECT') AS audit_readable,
       has_table_privilege('regress_iasql_reader', 'iasql_capture_progress', 'SELECT') AS progress_readable,
       has_table_privilege('regress_iasql_reader', 'iasql_tables', 'SELECT') AS registry_readable;
SELECT has_table_privilege('regress_iasql_reader', t, 'INSERT, UPDATE, DELETE, TRUNCATE') AS writable
  FROM unnest(ARRAY['iasql_audit_log', 'iasql_capture_progress']) AS t;
GRANT iasql_reader TO regress_iasql_reader;
SELECT has_table_privilege('regress_iasql_reader', 'iasql_audit_log', 'SELECT') AS audit_readable_by_reader;
SET ROLE regress_iasql_reader;
SELECT count(*) = 0 AS audit_empty FROM iasql_audit_log;
SELECT count(*) = 0 AS progress_empty FROM iasql_capture_progress;
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', 'user');
DELETE FROM iasql_capture_progress;
RESET ROLE;

-- Without the capture lock even the owner, a superuser, cannot write them
SELECT iasql_is_capture_writer() AS capture_writer;
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', 'user');
UPDATE iasql_audit_log SET message = 'x';
DELETE FROM iasql_audit_log;
TRUNCATE iasql_audit_log;
INSERT INTO iasql_capture_progress (slot_name, end_lsn, commit_lsn, commit_ts)
  VALUES ('regress_slot', '0/10', '0/8', now());
UPDATE iasql_capture_progress SET changes = 1;
DELETE FROM iasql_capture_progress;
TRUNCATE iasql_capture_progress;

-- Other iasql locks do not make a capture writer, nor does the advisory lock
-- that once was the capture lock (any role could take it)
SELECT iasql_take_lock(2) AS took;
SELECT iasql_is_capture_writer() AS capture_writer;
SELECT iasql_release_locks();
SELECT pg_advisory_lock(1767994225, 1);
SELECT iasql_is_capture_writer() AS capture_writer;
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', 'user');
SELECT pg_advisory_unlock(1767994225, 1) AS unlocked;
-- Locks 3 and 5 are row locks, not held by a session
SELECT iasql_take_lock(3);

-- The session holding the capture lock passes the guard
SELECT iasql_take_lock(1) AS took;
SELECT lock_id, holder_pid = pg_backend_pid() AS mine FROM iasql_lock_holders;
SELECT iasql_is_capture_writer() AS capture_writer;
INSERT INTO iasql_audit_log (lsn, seq, xid, ts, table_name, record_id, change_type, old_row, new_row, origin)
VALUES ('0/100', 1, 700, '2024-01-01 00:00:00+00', 'regress_items', '1', 'INSERT', NULL, '{"id": 1, "ok": true}', 'user'),
       ('0/100', 2, 700, '2024-01-01 00:00:00+00', 'regress_items', '1', 'UPDATE', '{"id": 1, "ok": true}', '{"id": 1, "ok": false}', 'user'),
       ('0/200', 1, 701, '2024-01-01 00:00:01+00', 'regress_items', '1', 'DELETE', '{"id": 1, "ok": false}', NULL, 'engine'),
       ('0/300', 1, 702, '2024-01-01 00:00:02+00', 'regress_items', NULL, 'TRUNCATE', NULL, NULL, 'engine');
-- Records without a position (lifecycle records) do not collide
INSERT INTO iasql_audit_log (ts, change_type, origin, message)
VALUES ('2024-01-01 00:00:03+00', 'INSERT', 'engine', 'first'),
       ('2024-01-01 00:00:03+00', 'INSERT', 'engine', 'second');
SELECT lsn, seq, change_type, origin, record_id, new_row ->> 'ok' AS ok, message
  FROM iasql_audit_log ORDER BY id;
SELECT bool_and(captured_at IS NOT NULL) AS captured_at_defaulted,
       count(DISTINCT id) = count(*) AS ids_unique,
       array_agg(id ORDER BY id) = array_agg(id ORDER BY lsn, seq) AS ids_follow_positions
  FROM iasql_audit_log WHERE lsn IS NOT NULL;
UPDATE iasql_audit_log SET message = 'reviewed' WHERE seq = 2;
DELETE FROM iasql_audit_log WHERE lsn IS NULL;
INSERT INTO iasql_capture_progress (slot_name, end_lsn, commit_lsn, commit_ts, changes)
  VALUES ('regress_slot', '0/310', '0/300', '2024-01-01 00:00:02+00', 4);
UPDATE iasql_capture_progress SET changes = changes + 1;
SELECT slot_name, end_lsn, commit_lsn, changes, updated_at IS NOT NULL AS has_updated_at FROM iasql_capture_progress;

-- Constraints hold for the capture writer too (terse: the failing rows hold timestamps)
\set VERBOSITY terse
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'UPSERT', 'user');
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'insert', 'user');
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', 'aws');
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), 'INSERT', NULL);
INSERT INTO iasql_audit_log (ts, change_type, origin) VALUES (now(), NULL, 'user');
INSERT INTO iasql_audit_log (change_type, origin) VALUES ('INSERT', 'user');
-- A change is recorded at most once
INSERT INTO iasql_audit_log (lsn, seq, ts, change_type, origin) VALUES ('0/100', 1, now(), 'INSERT', 'user');
\set VERBOSITY default
-- ids are assigned, never given
INSERT INTO iasql_audit_log (id, ts, change_type, origin) VALUES (1000, now(), 'INSERT', 'user');
TRUNCATE iasql_capture_progress;
SELECT count(*) = 0 AS progress_truncated FROM iasql_capture_progress;

-- Releasing the lock ends the privilege
SELECT iasql_release_locks();
SELECT iasql_is_capture_writer() AS capture_writer;
SELECT count(*) AS holders FROM iasql_lock_holders;
DELETE FROM iasql_audit_log;
SELECT count(*) = 4 AS audit_kept FROM iasql_audit_log;
-- A lock taken in a transaction that rolls back is not held
BEGIN;
SELECT iasql_take_lock(1) AS took;
SELECT iasql_is_capture_writer() AS capture_writer;
ROLLBACK;
SELECT iasql_is_capture_writer() AS capture_writer;

-- iasql_engine_mark returns the LSN of a transactional message prefixed
-- iasql_engine whose content is the sidecar's key, a colon and the message;
-- only the sidecar's role may call it; a rolled-back mark is never decoded
SELECT iasql_sync_publication();
SELECT 'created' AS slot FROM pg_create_logical_replication_slot('regress_iasql_audit', 'pgoutput');
SELECT pg_typeof(iasql_engine_mark('x')) AS mark_type;
BEGIN;
SELECT iasql_engine_mark('rolled back') IS NOT NULL AS marked;
ROLLBACK;
SET ROLE regress_iasql_reader;
SELECT iasql_engine_mark('by a reader') IS NOT NULL AS marked;
SELECT iasql_engine_mark() IS NOT NULL AS marked;
SELECT iasql_engine_mark(NULL) IS NOT NULL AS marked;
RESET ROLE;
-- pgoutput message: 'M', flags (1 = transactional), LSN, prefix\0, length, content
SELECT get_byte(data, 1) = 1 AS transactional,
       substring(data FROM 11 FOR 13) = 'iasql_engine'::bytea || '\x00'::bytea AS prefix_ok,
       convert_from(substring(data FROM 28), 'UTF8') ~ '^[0-9a-f]{64}:' AS keyed,
       substr(convert_from(substring(data FROM 28), 'UTF8'), 66) AS message
  FROM pg_logical_slot_get_binary_changes('regress_iasql_audit', NULL, NULL,
         'proto_version', '1', 'publication_names', 'iasql', 'messages', 'true')
 WHERE get_byte(data, 0) = ascii('M');
SELECT pg_drop_replication_slot('regress_iasql_audit');

-- Clean up
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
DROP ROLE regress_iasql_reader;
