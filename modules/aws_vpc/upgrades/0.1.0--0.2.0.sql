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
