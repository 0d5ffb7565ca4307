-- aws_ec2: EC2 instances, in the subnets and security groups of aws_vpc and
-- aws_security_group. The table and its columns are declared in aws_ec2.go
-- (module.Column); this file holds its constraints and triggers, which run
-- after the table is created.

ALTER TABLE public.instance
  ADD CONSTRAINT instance_instance_id_unique UNIQUE (instance_id),
  -- Deleting a subnet row that instances still use is refused: terminating
  -- instances is never a side effect of deleting something else.
  ADD CONSTRAINT instance_subnet_fk FOREIGN KEY (subnet_id) REFERENCES public.subnet (id),
  -- AWS's image ids: ami- and 8 or 17 hexadecimal digits (the emulator
  -- checks the same shape; DescribeImages is not consulted).
  ADD CONSTRAINT instance_ami_format CHECK (ami ~ '^ami-([0-9a-f]{8}|[0-9a-f]{17})$'),
  ADD CONSTRAINT instance_type_format CHECK (instance_type ~ '^[a-z0-9-]+\.[a-z0-9-]+$'),
  ADD CONSTRAINT instance_state_desired CHECK (state IN ('running', 'stopped')),
  -- RunInstances: "User data is limited to 16 KB" (before base64 encoding).
  -- https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_RunInstances.html
  ADD CONSTRAINT instance_user_data_16kb CHECK (user_data IS NULL OR octet_length(user_data) <= 16384),
  ADD CONSTRAINT instance_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT instance_tags_object CHECK (jsonb_typeof(tags) = 'object'),
  ADD CONSTRAINT instance_security_group_ids_no_nulls CHECK (array_position(security_group_ids, NULL) IS NULL);
COMMENT ON CONSTRAINT instance_instance_id_unique ON public.instance IS 'An instance appears once.';
COMMENT ON CONSTRAINT instance_subnet_fk ON public.instance IS 'An instance is in a subnet row; a subnet row used by instances cannot be deleted (delete or move the instances first).';
COMMENT ON CONSTRAINT instance_ami_format ON public.instance IS 'An image id: ami- and 8 or 17 hex digits.';
COMMENT ON CONSTRAINT instance_type_format ON public.instance IS 'An instance type: family.size, e.g. t3.micro.';
COMMENT ON CONSTRAINT instance_state_desired ON public.instance IS 'The states a user may ask for: running or stopped.';
COMMENT ON CONSTRAINT instance_user_data_16kb ON public.instance IS 'AWS limits user data to 16 KB.';
COMMENT ON CONSTRAINT instance_region_format ON public.instance IS 'A region code such as us-east-1.';
COMMENT ON CONSTRAINT instance_tags_object ON public.instance IS 'Tags are a JSON object.';
COMMENT ON CONSTRAINT instance_security_group_ids_no_nulls ON public.instance IS 'security_group_ids lists security_group.id values, none NULL.';

-- security_group_ids is a many-reference (bigint[] of security_group.id).
-- PostgreSQL cannot put a FOREIGN KEY on an array, so two triggers do its
-- work, with the rule instance_subnet_fk has (no cascade: terminating an
-- instance, or changing its groups, is never a side effect of deleting
-- something else):
--  * instance_references_check, on instance: an INSERT, or an UPDATE of
--    security_group_ids (or subnet_id, region), listing an id that is not a
--    security_group row of the instance's region is refused;
--  * security_group_in_use, on security_group: deleting a group row that an
--    instance row still lists is refused, whether the DELETE names the group
--    or cascades to it from its VPC row (the VPC's subnets are refused the
--    same way by instance_subnet_fk). Delete the instance rows, or take the
--    group out of their security_group_ids, first: in the same transaction
--    is enough, and one commit then terminates the instances before it
--    deletes the group, as AWS requires (DeleteSecurityGroup answers
--    DependencyViolation while an instance uses the group).
-- Both raise foreign_key_violation (SQLSTATE 23503) naming the constraint
-- instance_security_group_ids_fk, as a foreign key would. A group's id
-- never changes (it is a serial), so no UPDATE of security_group is checked.
--
-- Uninstall drops the instance table (and its triggers), then the trigger
-- on aws_security_group's table and the functions (aws_ec2_uninstall.sql).
-- The functions are CREATE OR REPLACE, and security_group_in_use does
-- nothing while public.instance does not exist, for databases where an
-- older sidecar's uninstall left them behind.

