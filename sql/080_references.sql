-- References of tables made at run time (Cloud Control types) to other
-- module tables by id. A type's table is installed whether or not the
-- table it references is: its reference column (<column>_ref, integer or
-- bigint[] of ids) is checked by iasql_reference_check (its trigger is the
-- type's SQL), which refuses a reference to a table that is not installed;
-- and iasql_link_reference adds, once both tables exist, what makes the
-- reference a foreign key: a FOREIGN KEY for one id, or a trigger on the
-- referenced table (iasql_reference_in_use) for an array of ids, as the
-- hand-written tables check theirs (instance.security_group_ids). The
-- sidecar links every reference after each install, so a type installed
-- before the table it references is linked when that one is installed.
-- Both raise foreign_key_violation naming <table>_<column>_fk
-- (iasql_reference_name). Uninstalling the referenced module while rows
-- point at it is refused; otherwise iasql_unlink_reference drops the key.

CREATE FUNCTION public.iasql_reference_name(child text, col text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE WHEN pg_catalog.length(n) > 63 THEN pg_catalog.left(n, 54) || '_' || pg_catalog.left(pg_catalog.md5(n), 8) ELSE n END
    FROM (SELECT pg_catalog.format('%s_%s_fk', child, col) AS n) f
$$;
COMMENT ON FUNCTION public.iasql_reference_name(text, text) IS
  'The name of what makes child.col a foreign key (its FOREIGN KEY, or its trigger on the referenced table): <child>_<col>_fk, cut to 54 characters and given 8 of its md5 when longer than 63.';

CREATE FUNCTION public.iasql_reference_check() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
  target text := TG_ARGV[1];
  names text := TG_ARGV[2];
  many boolean := TG_ARGV[3]::boolean;
  ids bigint[];
  missing bigint;
  fk text := public.iasql_reference_name(TG_TABLE_NAME, col);
BEGIN
  IF many THEN
    EXECUTE pg_catalog.format('SELECT ($1).%I::bigint[]', col) USING NEW INTO ids;
  ELSE
    EXECUTE pg_catalog.format('SELECT ARRAY[($1).%I::bigint]', col) USING NEW INTO ids;
    ids := pg_catalog.array_remove(ids, NULL);
  END IF;
  IF pg_catalog.cardinality(ids) = 0 OR ids IS NULL THEN
    RETURN NEW;
  END IF;
  IF pg_catalog.array_position(ids, NULL) IS NOT NULL THEN
    RAISE EXCEPTION '%.% lists NULL', TG_TABLE_NAME, col
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('%s lists %s.id values: leave NULL out.', col, target);
  END IF;
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', target)) IS NULL THEN
    RAISE EXCEPTION '%.% points at rows of %, which is not installed', TG_TABLE_NAME, col, target
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('Install the module of %s first, or leave %s NULL and name the resource in %s.', target, col, names);
  END IF;
  -- The rows named are locked FOR KEY SHARE, as a foreign key's check
  -- does, so that a concurrent delete of one waits for this transaction.
  EXECUTE pg_catalog.format('SELECT 1 FROM public.%I t WHERE t.id = ANY ($1) FOR KEY SHARE', target) USING ids;
  EXECUTE pg_catalog.format('SELECT x FROM pg_catalog.unnest($1) AS x WHERE NOT EXISTS (SELECT 1 FROM public.%I t WHERE t.id = x) LIMIT 1', target)
    USING ids INTO missing;
  IF missing IS NOT NULL THEN
    RAISE EXCEPTION '%.%: % is not a row of %', TG_TABLE_NAME, col, missing, target
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('%s lists %s.id values: create the row first (in the same transaction is fine), or name the resource in %s instead.', col, target, names);
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_check() IS
  'Trigger function (arguments: column, referenced table, naming column, many): the ids a reference column of a Cloud Control type''s table holds are rows of the referenced table, which is installed; raises foreign_key_violation otherwise.';

CREATE FUNCTION public.iasql_reference_in_use() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  child text := TG_ARGV[0];
  col text := TG_ARGV[1];
  users bigint[];
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL THEN
    RETURN OLD;
  END IF;
  EXECUTE pg_catalog.format('SELECT pg_catalog.array_agg(c.id ORDER BY c.id) FROM public.%I c WHERE $1 = ANY (c.%I)', child, col)
    USING OLD.id INTO users;
  IF users IS NOT NULL THEN
    RAISE EXCEPTION '% row % is still referenced by % row(s) %', TG_TABLE_NAME, OLD.id, child,
        pg_catalog.array_to_string(users[1:10], ', ') || CASE WHEN pg_catalog.cardinality(users) > 10 THEN pg_catalog.format(' and %s more', pg_catalog.cardinality(users) - 10) ELSE '' END
      USING ERRCODE = 'foreign_key_violation', CONSTRAINT = fk,
            HINT = pg_catalog.format('Remove the id from those rows'' %s, or delete those rows, before deleting this one (in the same transaction is fine).', col);
  END IF;
  RETURN OLD;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_in_use() IS
  'Trigger function (arguments: referencing table, its column): refuses to delete a row that a reference array of a Cloud Control type''s table still lists.';

CREATE FUNCTION public.iasql_reference_named() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  col text := TG_ARGV[0];
  names text := TG_ARGV[1];
  o jsonb := pg_catalog.to_jsonb(OLD);
  n jsonb := pg_catalog.to_jsonb(NEW);
BEGIN
  -- A user's change of the naming column alone names another resource:
  -- the reference, which would fill the old name back in, lets go (the
  -- engine finds it again from the new name). The running cycle's own
  -- writes (it fills the name from the reference) are let through.
  IF n -> names IS DISTINCT FROM o -> names AND n -> col IS NOT DISTINCT FROM o -> col
     AND n -> col <> 'null'::jsonb AND NOT public.iasql_holds_lock(2) THEN
    NEW := pg_catalog.jsonb_populate_record(NEW, pg_catalog.jsonb_build_object(col, NULL));
  END IF;
  RETURN NEW;
END;
$$;
COMMENT ON FUNCTION public.iasql_reference_named() IS
  'Trigger function (arguments: reference column, naming column): a user''s UPDATE that changes the naming column of a Cloud Control type''s row and not its reference sets the reference NULL, so that the name the user gave is the one sent to the cloud.';

CREATE FUNCTION public.iasql_link_reference(child text, col text, target text, many boolean) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL
     OR pg_catalog.to_regclass(pg_catalog.format('public.%I', target)) IS NULL THEN
    RETURN false;
  END IF;
  IF NOT many THEN
    IF EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
                WHERE c.conname = fk AND c.conrelid = pg_catalog.format('public.%I', child)::regclass) THEN
      RETURN false;
    END IF;
    EXECUTE pg_catalog.format('ALTER TABLE public.%I ADD CONSTRAINT %I FOREIGN KEY (%I) REFERENCES public.%I (id)', child, fk, col, target);
    EXECUTE pg_catalog.format('COMMENT ON CONSTRAINT %I ON public.%I IS %L', fk, child,
      pg_catalog.format('%s is a row of %s (linked once both tables were installed).', col, target));
    RETURN true;
  END IF;
  IF EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t
              WHERE t.tgname = fk AND t.tgrelid = pg_catalog.format('public.%I', target)::regclass) THEN
    RETURN false;
  END IF;
  EXECUTE pg_catalog.format('CREATE TRIGGER %I BEFORE DELETE ON public.%I FOR EACH ROW EXECUTE FUNCTION public.iasql_reference_in_use(%L, %L)', fk, target, child, col);
  EXECUTE pg_catalog.format('COMMENT ON TRIGGER %I ON public.%I IS %L', fk, target,
    pg_catalog.format('A row that %s.%s lists cannot be deleted (the other half of %s''s check).', child, col, child));
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.iasql_link_reference(text, text, text, boolean) IS
  'Makes the reference column col of table child (ids of target rows; many: an array) a foreign key once both tables exist: a FOREIGN KEY <child>_<col>_fk, or for an array a trigger of that name on target refusing to delete a listed row. Returns whether it added one; the sidecar calls it after each install.';
REVOKE ALL ON FUNCTION public.iasql_link_reference(text, text, text, boolean) FROM PUBLIC;

CREATE FUNCTION public.iasql_unlink_reference(child text, col text) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  fk text := public.iasql_reference_name(child, col);
BEGIN
  IF pg_catalog.to_regclass(pg_catalog.format('public.%I', child)) IS NULL
     OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_constraint c
                     WHERE c.conname = fk AND c.conrelid = pg_catalog.format('public.%I', child)::regclass) THEN
    RETURN false;
  END IF;
  EXECUTE pg_catalog.format('ALTER TABLE public.%I DROP CONSTRAINT %I', child, fk);
  RETURN true;
END;
$$;
COMMENT ON FUNCTION public.iasql_unlink_reference(text, text) IS
  'Drops the FOREIGN KEY iasql_link_reference made for child.col (the referenced table is being uninstalled; no row may point at it any more). Returns whether there was one.';
REVOKE ALL ON FUNCTION public.iasql_unlink_reference(text, text) FROM PUBLIC;
