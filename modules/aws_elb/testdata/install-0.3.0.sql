-- What installing aws_elb 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declaration with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.load_balancer (
  id serial PRIMARY KEY,
  name text NOT NULL,
  scheme text,
  subnets bigint[] NOT NULL,
  security_groups bigint[],
  region text,
  tags jsonb,
  load_balancer_arn text,
  dns_name text,
  state text
);
COMMENT ON TABLE public.load_balancer IS 'Application load balancers of the enabled regions. Insert a row (name, subnets, and usually security_groups) to create one; it is provisioning for a while, then active. Changing name, scheme or region replaces the load balancer (and AWS deletes its listeners with the old one); subnets, security groups and tags change in place. Delete the row to delete it.';
COMMENT ON COLUMN public.load_balancer.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.load_balancer.name IS 'Name, unique per region: 1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen nor beginning with internal-. Fixed at creation.';
COMMENT ON COLUMN public.load_balancer.scheme IS 'internet-facing (public addresses) or internal. Fixed at creation: changing it replaces the load balancer.';
COMMENT ON COLUMN public.load_balancer.subnets IS 'Subnets (subnet.id) of one VPC, at least two in two availability zones, one per zone, in any order. Changed in place (SetSubnets).';
COMMENT ON COLUMN public.load_balancer.security_groups IS 'Security groups (security_group.id) of the subnets'' VPC, in any order; empty: the VPC''s default group, AWS''s choice at creation, whose row the engine writes here once the load balancer exists. Changed in place (SetSecurityGroups).';
COMMENT ON COLUMN public.load_balancer.region IS 'Region of the load balancer: its subnets'' (default: default_aws_region()). Fixed at creation.';
COMMENT ON COLUMN public.load_balancer.tags IS 'Tags as a JSON object of key to value.';
COMMENT ON COLUMN public.load_balancer.load_balancer_arn IS 'The load balancer''s ARN (from the cloud).';
COMMENT ON COLUMN public.load_balancer.dns_name IS 'The load balancer''s DNS name (from the cloud).';
COMMENT ON COLUMN public.load_balancer.state IS 'provisioning, active, active_impaired or failed (from the cloud).';
COMMENT ON SEQUENCE public.load_balancer_id_seq IS 'Generates load_balancer.id.';
ALTER TABLE public.load_balancer
  ADD CONSTRAINT load_balancer_scheme_not_null CHECK (scheme IS NOT NULL),
  ADD CONSTRAINT load_balancer_security_groups_not_null CHECK (security_groups IS NOT NULL),
  ADD CONSTRAINT load_balancer_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT load_balancer_tags_not_null CHECK (tags IS NOT NULL);
COMMENT ON CONSTRAINT load_balancer_scheme_not_null ON public.load_balancer IS 'scheme is never NULL: an INSERT that leaves it NULL gets ''internet-facing'', an UPDATE that sets it NULL keeps its value (trigger load_balancer_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT load_balancer_security_groups_not_null ON public.load_balancer IS 'security_groups is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger load_balancer_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT load_balancer_region_not_null ON public.load_balancer IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger load_balancer_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT load_balancer_tags_not_null ON public.load_balancer IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger load_balancer_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.load_balancer_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.scheme := coalesce(NEW.scheme, OLD.scheme, 'internet-facing');
  NEW.security_groups := coalesce(NEW.security_groups, OLD.security_groups, '{}');
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.load_balancer_defaults() IS 'Trigger function: fills in scheme, security_groups, region, tags when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER load_balancer_0_defaults BEFORE INSERT OR UPDATE ON public.load_balancer
  FOR EACH ROW EXECUTE FUNCTION public.load_balancer_defaults();
COMMENT ON TRIGGER load_balancer_0_defaults ON public.load_balancer IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

