-- What installing aws_vpc 0.1.0 ran (its InstallSQL), kept as released: TestModuleUpgradeSQL
-- installs it, applies the module's upgrades and compares with a fresh install.
CREATE TABLE public.vpc (
  id serial PRIMARY KEY,
  vpc_id text,
  cidr_block cidr NOT NULL,
  region text NOT NULL DEFAULT public.default_aws_region(),
  tags jsonb NOT NULL DEFAULT '{}',
  is_default boolean NOT NULL DEFAULT false,
  state text
);
COMMENT ON TABLE public.vpc IS 'VPCs of the enabled regions; each region''s default VPC is imported. Insert a row (cidr_block, region) to create a VPC; vpc_id is filled in once AWS has created it. Changing cidr_block or region replaces the VPC (its subnets and security groups move to the new one). Delete the row to delete the VPC.';
COMMENT ON COLUMN public.vpc.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.vpc.vpc_id IS 'The VPC''s id (vpc-…), given by AWS at creation (from the cloud; not written to it). Setting it on a new row adopts that existing VPC.';
COMMENT ON COLUMN public.vpc.cidr_block IS 'Primary IPv4 CIDR block, /16 to /28. Fixed at creation: changing it replaces the VPC.';
COMMENT ON COLUMN public.vpc.region IS 'Region of the VPC (default: default_aws_region()). Fixed at creation: changing it replaces the VPC.';
COMMENT ON COLUMN public.vpc.tags IS 'Tags as a JSON object of key to value.';
COMMENT ON COLUMN public.vpc.is_default IS 'Whether this is the region''s default VPC (from the cloud).';
COMMENT ON COLUMN public.vpc.state IS 'pending or available (from the cloud).';
COMMENT ON SEQUENCE public.vpc_id_seq IS 'Generates vpc.id.';

CREATE TABLE public.subnet (
  id serial PRIMARY KEY,
  subnet_id text,
  vpc_id integer NOT NULL,
  region text NOT NULL DEFAULT public.default_aws_region(),
  cidr_block cidr NOT NULL,
  availability_zone text NOT NULL,
  tags jsonb NOT NULL DEFAULT '{}',
  is_default_for_az boolean NOT NULL DEFAULT false,
  state text
);
COMMENT ON TABLE public.subnet IS 'Subnets of the VPCs; default subnets are imported. Insert a row (vpc_id, cidr_block, availability_zone) to create one; subnet_id is filled in once AWS has created it. Changing anything but tags replaces the subnet.';
COMMENT ON COLUMN public.subnet.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.subnet.subnet_id IS 'The subnet''s id (subnet-…), given by AWS at creation (from the cloud).';
COMMENT ON COLUMN public.subnet.vpc_id IS 'The VPC (vpc.id) the subnet is in.';
COMMENT ON COLUMN public.subnet.region IS 'Region of the subnet: the VPC''s.';
COMMENT ON COLUMN public.subnet.cidr_block IS 'IPv4 CIDR block inside the VPC''s, /16 to /28, not overlapping another subnet.';
COMMENT ON COLUMN public.subnet.availability_zone IS 'Availability zone, e.g. us-east-1a.';
COMMENT ON COLUMN public.subnet.tags IS 'Tags as a JSON object of key to value.';
COMMENT ON COLUMN public.subnet.is_default_for_az IS 'Whether this is the default subnet of its zone (from the cloud).';
COMMENT ON COLUMN public.subnet.state IS 'pending or available (from the cloud).';
COMMENT ON SEQUENCE public.subnet_id_seq IS 'Generates subnet.id.';

-- aws_vpc: VPCs and their subnets, in every enabled region. The tables and
-- their columns are declared in aws_vpc.go (module.Column); this file holds
-- their constraints and triggers, which run after the tables are created.

ALTER TABLE public.vpc
  ADD CONSTRAINT vpc_vpc_id_unique UNIQUE (vpc_id),
  ADD CONSTRAINT vpc_id_region_unique UNIQUE (id, region),
  ADD CONSTRAINT vpc_cidr_block_ipv4 CHECK (family(cidr_block) = 4 AND masklen(cidr_block) BETWEEN 16 AND 28),
  ADD CONSTRAINT vpc_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT vpc_tags_object CHECK (jsonb_typeof(tags) = 'object');
COMMENT ON CONSTRAINT vpc_vpc_id_unique ON public.vpc IS 'A VPC appears once.';
COMMENT ON CONSTRAINT vpc_id_region_unique ON public.vpc IS 'Lets subnets and security groups reference a VPC together with its region.';
COMMENT ON CONSTRAINT vpc_cidr_block_ipv4 ON public.vpc IS 'AWS allows IPv4 primary blocks from /16 to /28.';
COMMENT ON CONSTRAINT vpc_region_format ON public.vpc IS 'A region code such as us-east-1.';
COMMENT ON CONSTRAINT vpc_tags_object ON public.vpc IS 'Tags are a JSON object.';

ALTER TABLE public.subnet
  ADD CONSTRAINT subnet_subnet_id_unique UNIQUE (subnet_id),
  ADD CONSTRAINT subnet_vpc_fk FOREIGN KEY (vpc_id, region) REFERENCES public.vpc (id, region) ON DELETE CASCADE ON UPDATE CASCADE,
  ADD CONSTRAINT subnet_cidr_block_ipv4 CHECK (family(cidr_block) = 4 AND masklen(cidr_block) BETWEEN 16 AND 28),
  ADD CONSTRAINT subnet_zone_in_region CHECK (availability_zone LIKE region || '%'),
  ADD CONSTRAINT subnet_tags_object CHECK (jsonb_typeof(tags) = 'object');
COMMENT ON CONSTRAINT subnet_subnet_id_unique ON public.subnet IS 'A subnet appears once.';
COMMENT ON CONSTRAINT subnet_vpc_fk ON public.subnet IS 'A subnet belongs to a VPC in its region; deleting the VPC row deletes its subnet rows.';
COMMENT ON CONSTRAINT subnet_cidr_block_ipv4 ON public.subnet IS 'AWS allows IPv4 subnet blocks from /16 to /28.';
COMMENT ON CONSTRAINT subnet_zone_in_region ON public.subnet IS 'The zone is one of the subnet''s region.';
COMMENT ON CONSTRAINT subnet_tags_object ON public.subnet IS 'Tags are a JSON object.';

CREATE TRIGGER vpc_region_check BEFORE INSERT OR UPDATE OF region ON public.vpc
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER vpc_region_check ON public.vpc IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';

CREATE TRIGGER subnet_region_check BEFORE INSERT OR UPDATE OF region ON public.subnet
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER subnet_region_check ON public.subnet IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';
