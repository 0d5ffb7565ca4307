-- What installing aws_account 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.aws_regions (
  id serial PRIMARY KEY,
  region text NOT NULL,
  is_default boolean,
  is_enabled boolean
);
COMMENT ON TABLE public.aws_regions IS 'The regions of the AWS account, as EC2 DescribeRegions lists them with AllRegions (read-only: rows follow the cloud). is_default and is_enabled are yours: the default region is what region columns of other modules default to, and only enabled regions are read and written. A region the account has not enabled (an opt-in region not opted in) is imported disabled; enabled here anyway, its reads fail and it shows as unverified in iasql_status, its rows left as they are.';
COMMENT ON COLUMN public.aws_regions.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.aws_regions.region IS 'Region code, e.g. us-east-1.';
COMMENT ON COLUMN public.aws_regions.is_default IS 'Whether this is the default region (exactly one is; making another the default unsets the previous one). Imported as the SDK configuration''s region.';
COMMENT ON COLUMN public.aws_regions.is_enabled IS 'Whether iasql manages resources in this region (imported as whether the account has it enabled). Disabling a region drops its resources from the tables; nothing is deleted in the cloud.';
COMMENT ON SEQUENCE public.aws_regions_id_seq IS 'Generates aws_regions.id.';
ALTER TABLE public.aws_regions
  ADD CONSTRAINT aws_regions_is_default_not_null CHECK (is_default IS NOT NULL),
  ADD CONSTRAINT aws_regions_is_enabled_not_null CHECK (is_enabled IS NOT NULL);
COMMENT ON CONSTRAINT aws_regions_is_default_not_null ON public.aws_regions IS 'is_default is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger aws_regions_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT aws_regions_is_enabled_not_null ON public.aws_regions IS 'is_enabled is never NULL: an INSERT that leaves it NULL gets true, an UPDATE that sets it NULL keeps its value (trigger aws_regions_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.aws_regions_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.is_default := coalesce(NEW.is_default, OLD.is_default, false);
  NEW.is_enabled := coalesce(NEW.is_enabled, OLD.is_enabled, true);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.aws_regions_defaults() IS 'Trigger function: fills in is_default, is_enabled when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER aws_regions_0_defaults BEFORE INSERT OR UPDATE ON public.aws_regions
  FOR EACH ROW EXECUTE FUNCTION public.aws_regions_defaults();
COMMENT ON TRIGGER aws_regions_0_defaults ON public.aws_regions IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

-- aws_account: the regions of the account, and which one is the default.
-- Credentials are never stored: the sidecar uses the AWS SDK's standard
-- chain (environment, shared config, instance or task role). The table and
-- its columns are declared in aws_account.go (module.Column); this file
-- holds its constraints, index, triggers and functions, which run after the
-- table is created.

ALTER TABLE public.aws_regions
  ADD CONSTRAINT aws_regions_region_unique UNIQUE (region),
  ADD CONSTRAINT aws_regions_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT aws_regions_default_enabled CHECK (is_enabled OR NOT is_default);
COMMENT ON CONSTRAINT aws_regions_region_unique ON public.aws_regions IS 'A region appears once.';
COMMENT ON CONSTRAINT aws_regions_region_format ON public.aws_regions IS 'A region code such as us-east-1 or ap-southeast-2.';
COMMENT ON CONSTRAINT aws_regions_default_enabled ON public.aws_regions IS 'The default region must be enabled.';

CREATE UNIQUE INDEX aws_regions_one_default ON public.aws_regions (is_default) WHERE is_default;
COMMENT ON INDEX public.aws_regions_one_default IS 'At most one default region.';

CREATE OR REPLACE FUNCTION public.aws_regions_single_default() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.is_default AND (TG_OP = 'INSERT' OR NOT OLD.is_default) THEN
    UPDATE public.aws_regions SET is_default = false WHERE is_default AND id <> NEW.id;
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.aws_regions_single_default() IS 'Trigger function: making a region the default unsets the previous default.';
CREATE TRIGGER aws_regions_single_default BEFORE INSERT OR UPDATE OF is_default ON public.aws_regions
  FOR EACH ROW EXECUTE FUNCTION public.aws_regions_single_default();
COMMENT ON TRIGGER aws_regions_single_default ON public.aws_regions IS 'Keeps exactly one default region when the default moves.';

CREATE OR REPLACE FUNCTION public.default_aws_region() RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  r text;
BEGIN
  SELECT region INTO r FROM public.aws_regions WHERE is_default;
  IF r IS NULL THEN
    RAISE EXCEPTION 'no default AWS region is set'
      USING HINT = 'Give the region explicitly, or choose one: UPDATE aws_regions SET is_default = true WHERE region = ''us-east-1'' (aws_regions fills once the aws_account module has synced).';
  END IF;
  RETURN r;
END;
$$;
COMMENT ON FUNCTION public.default_aws_region() IS 'The default region (aws_regions.is_default): the default of region columns in other modules.';

-- Region columns are checked when they are written: a region the account
-- does not have, or that is not enabled here, would otherwise reach a cycle
-- and fail (or be unverified) there for ever. Only inserts and updates that
-- change the region are checked, so the engine's write-backs to rows of a
-- region disabled since are not refused (the engine drops those rows).
CREATE OR REPLACE FUNCTION public.aws_region_require(region text, table_name text DEFAULT NULL) RETURNS void
LANGUAGE plpgsql STABLE AS $$
DECLARE
  enabled boolean;
BEGIN
  IF region IS NULL THEN
    RETURN;
  END IF;
  SELECT r.is_enabled INTO enabled FROM public.aws_regions r WHERE r.region = aws_region_require.region;
  IF NOT FOUND THEN
    RAISE EXCEPTION 'region % is not a region of the account: it is not in aws_regions', region
      USING ERRCODE = 'check_violation', CONSTRAINT = 'region_in_aws_regions', TABLE = coalesce(table_name, ''), COLUMN = 'region',
            HINT = 'Use one of SELECT region FROM aws_regions WHERE is_enabled (aws_regions fills once the aws_account module has synced).';
  ELSIF NOT enabled THEN
    RAISE EXCEPTION 'region % is not enabled in aws_regions', region
      USING ERRCODE = 'check_violation', CONSTRAINT = 'region_enabled_in_aws_regions', TABLE = coalesce(table_name, ''), COLUMN = 'region',
            HINT = format('Enable it first: UPDATE aws_regions SET is_enabled = true WHERE region = %L (an opt-in region must also be enabled for the AWS account).', region);
  END IF;
END;
$$;
COMMENT ON FUNCTION public.aws_region_require(text, text) IS
  'Raises (check_violation, constraint region_in_aws_regions or region_enabled_in_aws_regions) unless the region is in aws_regions and enabled there; NULL passes. Used by the region checks of module tables.';

CREATE OR REPLACE FUNCTION public.aws_region_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' OR NEW.region IS DISTINCT FROM OLD.region THEN
    PERFORM public.aws_region_require(NEW.region, TG_TABLE_NAME);
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.aws_region_check() IS
  'Trigger function (BEFORE INSERT OR UPDATE OF region): refuses a row whose region is not in aws_regions or not enabled there, naming the region and how to enable it.';

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
