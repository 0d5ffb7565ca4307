-- Only in the extension script: pg_dump keeps the rows of these tables, and
-- the audit log's id sequence so that ids continue after a restore.
SELECT pg_catalog.pg_extension_config_dump('public.iasql_tables', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_capture_progress', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_audit_log_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_modules', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_records', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_replacements', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_mode_id_seq', '');
SELECT pg_catalog.pg_extension_config_dump('public.iasql_account', '');
