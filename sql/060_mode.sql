-- Modes: NORMAL (two-way), ENFORCE (the database is the truth), TRACK (the
-- cloud is the truth), as rules for the whole database, a table or one
-- record. The most specific rule wins; a tie resolves TRACK > NORMAL >
-- ENFORCE (never break things); no rule means NORMAL.

CREATE TYPE public.iasql_mode_kind AS ENUM ('NORMAL', 'ENFORCE', 'TRACK');
COMMENT ON TYPE public.iasql_mode_kind IS 'NORMAL: two-way sync; ENFORCE: the database is the truth; TRACK: the cloud is the truth.';

CREATE TABLE public.iasql_mode (
  id         serial PRIMARY KEY,
  table_name text REFERENCES public.iasql_tables (table_name) ON UPDATE CASCADE ON DELETE CASCADE,
  record_id  integer,
  mode       public.iasql_mode_kind NOT NULL,
  CONSTRAINT iasql_mode_one_rule_per_level UNIQUE NULLS NOT DISTINCT (table_name, record_id),
  CONSTRAINT iasql_mode_record_needs_table CHECK (record_id IS NULL OR table_name IS NOT NULL)
);
COMMENT ON TABLE public.iasql_mode IS
  'Mode rules: table_name and record_id NULL for the whole database, record_id NULL for a table, both for one record. Most specific wins; no rule means NORMAL.';
COMMENT ON COLUMN public.iasql_mode.id IS 'Rule id.';
COMMENT ON COLUMN public.iasql_mode.table_name IS 'The module table the rule covers; NULL for every table.';
COMMENT ON COLUMN public.iasql_mode.record_id IS 'The record (its id) the rule covers; NULL for every record of the table.';
COMMENT ON COLUMN public.iasql_mode.mode IS 'NORMAL, ENFORCE or TRACK.';
COMMENT ON CONSTRAINT iasql_mode_one_rule_per_level ON public.iasql_mode IS 'One rule per level: the database, each table, each record.';
COMMENT ON CONSTRAINT iasql_mode_record_needs_table ON public.iasql_mode IS 'A record rule names its table.';
COMMENT ON CONSTRAINT iasql_mode_table_name_fkey ON public.iasql_mode IS 'Rules cover registered tables; unregistering (uninstalling) a table removes its rules.';
COMMENT ON SEQUENCE public.iasql_mode_id_seq IS 'Rule ids.';
GRANT SELECT ON public.iasql_mode TO iasql_reader;

-- Clear messages for the mistakes the constraints would only name.
CREATE FUNCTION public.iasql_mode_check() RETURNS trigger
LANGUAGE plpgsql AS $$
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
  IF EXISTS (SELECT 1 FROM public.iasql_mode m
              WHERE m.table_name IS NOT DISTINCT FROM NEW.table_name AND m.record_id IS NOT DISTINCT FROM NEW.record_id
                AND m.id <> NEW.id) THEN
    RAISE EXCEPTION 'there is already a mode rule for %', CASE
        WHEN NEW.record_id IS NOT NULL THEN pg_catalog.format('record %s of %s', NEW.record_id, NEW.table_name)
        WHEN NEW.table_name IS NOT NULL THEN pg_catalog.format('table %s', NEW.table_name)
        ELSE 'the whole database' END
      USING ERRCODE = 'unique_violation',
            HINT = 'One rule per level: UPDATE that rule''s mode instead.';
  END IF;
  RETURN NEW;
END $$;
COMMENT ON FUNCTION public.iasql_mode_check() IS 'Explains mode rules the constraints refuse: a record without its table, a table that is not a module''s, a second rule at one level.';
CREATE TRIGGER iasql_mode_check BEFORE INSERT OR UPDATE ON public.iasql_mode
  FOR EACH ROW EXECUTE FUNCTION public.iasql_mode_check();
COMMENT ON TRIGGER iasql_mode_check ON public.iasql_mode IS 'Clear messages for refused mode rules.';

-- The mode a record gets, and which rule gave it.
CREATE FUNCTION public.iasql_effective_mode(table_name text, record_id integer DEFAULT NULL)
RETURNS TABLE (mode public.iasql_mode_kind, rule text)
LANGUAGE sql STABLE AS $$
  SELECT r.mode, r.rule FROM (
    SELECT m.mode,
           CASE WHEN m.record_id IS NOT NULL THEN pg_catalog.format('record rule %s (%s id %s)', m.id, m.table_name, m.record_id)
                WHEN m.table_name IS NOT NULL THEN pg_catalog.format('table rule %s (%s)', m.id, m.table_name)
                ELSE pg_catalog.format('database rule %s', m.id) END AS rule,
           CASE WHEN m.record_id IS NOT NULL THEN 1 WHEN m.table_name IS NOT NULL THEN 2 ELSE 3 END AS level,
           CASE m.mode WHEN 'TRACK' THEN 1 WHEN 'NORMAL' THEN 2 ELSE 3 END AS tie
      FROM public.iasql_mode m
     WHERE (m.table_name IS NULL OR m.table_name = $1)
       AND (m.record_id IS NULL OR m.record_id = $2)
    UNION ALL
    SELECT 'NORMAL', 'no rule', 4, 4
  ) r
  ORDER BY r.level, r.tie
  LIMIT 1
$$;
COMMENT ON FUNCTION public.iasql_effective_mode(text, integer) IS
  'The mode of a record (or of a table, record_id NULL) and the rule that gives it: record rule, else table rule, else database rule, else NORMAL; ties resolve TRACK > NORMAL > ENFORCE.';

-- Changes to the rules are user changes like any other: captured in the
-- audit trail (they take effect from the next cycle, which reads them).
-- REPLICA IDENTITY FULL is also set here, not only by the registration's
-- trigger: a restore runs CREATE EXTENSION with session_replication_role =
-- replica, where triggers do not fire.
ALTER TABLE public.iasql_mode REPLICA IDENTITY FULL;
INSERT INTO public.iasql_tables (table_name) VALUES ('iasql_mode');

-- TRACK refuses user writes when they are written (the RFC's "blocking
-- mutation"): a write to a record whose effective mode is TRACK fails,
-- naming the rule. The running cycle (the session holding the cycle lock,
-- role 2) writes what it pulls from the cloud and is let through. Undoing a
-- tracked change at the next cycle stays as the backstop for writes that
-- bypass this (session_replication_role = replica, a table registered by
-- hand), logged at WARNING.
CREATE FUNCTION public.iasql_track_guard() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  rid integer;
  tbl text;
  m public.iasql_mode_kind;
  why text;
BEGIN
  IF NOT EXISTS (SELECT 1 FROM public.iasql_mode r WHERE r.mode = 'TRACK') OR public.iasql_holds_lock(2) THEN
    RETURN CASE TG_OP WHEN 'DELETE' THEN OLD ELSE NEW END;
  END IF;
  rid := (pg_catalog.to_jsonb(CASE TG_OP WHEN 'INSERT' THEN NEW ELSE OLD END)->>'id')::integer;
  tbl := public.iasql_table_name(TG_RELID::regclass);
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
  'Row trigger on module tables: refuses a user INSERT, UPDATE or DELETE of a record in TRACK mode, naming the rule; the running cycle''s writes pass.';

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