CREATE TABLE public.target_group (
  id serial PRIMARY KEY,
  name text NOT NULL,
  protocol text,
  port integer NOT NULL,
  vpc_id integer NOT NULL,
  health_check_protocol text,
  health_check_port text,
  health_check_path text,
  health_check_interval_seconds integer,
  health_check_timeout_seconds integer,
  healthy_threshold_count integer,
  unhealthy_threshold_count integer,
  matcher text,
  region text,
  tags jsonb,
  target_group_arn text
);
COMMENT ON TABLE public.target_group IS 'Target groups of instances for application load balancers (protocol HTTP or HTTPS), in the enabled regions. Insert a row (name, port, vpc_id) to create one. Changing name, protocol, port, vpc_id or region replaces the group (its listeners and targets move to the new one); health check settings and tags change in place.';
COMMENT ON COLUMN public.target_group.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.target_group.name IS 'Name, unique per region: 1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen. Fixed at creation.';
COMMENT ON COLUMN public.target_group.protocol IS 'Protocol to the targets: HTTP or HTTPS. Fixed at creation.';
COMMENT ON COLUMN public.target_group.port IS 'Port the targets receive traffic on (1 to 65535), unless a target says otherwise. Fixed at creation.';
COMMENT ON COLUMN public.target_group.vpc_id IS 'The VPC (vpc.id) of the group''s instances. Fixed at creation.';
COMMENT ON COLUMN public.target_group.health_check_protocol IS 'Protocol of the health checks: HTTP or HTTPS.';
COMMENT ON COLUMN public.target_group.health_check_port IS 'Port of the health checks: traffic-port (each target''s own) or a port number.';
COMMENT ON COLUMN public.target_group.health_check_path IS 'Path the health checks request, beginning with /.';
COMMENT ON COLUMN public.target_group.health_check_interval_seconds IS 'Seconds between health checks of a target, 5 to 300.';
COMMENT ON COLUMN public.target_group.health_check_timeout_seconds IS 'Seconds without an answer that fail a health check, 2 to 120, less than the interval.';
COMMENT ON COLUMN public.target_group.healthy_threshold_count IS 'Consecutive successful checks that make an unhealthy target healthy, 2 to 10.';
COMMENT ON COLUMN public.target_group.unhealthy_threshold_count IS 'Consecutive failed checks that make a target unhealthy, 2 to 10.';
COMMENT ON COLUMN public.target_group.matcher IS 'HTTP codes of a successful check: a code, a list (200,202) or a range (200-299).';
COMMENT ON COLUMN public.target_group.region IS 'Region of the target group: its VPC''s (default: default_aws_region()). Fixed at creation.';
COMMENT ON COLUMN public.target_group.tags IS 'Tags as a JSON object of key to value.';
COMMENT ON COLUMN public.target_group.target_group_arn IS 'The target group''s ARN (from the cloud).';
COMMENT ON SEQUENCE public.target_group_id_seq IS 'Generates target_group.id.';
ALTER TABLE public.target_group
  ADD CONSTRAINT target_group_protocol_not_null CHECK (protocol IS NOT NULL),
  ADD CONSTRAINT target_group_health_check_protocol_not_null CHECK (health_check_protocol IS NOT NULL),
  ADD CONSTRAINT target_group_health_check_port_not_null CHECK (health_check_port IS NOT NULL),
  ADD CONSTRAINT target_group_health_check_path_not_null CHECK (health_check_path IS NOT NULL),
  ADD CONSTRAINT target_group_health_check_interval_seconds_not_null CHECK (health_check_interval_seconds IS NOT NULL),
  ADD CONSTRAINT target_group_health_check_timeout_seconds_not_null CHECK (health_check_timeout_seconds IS NOT NULL),
  ADD CONSTRAINT target_group_healthy_threshold_count_not_null CHECK (healthy_threshold_count IS NOT NULL),
  ADD CONSTRAINT target_group_unhealthy_threshold_count_not_null CHECK (unhealthy_threshold_count IS NOT NULL),
  ADD CONSTRAINT target_group_matcher_not_null CHECK (matcher IS NOT NULL),
  ADD CONSTRAINT target_group_region_not_null CHECK (region IS NOT NULL),
  ADD CONSTRAINT target_group_tags_not_null CHECK (tags IS NOT NULL);
