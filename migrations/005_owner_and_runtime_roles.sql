-- The tables belong to an owner role that only provisioning uses (DATABASE_MIGRATION_URL); the service runs as a
-- runtime role that owns nothing (DATABASE_URL), granted exactly what it needs after every provisioning run
-- (src/store/grants.ts). Row-level security binds the runtime role, and it cannot switch it off: only an owner can
-- ALTER TABLE … NO FORCE / DISABLE ROW LEVEL SECURITY.
--
-- 004 created its two retention policies TO CURRENT_USER, the role that applied it. Where that was the service's own
-- role (before this split) and the tables were then handed to an owner (REASSIGN OWNED BY <service> TO <owner>), the
-- policies would still name the service's role — which can set app.ledger_retention itself and so read other tenants'
-- old ledger rows — and no longer the owner the function runs as. This binds them to the owner, whoever applied 004.

DO $$
BEGIN
  IF (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'processed_events') <> current_user THEN
    RAISE EXCEPTION 'run 005_owner_and_runtime_roles.sql as the owner of public.processed_events (DATABASE_MIGRATION_URL)';
  END IF;
  IF (SELECT proowner FROM pg_proc WHERE oid = 'prune_processed_events(interval, integer)'::regprocedure) <> (SELECT oid FROM pg_roles WHERE rolname = current_user) THEN
    ALTER FUNCTION prune_processed_events(interval, integer) OWNER TO CURRENT_USER;
  END IF;
END $$;

ALTER POLICY ledger_retention_read ON processed_events TO CURRENT_USER;
ALTER POLICY ledger_retention_delete ON processed_events TO CURRENT_USER;
