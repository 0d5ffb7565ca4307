-- upgrade: every released version updates to the default one, and an
-- updated database holds exactly what a fresh install of it holds.

-- The extension's objects by name, with their definitions, grants and comments
CREATE TEMP VIEW regress_iasql_schema AS
WITH members AS (
  SELECT classid, objid FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'iasql')
), rels AS (
  SELECT c.oid, c.relname, c.relkind, c.relreplident, c.relacl
    FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
), objects (classid, objid, objsubid) AS (
  SELECT classid, objid, 0 FROM members
  UNION ALL
  SELECT 'pg_class'::regclass, a.attrelid, a.attnum
    FROM pg_attribute a JOIN rels r ON a.attrelid = r.oid WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'pg_trigger'::regclass, tg.oid, 0 FROM pg_trigger tg JOIN rels r ON tg.tgrelid = r.oid
  UNION ALL
  SELECT 'pg_class'::regclass, i.indexrelid, 0 FROM pg_index i JOIN rels r ON i.indrelid = r.oid
  UNION ALL
  SELECT 'pg_constraint'::regclass, co.oid, 0 FROM pg_constraint co JOIN rels r ON co.conrelid = r.oid
)
SELECT 'member' AS kind, pg_describe_object(classid, objid, 0) AS name, NULL::text AS definition
  FROM members
UNION ALL
SELECT 'relation', r.relname, r.relkind::text || ' identity ' || r.relreplident::text || ' acl ' || coalesce(r.relacl::text, '')
  FROM rels r
UNION ALL
SELECT 'function', p.oid::regprocedure::text, pg_get_functiondef(p.oid) || ' acl ' || coalesce(p.proacl::text, '')
  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
UNION ALL
SELECT 'column', r.relname || '.' || a.attname,
       (row_number() OVER (PARTITION BY a.attrelid ORDER BY a.attnum)) || ' ' || format_type(a.atttypid, a.atttypmod)
       || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END || ' identity ' || a.attidentity::text
       || ' default ' || coalesce(pg_get_expr(ad.adbin, ad.adrelid), '')
  FROM rels r JOIN pg_attribute a ON a.attrelid = r.oid AND a.attnum > 0 AND NOT a.attisdropped
  LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
UNION ALL
SELECT 'constraint', r.relname || '.' || co.conname, pg_get_constraintdef(co.oid)
  FROM rels r JOIN pg_constraint co ON co.conrelid = r.oid
UNION ALL
SELECT 'index', i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid)
  FROM rels r JOIN pg_index i ON i.indrelid = r.oid
UNION ALL
SELECT 'trigger', r.relname || '.' || tg.tgname, pg_get_triggerdef(tg.oid) || ' enabled ' || tg.tgenabled::text
  FROM rels r JOIN pg_trigger tg ON tg.tgrelid = r.oid AND NOT tg.tgisinternal
UNION ALL
SELECT 'comment', pg_describe_object(o.classid, o.objid, o.objsubid), d.description
  FROM objects o JOIN pg_description d ON d.classoid = o.classid AND d.objoid = o.objid AND d.objsubid = o.objsubid
UNION ALL
SELECT 'dumped', c::regclass::text, extcondition[i]
  FROM pg_extension, unnest(extconfig) WITH ORDINALITY AS u(c, i) WHERE extname = 'iasql';

-- A fresh install of the default version
CREATE EXTENSION iasql;
SELECT extversion = default_version AS fresh_at_default
  FROM pg_extension JOIN pg_available_extensions ON name = extname WHERE extname = 'iasql';
CREATE TEMP TABLE regress_fresh AS SELECT * FROM regress_iasql_schema;
SELECT count(*) FILTER (WHERE kind = 'member') > 0 AS inventoried,
       count(*) FILTER (WHERE kind = 'comment') > 0 AS comments_inventoried
  FROM regress_fresh;
DROP EXTENSION iasql;

-- Every other available version has an update path to the default one
SELECT count(*) = 0 AS all_versions_update
  FROM pg_available_extension_versions v
 WHERE v.name = 'iasql'
   AND v.version <> (SELECT default_version FROM pg_available_extensions WHERE name = 'iasql')
   AND NOT EXISTS (SELECT 1 FROM pg_extension_update_paths('iasql') p
                    WHERE p.source = v.version AND p.path IS NOT NULL
                      AND p.target = (SELECT default_version FROM pg_available_extensions WHERE name = 'iasql'));

-- The first release, holding a registration, an audit row and capture progress
CREATE EXTENSION iasql VERSION '0.1.0';
SELECT extversion FROM pg_extension WHERE extname = 'iasql';
CREATE TABLE regress_items (id int PRIMARY KEY, name text);
INSERT INTO iasql_tables (table_name) VALUES ('regress_items');
SELECT iasql_take_lock(1) AS took;
INSERT INTO iasql_audit_log (lsn, seq, ts, table_name, record_id, change_type, new_row, origin)
  VALUES ('0/100', 1, '2024-01-01 00:00:00+00', 'regress_items', '1', 'INSERT', '{"id": 1}', 'user');
INSERT INTO iasql_capture_progress (slot_name, end_lsn, commit_lsn, commit_ts, changes)
  VALUES ('regress_slot', '0/110', '0/100', '2024-01-01 00:00:00+00', 1);
SELECT iasql_release_locks();

-- Update to the default version (no notice whether or not there is a newer one)
SET client_min_messages = warning;
ALTER EXTENSION iasql UPDATE;
RESET client_min_messages;
SELECT extversion = default_version AS updated_to_default
  FROM pg_extension JOIN pg_available_extensions ON name = extname WHERE extname = 'iasql';
SELECT iasql_version() = extversion AS version_function_matches FROM pg_extension WHERE extname = 'iasql';

-- The updated objects equal the fresh install's (expect no rows)
(SELECT 'only fresh' AS side, kind, name, definition FROM regress_fresh
 EXCEPT SELECT 'only fresh', kind, name, definition FROM regress_iasql_schema)
UNION ALL
(SELECT 'only updated', kind, name, definition FROM regress_iasql_schema
 EXCEPT SELECT 'only updated', kind, name, definition FROM regress_fresh)
ORDER BY 1, 2, 3;

-- The data survived the update
SELECT table_name FROM iasql_tables;
SELECT count(*) = 1 AS published FROM pg_publication_tables WHERE pubname = 'iasql' AND tablename = 'regress_items';
SELECT lsn, seq, table_name, record_id, change_type, origin FROM iasql_audit_log;
SELECT slot_name, end_lsn, changes FROM iasql_capture_progress;

-- Clean up
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
DROP TABLE regress_items;
