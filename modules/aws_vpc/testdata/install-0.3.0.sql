-- What installing aws_vpc 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.vpc (
  id serial PRIMARY KEY,
  vpc_id text,
  cidr_block cidr NOT NULL,
  region text,
  tags jsonb,
  is_default boolean,
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
ALTER TABLE public.vpc
  ADD CONSTRAINT vpc_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT vpc_tags_not_null CHECK (tags IS NOT NULL),
  ADD CONSTRAINT vpc_is_default_not_null CHECK (is_default IS NOT NULL);
COMMENT ON CONSTRAINT vpc_region_not_null ON public.vpc IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger vpc_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT vpc_tags_not_null ON public.vpc IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger vpc_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT vpc_is_default_not_null ON public.vpc IS 'is_default is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger vpc_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.vpc_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  NEW.is_default := coalesce(NEW.is_default, OLD.is_default, false);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.vpc_defaults() IS 'Trigger function: fills in region, tags, is_default when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER vpc_0_defaults BEFORE INSERT OR UPDATE ON public.vpc
  FOR EACH ROW EXECUTE FUNCTION public.vpc_defaults();
COMMENT ON TRIGGER vpc_0_defaults ON public.vpc IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

CREATE TABLE public.subnet (
  id serial PRIMARY KEY,
  subnet_id text,
  vpc_id integer NOT NULL,
  region text,
  cidr_block cidr NOT NULL,
  availability_zone text NOT NULL,
  tags jsonb,
  is_default_for_az boolean,
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
ALTER TABLE public.subnet
  ADD CONSTRAINT subnet_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT subnet_tags_not_null CHECK (tags IS NOT NULL),
  ADD CONSTRAINT subnet_is_default_for_az_not_null CHECK (is_default_for_az IS NOT NULL);
COMMENT ON CONSTRAINT subnet_region_not_null ON public.subnet IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger subnet_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT subnet_tags_not_null ON public.subnet IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger subnet_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT subnet_is_default_for_az_not_null ON public.subnet IS 'is_default_for_az is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger subnet_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.subnet_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  NEW.is_default_for_az := coalesce(NEW.is_default_for_az, OLD.is_default_for_az, false);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.subnet_defaults() IS 'Trigger function: fills in region, tags, is_default_for_az when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER subnet_0_defaults BEFORE INSERT OR UPDATE ON public.subnet
  FOR EACH ROW EXECUTE FUNCTION public.subnet_defaults();
COMMENT ON TRIGGER subnet_0_defaults ON public.subnet IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

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

-- aws_vpc 0.2.0: what AWS would refuse at commit is refused when it is
-- written. Also run at install (aws_vpc.go appends this file to
-- aws_vpc.sql); needs aws_account 0.2.0 (aws_tags_check), upgraded first.

-- Tags: EC2's tag restrictions, "Tag your Amazon EC2 resources", Tag
-- restrictions (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions):
-- at most 50 tags per resource, keys up to 128 and values up to 256 Unicode
-- characters, no key starting with aws: (AWS's own tags, which do not count
-- and are not in the tags column). The API reference's Tag type says keys
-- take 127 characters (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Tag.html);
-- the larger of the two is taken, so that no tag the cloud holds is refused
-- when it is imported. A VPC or subnet iasql creates carries its
-- iasql:client-token tag too: one fewer while vpc_id/subnet_id is NULL.
-- NOT VALID, then validated where the rows allow it: an upgraded database
-- may hold rows imported with AWS's aws: tags (the mappers now leave them
-- out, and the next cycle writes the rows without them) or a user's row
-- that the cloud refused; the constraint then checks every write from now
-- on and stays NOT VALID (a WARNING says so).
ALTER TABLE public.vpc ADD CONSTRAINT vpc_tags_aws_limits CHECK (public.aws_tags_check(tags, 'vpc', 50, 128, 256,
  'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions', vpc_id IS NULL)) NOT VALID;
COMMENT ON CONSTRAINT vpc_tags_aws_limits ON public.vpc IS
  'EC2''s tag restrictions: at most 50 tags (49 before the VPC is created: the create adds iasql:client-token), keys 1 to 128 characters not starting with aws:, values up to 256.';
ALTER TABLE public.subnet ADD CONSTRAINT subnet_tags_aws_limits CHECK (public.aws_tags_check(tags, 'subnet', 50, 128, 256,
  'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions', subnet_id IS NULL)) NOT VALID;
COMMENT ON CONSTRAINT subnet_tags_aws_limits ON public.subnet IS
  'EC2''s tag restrictions: at most 50 tags (49 before the subnet is created: the create adds iasql:client-token), keys 1 to 128 characters not starting with aws:, values up to 256.';
SELECT public.aws_validate_constraints(ARRAY['vpc.vpc_tags_aws_limits', 'subnet.subnet_tags_aws_limits']);

-- A subnet's block is inside its VPC's and overlaps no other subnet of the
-- VPC. CreateSubnet: "The IPv4 network range for the subnet, in CIDR
-- notation" must be within the VPC's range (InvalidSubnet.Range) and may
-- not overlap another subnet of the VPC (InvalidSubnet.Conflict):
-- https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSubnet.html
-- https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
-- Checked for users' writes only, at the end of their transaction (a
-- deferred constraint trigger: blocks may be swapped, or a VPC's block
-- changed with its subnets', in one transaction). The running cycle's
-- writes pass: what it imports is what the cloud holds, which may lie in a
-- VPC's secondary blocks (the vpc table knows only the primary one, so a
-- user's subnet in a secondary block is refused), and a stale row may
-- still overlap a subnet made since in its place until the cycle deletes
-- it. A lock on the VPC's row makes concurrent writers check one
-- after the other (READ COMMITTED: the later one sees the earlier's rows).
CREATE OR REPLACE FUNCTION public.subnet_cidr_require(subnet_row integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
  s record;
  o record;
BEGIN
  SELECT sn.id, sn.vpc_id, sn.cidr_block, v.cidr_block AS vpc_block INTO s
    FROM public.subnet sn JOIN public.vpc v ON v.id = sn.vpc_id WHERE sn.id = subnet_row;
  IF NOT FOUND THEN
    RETURN; -- deleted since, in the same transaction
  END IF;
  -- The VPC's row, locked: only roles that may update it can (an advisory
  -- lock could be held by any role, stalling every writer's commit).
  PERFORM 1 FROM public.vpc v WHERE v.id = s.vpc_id FOR NO KEY UPDATE;
  IF NOT s.cidr_block <<= s.vpc_block THEN
    RAISE EXCEPTION 'subnet row % (%) is outside its VPC''s block %: choose a block inside it', s.id, s.cidr_block, s.vpc_block
      USING ERRCODE = 'check_violation', CONSTRAINT = 'subnet_cidr_in_vpc', TABLE = 'subnet', COLUMN = 'cidr_block',
            HINT = 'AWS creates a subnet only inside its VPC''s CIDR block (CreateSubnet: InvalidSubnet.Range).';
  END IF;
  SELECT o2.id, o2.cidr_block, o2.subnet_id INTO o FROM public.subnet o2
   WHERE o2.vpc_id = s.vpc_id AND o2.id <> s.id AND o2.cidr_block && s.cidr_block ORDER BY o2.id LIMIT 1;
  IF FOUND THEN
    RAISE EXCEPTION 'subnet row % (%) overlaps subnet row % (%) in the same VPC: choose a block that overlaps no other subnet of the VPC',
        s.id, s.cidr_block, o.id, o.cidr_block::text || coalesce(', ' || o.subnet_id, '')
      USING ERRCODE = 'exclusion_violation', CONSTRAINT = 'subnet_cidr_no_overlap', TABLE = 'subnet', COLUMN = 'cidr_block',
            HINT = 'AWS refuses a subnet whose block overlaps another subnet of its VPC (CreateSubnet: InvalidSubnet.Conflict).';
  END IF;
END;
$$;
COMMENT ON FUNCTION public.subnet_cidr_require(integer) IS
  'Raises unless the subnet row''s cidr_block is inside its VPC''s (check_violation, constraint subnet_cidr_in_vpc) and overlaps no other subnet row of the VPC (exclusion_violation, subnet_cidr_no_overlap); a row gone passes.';

CREATE OR REPLACE FUNCTION public.subnet_cidr_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  sn integer;
BEGIN
  -- The running cycle writes what the cloud holds (iasql_holds_lock is the
  -- core's; module SQL is installed where the core is, and checked alone by
  -- the module tests).
  IF pg_catalog.to_regprocedure('public.iasql_holds_lock(integer)') IS NOT NULL THEN
    IF public.iasql_holds_lock(2) THEN
      RETURN NULL;
    END IF;
  END IF;
  IF TG_TABLE_NAME = 'subnet' THEN
    PERFORM public.subnet_cidr_require(NEW.id);
  ELSE
    FOR sn IN SELECT s.id FROM public.subnet s WHERE s.vpc_id = NEW.id ORDER BY s.id LOOP
      PERFORM public.subnet_cidr_require(sn);
    END LOOP;
  END IF;
  RETURN NULL;
END;
$$;
COMMENT ON FUNCTION public.subnet_cidr_check() IS
  'Constraint trigger function (deferred, on subnet and on vpc): refuses a user''s transaction that leaves a subnet row outside its VPC''s block or overlapping another subnet of the VPC (subnet_cidr_require); the running cycle''s writes pass.';
CREATE CONSTRAINT TRIGGER subnet_cidr_check AFTER INSERT OR UPDATE OF cidr_block, vpc_id ON public.subnet
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.subnet_cidr_check();
COMMENT ON TRIGGER subnet_cidr_check ON public.subnet IS
  'At the end of the transaction: the subnet''s block is inside its VPC''s and overlaps no other subnet of the VPC (CreateSubnet''s InvalidSubnet.Range and InvalidSubnet.Conflict).';
COMMENT ON CONSTRAINT subnet_cidr_check ON public.subnet IS 'The constraint of the deferred trigger subnet_cidr_check.';
CREATE CONSTRAINT TRIGGER vpc_cidr_check AFTER UPDATE OF cidr_block ON public.vpc
  DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.subnet_cidr_check();
COMMENT ON TRIGGER vpc_cidr_check ON public.vpc IS
  'At the end of the transaction: a VPC whose block changed still holds each of its subnets'' blocks (change or delete those subnets in the same transaction).';
COMMENT ON CONSTRAINT vpc_cidr_check ON public.vpc IS 'The constraint of the deferred trigger vpc_cidr_check.';
