-- mode: rules at database, table and record level; the most specific wins; ties resolve
-- TRACK > NORMAL > ENFORCE; no rule means NORMAL.
\set SHOW_CONTEXT never
CREATE EXTENSION iasql;
CREATE TABLE bucket (id serial PRIMARY KEY, name text);
CREATE TABLE bucket_object (id serial PRIMARY KEY, key text);
CREATE TABLE user_notes (id serial PRIMARY KEY, note text);
INSERT INTO iasql_tables (table_name, module) VALUES ('bucket', 'aws_s3'), ('bucket_object', 'aws_s3');
INSERT INTO iasql_tables (table_name) VALUES ('user_notes');

-- Changes to the rules are captured like user changes: iasql_mode is registered and published
SELECT count(*) = 1 AS mode_registered FROM iasql_tables WHERE table_name = 'iasql_mode' AND module IS NULL;
SELECT count(*) = 1 AS mode_published FROM pg_publication_tables WHERE pubname = 'iasql' AND tablename = 'iasql_mode';

-- A rule cannot target iasql_mode itself (it is not a module table)
INSERT INTO iasql_mode (table_name, mode) VALUES ('iasql_mode', 'TRACK');

-- No rule: NORMAL
SELECT * FROM iasql_effective_mode('bucket', 1);

-- The whole database becomes a read-only mirror (the RFC's first example)
INSERT INTO iasql_mode (mode) VALUES ('TRACK');
SELECT * FROM iasql_effective_mode('bucket', 1);
SELECT * FROM iasql_effective_mode('bucket_object');
DELETE FROM iasql_mode;

-- Enforce everything but track objects (the RFC's second example)
INSERT INTO iasql_mode (mode, table_name) VALUES ('ENFORCE', NULL), ('TRACK', 'bucket_object');
SELECT * FROM iasql_effective_mode('bucket', 7);
SELECT * FROM iasql_effective_mode('bucket_object', 7);

-- A record rule carves one resource out of a table rule (the RFC's third example)
INSERT INTO iasql_mode (table_name, record_id, mode) VALUES ('bucket_object', 42, 'ENFORCE');
SELECT * FROM iasql_effective_mode('bucket_object', 42);
SELECT * FROM iasql_effective_mode('bucket_object', 41);

-- Every level, in order of precedence: record, then table, then database
UPDATE iasql_mode SET mode = 'NORMAL' WHERE table_name IS NULL;
SELECT (SELECT mode FROM iasql_effective_mode('bucket', 1)) AS database_level,
       (SELECT mode FROM iasql_effective_mode('bucket_object', 1)) AS table_level,
       (SELECT mode FROM iasql_effective_mode('bucket_object', 42)) AS record_level;

-- One rule per level
INSERT INTO iasql_mode (mode) VALUES ('ENFORCE');
INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket_object', 'NORMAL');
INSERT INTO iasql_mode (table_name, record_id, mode) VALUES ('bucket_object', 42, 'TRACK');

-- A record rule needs its table
INSERT INTO iasql_mode (record_id, mode) VALUES (42, 'TRACK');

-- A rule covers module tables only: not a user's registration, not an unknown table
INSERT INTO iasql_mode (table_name, mode) VALUES ('user_notes', 'TRACK');
INSERT INTO iasql_mode (table_name, mode) VALUES ('no_such_table', 'TRACK');

-- Not a mode
INSERT INTO iasql_mode (mode) VALUES ('READONLY');

-- The constraints stand even without the trigger's messages
SELECT count(*) = 1 AS unique_per_level FROM pg_constraint WHERE conname = 'iasql_mode_one_rule_per_level' AND contype = 'u';

-- TRACK refuses user writes when they are written, naming the rule (the RFC's blocking
-- mutation); other records and other tables are written as before
DELETE FROM iasql_mode;
INSERT INTO bucket (name) VALUES ('logs'), ('tracked');
INSERT INTO iasql_mode (table_name, record_id, mode) SELECT 'bucket', id, 'TRACK' FROM bucket WHERE name = 'tracked';
UPDATE bucket SET name = 'renamed' WHERE name = 'tracked';
-- An UPDATE that changes nothing is refused too
UPDATE bucket SET name = name WHERE name = 'tracked';
DELETE FROM bucket WHERE name = 'tracked';
UPDATE bucket SET name = 'logs-2' WHERE name = 'logs';
INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket_object', 'TRACK');
INSERT INTO bucket_object (key) VALUES ('a.txt');
INSERT INTO user_notes (note) VALUES ('user tables are not guarded');
-- The running cycle (the session holding the cycle lock) writes what it pulls from the cloud
SELECT iasql_take_lock(2) AS cycle_lock;
INSERT INTO bucket_object (key) VALUES ('from-the-cloud.txt');
UPDATE bucket SET name = 'renamed-in-the-cloud' WHERE name = 'tracked';
SELECT iasql_release_locks();
SELECT name FROM bucket ORDER BY id;
SELECT key FROM bucket_object ORDER BY id;
-- Without a TRACK rule, writes pass
DELETE FROM iasql_mode WHERE mode = 'TRACK';
DELETE FROM bucket WHERE name = 'renamed-in-the-cloud';
INSERT INTO iasql_mode (mode) VALUES ('NORMAL');

-- Unregistering (uninstalling) a table removes its rules
DELETE FROM iasql_tables WHERE table_name = 'bucket_object';
SELECT count(*) = 0 AS rules_removed FROM iasql_mode WHERE table_name = 'bucket_object';
SELECT count(*) = 1 AS database_rule_kept FROM iasql_mode WHERE table_name IS NULL;

DROP TABLE bucket, bucket_object, user_notes;
DROP EXTENSION iasql;
DROP PUBLICATION iasql;

-- Were two rules at one level ever to exist (here: the constraint and its trigger dropped by
-- hand), the tie resolves TRACK > NORMAL > ENFORCE
CREATE EXTENSION iasql;
CREATE TABLE bucket (id serial PRIMARY KEY, name text);
INSERT INTO iasql_tables (table_name, module) VALUES ('bucket', 'aws_s3');
ALTER TABLE iasql_mode DROP CONSTRAINT iasql_mode_one_rule_per_level;
ALTER TABLE iasql_mode DISABLE TRIGGER iasql_mode_check;
INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'ENFORCE'), ('bucket', 'NORMAL');
SELECT mode FROM iasql_effective_mode('bucket', 1);
INSERT INTO iasql_mode (table_name, mode) VALUES ('bucket', 'TRACK');
SELECT mode FROM iasql_effective_mode('bucket', 1);
DROP TABLE bucket;
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
