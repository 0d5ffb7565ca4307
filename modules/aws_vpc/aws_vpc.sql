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
