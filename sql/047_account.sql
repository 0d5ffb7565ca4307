-- The cloud account the database is bound to. On first use the sidecar
-- records the AWS account its credentials belong to (STS GetCallerIdentity)
-- and the endpoint it syncs with; a sidecar whose credentials or endpoint
-- differ runs no cycle (capture goes on) until an administrator rebinds the
-- database deliberately with iasql_rebind_account().
CREATE TABLE public.iasql_account (
  singleton           boolean PRIMARY KEY DEFAULT true CONSTRAINT iasql_account_one CHECK (singleton),
  account_id          text NOT NULL,
  arn                 text,
  endpoint            text,
  bound_at            timestamptz NOT NULL DEFAULT pg_catalog.clock_timestamp(),
  previous_account_id text,
  previous_endpoint   text
);
COMMENT ON TABLE public.iasql_account IS 'The AWS account (and endpoint) this database syncs with, one row, recorded by the first sidecar that ran a cycle: a sidecar with other credentials or another endpoint runs no cycle. SELECT iasql_rebind_account() binds it to the running sidecar''s account.';
COMMENT ON COLUMN public.iasql_account.singleton IS 'Always true: the table holds at most one row.';
COMMENT ON COLUMN public.iasql_account.account_id IS 'The AWS account id the sidecar''s credentials belonged to (STS GetCallerIdentity).';
COMMENT ON COLUMN public.iasql_account.arn IS 'The identity that bound the database (its ARN), for the record; later sidecars may use other identities of the same account.';
COMMENT ON COLUMN public.iasql_account.endpoint IS 'The endpoint the sidecar synced with (AWS_ENDPOINT_URL); NULL for AWS''s own endpoints.';
COMMENT ON COLUMN public.iasql_account.bound_at IS 'When the database was bound (first use, or the last rebind).';
COMMENT ON COLUMN public.iasql_account.previous_account_id IS 'The account the database was bound to before the last rebind (NULL when never rebound).';
COMMENT ON COLUMN public.iasql_account.previous_endpoint IS 'The endpoint the database was bound to before the last rebind.';
COMMENT ON CONSTRAINT iasql_account_one ON public.iasql_account IS 'One row at most.';
REVOKE ALL ON public.iasql_account FROM PUBLIC;
GRANT SELECT ON public.iasql_account TO iasql_reader;
CREATE TRIGGER iasql_account_guard BEFORE INSERT OR UPDATE OR DELETE OR TRUNCATE ON public.iasql_account
  FOR EACH STATEMENT EXECUTE FUNCTION public.iasql_guard_capture_tables('2', '4');
COMMENT ON TRIGGER iasql_account_guard ON public.iasql_account IS 'Only the sidecar records the account binding.';

-- The deliberate rebind: the running sidecar binds the database to the
-- account and endpoint of its own credentials. Not executable by PUBLIC.
CREATE FUNCTION public.iasql_rebind_account() RETURNS text
LANGUAGE sql AS $$
  SELECT public.iasql_request('rebind_account')->>'message'
$$;
COMMENT ON FUNCTION public.iasql_rebind_account() IS
  'Binds the database to the AWS account and endpoint of the running sidecar''s credentials, replacing the binding that made it refuse cycles. Its next cycle syncs the tables with that account (in NORMAL mode, rows of the old account''s resources are removed and the new account''s imported). Only roles granted EXECUTE may call it.';
REVOKE ALL ON FUNCTION public.iasql_rebind_account() FROM PUBLIC;
