-- comments: the extension documents itself. Every object it owns has a
-- COMMENT: its tables and their columns, functions, triggers, indexes that
-- back no constraint, and its unique, exclusion and foreign-key constraints
-- (primary keys, checks and identity sequences explain themselves).
CREATE EXTENSION iasql;

-- The extension is at its default version, and iasql_version() says so
SELECT extversion = '0.1.0' AS version_0_1_0 FROM pg_extension WHERE extname = 'iasql';
SELECT iasql_version() = extversion AS version_function_matches FROM pg_extension WHERE extname = 'iasql';
SELECT default_version = extversion AS at_default_version
  FROM pg_available_extensions JOIN pg_extension ON extname = name WHERE name = 'iasql';
SELECT extrelocatable, extnamespace::regnamespace AS schema FROM pg_extension WHERE extname = 'iasql';

-- What the extension owns
SELECT pg_describe_object(classid, objid, objsubid) AS member
  FROM pg_depend
 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'iasql')
 ORDER BY 1;

-- pg_dump keeps the rows of its tables and the audit log's id sequence
SELECT c::regclass AS dumped, extcondition[i] AS condition
  FROM pg_extension, unnest(extconfig) WITH ORDINALITY AS u(c, i)
 WHERE extname = 'iasql' ORDER BY c::regclass::text;

-- Objects without a comment (expect none)
WITH members AS (
  SELECT classid, objid FROM pg_depend
   WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
     AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'iasql')
), tables AS (
  SELECT c.oid FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
   WHERE c.relkind IN ('r', 'p')
), objects (classid, objid, objsubid) AS (
  SELECT classid, objid, 0 FROM members
   WHERE classid <> 'pg_class'::regclass OR objid IN (SELECT oid FROM tables)
  UNION ALL
  SELECT 'pg_class'::regclass, a.attrelid, a.attnum
    FROM pg_attribute a JOIN tables t ON a.attrelid = t.oid
   WHERE a.attnum > 0 AND NOT a.attisdropped
  UNION ALL
  SELECT 'pg_trigger'::regclass, tg.oid, 0
    FROM pg_trigger tg JOIN tables t ON tg.tgrelid = t.oid WHERE NOT tg.tgisinternal
  UNION ALL
  SELECT 'pg_class'::regclass, i.indexrelid, 0
    FROM pg_index i JOIN tables t ON i.indrelid = t.oid
   WHERE NOT EXISTS (SELECT 1 FROM pg_constraint co WHERE co.conrelid = i.indrelid AND co.conindid = i.indexrelid)
  UNION ALL
  SELECT 'pg_constraint'::regclass, co.oid, 0
    FROM pg_constraint co JOIN tables t ON co.conrelid = t.oid WHERE co.contype IN ('u', 'x', 'f')
)
SELECT pg_describe_object(o.classid, o.objid, o.objsubid) AS missing_comment
  FROM objects o
 WHERE NOT EXISTS (SELECT 1 FROM pg_description d
                    WHERE d.classoid = o.classid AND d.objoid = o.objid AND d.objsubid = o.objsubid
                      AND d.description <> '')
 ORDER BY 1;

-- The extension itself has a comment (from the control file)
SELECT obj_description(oid, 'pg_extension') <> '' AS extension_commented FROM pg_extension WHERE extname = 'iasql';

-- Clean up
DROP EXTENSION iasql;
