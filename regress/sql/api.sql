-- api: the transaction-like procedures and the module functions call into the sidecar;
-- where they cannot work they fail at once with a message that says what to do.
\set SHOW_CONTEXT never
CREATE EXTENSION iasql;

-- No sidecar is connected to this database
CALL iasql_begin();
CALL iasql_commit();
CALL iasql_rollback();
SELECT * FROM iasql_preview();
SELECT * FROM iasql_install('aws_s3');
SELECT * FROM iasql_uninstall('aws_s3');
SELECT iasql_sidecar_connected() AS connected;

-- Inside a transaction block with uncommitted writes: the sidecar could not see them
CREATE TABLE api_scratch (id int PRIMARY KEY);
BEGIN;
INSERT INTO api_scratch VALUES (1);
CALL iasql_commit();
ROLLBACK;
BEGIN;
INSERT INTO api_scratch VALUES (1);
SELECT * FROM iasql_preview();
ROLLBACK;

-- At REPEATABLE READ or SERIALIZABLE the answer would never become visible
BEGIN ISOLATION LEVEL REPEATABLE READ;
CALL iasql_rollback();
ROLLBACK;
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT * FROM iasql_preview();
ROLLBACK;

-- The module list is plain SQL (empty until a sidecar registers its modules)
SELECT count(*) = 0 AS no_modules_yet FROM iasql_modules_list();

-- Deprecated functions warn, name the replacement, and do nothing else
SELECT iasql_apply();
SELECT iasql_sync();
SELECT iasql_preview_apply();
SELECT iasql_preview_sync();
-- ... even in a read-only transaction
BEGIN READ ONLY;
SELECT iasql_apply();
ROLLBACK;

-- The engine's tables are the sidecar's: users read them, cannot write them
SELECT count(*) = 0 AS no_requests FROM iasql_requests;
INSERT INTO iasql_transaction (opened_by, opened_at, begin_lsn) VALUES (current_user, now(), '0/0');
INSERT INTO iasql_records (table_name, record_id, enacted_lsn) VALUES ('t', '1', '0/0');
DELETE FROM iasql_modules;
UPDATE iasql_requests SET status = 'done';

-- Clean up
DROP TABLE api_scratch;
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
