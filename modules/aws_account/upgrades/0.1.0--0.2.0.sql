-- aws_account 0.2.0: aws_tags_check(), the tag restrictions that the tags
-- columns of other modules' tables check when they are written (a CHECK
-- constraint per table calls it), so that a row AWS would refuse is refused
-- by the database, with what to do, instead of failing at commit. Also run
-- at install (aws_account.go appends this file to aws_account.sql).
--
-- AWS's own tags (keys starting aws:, any case: CloudFormation's
-- aws:cloudformation:stack-name, Auto Scaling's) are not in the tags columns:
-- the mappers leave them out when they read, and no one may set or delete
-- them; they do not count against the limit either. The engine's
-- iasql:client-token tag is not in the tags columns either, but it counts:
-- a resource whose create carries it (token) takes one tag fewer at create.
CREATE OR REPLACE FUNCTION public.aws_tags_check(tags jsonb, table_name text, max_tags integer, max_key integer, max_value integer,
                                                 docs text, token boolean DEFAULT false) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
  n integer;
  lim integer := max_tags - CASE WHEN token THEN 1 ELSE 0 END;
  k text;
  v text;
  cname text := table_name || '_tags_aws_limits';
  hint text := 'AWS''s tag restrictions: ' || docs;
BEGIN
  IF tags IS NULL OR pg_catalog.jsonb_typeof(tags) <> 'object' THEN
    RETURN true; -- the table's <table>_tags_object constraint says so
  END IF;
  FOR k, v IN SELECT e.key, e.value FROM pg_catalog.jsonb_each_text(tags) e LOOP
    IF k = '' THEN
      RAISE EXCEPTION '% has a tag with an empty key: give every tag a key', table_name
        USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
    ELSIF pg_catalog.lower(k) LIKE 'aws:%' THEN
      RAISE EXCEPTION '% tag key "%" starts with aws:, which AWS keeps for its own tags: use another key', table_name, k
        USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
    ELSIF pg_catalog.length(k) > max_key THEN
      RAISE EXCEPTION '% tag key "%..." is % characters long, AWS allows at most %: shorten it',
          table_name, pg_catalog.left(k, 40), pg_catalog.length(k), max_key
        USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
    ELSIF pg_catalog.length(v) > max_value THEN
      RAISE EXCEPTION '% tag "%" has a value % characters long, AWS allows at most %: shorten it',
          table_name, pg_catalog.left(k, 40), pg_catalog.length(v), max_value
        USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
    END IF;
  END LOOP;
  SELECT pg_catalog.count(*) INTO n FROM pg_catalog.jsonb_object_keys(tags);
  IF n > lim THEN
    IF token THEN
      RAISE EXCEPTION '% has % tags, a resource iasql creates takes at most % (AWS allows %, and the create adds its iasql:client-token tag): remove %',
          table_name, n, lim, max_tags, n - lim
        USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
    END IF;
    RAISE EXCEPTION '% has % tags, AWS allows at most % per resource: remove %', table_name, n, lim, n - lim
      USING ERRCODE = 'check_violation', CONSTRAINT = cname, TABLE = table_name, COLUMN = 'tags', HINT = hint;
  END IF;
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.aws_tags_check(jsonb, text, integer, integer, integer, text, boolean) IS
  'CHECK helper for tags columns (constraint <table>_tags_aws_limits): true, or raises check_violation naming the tag AWS would refuse and what to do: an empty key, a key starting with aws: (any case), a key longer than max_key or a value longer than max_value characters, more than max_tags tags (one fewer when token: the create adds iasql:client-token). docs is the AWS page of the restrictions, given as the hint.';

-- Upgrade helper of the modules that add constraints in a step: each is
-- added NOT VALID (existing rows are not checked), then validated here
-- where the rows allow. An upgraded database may hold rows the new check
-- refuses (imported with aws: tags, a user's row the cloud refused); an
-- upgrade must never stop the sidecar, so such a constraint stays NOT VALID,
-- still checking every write, and a WARNING says so.
CREATE OR REPLACE FUNCTION public.aws_validate_constraints(constraints text[]) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  c text;
BEGIN
  FOREACH c IN ARRAY constraints LOOP
    BEGIN
      EXECUTE pg_catalog.format('ALTER TABLE public.%I VALIDATE CONSTRAINT %I', pg_catalog.split_part(c, '.', 1), pg_catalog.split_part(c, '.', 2));
    EXCEPTION WHEN check_violation THEN
      RAISE WARNING 'constraint % is left NOT VALID: %', c, SQLERRM
        USING HINT = 'It checks every write from now on; rows imported with aws: tags lose them at the next cycle.';
    END;
  END LOOP;
END;
$$;
COMMENT ON FUNCTION public.aws_validate_constraints(text[]) IS
  'Upgrade helper: validates each constraint named table.constraint (added NOT VALID by a module''s upgrade step) where the rows allow; one existing rows break stays NOT VALID (it still checks every write) with a WARNING.';
