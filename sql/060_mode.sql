-- Modes: NORMAL (two-way), ENFORCE (the database is the truth), TRACK (the
-- cloud is the truth), as rules for the whole database, a table or one
-- record, and for one column of a table or of a record. The most specific
-- rule wins (column of a record, column of a table, record, table,
-- database); a tie resolves TRACK > NORMAL > ENFORCE (never break things);
-- no rule means NORMAL.

CREATE TYPE public.iasql_mode_kind AS ENUM ('NORMAL', 'ENFORCE', 'TRACK');
COMMENT ON TYPE public.iasql_mode_kind IS 'NORMAL: two-way sync; ENFORCE: the database is the truth; TRACK: the cloud is the truth.';

CREATE TABLE public.iasql_mode (
  id         serial PRIMARY KEY,
  table_name text REFERENCES public.iasql_tables (table_name) ON UPDATE CASCADE ON DELETE CASCADE,
  record_id  integer,
  column_name text,
  mode       public.iasql_mode_kind NOT NULL,
  CONSTRAINT iasql_mode_one_rule_per_level UNIQUE NULLS NOT DISTINCT (table_name, record_id, column_name),
  CONSTRAINT iasql_mode_record_needs_table CHECK (record_id IS NULL OR table_name IS NOT NULL),
  CONSTRAINT iasql_mode_column_needs_table CHECK (column_name IS NULL OR table_name IS NOT NULL)
);
COMMENT ON TABLE public.iasql_mode IS
  'Mode rules: table_name and record_id NULL for the whole database, record_id NULL for a table, both for one record; column_name narrows a table''s or a record''s rule to one declarative column (TRACK: the cloud owns it: used at create, then refused to user updates and never reverted; ENFORCE: the database owns it: cloud changes to it are reverted). Most specific wins; no rule means NORMAL.';
COMMENT ON COLUMN public.iasql_mode.id IS 'Rule id.';
COMMENT ON COLUMN public.iasql_mode.table_name IS 'The module table the rule covers; NULL for every table.';
COMMENT ON COLUMN public.iasql_mode.record_id IS 'The record (its id) the rule covers; NULL for every record of the table.';
COMMENT ON COLUMN public.iasql_mode.column_name IS 'The declarative column the rule covers (as iasql_modules.columns lists them); NULL for whole records.';
COMMENT ON COLUMN public.iasql_mode.mode IS 'NORMAL, ENFORCE or TRACK.';
COMMENT ON CONSTRAINT iasql_mode_one_rule_per_level ON public.iasql_mode IS 'One rule per level: the database, each table, each record, each column of a table or of a record.';
COMMENT ON CONSTRAINT iasql_mode_record_needs_table ON public.iasql_mode IS 'A record rule names its table.';
COMMENT ON CONSTRAINT iasql_mode_column_needs_table ON public.iasql_mode IS 'A column rule names its table.';
COMMENT ON CONSTRAINT iasql_mode_table_name_fkey ON public.iasql_mode IS 'Rules cover registered tables; unregistering (uninstalling) a table removes its rules.';
COMMENT ON SEQUENCE public.iasql_mode_id_seq IS 'Rule ids.';
GRANT SELECT ON public.iasql_mode TO iasql_reader;

