-- aws_s3 0.2.0: the bucket region's default and check ask whether
-- aws_account is installed by its table, not by its functions alone: an
-- older sidecar's uninstall of aws_account left default_aws_region() and
-- aws_region_require() behind without aws_regions, and every bucket INSERT
-- then failed on the missing table.
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
