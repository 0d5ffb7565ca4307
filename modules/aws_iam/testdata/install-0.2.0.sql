-- What installing aws_iam 0.2.0 ran (its InstallSQL), kept as released: TestModuleUpgradeSQL
-- installs it, applies the module's upgrades from there and compares with a fresh install.
CREATE TABLE public.iam_role (
  id serial PRIMARY KEY,
  role_name text NOT NULL,
  assume_role_policy_document jsonb NOT NULL,
  description text,
  max_session_duration integer,
  attached_policy_arns text[],
  inline_policies jsonb,
  arn text,
  role_id text,
  created_at timestamp with time zone
);
COMMENT ON TABLE public.iam_role IS 'IAM roles of the account (IAM is global: one set of roles whatever the region). Only roles with the path / are managed here; roles under other paths (service-role/, aws-service-role/ and the like) are neither listed nor touched. Insert a row to create a role, update it to change its trust policy, description, maximum session, attached managed policies or inline policies, delete it to delete the role (its policies are detached and deleted first). Changing role_name replaces the role.';
COMMENT ON COLUMN public.iam_role.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.iam_role.role_name IS 'Role name: 1 to 64 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the role.';
COMMENT ON COLUMN public.iam_role.assume_role_policy_document IS 'Trust policy: who may assume the role, as a JSON policy document (an object). Compared by meaning: key order and whitespace do not matter, values do (a string and a list of one string differ).';
COMMENT ON COLUMN public.iam_role.description IS 'Description of the role, up to 1000 characters; NULL and the empty string both mean none.';
COMMENT ON COLUMN public.iam_role.max_session_duration IS 'Maximum session duration in seconds for sessions that assume the role: 3600 (one hour, the default) to 43200 (12 hours).';
COMMENT ON COLUMN public.iam_role.attached_policy_arns IS 'ARNs of the managed policies attached to the role, e.g. arn:aws:iam::aws:policy/ReadOnlyAccess. A set: order and repetition do not matter.';
COMMENT ON COLUMN public.iam_role.inline_policies IS 'Inline policies embedded in the role, as a JSON object from policy name (1 to 128 letters, digits and _+=,.@- characters) to policy document (an object). Documents are compared by meaning.';
COMMENT ON COLUMN public.iam_role.arn IS 'ARN of the role, arn:aws:iam::<account>:role/<name> (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_role.role_id IS 'Stable unique id IAM gave the role, beginning with AROA (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_role.created_at IS 'When IAM created the role (from the cloud; not written to it).';
COMMENT ON SEQUENCE public.iam_role_id_seq IS 'Generates iam_role.id.';
ALTER TABLE public.iam_role
  ADD CONSTRAINT iam_role_max_session_duration_not_null CHECK (max_session_duration IS NOT NULL),
  ADD CONSTRAINT iam_role_attached_policy_arns_not_null CHECK (attached_policy_arns IS NOT NULL),
  ADD CONSTRAINT iam_role_inline_policies_not_null CHECK (inline_policies IS NOT NULL);
COMMENT ON CONSTRAINT iam_role_max_session_duration_not_null ON public.iam_role IS 'max_session_duration is never NULL: an INSERT that leaves it NULL gets 3600, an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_role_attached_policy_arns_not_null ON public.iam_role IS 'attached_policy_arns is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_role_inline_policies_not_null ON public.iam_role IS 'inline_policies is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.iam_role_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.max_session_duration := coalesce(NEW.max_session_duration, OLD.max_session_duration, 3600);
  NEW.attached_policy_arns := coalesce(NEW.attached_policy_arns, OLD.attached_policy_arns, '{}');
  NEW.inline_policies := coalesce(NEW.inline_policies, OLD.inline_policies, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iam_role_defaults() IS 'Trigger function: fills in max_session_duration, attached_policy_arns, inline_policies when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER iam_role_0_defaults BEFORE INSERT OR UPDATE ON public.iam_role
  FOR EACH ROW EXECUTE FUNCTION public.iam_role_defaults();
COMMENT ON TRIGGER iam_role_0_defaults ON public.iam_role IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

-- aws_iam: IAM roles with their managed policy attachments and inline
-- policies. The table and its columns are declared in aws_iam.go
-- (module.Column); this file holds its constraints and index, which run
-- after the table is created.

ALTER TABLE public.iam_role
  ADD CONSTRAINT iam_role_name_unique UNIQUE (role_name),
  ADD CONSTRAINT iam_role_name_iam_rules CHECK (role_name ~ '^[A-Za-z0-9_+=,.@-]{1,64}$'),
  ADD CONSTRAINT iam_role_assume_role_policy_document_object CHECK (jsonb_typeof(assume_role_policy_document) = 'object'),
  ADD CONSTRAINT iam_role_description_iam_rules CHECK (
    char_length(description) <= 1000
    AND description ~ '^[\t\n\r\x20-\x7E\xA1-\xFF]*$'),
  ADD CONSTRAINT iam_role_max_session_duration_range CHECK (max_session_duration BETWEEN 3600 AND 43200),
  ADD CONSTRAINT iam_role_attached_policy_arns_format CHECK (
    array_position(attached_policy_arns, NULL) IS NULL
    AND array_to_string(attached_policy_arns, E'\n') ~
      '^(arn:aws[a-z-]*:iam::(aws|[0-9]{12}):policy/([!-~]+/)?[A-Za-z0-9_+=,.@-]{1,128}(\n|$))*$'),
  ADD CONSTRAINT iam_role_inline_policies_format CHECK (
    jsonb_typeof(inline_policies) = 'object'
    AND NOT jsonb_path_exists(inline_policies, '$.* ? (@.type() != "object")')
    AND NOT jsonb_path_exists(inline_policies, '$.keyvalue() ? (!(@.key like_regex "^[A-Za-z0-9_+=,.@-]{1,128}$"))'));
CREATE UNIQUE INDEX iam_role_name_case_insensitive_unique ON public.iam_role (lower(role_name));

COMMENT ON COLUMN public.iam_role.id IS 'Database identifier of the row; the cloud knows the role by name.';
COMMENT ON CONSTRAINT iam_role_name_unique ON public.iam_role IS 'A role name appears once.';
COMMENT ON INDEX public.iam_role_name_case_insensitive_unique IS 'IAM role names are unique regardless of case: MyRole and myrole cannot both exist.';
COMMENT ON CONSTRAINT iam_role_name_iam_rules ON public.iam_role IS
  'IAM role naming rules: 1 to 64 characters, each a letter, a digit or one of _+=,.@-';
COMMENT ON CONSTRAINT iam_role_assume_role_policy_document_object ON public.iam_role IS 'A trust policy is a JSON object.';
COMMENT ON CONSTRAINT iam_role_description_iam_rules ON public.iam_role IS
  'IAM description rules: at most 1000 characters, printable Latin-1 characters, tabs and line breaks only.';
COMMENT ON CONSTRAINT iam_role_max_session_duration_range ON public.iam_role IS 'IAM allows maximum sessions of 3600 to 43200 seconds.';
COMMENT ON CONSTRAINT iam_role_attached_policy_arns_format ON public.iam_role IS
  'Each attached policy is a managed policy ARN, arn:aws:iam::aws:policy/<path><name> or arn:aws:iam::<account>:policy/<path><name>; no NULL entries.';
COMMENT ON CONSTRAINT iam_role_inline_policies_format ON public.iam_role IS
  'Inline policies are a JSON object whose keys are policy names (1 to 128 letters, digits and _+=,.@- characters) and whose values are policy documents (objects).';
