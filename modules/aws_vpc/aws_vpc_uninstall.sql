-- Uninstalling aws_vpc: after its tables are dropped (with their
-- triggers), its functions go too.
DROP FUNCTION IF EXISTS public.subnet_cidr_check();
DROP FUNCTION IF EXISTS public.subnet_cidr_require(integer);
