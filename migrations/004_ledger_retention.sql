-- Retention of the dedupe ledger across every tenant, through one narrow door.
--
-- Row-level security (001) lets a session see one tenant's ledger rows only, and FORCE binds the table owner too, so
-- nobody can list tenants to prune them one by one. Instead of a bypass for the service, this adds:
--   * prune_processed_events(retention, batch): SECURITY DEFINER, owned by the table owner, with a fixed search_path;
--     it deletes at most `batch` of the oldest rows older than `retention` and returns how many it deleted (bounded
--     work per call: the caller loops), and refuses a retention below the floor (21 days) whatever the caller asks;
--   * two policies that let the table owner see and delete rows of any tenant, but only inside that function (the
--     setting app.ledger_retention is 'prune' only while its DELETE runs) and only rows older than the floor;
--   * EXECUTE for the service's role only (not PUBLIC).
--
-- The floor is Kafka's default retention (7 days) plus the redelivery window (DLQ redrive, replays: 14 days). It is
-- a backstop: src/config.ts refuses LEDGER_RETENTION_DAYS below KAFKA_RETENTION_DAYS + REDRIVE_WINDOW_DAYS and below
-- this floor (LEDGER_RETENTION_FLOOR_DAYS there), and the activity refuses too.
--
-- Today the service's role (the user of DATABASE_URL, which applies these migrations) owns the tables. The function is
-- written for the day it does not: run this file as the owner and name the service's role in the setting
-- fulfilment.service_role (PGOPTIONS='-c fulfilment.service_role=<role>'); EXECUTE is granted to that role, and the
-- policies, being TO the owner, give the service nothing outside the function.

DO $$
BEGIN
  IF (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'processed_events') <> current_user THEN
    RAISE EXCEPTION 'run 004_ledger_retention.sql as the owner of public.processed_events: its function runs with the owner''s rights';
  END IF;
END $$;

CREATE FUNCTION prune_processed_events(retention interval, batch integer) RETURNS bigint
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  -- Keep in step with the policies below and LEDGER_RETENTION_FLOOR_DAYS in src/config.ts.
  retention_floor constant interval := interval '21 days';
  deleted bigint;
BEGIN
  IF retention IS NULL OR retention < retention_floor THEN
    RAISE EXCEPTION 'refusing to prune the dedupe ledger with a retention of %: the floor is % (Kafka retention plus the redelivery window)',
      coalesce(retention::text, 'null'), retention_floor USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 10000 THEN
    RAISE EXCEPTION 'batch must be 1–10000 rows, not %', coalesce(batch::text, 'null') USING ERRCODE = 'invalid_parameter_value';
  END IF;
  -- Opens the policies below for this statement only: reset before returning; an error rolls the setting back with
  -- the statement's (sub)transaction. (A function's SET clause would be neater, but PostgreSQL lets only a superuser
  -- put a custom setting there.)
  PERFORM set_config('app.ledger_retention', 'prune', true);
  WITH doomed AS (
    SELECT consumer, tenant_id, event_id
    FROM public.processed_events
    WHERE processed_at < now() - retention
    ORDER BY processed_at
    LIMIT batch
  )
  DELETE FROM public.processed_events p
  USING doomed d
  WHERE p.consumer = d.consumer AND p.tenant_id = d.tenant_id AND p.event_id = d.event_id;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  PERFORM set_config('app.ledger_retention', '', true);
  RETURN deleted;
END $$;

COMMENT ON FUNCTION prune_processed_events(interval, integer) IS
  'Deletes at most batch dedupe-ledger rows older than retention, across tenants; refuses a retention below 21 days. Returns the rows deleted.';

-- A DELETE that filters reads the rows, so the owner needs to see them as well as delete them (SELECT and DELETE).
CREATE POLICY ledger_retention_read ON processed_events FOR SELECT TO CURRENT_USER
  USING (current_setting('app.ledger_retention', true) = 'prune' AND processed_at < now() - interval '21 days');
CREATE POLICY ledger_retention_delete ON processed_events FOR DELETE TO CURRENT_USER
  USING (current_setting('app.ledger_retention', true) = 'prune' AND processed_at < now() - interval '21 days');

REVOKE ALL ON FUNCTION prune_processed_events(interval, integer) FROM PUBLIC;
DO $$
DECLARE
  service_role text := coalesce(nullif(current_setting('fulfilment.service_role', true), ''), current_user);
BEGIN
  EXECUTE format('GRANT EXECUTE ON FUNCTION prune_processed_events(interval, integer) TO %I', service_role);
END $$;
