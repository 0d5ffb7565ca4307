-- What installing aws_ecr 0.2.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.2.0 has an upgrade.
CREATE TABLE public.repository (
  id serial PRIMARY KEY,
  repository_name text NOT NULL,
  region text,
  image_tag_mutability text,
  scan_on_push boolean,
  repository_arn text,
  repository_uri text,
  registry_id text,
  created_at timestamp with time zone
);
COMMENT ON TABLE public.repository IS 'ECR private repositories of the account, in every enabled region. Insert a row to create a repository, update image_tag_mutability or scan_on_push to change them, delete the row to delete the repository (only an empty one: a repository that still holds images is not deleted, and the failure says so). Changing repository_name or region replaces the repository.';
COMMENT ON COLUMN public.repository.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.repository.repository_name IS 'Repository name, unique per region: 2 to 256 characters, lowercase letters and digits in components separated by single dots, underscores or hyphens, optionally namespaced with slashes (team/app). Changing it replaces the repository.';
COMMENT ON COLUMN public.repository.region IS 'AWS region of the repository, e.g. eu-west-1; defaults to the default region of aws_account. Changing it replaces the repository.';
COMMENT ON COLUMN public.repository.image_tag_mutability IS 'MUTABLE lets a push overwrite an image tag; IMMUTABLE refuses it.';
COMMENT ON COLUMN public.repository.scan_on_push IS 'Whether each image is scanned for vulnerabilities after it is pushed.';
COMMENT ON COLUMN public.repository.repository_arn IS 'ARN of the repository, arn:aws:ecr:<region>:<account>:repository/<name> (from the cloud; not written to it).';
COMMENT ON COLUMN public.repository.repository_uri IS 'URI to push and pull images, <account>.dkr.ecr.<region>.amazonaws.com/<name> (from the cloud; not written to it).';
COMMENT ON COLUMN public.repository.registry_id IS 'Account id of the registry that holds the repository (from the cloud; not written to it).';
COMMENT ON COLUMN public.repository.created_at IS 'When ECR created the repository (from the cloud; not written to it).';
COMMENT ON SEQUENCE public.repository_id_seq IS 'Generates repository.id.';
ALTER TABLE public.repository
  ADD CONSTRAINT repository_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT repository_image_tag_mutability_not_null CHECK (image_tag_mutability IS NOT NULL),
  ADD CONSTRAINT repository_scan_on_push_not_null CHECK (scan_on_push IS NOT NULL);
COMMENT ON CONSTRAINT repository_region_not_null ON public.repository IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger repository_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT repository_image_tag_mutability_not_null ON public.repository IS 'image_tag_mutability is never NULL: an INSERT that leaves it NULL gets ''MUTABLE'', an UPDATE that sets it NULL keeps its value (trigger repository_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT repository_scan_on_push_not_null ON public.repository IS 'scan_on_push is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger repository_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.repository_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.image_tag_mutability := coalesce(NEW.image_tag_mutability, OLD.image_tag_mutability, 'MUTABLE');
  NEW.scan_on_push := coalesce(NEW.scan_on_push, OLD.scan_on_push, false);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.repository_defaults() IS 'Trigger function: fills in region, image_tag_mutability, scan_on_push when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER repository_0_defaults BEFORE INSERT OR UPDATE ON public.repository
  FOR EACH ROW EXECUTE FUNCTION public.repository_defaults();
COMMENT ON TRIGGER repository_0_defaults ON public.repository IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

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
