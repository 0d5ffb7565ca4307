-- Uninstalling aws_ec2: after the instance table is dropped (with its
-- triggers), its trigger on aws_security_group's table and its functions go
-- too. security_group outlives aws_ec2 (aws_ec2 depends on it, so it is
-- uninstalled after, or with it later in the same transaction).
DROP TRIGGER IF EXISTS security_group_in_use ON public.security_group;
DROP FUNCTION IF EXISTS public.security_group_in_use();
DROP FUNCTION IF EXISTS public.instance_references_check();
DROP FUNCTION IF EXISTS public.instance_key_name_check(text);
