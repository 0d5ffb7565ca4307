-- Uninstalling aws_s3: after its tables are dropped (with their triggers),
-- the functions of its prelude and SQL go too.
DROP FUNCTION IF EXISTS public.bucket_region_check();
DROP FUNCTION IF EXISTS public.bucket_default_region();