-- Clear messages for the mistakes the constraints would only name.
CREATE FUNCTION public.iasql_mode_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  kind text;
BEGIN
  IF NEW.record_id IS NOT NULL AND NEW.table_name IS NULL THEN
    RAISE EXCEPTION 'a mode rule for record % needs its table_name: record ids are per table', NEW.record_id
      USING ERRCODE = 'check_violation',
            HINT = 'INSERT INTO iasql_mode (table_name, record_id, mode) VALUES (''bucket'', 42, ''TRACK'').';
  END IF;
  IF NEW.table_name IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM public.iasql_tables t WHERE t.table_name = NEW.table_name AND t.module IS NOT NULL) THEN
    RAISE EXCEPTION 'a mode rule needs a module table, and "%" is not one', NEW.table_name
      USING ERRCODE = 'foreign_key_violation',
            HINT = 'SELECT table_name FROM iasql_tables WHERE module IS NOT NULL lists them.';
  END IF;
  IF NEW.column_name IS NOT NULL THEN
    IF NEW.table_name IS NULL THEN
      RAISE EXCEPTION 'a mode rule for column % needs its table_name: columns are per table', NEW.column_name
        USING ERRCODE = 'check_violation',
              HINT = 'INSERT INTO iasql_mode (table_name, column_name, mode) VALUES (''instance'', ''tags'', ''TRACK'').';
    END IF;
    SELECT m.columns -> NEW.table_name ->> NEW.column_name INTO kind
      FROM public.iasql_tables t JOIN public.iasql_modules m ON m.name = t.module
     WHERE t.table_name = NEW.table_name;
    IF kind IS DISTINCT FROM 'declarative' THEN
      RAISE EXCEPTION 'a mode rule cannot name column % of %: %', NEW.column_name, NEW.table_name, CASE kind
          WHEN 'feedback' THEN 'it is a feedback column (the cloud''s, written by the engine): it is never pushed to the cloud, so it has no mode'
          WHEN 'identity' THEN 'it is the resource''s identity in the cloud: a change of it is another resource, so it follows its record''s mode'
          WHEN 'initial' THEN 'it is the database''s own (set from the cloud at import only), so it has no mode'
          WHEN 'read-only' THEN 'the table is read-only (the cloud is always its truth)'
          ELSE 'the table has no such column' END
        USING ERRCODE = 'invalid_column_reference',
              HINT = pg_catalog.format('Columns a rule may name: SELECT jsonb_object_keys(columns -> %L) FROM iasql_modules WHERE columns -> %L IS NOT NULL, those of kind declarative.', NEW.table_name, NEW.table_name);
    END IF;
  END IF;
  IF EXISTS (SELECT 1 FROM public.iasql_mode m
              WHERE m.table_name IS NOT DISTINCT FROM NEW.table_name AND m.record_id IS NOT DISTINCT FROM NEW.record_id
                AND m.column_name IS NOT DISTINCT FROM NEW.column_name
                AND m.id <> NEW.id) THEN
    RAISE EXCEPTION 'there is already a mode rule for %', CASE
        WHEN NEW.column_name IS NOT NULL AND NEW.record_id IS NOT NULL THEN pg_catalog.format('column %s of record %s of %s', NEW.column_name, NEW.record_id, NEW.table_name)
        WHEN NEW.column_name IS NOT NULL THEN pg_catalog.format('column %s of table %s', NEW.column_name, NEW.table_name)
        WHEN NEW.record_id IS NOT NULL THEN pg_catalog.format('record %s of %s', NEW.record_id, NEW.table_name)
        WHEN NEW.table_name IS NOT NULL THEN pg_catalog.format('table %s', NEW.table_name)
        ELSE 'the whole database' END
      USING ERRCODE = 'unique_violation',
            HINT = 'One rule per level: UPDATE that rule''s mode instead.';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION public.iasql_mode_check() IS 'Explains mode rules the constraints refuse: a record or column without its table, a table that is not a module''s, a column that is not declarative, a second rule at one level.';
CREATE TRIGGER iasql_mode_check BEFORE INSERT OR UPDATE ON public.iasql_mode
  FOR EACH ROW EXECUTE FUNCTION public.iasql_mode_check();
COMMENT ON TRIGGER iasql_mode_check ON public.iasql_mode IS 'Clear messages for refused mode rules.';

-- The mode a record (or one of its columns) gets, and which rule gave it.
CREATE FUNCTION public.iasql_effective_mode(table_name text, record_id integer DEFAULT NULL, column_name text DEFAULT NULL)
RETURNS TABLE (mode public.iasql_mode_kind, rule text)
LANGUAGE sql STABLE AS $$
  SELECT r.mode, r.rule FROM (
    SELECT m.mode,
           CASE WHEN m.column_name IS NOT NULL AND m.record_id IS NOT NULL
                  THEN pg_catalog.format('column rule %s (%s.%s id %s)', m.id, m.table_name, m.column_name, m.record_id)
                WHEN m.column_name IS NOT NULL THEN pg_catalog.format('column rule %s (%s.%s)', m.id, m.table_name, m.column_name)
                WHEN m.record_id IS NOT NULL THEN pg_catalog.format('record rule %s (%s id %s)', m.id, m.table_name, m.record_id)
                WHEN m.table_name IS NOT NULL THEN pg_catalog.format('table rule %s (%s)', m.id, m.table_name)
                ELSE pg_catalog.format('database rule %s', m.id) END AS rule,
           CASE WHEN m.column_name IS NOT NULL AND m.record_id IS NOT NULL THEN 0
                WHEN m.column_name IS NOT NULL THEN 1
                WHEN m.record_id IS NOT NULL THEN 2 WHEN m.table_name IS NOT NULL THEN 3 ELSE 4 END AS level,
           CASE m.mode WHEN 'TRACK' THEN 1 WHEN 'NORMAL' THEN 2 ELSE 3 END AS tie
      FROM public.iasql_mode m
     WHERE (m.table_name IS NULL OR m.table_name = $1)
       AND (m.record_id IS NULL OR m.record_id = $2)
       AND (m.column_name IS NULL OR m.column_name = $3)
    UNION ALL
    SELECT 'NORMAL', 'no rule', 5, 4
  ) r
  ORDER BY r.level, r.tie
  LIMIT 1
$$;
COMMENT ON FUNCTION public.iasql_effective_mode(text, integer, text) IS
  'The mode of a record (or of a table, record_id NULL; or of one column of either, column_name given) and the rule that gives it: column rule of the record, else column rule of the table, else record rule, else table rule, else database rule, else NORMAL; ties resolve TRACK > NORMAL > ENFORCE.';

-- Changes to the rules are user changes like any other: captured in the
-- audit trail (they take effect from the next cycle, which reads them).
-- REPLICA IDENTITY FULL is also set here, not only by the registration's
-- trigger: a restore runs CREATE EXTENSION with session_replication_role =
-- replica, where triggers do not fire.
ALTER TABLE public.iasql_mode REPLICA IDENTITY FULL;
INSERT INTO public.iasql_tables (table_name) VALUES ('iasql_mode');