COMMENT ON CONSTRAINT target_group_protocol_not_null ON public.target_group IS 'protocol is never NULL: an INSERT that leaves it NULL gets ''HTTP'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_health_check_protocol_not_null ON public.target_group IS 'health_check_protocol is never NULL: an INSERT that leaves it NULL gets ''HTTP'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_health_check_port_not_null ON public.target_group IS 'health_check_port is never NULL: an INSERT that leaves it NULL gets ''traffic-port'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_health_check_path_not_null ON public.target_group IS 'health_check_path is never NULL: an INSERT that leaves it NULL gets ''/'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_health_check_interval_seconds_not_null ON public.target_group IS 'health_check_interval_seconds is never NULL: an INSERT that leaves it NULL gets 30, an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_health_check_timeout_seconds_not_null ON public.target_group IS 'health_check_timeout_seconds is never NULL: an INSERT that leaves it NULL gets 5, an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_healthy_threshold_count_not_null ON public.target_group IS 'healthy_threshold_count is never NULL: an INSERT that leaves it NULL gets 5, an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_unhealthy_threshold_count_not_null ON public.target_group IS 'unhealthy_threshold_count is never NULL: an INSERT that leaves it NULL gets 2, an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_matcher_not_null ON public.target_group IS 'matcher is never NULL: an INSERT that leaves it NULL gets ''200'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_region_not_null ON public.target_group IS 'region is never NULL: an INSERT that leaves it NULL gets public.default_aws_region(), an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT target_group_tags_not_null ON public.target_group IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger target_group_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.target_group_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.protocol := coalesce(NEW.protocol, OLD.protocol, 'HTTP');
  NEW.health_check_protocol := coalesce(NEW.health_check_protocol, OLD.health_check_protocol, 'HTTP');
  NEW.health_check_port := coalesce(NEW.health_check_port, OLD.health_check_port, 'traffic-port');
  NEW.health_check_path := coalesce(NEW.health_check_path, OLD.health_check_path, '/');
  NEW.health_check_interval_seconds := coalesce(NEW.health_check_interval_seconds, OLD.health_check_interval_seconds, 30);
  NEW.health_check_timeout_seconds := coalesce(NEW.health_check_timeout_seconds, OLD.health_check_timeout_seconds, 5);
  NEW.healthy_threshold_count := coalesce(NEW.healthy_threshold_count, OLD.healthy_threshold_count, 5);
  NEW.unhealthy_threshold_count := coalesce(NEW.unhealthy_threshold_count, OLD.unhealthy_threshold_count, 2);
  NEW.matcher := coalesce(NEW.matcher, OLD.matcher, '200');
  NEW.region := coalesce(NEW.region, OLD.region, public.default_aws_region());
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.target_group_defaults() IS 'Trigger function: fills in protocol, health_check_protocol, health_check_port, health_check_path, health_check_interval_seconds, health_check_timeout_seconds, healthy_threshold_count, unhealthy_threshold_count, matcher, region, tags when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER target_group_0_defaults BEFORE INSERT OR UPDATE ON public.target_group
  FOR EACH ROW EXECUTE FUNCTION public.target_group_defaults();
COMMENT ON TRIGGER target_group_0_defaults ON public.target_group IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

CREATE TABLE public.target (
  id serial PRIMARY KEY,
  target_group_id integer NOT NULL,
  instance_id integer NOT NULL,
  port integer,
  health_state text
);
COMMENT ON TABLE public.target IS 'Instances registered with target groups. Insert a row (target_group_id, instance_id) to register an instance; delete it to deregister the instance (it drains first while a load balancer uses the group). A target is known by its group, instance and port: changing any of them deregisters it and registers the new one.';
COMMENT ON COLUMN public.target.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.target.target_group_id IS 'The target group (target_group.id).';
COMMENT ON COLUMN public.target.instance_id IS 'The instance (instance.id), in the target group''s VPC and region.';
COMMENT ON COLUMN public.target.port IS 'Port the instance receives traffic on; left NULL, the target group''s port is filled in.';
COMMENT ON COLUMN public.target.health_state IS 'initial, healthy, unhealthy, unused, draining or unavailable, as AWS last reported it (from the cloud).';
COMMENT ON SEQUENCE public.target_id_seq IS 'Generates target.id.';

