-- What installing aws_security_group 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.security_group (
  id serial PRIMARY KEY,
  group_name text NOT NULL,
  description text NOT NULL,
  vpc_id integer,
  region text,
  tags jsonb,
  group_id text
);
COMMENT ON TABLE public.security_group IS 'Security groups of the VPCs; every VPC''s "default" group is imported (and cannot be deleted). Insert a row to create a group; group_id is filled in once AWS has created it. A group is known by its name within its VPC. Changing description replaces the group while it keeps its name: a temporary group stands in while the old one is deleted, rules are recreated and groups that reference it move over; the row keeps its id and gets a new group_id.';
COMMENT ON COLUMN public.security_group.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.security_group.group_name IS 'Name, unique within the VPC: 1 to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*, not starting with sg-.';
COMMENT ON COLUMN public.security_group.description IS 'Description, 1 to 255 characters of a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*. AWS fixes it at creation: changing it replaces the group.';
COMMENT ON COLUMN public.security_group.vpc_id IS 'The VPC (vpc.id); left out (or NULL) on INSERT, the region''s default VPC.';
COMMENT ON COLUMN public.security_group.region IS 'Region of the group: its VPC''s (default: default_aws_region()).';
COMMENT ON COLUMN public.security_group.tags IS 'Tags as a JSON object of key to value.';
COMMENT ON COLUMN public.security_group.group_id IS 'The group''s id (sg-…) from AWS (from the cloud; changes when the group is replaced).';
COMMENT ON SEQUENCE public.security_group_id_seq IS 'Generates security_group.id.';
ALTER TABLE public.security_group
  ADD CONSTRAINT security_group_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT security_group_tags_not_null CHECK (tags IS NOT NULL);
COMMENT ON CONSTRAINT security_group_region_not_null ON public.security_group IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger security_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT security_group_tags_not_null ON public.security_group IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger security_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.security_group_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.security_group_defaults() IS 'Trigger function: fills in region, tags when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER security_group_0_defaults BEFORE INSERT OR UPDATE ON public.security_group
  FOR EACH ROW EXECUTE FUNCTION public.security_group_defaults();
COMMENT ON TRIGGER security_group_0_defaults ON public.security_group IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

CREATE TABLE public.security_group_rule (
  id serial PRIMARY KEY,
  security_group_id integer NOT NULL,
  is_egress boolean,
  ip_protocol text NOT NULL,
  from_port integer,
  to_port integer,
  cidr_ipv4 cidr,
  cidr_ipv6 cidr,
  prefix_list_id text,
  source_security_group_id integer,
  description text,
  rule_id text
);
COMMENT ON TABLE public.security_group_rule IS 'Rules of security groups, one row per target (CIDR, prefix list or source group). A rule is known by everything but its description: changing any other column replaces the rule; changing the description updates it.';
COMMENT ON COLUMN public.security_group_rule.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.security_group_rule.security_group_id IS 'The group the rule belongs to (security_group.id).';
COMMENT ON COLUMN public.security_group_rule.is_egress IS 'false: inbound (ingress) rule; true: outbound (egress) rule.';
COMMENT ON COLUMN public.security_group_rule.ip_protocol IS 'tcp, udp, icmp, icmpv6, a protocol number, or -1 for all. Written as AWS shows it: TCP, 6 and all become tcp, tcp and -1.';
COMMENT ON COLUMN public.security_group_rule.from_port IS 'First port (tcp/udp) or ICMP type; NULL for other protocols.';
COMMENT ON COLUMN public.security_group_rule.to_port IS 'Last port (tcp/udp) or ICMP code; NULL for other protocols.';
COMMENT ON COLUMN public.security_group_rule.cidr_ipv4 IS 'Target IPv4 range.';
COMMENT ON COLUMN public.security_group_rule.cidr_ipv6 IS 'Target IPv6 range.';
COMMENT ON COLUMN public.security_group_rule.prefix_list_id IS 'Target managed prefix list (pl-…).';
COMMENT ON COLUMN public.security_group_rule.source_security_group_id IS 'Target security group (security_group.id): traffic from (ingress) or to (egress) its members.';
COMMENT ON COLUMN public.security_group_rule.description IS 'Description of the rule; can change in place.';
COMMENT ON COLUMN public.security_group_rule.rule_id IS 'The rule''s id (sgr-…) from AWS (from the cloud).';
COMMENT ON SEQUENCE public.security_group_rule_id_seq IS 'Generates security_group_rule.id.';
ALTER TABLE public.security_group_rule
  ADD CONSTRAINT security_group_rule_is_egress_not_null CHECK (is_egress IS NOT NULL);
COMMENT ON CONSTRAINT security_group_rule_is_egress_not_null ON public.security_group_rule IS 'is_egress is never NULL: an INSERT that leaves it NULL gets false, an UPDATE that sets it NULL keeps its value (trigger security_group_rule_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.security_group_rule_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.is_egress := coalesce(NEW.is_egress, OLD.is_egress, false);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.security_group_rule_defaults() IS 'Trigger function: fills in is_egress when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER security_group_rule_0_defaults BEFORE INSERT OR UPDATE ON public.security_group_rule
  FOR EACH ROW EXECUTE FUNCTION public.security_group_rule_defaults();
