-- Uninstalling aws_elb: after its tables are dropped (with their
-- triggers), its trigger functions go too.
DROP FUNCTION IF EXISTS public.load_balancer_references_check();
DROP FUNCTION IF EXISTS public.target_fill();
DROP FUNCTION IF EXISTS public.listener_references_check();
