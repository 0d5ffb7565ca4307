-- aws_security_group 0.2.0: a group's tags are checked when they are
-- written, against EC2's tag restrictions ("Tag your Amazon EC2 resources",
-- Tag restrictions: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions):
-- at most 50 tags, keys up to 128 and values up to 256 characters, no key
-- starting with aws: (see aws_vpc's 0.1.0--0.2.0.sql for the key length and
-- NOT VALID). A group's create carries no client-token tag (its name in its
-- VPC finds a retried create). Also run at install (aws_security_group.go
-- appends this file); needs aws_account 0.2.0 (aws_tags_check).
ALTER TABLE public.security_group ADD CONSTRAINT security_group_tags_aws_limits CHECK (public.aws_tags_check(tags, 'security_group', 50, 128, 256,
  'https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/Using_Tags.html#tag-restrictions')) NOT VALID;
COMMENT ON CONSTRAINT security_group_tags_aws_limits ON public.security_group IS
  'EC2''s tag restrictions: at most 50 tags, keys 1 to 128 characters not starting with aws:, values up to 256.';
SELECT public.aws_validate_constraints(ARRAY['security_group.security_group_tags_aws_limits']);