COMMENT ON TRIGGER security_group_rule_0_defaults ON public.security_group_rule IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

-- aws_security_group: security groups and their rules. The tables and their
-- columns are declared in aws_security_group.go (module.Column); this file
-- holds their constraints and triggers, which run after the tables are
-- created.

ALTER TABLE public.security_group
  ADD CONSTRAINT security_group_group_id_unique UNIQUE (group_id),
  ADD CONSTRAINT security_group_name_unique UNIQUE (vpc_id, group_name),
  ADD CONSTRAINT security_group_vpc_fk FOREIGN KEY (vpc_id, region) REFERENCES public.vpc (id, region) ON DELETE CASCADE ON UPDATE CASCADE,
  -- AWS's constraints on CreateSecurityGroup's GroupName and Description in
  -- a VPC, one constraint per rule so that the error names the rule broken
  -- (EC2 API Reference, CreateSecurityGroup:
  -- https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_CreateSecurityGroup.html).
  ADD CONSTRAINT security_group_name_1_to_255_characters CHECK (length(group_name) BETWEEN 1 AND 255),
  ADD CONSTRAINT security_group_name_not_starting_with_sg CHECK (group_name !~* '^sg-'),
  ADD CONSTRAINT security_group_name_allowed_characters CHECK (group_name ~ '^[a-zA-Z0-9 ._:/()#,@+=&;{}!$*\[\]-]*$'),
  ADD CONSTRAINT security_group_description_1_to_255_characters CHECK (length(description) BETWEEN 1 AND 255),
  ADD CONSTRAINT security_group_description_allowed_characters CHECK (description ~ '^[a-zA-Z0-9 ._:/()#,@+=&;{}!$*\[\]-]*$'),
  ADD CONSTRAINT security_group_tags_object CHECK (jsonb_typeof(tags) = 'object'),
  -- vpc_id is nullable for what introspects the schema (an ORM's model must
  -- be able to insert without it); the trigger security_group_default_vpc
  -- fills it, and this constraint refuses a row left without one.
  ADD CONSTRAINT security_group_vpc_id_set CHECK (vpc_id IS NOT NULL);
-- The id column's comment says more here than the one every table gets.
COMMENT ON COLUMN public.security_group.id IS 'Database identifier of the row; rules reference groups by it.';
COMMENT ON CONSTRAINT security_group_group_id_unique ON public.security_group IS 'A group appears once.';
COMMENT ON CONSTRAINT security_group_name_unique ON public.security_group IS 'Group names are unique within a VPC.';
COMMENT ON CONSTRAINT security_group_vpc_fk ON public.security_group IS 'A group belongs to a VPC in its region; deleting the VPC row deletes its groups.';
COMMENT ON CONSTRAINT security_group_name_1_to_255_characters ON public.security_group IS 'AWS: a group name is 1 to 255 characters long.';
COMMENT ON CONSTRAINT security_group_name_not_starting_with_sg ON public.security_group IS 'AWS: a group name cannot start with sg- (in any case).';
COMMENT ON CONSTRAINT security_group_name_allowed_characters ON public.security_group IS
  'AWS (in a VPC): a group name has only a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*';
COMMENT ON CONSTRAINT security_group_description_1_to_255_characters ON public.security_group IS 'AWS: a group description is 1 to 255 characters long.';
COMMENT ON CONSTRAINT security_group_description_allowed_characters ON public.security_group IS
  'AWS (in a VPC): a group description has only a-z, A-Z, 0-9, spaces and ._-:/()#,@[]+=&;{}!$*';
COMMENT ON CONSTRAINT security_group_tags_object ON public.security_group IS 'Tags are a JSON object.';
COMMENT ON CONSTRAINT security_group_vpc_id_set ON public.security_group IS
  'Every group is in a VPC: vpc_id is given, or filled with the region''s default VPC on INSERT, and an UPDATE that sets it NULL keeps it (the column is nullable only so that tools which introspect the schema let a write leave it out).';

CREATE OR REPLACE FUNCTION public.security_group_default_vpc() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- An UPDATE that sets it NULL (an ORM's model saving back the NULL it
  -- inserted) keeps the group where it is.
  IF TG_OP = 'UPDATE' AND NEW.vpc_id IS NULL THEN
    NEW.vpc_id := OLD.vpc_id;
  END IF;
  IF NEW.vpc_id IS NULL THEN
    SELECT v.id INTO NEW.vpc_id FROM public.vpc v WHERE v.region = NEW.region AND v.is_default;
    IF NEW.vpc_id IS NULL THEN
      RAISE EXCEPTION 'security group %: region % has no default VPC', NEW.group_name, NEW.region
        USING HINT = 'Give vpc_id (a vpc.id in that region), or create the default VPC first.';
    END IF;
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.security_group_default_vpc() IS 'Trigger function: a security group inserted without vpc_id goes in its region''s default VPC; an UPDATE that sets vpc_id NULL keeps the old one.';
CREATE TRIGGER security_group_default_vpc BEFORE INSERT OR UPDATE OF vpc_id ON public.security_group
  FOR EACH ROW EXECUTE FUNCTION public.security_group_default_vpc();
