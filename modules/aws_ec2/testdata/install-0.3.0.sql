-- What installing aws_ec2 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.instance (
  id serial PRIMARY KEY,
  ami text NOT NULL,
  instance_type text NOT NULL,
  subnet_id bigint,
  security_group_ids bigint[],
  key_name text,
  user_data text,
  tags jsonb,
  state text,
  region text,
  instance_id text,
  private_ip_address inet,
  public_ip_address inet,
  launch_time timestamp with time zone,
  observed_state text
);
COMMENT ON TABLE public.instance IS 'EC2 instances of the enabled regions (terminated ones are left out). Insert a row (ami, instance_type, and usually subnet_id and security_group_ids) to launch an instance; instance_id is filled in once AWS has launched it. Changing ami, subnet_id, key_name or region replaces the instance; changing instance_type or user_data stops it, modifies it and starts it again (when state is running); security groups and tags change in place; state stops or starts it. Delete the row to terminate the instance.';
COMMENT ON COLUMN public.instance.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.instance.ami IS 'Image (AMI) id the instance is launched from, ami- and 8 or 17 hex digits. Fixed at launch: changing it replaces the instance.';
COMMENT ON COLUMN public.instance.instance_type IS 'Instance type, e.g. t3.micro. Changing it stops the instance, modifies it and starts it again.';
COMMENT ON COLUMN public.instance.subnet_id IS 'The subnet (subnet.id) the instance is launched in; NULL: a default subnet of AWS''s choice, whose row the engine writes here once the instance is launched. Fixed at launch: changing it replaces the instance.';
COMMENT ON COLUMN public.instance.security_group_ids IS 'Security groups (security_group.id) of the instance, in any order; empty: the VPC''s default group, AWS''s choice at launch, whose row the engine writes here once the instance is launched. Changed in place.';
COMMENT ON COLUMN public.instance.key_name IS 'Name of the key pair for SSH; NULL for none. Fixed at launch: changing it replaces the instance.';
COMMENT ON COLUMN public.instance.user_data IS 'User data (the text, not base64), at most 16 KB. Changing it stops the instance, modifies it and starts it again; by default cloud-init runs it only at the first boot.';
COMMENT ON COLUMN public.instance.tags IS 'Tags as a JSON object of key to value (AWS''s own aws:* tags are left out).';
COMMENT ON COLUMN public.instance.state IS 'Desired state: running or stopped. A pending instance counts as running and a stopping one as stopped.';
COMMENT ON COLUMN public.instance.region IS 'Region of the instance: its subnet''s (default: default_aws_region()). Fixed at launch: changing it replaces the instance.';
COMMENT ON COLUMN public.instance.instance_id IS 'The instance''s id (i-…), given by AWS at launch (from the cloud; changes when the instance is replaced).';
COMMENT ON COLUMN public.instance.private_ip_address IS 'Primary private IPv4 address (from the cloud).';
COMMENT ON COLUMN public.instance.public_ip_address IS 'Public IPv4 address, if any (from the cloud; changes when the instance is stopped and started).';
COMMENT ON COLUMN public.instance.launch_time IS 'When the instance was last launched or started (from the cloud).';
COMMENT ON COLUMN public.instance.observed_state IS 'The state AWS reports: pending, running, stopping or stopped (from the cloud).';
COMMENT ON SEQUENCE public.instance_id_seq IS 'Generates instance.id.';
ALTER TABLE public.instance
  ADD CONSTRAINT instance_security_group_ids_not_null CHECK (security_group_ids IS NOT NULL),
  ADD CONSTRAINT instance_tags_not_null CHECK (tags IS NOT NULL),
  ADD CONSTRAINT instance_state_not_null CHECK (state IS NOT NULL),
  ADD CONSTRAINT instance_region_not_null CHECK (region IS NOT NULL);