CREATE TABLE public.listener (
  id serial PRIMARY KEY,
  load_balancer_id integer NOT NULL,
  protocol text,
  port integer NOT NULL,
  certificate_arn text,
  target_group_id integer NOT NULL,
  listener_arn text
);
COMMENT ON TABLE public.listener IS 'Listeners of the load balancers, each forwarding to a target group by default. Insert a row (load_balancer_id, port, target_group_id) to create one; listener_arn is filled in once AWS has created it. Protocol, port, certificate and target group change in place; moving a listener to another load balancer replaces it.';
COMMENT ON COLUMN public.listener.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.listener.load_balancer_id IS 'The load balancer (load_balancer.id). Fixed at creation: changing it replaces the listener.';
COMMENT ON COLUMN public.listener.protocol IS 'HTTP or HTTPS (which needs certificate_arn).';
COMMENT ON COLUMN public.listener.port IS 'Port the load balancer listens on, 1 to 65535, one listener per port.';
COMMENT ON COLUMN public.listener.certificate_arn IS 'ARN of the server certificate of an HTTPS listener; NULL for HTTP.';
COMMENT ON COLUMN public.listener.target_group_id IS 'The target group (target_group.id) the default action forwards to, in the load balancer''s VPC.';
COMMENT ON COLUMN public.listener.listener_arn IS 'The listener''s ARN, given by AWS at creation (from the cloud).';
COMMENT ON SEQUENCE public.listener_id_seq IS 'Generates listener.id.';
ALTER TABLE public.listener
  ADD CONSTRAINT listener_protocol_not_null CHECK (protocol IS NOT NULL);
COMMENT ON CONSTRAINT listener_protocol_not_null ON public.listener IS 'protocol is never NULL: an INSERT that leaves it NULL gets ''HTTP'', an UPDATE that sets it NULL keeps its value (trigger listener_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.listener_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.protocol := coalesce(NEW.protocol, OLD.protocol, 'HTTP');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.listener_defaults() IS 'Trigger function: fills in protocol when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER listener_0_defaults BEFORE INSERT OR UPDATE ON public.listener
  FOR EACH ROW EXECUTE FUNCTION public.listener_defaults();
COMMENT ON TRIGGER listener_0_defaults ON public.listener IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

-- aws_elb: application load balancers, their target groups, targets and
-- listeners. The tables and their columns are declared in aws_elb.go
-- (module.Column); this file holds their constraints and triggers, which
-- run after the tables are created.

-- Names: CreateLoadBalancer's and CreateTargetGroup's Name.
-- https://docs.aws.amazon.com/elasticloadbalancing/latest/APIReference/API_CreateLoadBalancer.html
ALTER TABLE public.load_balancer
  ADD CONSTRAINT load_balancer_name_region_unique UNIQUE (name, region),
  ADD CONSTRAINT load_balancer_name_format CHECK (name ~ '^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$' AND name NOT LIKE 'internal-%'),
  ADD CONSTRAINT load_balancer_scheme_valid CHECK (scheme IN ('internet-facing', 'internal')),
  ADD CONSTRAINT load_balancer_subnets_two CHECK (cardinality(subnets) >= 2 AND array_position(subnets, NULL) IS NULL),
  ADD CONSTRAINT load_balancer_security_groups_no_nulls CHECK (array_position(security_groups, NULL) IS NULL),
  ADD CONSTRAINT load_balancer_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT load_balancer_tags_object CHECK (jsonb_typeof(tags) = 'object');
