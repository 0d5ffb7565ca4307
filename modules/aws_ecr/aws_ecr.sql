-- aws_ecr: ECR private repositories, in every enabled region. The table and
-- its columns are declared in aws_ecr.go (module.Column); this file holds
-- its constraints and triggers, which run after the table is created.

ALTER TABLE public.repository
  ADD CONSTRAINT repository_name_region_unique UNIQUE (repository_name, region),
  ADD CONSTRAINT repository_name_ecr_rules CHECK (
    char_length(repository_name) BETWEEN 2 AND 256
    AND repository_name ~ '^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*$'),
  ADD CONSTRAINT repository_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT repository_image_tag_mutability_values CHECK (image_tag_mutability IN ('MUTABLE', 'IMMUTABLE'));
COMMENT ON CONSTRAINT repository_name_region_unique ON public.repository IS 'A repository name appears once per region.';
COMMENT ON CONSTRAINT repository_name_ecr_rules ON public.repository IS
  'ECR repository naming rules: 2 to 256 characters matching (?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*';
COMMENT ON CONSTRAINT repository_region_format ON public.repository IS 'A region code such as us-east-1 or ap-southeast-2.';
COMMENT ON CONSTRAINT repository_image_tag_mutability_values ON public.repository IS 'Image tag mutability is MUTABLE or IMMUTABLE.';

CREATE TRIGGER repository_region_check BEFORE INSERT OR UPDATE OF region ON public.repository
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER repository_region_check ON public.repository IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';
COMMENT ON COLUMN public.repository.id IS 'Database identifier of the row; the cloud knows the repository by region and name.';
