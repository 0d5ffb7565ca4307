-- What installing aws_s3 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
-- aws_s3's prelude: what the columns of its tables (declared in aws_s3.go)
-- call in their defaults, created before the tables.

-- aws_s3 does not depend on aws_account (installing it needs no EC2 access,
-- and the engine's tests and benchmarks run it alone). When aws_account is
-- installed, bucket.region defaults to its default region and is checked
-- against aws_regions like every region column; without it, the default is
-- us-east-1 (S3's region without a location constraint) and any region code
-- is taken. aws_account is installed when its table is there: uninstalling
-- it drops its functions too, and a database where an older sidecar
-- uninstalled it keeps default_aws_region() without aws_regions, which it
-- would fail on. The functions are CREATE OR REPLACE: a reinstall runs this
-- again (uninstall drops them: aws_s3_uninstall.sql).
CREATE OR REPLACE FUNCTION public.bucket_default_region() RETURNS text
LANGUAGE plpgsql STABLE AS $$
BEGIN
  IF pg_catalog.to_regclass('public.aws_regions') IS NOT NULL
     AND pg_catalog.to_regprocedure('public.default_aws_region()') IS NOT NULL THEN
    RETURN public.default_aws_region();
  END IF;
  RETURN 'us-east-1';
END;
$$;
COMMENT ON FUNCTION public.bucket_default_region() IS
  'The default of bucket.region: default_aws_region() when the aws_account module is installed (aws_regions exists), else us-east-1.';

CREATE TABLE public.bucket (
  id serial PRIMARY KEY,
  name text NOT NULL,
  region text,
  versioning boolean,
  created_at timestamp with time zone
);
COMMENT ON TABLE public.bucket IS 'S3 general purpose buckets of the account, in every region. Insert a row to create a bucket, update versioning to turn versioning on or suspend it, delete the row to delete the bucket (after its objects). Changing name or region replaces the bucket.';
COMMENT ON COLUMN public.bucket.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.bucket.name IS 'Bucket name, unique across all AWS accounts: 3 to 63 lowercase letters, digits, dots and hyphens, beginning and ending with a letter or digit, no two adjacent dots, not an IP address, no reserved prefix (xn--, sthree-, amzn-s3-demo-) or suffix (-s3alias, --ol-s3, .mrap, --x-s3, --table-s3, -an). A check constraint per rule refuses a name S3 would.';
COMMENT ON COLUMN public.bucket.region IS 'AWS region the bucket lives in, e.g. eu-west-1 (default: bucket_default_region(), the default region of aws_regions when aws_account is installed, else us-east-1; with aws_account, it must be enabled in aws_regions). Fixed at creation: changing it replaces the bucket.';
COMMENT ON COLUMN public.bucket.versioning IS 'Whether object versioning is enabled. Setting it to false on a versioned bucket suspends versioning (S3 cannot turn it off).';
COMMENT ON COLUMN public.bucket.created_at IS 'When S3 created the bucket (from the cloud; not written to it).';
COMMENT ON SEQUENCE public.bucket_id_seq IS 'Generates bucket.id.';
ALTER TABLE public.bucket
  ADD CONSTRAINT bucket_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT bucket_versioning_not_null CHECK (versioning IS NOT NULL);
COMMENT ON CONSTRAINT bucket_region_not_null ON public.bucket IS 'region is never NULL: an INSERT that leaves it NULL gets public.bucket_default_region(), an UPDATE that sets it NULL keeps its value (trigger bucket_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT bucket_versioning_not_null ON public.bucket IS 'versioning is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger bucket_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.bucket_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.region := coalesce(NEW.region, OLD.region, public.bucket_default_region());
  NEW.versioning := coalesce(NEW.versioning, OLD.versioning, false);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.bucket_defaults() IS 'Trigger function: fills in region, versioning when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER bucket_0_defaults BEFORE INSERT OR UPDATE ON public.bucket
  FOR EACH ROW EXECUTE FUNCTION public.bucket_defaults();
COMMENT ON TRIGGER bucket_0_defaults ON public.bucket IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

CREATE TABLE public.bucket_object (
  id serial PRIMARY KEY,
  bucket_id integer NOT NULL,
  key text NOT NULL,
  size bigint,
  etag text,
  last_modified timestamp with time zone
);
COMMENT ON TABLE public.bucket_object IS 'Objects in S3 buckets, by key. The object body is not stored here: inserting a row creates an empty object with that key, deleting the row deletes the object, and objects written by other means (with any body) appear as rows.';
COMMENT ON COLUMN public.bucket_object.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.bucket_object.bucket_id IS 'The bucket the object is in (bucket.id). Changing it replaces the object.';
COMMENT ON COLUMN public.bucket_object.key IS 'Object key, 1 to 1024 bytes of UTF-8. Changing it replaces the object.';
COMMENT ON COLUMN public.bucket_object.size IS 'Size of the object body in bytes (from the cloud; not written to it).';
COMMENT ON COLUMN public.bucket_object.etag IS 'Entity tag of the object body, without quotes (from the cloud; not written to it).';
COMMENT ON COLUMN public.bucket_object.last_modified IS 'When the object was last written (from the cloud; not written to it).';
COMMENT ON SEQUENCE public.bucket_object_id_seq IS 'Generates bucket_object.id.';

-- aws_s3: S3 buckets and the keys of their objects. The tables and their
-- columns are declared in aws_s3.go (module.Column), after the prelude
-- (aws_s3_prelude.sql: bucket_default_region()); this file holds their
-- constraints, triggers and functions, which run after the tables are
-- created.

ALTER TABLE public.bucket
  ADD CONSTRAINT bucket_name_unique UNIQUE (name),
  -- S3's naming rules for general purpose buckets, one constraint per rule so
  -- that the error names the rule broken ("Bucket naming rules", S3 User
  -- Guide: https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
  ADD CONSTRAINT bucket_name_s3_rules CHECK (name ~ '^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$'),
  ADD CONSTRAINT bucket_name_no_adjacent_periods CHECK (name !~ '\.\.'),
  ADD CONSTRAINT bucket_name_not_an_ip_address CHECK (name !~ '^[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+$'),
  ADD CONSTRAINT bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo CHECK (name !~ '^(xn--|sthree-|amzn-s3-demo-)'),
  ADD CONSTRAINT bucket_name_no_reserved_suffix CHECK (name !~ '(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$'),
  ADD CONSTRAINT bucket_name_an_suffix_only_account_regional CHECK (
    name !~ '-an$' OR name ~ '-[0-9]{12}-[a-z]{2}(-[a-z]+)+-[0-9]+-an$'),
  ADD CONSTRAINT bucket_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$');
COMMENT ON COLUMN public.bucket.id IS 'Database identifier of the row; the cloud knows the bucket by name.';
COMMENT ON CONSTRAINT bucket_name_unique ON public.bucket IS 'A bucket name appears once.';
COMMENT ON CONSTRAINT bucket_name_s3_rules ON public.bucket IS
  'S3 bucket naming rule: 3 to 63 characters, only lowercase letters, digits, dots (.) and hyphens (-), beginning and ending with a letter or digit.';
COMMENT ON CONSTRAINT bucket_name_no_adjacent_periods ON public.bucket IS 'S3 bucket naming rule: no two adjacent periods (..).';
COMMENT ON CONSTRAINT bucket_name_not_an_ip_address ON public.bucket IS 'S3 bucket naming rule: not formatted as an IP address (such as 192.168.5.4).';
COMMENT ON CONSTRAINT bucket_name_no_reserved_prefix_xn_sthree_amzn_s3_demo ON public.bucket IS
  'S3 bucket naming rule: not starting with a reserved prefix: xn--, sthree- (and sthree-configurator), amzn-s3-demo-.';
COMMENT ON CONSTRAINT bucket_name_no_reserved_suffix ON public.bucket IS
  'S3 bucket naming rule: not ending with a reserved suffix: -s3alias (access point aliases), --ol-s3 (Object Lambda access point aliases), .mrap (Multi-Region Access Points), --x-s3 (directory buckets), --table-s3 (table buckets).';
COMMENT ON CONSTRAINT bucket_name_an_suffix_only_account_regional ON public.bucket IS
  'S3 bucket naming rule: only buckets of an account regional namespace end with -an, named prefix-ACCOUNTID-REGION-an (12-digit account id); such buckets are imported, other names ending with -an are refused.';
COMMENT ON CONSTRAINT bucket_region_format ON public.bucket IS 'A region code such as us-east-1 or ap-southeast-2.';

CREATE OR REPLACE FUNCTION public.bucket_region_check() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF (TG_OP = 'INSERT' OR NEW.region IS DISTINCT FROM OLD.region)
     AND pg_catalog.to_regclass('public.aws_regions') IS NOT NULL
     AND pg_catalog.to_regprocedure('public.aws_region_require(text, text)') IS NOT NULL THEN
    PERFORM public.aws_region_require(NEW.region, TG_TABLE_NAME);
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.bucket_region_check() IS
  'Trigger function: when the aws_account module is installed (aws_regions exists), refuses a bucket region that is not in aws_regions or not enabled there (aws_region_require()).';
CREATE TRIGGER bucket_region_check BEFORE INSERT OR UPDATE OF region ON public.bucket
  FOR EACH ROW EXECUTE FUNCTION public.bucket_region_check();
COMMENT ON TRIGGER bucket_region_check ON public.bucket IS 'Refuses a region not enabled in aws_regions, when aws_account is installed.';

ALTER TABLE public.bucket_object
  ADD CONSTRAINT bucket_object_bucket_fk FOREIGN KEY (bucket_id) REFERENCES public.bucket (id) ON DELETE CASCADE,
  ADD CONSTRAINT bucket_object_key_unique UNIQUE (bucket_id, key),
  ADD CONSTRAINT bucket_object_key_length CHECK (octet_length(key) BETWEEN 1 AND 1024);
COMMENT ON COLUMN public.bucket_object.id IS 'Database identifier of the row; the cloud knows the object by bucket and key.';
COMMENT ON CONSTRAINT bucket_object_bucket_fk ON public.bucket_object IS 'An object belongs to a bucket; deleting the bucket row deletes its object rows.';
COMMENT ON CONSTRAINT bucket_object_key_unique ON public.bucket_object IS 'A key appears once per bucket.';
COMMENT ON CONSTRAINT bucket_object_key_length ON public.bucket_object IS 'S3 object keys are 1 to 1024 bytes long.';