COMMENT ON CONSTRAINT load_balancer_name_region_unique ON public.load_balancer IS 'A load balancer''s name is unique in its region (and account), as AWS requires.';
COMMENT ON CONSTRAINT load_balancer_name_format ON public.load_balancer IS '1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen, not beginning with internal-.';
COMMENT ON CONSTRAINT load_balancer_scheme_valid ON public.load_balancer IS 'The schemes AWS offers: internet-facing or internal.';
COMMENT ON CONSTRAINT load_balancer_subnets_two ON public.load_balancer IS 'An application load balancer needs subnets in two availability zones at least; none NULL.';
COMMENT ON CONSTRAINT load_balancer_security_groups_no_nulls ON public.load_balancer IS 'security_groups lists security_group.id values, none NULL.';
COMMENT ON CONSTRAINT load_balancer_region_format ON public.load_balancer IS 'A region code such as us-east-1.';
COMMENT ON CONSTRAINT load_balancer_tags_object ON public.load_balancer IS 'Tags are a JSON object.';

ALTER TABLE public.target_group
  ADD CONSTRAINT target_group_name_region_unique UNIQUE (name, region),
  ADD CONSTRAINT target_group_vpc_fk FOREIGN KEY (vpc_id, region) REFERENCES public.vpc (id, region),
  ADD CONSTRAINT target_group_name_format CHECK (name ~ '^[a-zA-Z0-9]([a-zA-Z0-9-]{0,30}[a-zA-Z0-9])?$'),
  ADD CONSTRAINT target_group_protocol_valid CHECK (protocol IN ('HTTP', 'HTTPS') AND health_check_protocol IN ('HTTP', 'HTTPS')),
  ADD CONSTRAINT target_group_port_range CHECK (port BETWEEN 1 AND 65535),
  ADD CONSTRAINT target_group_health_check_port_valid CHECK (health_check_port = 'traffic-port'
    OR (health_check_port ~ '^[0-9]{1,5}$' AND health_check_port::integer BETWEEN 1 AND 65535)),
  ADD CONSTRAINT target_group_health_check_path_valid CHECK (health_check_path LIKE '/%' AND length(health_check_path) <= 1024),
  ADD CONSTRAINT target_group_health_check_timing CHECK (health_check_interval_seconds BETWEEN 5 AND 300
    AND health_check_timeout_seconds BETWEEN 2 AND 120 AND health_check_timeout_seconds < health_check_interval_seconds),
  ADD CONSTRAINT target_group_thresholds_range CHECK (healthy_threshold_count BETWEEN 2 AND 10 AND unhealthy_threshold_count BETWEEN 2 AND 10),
  ADD CONSTRAINT target_group_matcher_format CHECK (matcher ~ '^[0-9]{3}([,-][0-9]{3})*$'),
  ADD CONSTRAINT target_group_region_format CHECK (region ~ '^[a-z]{2}(-[a-z]+)+-[0-9]+$'),
  ADD CONSTRAINT target_group_tags_object CHECK (jsonb_typeof(tags) = 'object');
COMMENT ON CONSTRAINT target_group_name_region_unique ON public.target_group IS 'A target group''s name is unique in its region (and account), as AWS requires.';
COMMENT ON CONSTRAINT target_group_vpc_fk ON public.target_group IS 'A target group is in a VPC of its region; a VPC row used by target groups cannot be deleted.';
COMMENT ON CONSTRAINT target_group_name_format ON public.target_group IS '1 to 32 letters, digits or hyphens, not beginning or ending with a hyphen.';
COMMENT ON CONSTRAINT target_group_protocol_valid ON public.target_group IS 'Application load balancers forward and check health over HTTP or HTTPS.';
COMMENT ON CONSTRAINT target_group_port_range ON public.target_group IS 'A port from 1 to 65535.';
COMMENT ON CONSTRAINT target_group_health_check_port_valid ON public.target_group IS 'traffic-port or a port from 1 to 65535.';
COMMENT ON CONSTRAINT target_group_health_check_path_valid ON public.target_group IS 'A path beginning with /, at most 1024 characters.';
COMMENT ON CONSTRAINT target_group_health_check_timing ON public.target_group IS 'Interval 5 to 300 s, timeout 2 to 120 s and less than the interval (CreateTargetGroup''s ranges).';
COMMENT ON CONSTRAINT target_group_thresholds_range ON public.target_group IS 'Healthy and unhealthy thresholds from 2 to 10.';
COMMENT ON CONSTRAINT target_group_matcher_format ON public.target_group IS 'HTTP codes: a code, a list (200,202) or a range (200-299).';
COMMENT ON CONSTRAINT target_group_region_format ON public.target_group IS 'A region code such as us-east-1.';
COMMENT ON CONSTRAINT target_group_tags_object ON public.target_group IS 'Tags are a JSON object.';