-- TRACK refuses user writes when they are written (the RFC's "blocking
-- mutation"): a write to a record whose effective mode is TRACK fails,
-- naming the rule; so does an UPDATE that changes a column whose effective
-- mode is TRACK (a column rule: the cloud owns that column; its value at
-- INSERT is used to create the resource), and an UPDATE of a TRACK record
-- is let through when every column it changes has a column rule of another
-- mode (the most specific rule wins). The running cycle (the session
-- holding the cycle lock, role 2) writes what it pulls from the cloud and
-- is let through. Undoing a tracked change at the next cycle stays as the
-- backstop for writes that bypass this (session_replication_role =
-- replica, a table registered by hand), logged at WARNING.
CREATE FUNCTION public.iasql_track_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  rid integer;
  tbl text;
  m public.iasql_mode_kind;
  why text;
  col text;
  n jsonb;
  o jsonb;
  changed boolean;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM public.iasql_mode r WHERE r.mode = 'TRACK') OR public.iasql_holds_lock(2) THEN
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
  END IF;
  rid := (pg_catalog.to_jsonb(CASE TG_OP WHEN 'INSERT' THEN NEW ELSE OLD END)->>'id')::integer;
  tbl := public.iasql_table_name(TG_RELID::regclass);
  IF TG_OP = 'UPDATE' THEN
    n := pg_catalog.to_jsonb(NEW);
    o := pg_catalog.to_jsonb(OLD);
    changed := false;
    FOR col IN SELECT k.key FROM pg_catalog.jsonb_each(n) k WHERE k.value IS DISTINCT FROM o -> k.key ORDER BY k.key LOOP
      changed := true;
      SELECT e.mode, e.rule INTO m, why FROM public.iasql_effective_mode(tbl, rid, col) e;
      IF m = 'TRACK' AND why LIKE 'column rule%' THEN
        RAISE EXCEPTION 'update of %.% id % is refused: % puts the column in TRACK mode (the cloud owns it)',
            tbl, col, coalesce(rid::text, '(none)'), why
          USING ERRCODE = 'object_not_in_prerequisite_state',
                HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id, column) names it).';
      ELSIF m = 'TRACK' THEN
        RAISE EXCEPTION 'update % id % is refused: % puts it in TRACK mode (the cloud is its truth)',
            tbl, coalesce(rid::text, '(none)'), why
          USING ERRCODE = 'object_not_in_prerequisite_state',
                HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id) names it).';
      END IF;
    END LOOP;
    IF changed THEN
      RETURN NEW;
    END IF;
    -- An UPDATE that changes nothing is the record's, as a DELETE is.
  END IF;
  SELECT e.mode, e.rule INTO m, why FROM public.iasql_effective_mode(tbl, rid) e;
  IF m = 'TRACK' THEN
    RAISE EXCEPTION '% % id % is refused: % puts it in TRACK mode (the cloud is its truth)',
        pg_catalog.lower(TG_OP), tbl, coalesce(rid::text, '(none)'), why
      USING ERRCODE = 'object_not_in_prerequisite_state',
            HINT = 'Change it in the cloud (the next cycle pulls it in), or change that rule in iasql_mode (SELECT * FROM iasql_effective_mode(table, id) names it).';
  END IF;
  RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
END $$;
COMMENT ON FUNCTION public.iasql_track_guard() IS
  'Row trigger on module tables: refuses a user INSERT, UPDATE or DELETE of a record in TRACK mode, and an UPDATE of a column in TRACK mode (a column rule), naming the rule; the running cycle''s writes pass.';

-- Each module table gets a guard trigger when it is registered (install):
-- the trigger named by the arguments (name, events, FOR EACH level, the
-- function, its comment). The TRACK guard is one; the transaction owner's
-- guard (065_transaction_owner.sql) another.
CREATE FUNCTION public.iasql_tables_add_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.module IS NOT NULL THEN
    EXECUTE pg_catalog.format('CREATE OR REPLACE TRIGGER %I BEFORE %s ON %s FOR EACH %s EXECUTE FUNCTION %s()',
      TG_ARGV[0], TG_ARGV[1], public.iasql_table_regclass(NEW.table_name), TG_ARGV[2], TG_ARGV[3]::regproc);
    EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON %s IS %L',
      TG_ARGV[0], public.iasql_table_regclass(NEW.table_name), TG_ARGV[4]);
  END IF;
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_tables_add_guard() IS
  'Trigger function on iasql_tables: gives a registered module table the guard trigger its arguments describe (name, events, level, function, comment).';
CREATE TRIGGER iasql_tables_track_guard AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_add_guard('iasql_track_guard', 'INSERT OR UPDATE OR DELETE', 'ROW',
    'public.iasql_track_guard', 'Refuses user writes to records in TRACK mode (iasql_track_guard()).');
COMMENT ON TRIGGER iasql_tables_track_guard ON public.iasql_tables IS 'Puts the TRACK guard on each registered module table.';
