-- What installing aws_account 0.1.0 ran (its InstallSQL), kept as released: TestModuleUpgradeSQL
-- installs it, applies the module's upgrades and compares with a fresh install.
CREATE TABLE public.aws_regions (
  id serial PRIMARY KEY,
  region text NOT NULL,
  is_default boolean NOT NULL DEFAULT false,
  is_enabled boolean NOT NULL DEFAULT true
);
COMMENT ON TABLE public.aws_regions IS 'The regions of the AWS account, as EC2 DescribeRegions lists them with AllRegions (read-only: rows follow the cloud). is_default and is_enabled are yours: the default region is what region columns of other modules default to, and only enabled regions are read and written. A region the account has not enabled (an opt-in region not opted in) is imported disabled; enabled here anyway, its reads fail and it shows as unverified in iasql_status, its rows left as they are.';
COMMENT ON COLUMN public.aws_regions.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.aws_regions.region IS 'Region code, e.g. us-east-1.';
COMMENT ON COLUMN public.aws_regions.is_default IS 'Whether this is the default region (exactly one is; making another the default unsets the previous one). Imported as the SDK configuration''s region.';
COMMENT ON COLUMN public.aws_regions.is_enabled IS 'Whether iasql manages resources in this region (imported as whether the account has it enabled). Disabling a region drops its resources from the tables; nothing is deleted in the cloud.';
COMMENT ON SEQUENCE public.aws_regions_id_seq IS 'Generates aws_regions.id.';

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
