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
