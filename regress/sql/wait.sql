-- wait: iasql_wait_for polls a generated query until the record satisfies the condition.
\set SHOW_CONTEXT never
CREATE EXTENSION iasql;
CREATE TABLE wait_thing (id int PRIMARY KEY, name text, cloud_id text);
INSERT INTO wait_thing VALUES (1, 'ready', 'abc'), (2, 'pending', NULL);

-- Already true: returns at once
SELECT iasql_wait_for('wait_thing', 1, 'cloud_id IS NOT NULL') AS ready;
SELECT iasql_wait_for('public.wait_thing', 1, $$name = 'ready'$$, 0) AS qualified_name;

-- Never true: raises after the timeout, naming table, id, condition and timeout
SELECT iasql_wait_for('wait_thing', 2, 'cloud_id IS NOT NULL', 1);

-- A missing record, or a NULL id, raises at once (whatever the timeout)
SELECT iasql_wait_for('wait_thing', 99, 'true', 600);
SELECT iasql_wait_for('wait_thing', NULL, 'true', 600);
SELECT iasql_wait_for('wait_thing', 1, NULL, 600);

-- A table that does not exist, or a name that is not one, raises at once
SELECT iasql_wait_for('no_such_table', 1, 'true');
SELECT iasql_wait_for('wait_thing; DROP TABLE wait_thing', 1, 'true');
SELECT iasql_wait_for('"wait_thing" WHERE true OR', 1, 'true');

-- A condition that does not parse, or names no column, raises at once
SELECT iasql_wait_for('wait_thing', 1, 'cloud_id IS NOT');
SELECT iasql_wait_for('wait_thing', 1, 'no_such_column = 1');
SELECT count(*) = 2 AS table_intact FROM wait_thing;

-- A negative timeout is refused
SELECT iasql_wait_for('wait_thing', 1, 'true', -1);

-- REPEATABLE READ and SERIALIZABLE callers could never see the change
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT iasql_wait_for('wait_thing', 1, 'true');
ROLLBACK;

-- The condition runs with the caller's privileges (the function is not SECURITY DEFINER)
SELECT prosecdef AS security_definer FROM pg_proc WHERE proname = 'iasql_wait_for';

DROP TABLE wait_thing;
DROP EXTENSION iasql;
DROP PUBLICATION iasql;

-- iasql_wait_for_all refuses what it cannot do, at once
CREATE EXTENSION iasql;
SELECT iasql_wait_for_all(-1);
BEGIN ISOLATION LEVEL SERIALIZABLE;
SELECT iasql_wait_for_all(1);
ROLLBACK;
-- With no sidecar, nothing would ever be captured: it refuses at once
SELECT iasql_wait_for_all(600);
DROP EXTENSION iasql;
DROP PUBLICATION iasql;