ALTER TABLE public.target
  ADD CONSTRAINT target_identity_unique UNIQUE (target_group_id, instance_id, port),
  ADD CONSTRAINT target_target_group_fk FOREIGN KEY (target_group_id) REFERENCES public.target_group (id) ON DELETE CASCADE,
  ADD CONSTRAINT target_instance_fk FOREIGN KEY (instance_id) REFERENCES public.instance (id) ON DELETE CASCADE,
  ADD CONSTRAINT target_port_range CHECK (port BETWEEN 1 AND 65535);
COMMENT ON CONSTRAINT target_identity_unique ON public.target IS 'An instance is registered once per group and port.';
COMMENT ON CONSTRAINT target_target_group_fk ON public.target IS 'A target is in a target group; deleting the group''s row deletes its targets'' rows (AWS forgets them with the group).';
COMMENT ON CONSTRAINT target_instance_fk ON public.target IS 'A target is an instance; deleting the instance''s row (terminating it) deletes its targets'' rows (AWS deregisters terminated instances).';
COMMENT ON CONSTRAINT target_port_range ON public.target IS 'A port from 1 to 65535.';

ALTER TABLE public.listener
  ADD CONSTRAINT listener_listener_arn_unique UNIQUE (listener_arn),
  ADD CONSTRAINT listener_port_unique UNIQUE (load_balancer_id, port) DEFERRABLE INITIALLY DEFERRED,
  ADD CONSTRAINT listener_load_balancer_fk FOREIGN KEY (load_balancer_id) REFERENCES public.load_balancer (id) ON DELETE CASCADE,
  ADD CONSTRAINT listener_target_group_fk FOREIGN KEY (target_group_id) REFERENCES public.target_group (id),
  ADD CONSTRAINT listener_protocol_valid CHECK (protocol IN ('HTTP', 'HTTPS')),
  ADD CONSTRAINT listener_certificate_https CHECK ((protocol = 'HTTPS') = (certificate_arn IS NOT NULL)),
  ADD CONSTRAINT listener_port_range CHECK (port BETWEEN 1 AND 65535);
COMMENT ON CONSTRAINT listener_listener_arn_unique ON public.listener IS 'A listener appears once.';
COMMENT ON CONSTRAINT listener_port_unique ON public.listener IS 'One listener per port of a load balancer (checked at commit, so that two listeners can swap ports).';
COMMENT ON CONSTRAINT listener_load_balancer_fk ON public.listener IS 'A listener is on a load balancer; deleting the load balancer''s row deletes its listeners'' rows (AWS deletes them with it).';
COMMENT ON CONSTRAINT listener_target_group_fk ON public.listener IS 'A listener forwards to a target group; a group a listener forwards to cannot be deleted (AWS''s ResourceInUse).';
COMMENT ON CONSTRAINT listener_protocol_valid ON public.listener IS 'Application load balancers listen on HTTP or HTTPS.';
COMMENT ON CONSTRAINT listener_certificate_https ON public.listener IS 'An HTTPS listener needs a certificate, an HTTP one takes none.';
COMMENT ON CONSTRAINT listener_port_range ON public.listener IS 'A port from 1 to 65535.';

