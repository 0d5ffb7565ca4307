-- Uninstalling aws_account: after aws_regions is dropped (with its
-- trigger), its functions go too. Left behind, default_aws_region() and
-- aws_region_require() would fail on the missing aws_regions wherever they
-- are still called (aws_s3's bucket region default and check called them
-- when they existed). A module that uses them in a column default, a
-- trigger or a constraint depends on aws_account, so it is uninstalled
-- first; the drops have no CASCADE, so an object that still uses one stops
-- the uninstall instead of losing its default.
DROP FUNCTION IF EXISTS public.aws_regions_single_default();
DROP FUNCTION IF EXISTS public.aws_region_check();
DROP FUNCTION IF EXISTS public.aws_region_require(text, text);
DROP FUNCTION IF EXISTS public.default_aws_region();
DROP FUNCTION IF EXISTS public.aws_tags_check(jsonb, text, integer, integer, integer, text, boolean);
DROP FUNCTION IF EXISTS public.aws_validate_constraints(text[]);
