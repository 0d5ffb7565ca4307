-- registry: iasql_tables names the tables whose changes are captured; the
-- publication iasql carries exactly those tables.
CREATE EXTENSION iasql;
-- This suite looks at registrations of users' tables only (iasql_mode's own is checked in mode)
DELETE FROM iasql_tables WHERE table_name = 'iasql_mode';
-- Context lines carry PL/pgSQL line numbers; keep them out of the output.
\set SHOW_CONTEXT never
CREATE TABLE regress_items (id int PRIMARY KEY, name text);
CREATE SCHEMA regress_other;
CREATE TABLE regress_other."Things" (a int, b text, PRIMARY KEY (a, b));
CREATE TABLE regress_nopk (id int, name text);
CREATE VIEW regress_view AS SELECT 1 AS id;
CREATE SEQUENCE regress_seq;

-- Nothing is registered; the publication exists from install on (before any slot), empty
SELECT count(*) = 0 AS nothing_registered FROM iasql_tables;
SELECT count(*) = 1 AS publication_exists FROM pg_publication WHERE pubname = iasql_publication();

-- A table that does not exist is refused
INSERT INTO iasql_tables (table_name) VALUES ('regress_missing');
-- A table without a primary key is refused, with a hint that names it
INSERT INTO iasql_tables (table_name) VALUES ('regress_nopk');
-- A view or a sequence is not a table
INSERT INTO iasql_tables (table_name) VALUES ('regress_view');
INSERT INTO iasql_tables (table_name) VALUES ('regress_seq');
-- iasql's own tables are never captured
INSERT INTO iasql_tables (table_name) VALUES ('iasql_tables');
INSERT INTO iasql_tables (table_name) VALUES ('public.iasql_audit_log');
INSERT INTO iasql_tables (table_name) VALUES ('iasql_capture_progress');
-- A statement with one good and one bad table registers neither
INSERT INTO iasql_tables (table_name) VALUES ('regress_items'), ('regress_nopk');

-- Failed registrations leave nothing: no row, nothing published, identities unchanged
SELECT count(*) = 0 AS nothing_registered FROM iasql_tables;
SELECT count(*) = 1 AS publication_exists FROM pg_publication WHERE pubname = iasql_publication();
SELECT count(*) = 0 AS nothing_published FROM pg_publication_tables WHERE pubname = 'iasql';
SELECT bool_and(relreplident = 'd') AS identities_unchanged
  FROM pg_class WHERE oid IN ('regress_items'::regclass, 'regress_nopk'::regclass);

-- Registering a table: stored as its regclass text, REPLICA IDENTITY FULL, published
INSERT INTO iasql_tables (table_name) VALUES ('regress_items');
SELECT count(*) = 1 AS registered FROM iasql_tables WHERE table_name = 'regress_items';
SELECT module IS NULL AS user_registered, registered_at IS NOT NULL AS has_time
  FROM iasql_tables WHERE table_name = 'regress_items';
SELECT relreplident = 'f' AS replica_identity_full FROM pg_class WHERE oid = 'regress_items'::regclass;
SELECT count(*) = 1 AS published FROM pg_publication_tables
 WHERE pubname = 'iasql' AND schemaname = 'public' AND tablename = 'regress_items';
SELECT pubinsert AND pubupdate AND pubdelete AND pubtruncate AS publishes_every_change
  FROM pg_publication WHERE pubname = iasql_publication();

-- Names are normalised, so another spelling of a registered table is a duplicate
INSERT INTO iasql_tables (table_name) VALUES ('public.REGRESS_ITEMS');

-- A table outside public (quoted name, composite key), registered by a module
INSERT INTO iasql_tables (table_name, module) VALUES ('regress_other."Things"', 'regress_module');
SELECT table_name, module FROM iasql_tables ORDER BY table_name;
SELECT relreplident = 'f' AS replica_identity_full FROM pg_class WHERE oid = 'regress_other."Things"'::regclass;
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'iasql' ORDER BY 1, 2;

-- Re-pointing a registration is validated like a new one
UPDATE iasql_tables SET table_name = 'regress_nopk' WHERE table_name = 'regress_items';
SELECT count(*) = 1 AS still_registered FROM iasql_tables WHERE table_name = 'regress_items';

-- Unregistering removes the table from the publication, in the same transaction
BEGIN;
DELETE FROM iasql_tables WHERE table_name = 'regress_items';
SELECT count(*) = 0 AS unpublished FROM pg_publication_tables
 WHERE pubname = 'iasql' AND tablename = 'regress_items';
ROLLBACK;
SELECT count(*) = 1 AS published_after_rollback FROM pg_publication_tables
 WHERE pubname = 'iasql' AND tablename = 'regress_items';
DELETE FROM iasql_tables WHERE table_name = 'regress_items';
SELECT count(*) = 0 AS unregistered FROM iasql_tables WHERE table_name = 'regress_items';
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'iasql' ORDER BY 1, 2;

-- Dropping a registered table drops it from the publication; the registry keeps the row
INSERT INTO iasql_tables (table_name) VALUES ('regress_items');
DROP TABLE regress_items;
SELECT table_name FROM iasql_tables ORDER BY table_name;
SELECT iasql_sync_publication();
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'iasql' ORDER BY 1, 2;

-- TRUNCATE unregisters everything (CASCADE: mode rules refer to registered tables)
TRUNCATE iasql_tables;
TRUNCATE iasql_tables CASCADE;
SELECT count(*) = 0 AS nothing_registered FROM iasql_tables;
SELECT count(*) = 0 AS nothing_published FROM pg_publication_tables WHERE pubname = 'iasql';

-- A publication dropped by hand is recreated by the next registration
DROP PUBLICATION iasql;
INSERT INTO iasql_tables (table_name) VALUES ('regress_other."Things"');
SELECT schemaname, tablename FROM pg_publication_tables WHERE pubname = 'iasql' ORDER BY 1, 2;

-- A partitioned table is refused: its changes would arrive under its partitions' names
CREATE TABLE regress_parted (id int PRIMARY KEY) PARTITION BY RANGE (id);
INSERT INTO iasql_tables (table_name) VALUES ('regress_parted');
DROP TABLE regress_parted;

-- Names are canonical whatever the search_path: a restore (empty search_path) registers
-- the bare name of a table in public, and the publication finds it
CREATE TABLE regress_restored (id int PRIMARY KEY);
SET search_path = '';
INSERT INTO public.iasql_tables (table_name) VALUES ('regress_restored');
SELECT public.iasql_table_name('public.regress_restored') AS canonical;
SELECT tablename FROM pg_catalog.pg_publication_tables WHERE pubname = 'iasql' ORDER BY 1;
RESET search_path;
SELECT table_name FROM iasql_tables ORDER BY 1;
DELETE FROM iasql_tables WHERE table_name = 'regress_restored';
DROP TABLE regress_restored;

-- A name that is not an identifier is refused with the spelling expected
INSERT INTO iasql_tables (table_name) VALUES ('not a name');

-- Clean up (the publication is not part of the extension; module tables go first: their
-- TRACK guard trigger uses an extension function)
DROP TABLE regress_other."Things", regress_nopk;
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
DROP VIEW regress_view;
DROP SEQUENCE regress_seq;
DROP SCHEMA regress_other;
