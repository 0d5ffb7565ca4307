-- Who made each user change: capture cannot see the role that wrote a row
-- (the replication stream does not carry it), so a statement trigger on
-- every module table names it in the stream, at each statement, with a
-- transactional logical-decoding message that precedes the statement's
-- changes (logical.ActorMessagePrefix). The message carries
-- the engine marker's key, which only this function may read, so no role
-- can emit one naming another: iasql_emit_actor names the calling role
-- only when the session's login role may act as it (it is a member), and
-- the login role otherwise (a write made inside another role's SECURITY
-- DEFINER function).
CREATE FUNCTION public.iasql_emit_actor(role_name name) RETURNS void
LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
  k text;
  r name := role_name;
BEGIN
  IF r IS NULL OR NOT EXISTS (SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = r)
     OR NOT pg_catalog.pg_has_role(session_user, r, 'MEMBER') THEN
    r := session_user;
  END IF;
  SELECT e.mark_key INTO STRICT k FROM iasql_private.iasql_engine_key e;
  PERFORM pg_catalog.pg_logical_emit_message(true, 'iasql_actor', k || ':' || r);
END $$;
COMMENT ON FUNCTION public.iasql_emit_actor(name) IS
  'Names, in the replication stream, the role making the changes that follow in this transaction (the audit trail''s actor): the role given when the session''s login role is a member of it, else the login role.';

-- Every statement names its role: a cache of what was named (a setting)
-- would be a setting any role may change, and so a way to write unnamed.
CREATE FUNCTION public.iasql_note_actor() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM public.iasql_emit_actor(current_user);
  RETURN NULL;
END $$;
COMMENT ON FUNCTION public.iasql_note_actor() IS
  'Statement trigger on module tables: names the writing role in the replication stream (iasql_emit_actor) before each statement''s changes.';

CREATE TRIGGER iasql_tables_note_actor AFTER INSERT OR UPDATE ON public.iasql_tables
  FOR EACH ROW EXECUTE FUNCTION public.iasql_tables_add_guard('iasql_note_actor', 'INSERT OR UPDATE OR DELETE OR TRUNCATE', 'STATEMENT',
    'public.iasql_note_actor', 'Names the writing role for the audit trail (iasql_note_actor()).');
COMMENT ON TRIGGER iasql_tables_note_actor ON public.iasql_tables IS 'Puts the actor trigger on each registered module table.';
