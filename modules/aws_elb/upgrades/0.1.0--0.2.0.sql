-- aws_elb 0.2.0: the tags of load balancers and target groups are checked
-- when they are written. Also run at install (aws_elb.go appends this
-- file); needs aws_account 0.2.0 (aws_tags_check).
--
-- ELB's tag restrictions: "Tag an Application Load Balancer", Restrictions
-- (https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-tags.html):
-- at most 50 tags per resource, no aws: prefix (AWS's own tags do not
-- count and are not in the tags column); the API's Tag type takes keys of 1
-- to 128 and values of 0 to 256 characters
-- (https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_Tag.html;
-- the guide says 127 and 255: the API's limits are taken, so that no tag
-- the cloud holds is refused when it is imported). Load balancers and target
-- groups are created without a client-token tag (their names find a retried
-- create). NOT VALID, then validated: see aws_vpc's 0.1.0--0.2.0.sql.
ALTER TABLE public.load_balancer ADD CONSTRAINT load_balancer_tags_aws_limits CHECK (public.aws_tags_check(tags, 'load_balancer', 50, 128, 256,
  'https://docs.aws.amazon.com/elasticloadbalancing/latest/application/load-balancer-tags.html')) NOT VALID;
COMMENT ON CONSTRAINT load_balancer_tags_aws_limits ON public.load_balancer IS
  'ELB''s tag restrictions: at most 50 tags, keys 1 to 128 characters not starting with aws:, values up to 256.';
ALTER TABLE public.target_group ADD CONSTRAINT target_group_tags_aws_limits CHECK (public.aws_tags_check(tags, 'target_group', 50, 128, 256,
  'https://docs.aws.amazon.com/elasticloadbalancing/latest/application/target-group-tags.html')) NOT VALID;
COMMENT ON CONSTRAINT target_group_tags_aws_limits ON public.target_group IS
  'ELB''s tag restrictions: at most 50 tags, keys 1 to 128 characters not starting with aws:, values up to 256.';
SELECT public.aws_validate_constraints(ARRAY['load_balancer.load_balancer_tags_aws_limits', 'target_group.target_group_tags_aws_limits']);

-- A reference left to AWS's choice is written into the row once the load
-- balancer exists (the engine's cloud choices): the column says so.
COMMENT ON COLUMN public.load_balancer.security_groups IS
  'Security groups (security_group.id) of the subnets'' VPC, in any order; empty: the VPC''s default group, AWS''s choice at creation, whose row the engine writes here once the load balancer exists. Changed in place (SetSecurityGroups).';