COMMENT ON CONSTRAINT instance_security_group_ids_not_null ON public.instance IS 'security_group_ids is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger instance_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT instance_tags_not_null ON public.instance IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger instance_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT instance_state_not_null ON public.instance IS 'state is never NULL: an INSERT that leaves it NULL gets ''running'', an UPDATE that sets it NULL keeps its value (trigger instance_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT instance_region_not_null ON public.instance IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger instance_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.instance_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.security_group_ids := coalesce(NEW.security_group_ids, OLD.security_group_ids, '{}');
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  NEW.state := coalesce(NEW.state, OLD.state, 'running');
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.instance_defaults() IS 'Trigger function: fills in security_group_ids, tags, state, region when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER instance_0_defaults BEFORE INSERT OR UPDATE ON public.instance
  FOR EACH ROW EXECUTE FUNCTION public.instance_defaults();
COMMENT ON TRIGGER instance_0_defaults ON public.instance IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

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

-- aws_ec2 0.2.0: an instance's tags and key name are checked when they are
-- written. Also run at install (aws_ec2.go appends this file); needs
-- aws_account 0.2.0 (aws_tags_check).
--
-- Tags: EC2's tag restrictions ("Tag your Amazon EC2 resources", Tag
-- restrictions: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions):
-- at most 50 tags (49 before the instance is launched: RunInstances tags it
-- iasql:client-token too), keys up to 128 and values up to 256 characters,
-- no key starting with aws: (see aws_vpc's 0.1.0--0.2.0.sql for the key
-- length and NOT VALID).
ALTER TABLE public.instance ADD CONSTRAINT instance_tags_aws_limits CHECK (public.aws_tags_check(tags, 'instance', 50, 128, 256,
  'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions', instance_id IS NULL)) NOT VALID;
COMMENT ON CONSTRAINT instance_tags_aws_limits ON public.instance IS
  'EC2''s tag restrictions: at most 50 tags (49 before the instance is launched: the launch adds iasql:client-token), keys 1 to 128 characters not starting with aws:, values up to 256.';

-- A key pair's name: CreateKeyPair and ImportKeyPair, KeyName: "Constraints:
-- Up to 255 ASCII characters"
-- (https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateKeyPair.html,
-- https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_ImportKeyPair.html).
CREATE OR REPLACE FUNCTION public.instance_key_name_check(key_name text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  IF key_name IS NOT NULL AND pg_catalog.length(key_name) NOT BETWEEN 1 AND 255 THEN
    RAISE EXCEPTION 'instance key_name is % characters long, a key pair''s name is 1 to 255: give the name of an existing key pair, or NULL for none',
        pg_catalog.length(key_name)
      USING ERRCODE = 'check_violation', CONSTRAINT = 'instance_key_name_255', TABLE = 'instance', COLUMN = 'key_name',
            HINT = 'CreateKeyPair and ImportKeyPair take names of up to 255 ASCII characters: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateKeyPair.html';
  END IF;
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.instance_key_name_check(text) IS
  'CHECK helper of instance_key_name_255: true, or raises check_violation when a key pair name is not 1 to 255 characters long; NULL passes.';
ALTER TABLE public.instance ADD CONSTRAINT instance_key_name_255 CHECK (public.instance_key_name_check(key_name)) NOT VALID;
COMMENT ON CONSTRAINT instance_key_name_255 ON public.instance IS
  'A key pair''s name is 1 to 255 characters (CreateKeyPair, ImportKeyPair: up to 255 ASCII characters); NULL for none.';
SELECT public.aws_validate_constraints(ARRAY['instance.instance_tags_aws_limits', 'instance.instance_key_name_255']);

-- A reference left to AWS's choice is written into the row once the instance
-- is launched (the engine's cloud choices): the columns say so.
COMMENT ON COLUMN public.instance.subnet_id IS
  'The subnet (subnet.id) the instance is launched in; NULL: a default subnet of AWS''s choice, whose row the engine writes here once the instance is launched. Fixed at launch: changing it replaces the instance.';
COMMENT ON COLUMN public.instance.security_group_ids IS
  'Security groups (security_group.id) of the instance, in any order; empty: the VPC''s default group, AWS''s choice at launch, whose row the engine writes here once the instance is launched. Changed in place.';
