-- Only in the extension script: pg_dump keeps the rows of these tables (and
-- the values of their sequences, so that ids continue after a restore).
-- Rows this script inserts itself are left out of the dump, or restoring it
-- into a database where CREATE EXTENSION has just inserted them again would
-- fail on the primary key: iasql_mode's own registration.
SELECT pg_catalog.pg_extension_config_dump('public.iasql_tables', 'WHERE table_name <> ''iasql_mode''');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_capture_progress', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_modules', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_records', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_replacements', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_operations', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_engine_state', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_deprecated_calls', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_account', '');