COMMENT ON TRIGGER security_group_default_vpc ON public.security_group IS 'Fills vpc_id with the region''s default VPC on INSERT, keeps it on an UPDATE that sets it NULL.';

ALTER TABLE public.security_group_rule
  ADD CONSTRAINT security_group_rule_group_fk FOREIGN KEY (security_group_id) REFERENCES public.security_group (id) ON DELETE CASCADE,
  ADD CONSTRAINT security_group_rule_source_fk FOREIGN KEY (source_security_group_id) REFERENCES public.security_group (id) ON DELETE CASCADE,
  ADD CONSTRAINT security_group_rule_rule_id_unique UNIQUE (rule_id),
  ADD CONSTRAINT security_group_rule_unique UNIQUE NULLS NOT DISTINCT (security_group_id, is_egress, ip_protocol, from_port, to_port,
    cidr_ipv4, cidr_ipv6, prefix_list_id, source_security_group_id),
  ADD CONSTRAINT security_group_rule_one_target CHECK (num_nonnulls(cidr_ipv4, cidr_ipv6, prefix_list_id, source_security_group_id) = 1),
  ADD CONSTRAINT security_group_rule_cidr_families CHECK ((cidr_ipv4 IS NULL OR family(cidr_ipv4) = 4) AND (cidr_ipv6 IS NULL OR family(cidr_ipv6) = 6)),
  ADD CONSTRAINT security_group_rule_protocol CHECK (ip_protocol IN ('-1', 'tcp', 'udp', 'icmp', 'icmpv6') OR ip_protocol ~ '^[0-9]{1,3}$'),
  ADD CONSTRAINT security_group_rule_ports CHECK (CASE
    WHEN ip_protocol = '-1' THEN from_port IS NULL AND to_port IS NULL
    WHEN ip_protocol IN ('tcp', 'udp') THEN from_port BETWEEN 0 AND 65535 AND to_port BETWEEN from_port AND 65535
    WHEN ip_protocol IN ('icmp', 'icmpv6') THEN from_port BETWEEN -1 AND 255 AND to_port BETWEEN -1 AND 255
    ELSE from_port IS NULL AND to_port IS NULL END);
COMMENT ON CONSTRAINT security_group_rule_group_fk ON public.security_group_rule IS 'A rule belongs to a group; deleting the group row deletes its rules.';
COMMENT ON CONSTRAINT security_group_rule_source_fk ON public.security_group_rule IS 'A rule''s source group is a group row; deleting it deletes the rules that reference it.';
COMMENT ON CONSTRAINT security_group_rule_rule_id_unique ON public.security_group_rule IS 'A rule appears once.';
COMMENT ON CONSTRAINT security_group_rule_unique ON public.security_group_rule IS 'AWS refuses a second identical rule (InvalidPermission.Duplicate).';
COMMENT ON CONSTRAINT security_group_rule_one_target ON public.security_group_rule IS 'Exactly one of cidr_ipv4, cidr_ipv6, prefix_list_id, source_security_group_id.';
COMMENT ON CONSTRAINT security_group_rule_cidr_families ON public.security_group_rule IS 'cidr_ipv4 is an IPv4 range, cidr_ipv6 an IPv6 one.';
COMMENT ON CONSTRAINT security_group_rule_protocol ON public.security_group_rule IS 'tcp, udp, icmp, icmpv6, -1 or a protocol number.';
COMMENT ON CONSTRAINT security_group_rule_ports ON public.security_group_rule IS 'tcp/udp need a port range 0 to 65535; icmp a type and code (-1 for any); other protocols (and -1, all) have no ports.';

CREATE OR REPLACE FUNCTION public.security_group_rule_normalize() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.ip_protocol := CASE lower(NEW.ip_protocol)
    WHEN 'all' THEN '-1' WHEN '6' THEN 'tcp' WHEN '17' THEN 'udp' WHEN '1' THEN 'icmp' WHEN '58' THEN 'icmpv6'
    ELSE lower(NEW.ip_protocol) END;
  IF NEW.ip_protocol NOT IN ('tcp', 'udp', 'icmp', 'icmpv6') AND NEW.from_port IS NOT DISTINCT FROM -1 AND NEW.to_port IS NOT DISTINCT FROM -1 THEN
    NEW.from_port := NULL;
    NEW.to_port := NULL;
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.security_group_rule_normalize() IS 'Trigger function: writes protocols and ports the way AWS reports them, so that equal rules compare equal.';
CREATE TRIGGER security_group_rule_normalize BEFORE INSERT OR UPDATE ON public.security_group_rule
  FOR EACH ROW EXECUTE FUNCTION public.security_group_rule_normalize();
COMMENT ON TRIGGER security_group_rule_normalize ON public.security_group_rule IS 'Normalises ip_protocol, and the -1 ports AWS reports for protocols without ports.';

CREATE TRIGGER security_group_region_check BEFORE INSERT OR UPDATE OF region ON public.security_group
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER security_group_region_check ON public.security_group IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';

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