CREATE OR REPLACE FUNCTION public.load_balancer_references_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT s INTO missing FROM unnest(NEW.subnets) AS s
   WHERE NOT EXISTS (SELECT 1 FROM public.subnet x WHERE x.id = s AND x.region = NEW.region) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'load_balancer: subnet % is not a subnet row of region %', missing, NEW.region
      USING HINT = 'subnets lists subnet.id values of the load balancer''s region.';
  END IF;
  SELECT g INTO missing FROM unnest(NEW.security_groups) AS g
   WHERE NOT EXISTS (SELECT 1 FROM public.security_group x WHERE x.id = g AND x.region = NEW.region) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'load_balancer: security group % is not a security_group row of region %', missing, NEW.region
      USING HINT = 'security_groups lists security_group.id values of the load balancer''s region.';
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.load_balancer_references_check() IS 'Trigger function: a load balancer''s subnets and security groups are rows of its region.';
CREATE TRIGGER load_balancer_references_check BEFORE INSERT OR UPDATE OF subnets, security_groups, region ON public.load_balancer
  FOR EACH ROW EXECUTE FUNCTION public.load_balancer_references_check();
COMMENT ON TRIGGER load_balancer_references_check ON public.load_balancer IS 'Checks the load balancer''s subnets and security groups against its region.';

CREATE OR REPLACE FUNCTION public.target_fill() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  group_region text;
  group_port integer;
  instance_region text;
BEGIN
  SELECT g.region, g.port INTO group_region, group_port FROM public.target_group g WHERE g.id = NEW.target_group_id;
  SELECT i.region INTO instance_region FROM public.instance i WHERE i.id = NEW.instance_id;
  IF group_region IS DISTINCT FROM instance_region THEN
    RAISE EXCEPTION 'target: instance % is in region %, target group % in %', NEW.instance_id, instance_region, NEW.target_group_id, group_region
      USING HINT = 'Register instances of the target group''s region.';
  END IF;
  NEW.port := coalesce(NEW.port, group_port);
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.target_fill() IS 'Trigger function: a target''s instance is of its group''s region, and a NULL port is the group''s port (a target is known by its port).';
CREATE TRIGGER target_fill BEFORE INSERT OR UPDATE ON public.target
  FOR EACH ROW EXECUTE FUNCTION public.target_fill();
COMMENT ON TRIGGER target_fill ON public.target IS 'Fills in the port and checks the regions of a target.';

CREATE OR REPLACE FUNCTION public.listener_references_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  lb_region text;
  group_region text;
BEGIN
  SELECT l.region INTO lb_region FROM public.load_balancer l WHERE l.id = NEW.load_balancer_id;
  SELECT g.region INTO group_region FROM public.target_group g WHERE g.id = NEW.target_group_id;
  IF lb_region IS DISTINCT FROM group_region THEN
    RAISE EXCEPTION 'listener: target group % is in region %, load balancer % in %', NEW.target_group_id, group_region, NEW.load_balancer_id, lb_region
      USING HINT = 'Forward to a target group of the load balancer''s region.';
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.listener_references_check() IS 'Trigger function: a listener''s target group is of its load balancer''s region.';
CREATE TRIGGER listener_references_check BEFORE INSERT OR UPDATE OF load_balancer_id, target_group_id ON public.listener
  FOR EACH ROW EXECUTE FUNCTION public.listener_references_check();
COMMENT ON TRIGGER listener_references_check ON public.listener IS 'Checks that a listener forwards to a target group of its load balancer''s region.';

CREATE TRIGGER load_balancer_region_check BEFORE INSERT OR UPDATE OF region ON public.load_balancer
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER load_balancer_region_check ON public.load_balancer IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';

CREATE TRIGGER target_group_region_check BEFORE INSERT OR UPDATE OF region ON public.target_group
  FOR EACH ROW EXECUTE FUNCTION public.aws_region_check();
COMMENT ON TRIGGER target_group_region_check ON public.target_group IS 'Refuses a region that is not in aws_regions or not enabled there (aws_account''s aws_region_check()).';

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
