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
