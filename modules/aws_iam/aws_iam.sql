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
