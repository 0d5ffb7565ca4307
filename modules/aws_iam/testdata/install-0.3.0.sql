-- What installing aws_iam 0.3.0 ran (its InstallSQL), kept as released: TestInstallAsReleased
-- compares the declarations with it; TestModuleUpgradeSQL starts from it once 0.3.0 has an upgrade.
CREATE TABLE public.iam_policy (
  id serial PRIMARY KEY,
  policy_name text NOT NULL,
  path text,
  description text,
  document jsonb NOT NULL,
  tags jsonb,
  arn text,
  policy_id text,
  default_version_id text
);
COMMENT ON TABLE public.iam_policy IS 'Customer managed IAM policies of the account, under every path (IAM is global). Insert a row to create a policy; update document to make a new default version (when the policy has five versions, its oldest other version is deleted first); update tags to retag it; delete the row to delete the policy and its versions (a policy something outside this table still uses is deleted once that lets go of it). Roles use policies through iam_role.policy_ids. Changing policy_name, path or description replaces the policy.';
COMMENT ON COLUMN public.iam_policy.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.iam_policy.policy_name IS 'Policy name: 1 to 128 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the policy.';
COMMENT ON COLUMN public.iam_policy.path IS 'Path of the policy: / (the default) or /a/b/, up to 512 characters from ! to DEL but *. IAM cannot change it: changing it replaces the policy.';
COMMENT ON COLUMN public.iam_policy.description IS 'Description of the policy, up to 1000 characters; NULL and the empty string both mean none. IAM cannot change it: changing it replaces the policy.';
COMMENT ON COLUMN public.iam_policy.document IS 'The policy document (its default version) as a JSON object. Compared by meaning: key order and whitespace do not matter, values do. Changing it makes a new default version.';
COMMENT ON COLUMN public.iam_policy.tags IS 'Tags as a JSON object of key to value (AWS''s own aws:* tags are left out).';
COMMENT ON COLUMN public.iam_policy.arn IS 'ARN of the policy, arn:aws:iam::<account>:policy<path><name> (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_policy.policy_id IS 'Stable unique id IAM gave the policy, beginning with ANPA (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_policy.default_version_id IS 'Id of the default version: v1 when created, a higher one after each change of document (from the cloud; not written to it).';
COMMENT ON SEQUENCE public.iam_policy_id_seq IS 'Generates iam_policy.id.';
ALTER TABLE public.iam_policy
  ADD CONSTRAINT iam_policy_path_not_null CHECK (path IS NOT NULL),
  ADD CONSTRAINT iam_policy_tags_not_null CHECK (tags IS NOT NULL);
COMMENT ON CONSTRAINT iam_policy_path_not_null ON public.iam_policy IS 'path is never NULL: an INSERT that leaves it NULL gets ''/'', an UPDATE that sets it NULL keeps its value (trigger iam_policy_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_policy_tags_not_null ON public.iam_policy IS 'tags is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_policy_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.iam_policy_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.path := coalesce(NEW.path, OLD.path, '/');
  NEW.tags := coalesce(NEW.tags, OLD.tags, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iam_policy_defaults() IS 'Trigger function: fills in path, tags when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER iam_policy_0_defaults BEFORE INSERT OR UPDATE ON public.iam_policy
  FOR EACH ROW EXECUTE FUNCTION public.iam_policy_defaults();
COMMENT ON TRIGGER iam_policy_0_defaults ON public.iam_policy IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

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
  created_at timestamp with time zone,
  policy_ids bigint[]
);
COMMENT ON TABLE public.iam_role IS 'IAM roles of the account (IAM is global: one set of roles whatever the region). Only roles with the path / are managed here; roles under other paths (service-role/, aws-service-role/ and the like) are neither listed nor touched. Insert a row to create a role, update it to change its trust policy, description, maximum session, attached managed policies (policy_ids, attached_policy_arns) or inline policies, delete it to delete the role (its policies are detached and deleted first). Changing role_name replaces the role.';
COMMENT ON COLUMN public.iam_role.id IS 'Database identifier of the row.';
COMMENT ON COLUMN public.iam_role.role_name IS 'Role name: 1 to 64 letters, digits and _+=,.@- characters, unique in the account regardless of case. Changing it replaces the role.';
COMMENT ON COLUMN public.iam_role.assume_role_policy_document IS 'Trust policy: who may assume the role, as a JSON policy document (an object). Compared by meaning: key order and whitespace do not matter, values do (a string and a list of one string differ).';
COMMENT ON COLUMN public.iam_role.description IS 'Description of the role, up to 1000 characters; NULL and the empty string both mean none.';
COMMENT ON COLUMN public.iam_role.max_session_duration IS 'Maximum session duration in seconds for sessions that assume the role: 3600 (one hour, the default) to 43200 (12 hours).';
COMMENT ON COLUMN public.iam_role.attached_policy_arns IS 'ARNs of the AWS managed policies attached to the role, e.g. arn:aws:iam::aws:policy/ReadOnlyAccess (the account''s own policies are in policy_ids; an ARN of one of them here is attached too). A set: order and repetition do not matter.';
COMMENT ON COLUMN public.iam_role.inline_policies IS 'Inline policies embedded in the role, as a JSON object from policy name (1 to 128 letters, digits and _+=,.@- characters) to policy document (an object). Documents are compared by meaning.';
COMMENT ON COLUMN public.iam_role.arn IS 'ARN of the role, arn:aws:iam::<account>:role/<name> (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_role.role_id IS 'Stable unique id IAM gave the role, beginning with AROA (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_role.created_at IS 'When IAM created the role (from the cloud; not written to it).';
COMMENT ON COLUMN public.iam_role.policy_ids IS 'The account''s own managed policies (iam_policy.id) attached to the role, in any order; AWS managed policies are in attached_policy_arns.';
COMMENT ON SEQUENCE public.iam_role_id_seq IS 'Generates iam_role.id.';
ALTER TABLE public.iam_role
  ADD CONSTRAINT iam_role_max_session_duration_not_null CHECK (max_session_duration IS NOT NULL),
  ADD CONSTRAINT iam_role_attached_policy_arns_not_null CHECK (attached_policy_arns IS NOT NULL),
  ADD CONSTRAINT iam_role_inline_policies_not_null CHECK (inline_policies IS NOT NULL),
  ADD CONSTRAINT iam_role_policy_ids_not_null CHECK (policy_ids IS NOT NULL);
COMMENT ON CONSTRAINT iam_role_max_session_duration_not_null ON public.iam_role IS 'max_session_duration is never NULL: an INSERT that leaves it NULL gets 3600, an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_role_attached_policy_arns_not_null ON public.iam_role IS 'attached_policy_arns is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_role_inline_policies_not_null ON public.iam_role IS 'inline_policies is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
COMMENT ON CONSTRAINT iam_role_policy_ids_not_null ON public.iam_role IS 'policy_ids is never NULL: an INSERT that leaves it NULL gets ''{}'', an UPDATE that sets it NULL keeps its value (trigger iam_role_0_defaults); the column is nullable only so that tools which introspect the schema let a write leave it out.';
CREATE OR REPLACE FUNCTION public.iam_role_defaults() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  -- OLD is NULL on INSERT: a NULL there gets the default, on UPDATE the old value.
  NEW.max_session_duration := coalesce(NEW.max_session_duration, OLD.max_session_duration, 3600);
  NEW.attached_policy_arns := coalesce(NEW.attached_policy_arns, OLD.attached_policy_arns, '{}');
  NEW.inline_policies := coalesce(NEW.inline_policies, OLD.inline_policies, '{}');
  NEW.policy_ids := coalesce(NEW.policy_ids, OLD.policy_ids, '{}');
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iam_role_defaults() IS 'Trigger function: fills in max_session_duration, attached_policy_arns, inline_policies, policy_ids when a write leaves them NULL, with their default on INSERT and their old value on UPDATE.';
CREATE TRIGGER iam_role_0_defaults BEFORE INSERT OR UPDATE ON public.iam_role
  FOR EACH ROW EXECUTE FUNCTION public.iam_role_defaults();
COMMENT ON TRIGGER iam_role_0_defaults ON public.iam_role IS 'Fills in the columns a write leaves NULL that have a default (before the table''s other triggers, which fire in name order).';

-- aws_iam: the account's own managed policies, and IAM roles with their
-- managed policy attachments and inline policies. The tables and their
-- columns are declared in aws_iam.go and policy.go (module.Column); this
-- file holds their constraints, indexes and triggers, which run after the
-- tables are created.

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

-- iam_policy: the account's own managed policies. CreatePolicy's rules
-- (https://docs.aws.amazon.com/IAM/latest/APIReference/API_CreatePolicy.html):
-- names of 1 to 128 characters [\w+=,.@-], unique in the account regardless
-- of case; a path of / or /.../, up to 512 characters from ! to DEL but *;
-- a description of up to 1000 characters. IAM's tag rules
-- (https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#id_tags_rules_creating):
-- at most 50 tags, keys up to 128 and values up to 256 characters, no key
-- starting with aws:. A policy's create carries no client-token tag (its
-- name finds a retried create).
ALTER TABLE public.iam_policy
  ADD CONSTRAINT iam_policy_name_unique UNIQUE (policy_name),
  ADD CONSTRAINT iam_policy_name_iam_rules CHECK (policy_name ~ '^[A-Za-z0-9_+=,.@-]{1,128}$'),
  ADD CONSTRAINT iam_policy_path_iam_rules CHECK (char_length(path) <= 512 AND path ~ '^(/|/[!-)+-\x7F]+/)$'),
  ADD CONSTRAINT iam_policy_description_iam_rules CHECK (char_length(description) <= 1000),
  ADD CONSTRAINT iam_policy_document_object CHECK (jsonb_typeof(document) = 'object'),
  ADD CONSTRAINT iam_policy_tags_object CHECK (jsonb_typeof(tags) = 'object'),
  ADD CONSTRAINT iam_policy_tags_aws_limits CHECK (public.aws_tags_check(tags, 'iam_policy', 50, 128, 256,
    'https://docs.aws.amazon.com/IAM/latest/UserGuide/id_tags.html#id_tags_rules_creating'));
CREATE UNIQUE INDEX iam_policy_name_case_insensitive_unique ON public.iam_policy (lower(policy_name));
COMMENT ON COLUMN public.iam_policy.id IS 'Database identifier of the row; the cloud knows the policy by name (and by its ARN, which holds its path).';
COMMENT ON CONSTRAINT iam_policy_name_unique ON public.iam_policy IS 'A policy name appears once.';
COMMENT ON INDEX public.iam_policy_name_case_insensitive_unique IS 'IAM policy names are unique regardless of case: Read and read cannot both exist.';
COMMENT ON CONSTRAINT iam_policy_name_iam_rules ON public.iam_policy IS
  'IAM policy naming rules: 1 to 128 characters, each a letter, a digit or one of _+=,.@-';
COMMENT ON CONSTRAINT iam_policy_path_iam_rules ON public.iam_policy IS
  'IAM path rules: / alone, or a path that begins and ends with /, up to 512 characters from ! to DEL except *.';
COMMENT ON CONSTRAINT iam_policy_description_iam_rules ON public.iam_policy IS 'IAM allows policy descriptions of at most 1000 characters.';
COMMENT ON CONSTRAINT iam_policy_document_object ON public.iam_policy IS 'A policy document is a JSON object.';
COMMENT ON CONSTRAINT iam_policy_tags_object ON public.iam_policy IS 'Tags are a JSON object.';
COMMENT ON CONSTRAINT iam_policy_tags_aws_limits ON public.iam_policy IS
  'IAM''s tag rules: at most 50 tags, keys 1 to 128 characters not starting with aws:, values up to 256.';

-- iam_role.policy_ids is a many-reference (bigint[] of iam_policy.id).
-- PostgreSQL cannot put a FOREIGN KEY on an array, so two triggers do its
-- work, as instance.security_group_ids's do (no cascade: detaching a policy
-- is never a side effect of deleting something else):
--  * iam_role_policy_ids_check, on iam_role: an INSERT, or an UPDATE of
--    policy_ids, listing an id that is not an iam_policy row is refused;
--  * iam_policy_in_use, on iam_policy: deleting a policy row that a role
--    row still lists is refused. Take the policy out of those rows'
--    policy_ids (or delete them) first: in the same transaction is enough,
--    and one commit then detaches it before it deletes the policy, as AWS
--    requires (DeletePolicy answers DeleteConflict while it is attached).
-- Both raise foreign_key_violation (SQLSTATE 23503) naming the constraint
-- iam_role_policy_ids_fk, as a foreign key would. A policy's id never
-- changes (it is a serial), so no UPDATE of iam_policy is checked.
-- Uninstall drops the tables (and their triggers), then the functions
-- (aws_iam_uninstall.sql).
ALTER TABLE public.iam_role
  ADD CONSTRAINT iam_role_policy_ids_no_nulls CHECK (array_position(policy_ids, NULL) IS NULL);
COMMENT ON CONSTRAINT iam_role_policy_ids_no_nulls ON public.iam_role IS 'policy_ids lists iam_policy.id values, none NULL.';

CREATE OR REPLACE FUNCTION public.iam_role_policy_ids_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  missing bigint;
BEGIN
  SELECT p INTO missing FROM unnest(NEW.policy_ids) AS p
   WHERE NOT EXISTS (SELECT 1 FROM public.iam_policy x WHERE x.id = p) LIMIT 1;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION 'iam_role: policy % is not an iam_policy row', missing
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'iam_role_policy_ids_fk',
            HINT = 'policy_ids lists iam_policy.id values: create the policy first (INSERT INTO iam_policy), or leave the id out; AWS managed policies go in attached_policy_arns.';
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iam_role_policy_ids_check() IS 'Trigger function: a role''s policy_ids are iam_policy rows.';
CREATE TRIGGER iam_role_policy_ids_check BEFORE INSERT OR UPDATE OF policy_ids ON public.iam_role
  FOR EACH ROW EXECUTE FUNCTION public.iam_role_policy_ids_check();
COMMENT ON TRIGGER iam_role_policy_ids_check ON public.iam_role IS 'Checks that the role''s policy_ids are iam_policy rows (policy_ids has no foreign key).';

CREATE OR REPLACE FUNCTION public.iam_policy_in_use() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  users bigint[];
BEGIN
  SELECT array_agg(r.id ORDER BY r.id) INTO users FROM public.iam_role r WHERE OLD.id = ANY (r.policy_ids);
  IF users IS NOT NULL THEN
    RAISE EXCEPTION 'policy % (%) is still attached to iam_role row(s) %', OLD.id, OLD.policy_name,
        array_to_string(users[1:10], ', ') || CASE WHEN cardinality(users) > 10 THEN format(' and %s more', cardinality(users) - 10) ELSE '' END
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'iam_role_policy_ids_fk',
            HINT = 'Remove the policy from those rows'' policy_ids, or delete those iam_role rows, before deleting the policy (in the same transaction is fine).';
  END IF;
  RETURN OLD;
END;
$$;
COMMENT ON FUNCTION public.iam_policy_in_use() IS 'Trigger function: refuses to delete a policy row that an iam_role row still lists in policy_ids.';
CREATE TRIGGER iam_policy_in_use BEFORE DELETE ON public.iam_policy
  FOR EACH ROW EXECUTE FUNCTION public.iam_policy_in_use();
COMMENT ON TRIGGER iam_policy_in_use ON public.iam_policy IS 'A policy row that roles list in policy_ids cannot be deleted (the other half of iam_role_policy_ids_check: policy_ids has no foreign key).';

-- A policy's name is its identity in IAM: a new name is a new policy (made
-- first), and the old one is deleted once nothing attaches it. The role
-- rows that list the policy are rewritten as they are, in the same
-- transaction, so that they carry the user's change too: the commit then
-- attaches the new policy to their roles and detaches the old one before
-- deleting it (DeletePolicy answers DeleteConflict while it is attached).
CREATE OR REPLACE FUNCTION public.iam_policy_renamed() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE public.iam_role SET policy_ids = policy_ids WHERE NEW.id = ANY (policy_ids);
  RETURN NULL;
END;
$$;
COMMENT ON FUNCTION public.iam_policy_renamed() IS 'Trigger function: rewrites, as they are, the iam_role rows that list a renamed policy, so that the commit moves their roles to the new policy.';
CREATE TRIGGER iam_policy_renamed AFTER UPDATE OF policy_name ON public.iam_policy
  FOR EACH ROW WHEN (OLD.policy_name IS DISTINCT FROM NEW.policy_name) EXECUTE FUNCTION public.iam_policy_renamed();
COMMENT ON TRIGGER iam_policy_renamed ON public.iam_policy IS 'A renamed policy is a new policy in IAM: the roles that list it move to it in the same commit (iam_policy_renamed()).';
