-- Uninstalling aws_iam: after its tables are dropped (with their
-- triggers), the functions of those triggers go too.
DROP FUNCTION IF EXISTS public.iam_policy_in_use();
DROP FUNCTION IF EXISTS public.iam_role_policy_ids_check();
DROP FUNCTION IF EXISTS public.iam_policy_renamed();
