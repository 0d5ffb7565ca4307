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