CREATE OR REPLACE FUNCTION public.instance_references_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
  missing_region text;
  subnet_region text;
BEGIN
  IF NEW.subnet_id IS NOT NULL THEN
    SELECT s.region INTO subnet_region FROM public.subnet s WHERE s.id = NEW.subnet_id;
    IF subnet_region IS DISTINCT FROM NEW.region THEN
      RAISE EXCEPTION 'instance: subnet % is in region %, the instance in %', NEW.subnet_id, subnet_region, NEW.region
        USING HINT = 'Give the instance the subnet''s region.';
    END IF;
  END IF;
  SELECT g, s.region INTO missing, missing_region FROM unnest(NEW.security_group_ids) AS g
    LEFT JOIN public.security_group s ON s.id = g
   WHERE s.region IS DISTINCT FROM NEW.region LIMIT 1;
  IF missing IS NOT NULL AND missing_region IS NULL THEN
    RAISE EXCEPTION 'instance: security group % is not a security_group row', missing
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'instance_security_group_ids_fk',
            HINT = 'security_group_ids lists security_group.id values: create the group first (INSERT INTO security_group), or leave the id out.';
  ELSIF missing IS NOT NULL THEN
    RAISE EXCEPTION 'instance: security group % is in region %, the instance in %', missing, missing_region, NEW.region
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'instance_security_group_ids_fk',
            HINT = 'security_group_ids lists security_group.id values of the instance''s region.';
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.instance_references_check() IS 'Trigger function: an instance''s subnet is of its region, and its security_group_ids are security_group rows of its region.';
CREATE TRIGGER instance_references_check BEFORE INSERT OR UPDATE OF subnet_id, security_group_ids, region ON public.instance
  FOR EACH ROW EXECUTE FUNCTION public.instance_references_check();
COMMENT ON TRIGGER instance_references_check ON public.instance IS 'Checks the instance''s subnet and security groups against its region.';

CREATE OR REPLACE FUNCTION public.security_group_in_use() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  users bigint[];
BEGIN
  -- aws_ec2 uninstalled (its instance table dropped): nothing to check.
  IF pg_catalog.to_regclass('public.instance') IS NULL THEN
    RETURN OLD;
  END IF;
  SELECT array_agg(i.id ORDER BY i.id) INTO users FROM public.instance i WHERE OLD.id = ANY (i.security_group_ids);
  IF users IS NOT NULL THEN
    RAISE EXCEPTION 'security group % (%) is still used by instance row(s) %', OLD.id, OLD.group_name,
        array_to_string(users[1:10], ', ') || CASE WHEN cardinality(users) > 10 THEN format(' and %s more', cardinality(users) - 10) ELSE '' END
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'instance_security_group_ids_fk',
            HINT = 'Remove the group from those rows'' security_group_ids, or delete those instance rows, before deleting the group (in the same transaction is fine).';
  END IF;
  RETURN OLD;
END;
$$;
COMMENT ON FUNCTION public.security_group_in_use() IS 'Trigger function (aws_ec2''s, on security_group): refuses to delete a group row that an instance row still lists in security_group_ids; does nothing once aws_ec2 is uninstalled.';
CREATE OR REPLACE TRIGGER security_group_in_use BEFORE DELETE ON public.security_group
  FOR EACH ROW EXECUTE FUNCTION public.security_group_in_use();
COMMENT ON TRIGGER security_group_in_use ON public.security_group IS 'aws_ec2: a group row that instances list cannot be deleted (the other half of instance_references_check: security_group_ids has no foreign key).';

CREATE TRIGGER instance_region_check BEFORE INSERT OR UPDATE OF region ON public.instance
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER instance_region_check ON public.instance IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';
