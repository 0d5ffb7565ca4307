-- Uninstalling aws_security_group: after its tables are dropped (with
-- their triggers), its trigger functions go too.
DROP FUNCTION IF EXISTS public.security_group_default_vpc();
DROP FUNCTION IF EXISTS public.security_group_rule_normalize();
