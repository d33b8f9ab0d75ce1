-- Orders that need a person, and who acted on them.
--
-- * `recall-failed`: a cancelled order whose shipment the warehouse refused for good to recall. It is cancelled in
--   substance — it can never ship, never go back to pending — and stays held until an operator resolves it
--   (`fulfilment order resolve`), which records it cancelled with what was done, by whom and when.
-- * `failed_at`: when the order was last held as failed or recall-failed (the bulk retry selects on it; rows held
--   before this migration have none and are selected by updated_at instead).
-- * `last_retried_by`: who asked for the last retry (003 recorded why and when).
-- * orders_needing_attention(): per status, how many orders of every tenant are held for a person and since when —
--   counts only, through one narrow door like 004's pruning function, so the service can export them as metrics
--   without reading any tenant's rows.

ALTER TABLE fulfilments DROP CONSTRAINT IF EXISTS fulfilments_status_check;
ALTER TABLE fulfilments ADD CONSTRAINT fulfilments_status_check
  CHECK (status IN ('pending', 'shipped', 'cancelled', 'failed', 'recall-failed'));

ALTER TABLE fulfilments
  ADD COLUMN failed_at        timestamptz,
  ADD COLUMN last_retried_by  text,
  ADD COLUMN recall_failures  integer     NOT NULL DEFAULT 0 CHECK (recall_failures >= 0),
  ADD COLUMN resolution       text,
  ADD COLUMN resolved_by      text,
  ADD COLUMN resolved_at      timestamptz;

-- The guard of 003, plus: recall-failed is reached only from cancelled (or itself), leaves only for cancelled (an
-- operator's resolution), and, like cancelled, never ships.
CREATE OR REPLACE FUNCTION fulfilments_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status IN ('cancelled', 'recall-failed') AND NEW.status = 'shipped' THEN
    RAISE EXCEPTION 'order %/% is % and can never ship', OLD.tenant_id, OLD.order_id, OLD.status
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.order_version < OLD.order_version THEN
    RAISE EXCEPTION 'order %/% cannot go back from version % to %', OLD.tenant_id, OLD.order_id,
      OLD.order_version, NEW.order_version USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status = 'pending' AND OLD.status NOT IN ('pending', 'failed') THEN
    RAISE EXCEPTION 'order %/% is % and cannot go back to pending (only a failed order is retried)', OLD.tenant_id,
      OLD.order_id, OLD.status USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.status = 'recall-failed' AND OLD.status NOT IN ('cancelled', 'recall-failed') THEN
    RAISE EXCEPTION 'order %/% is % and cannot be recall-failed (only a cancelled order has a recall)', OLD.tenant_id,
      OLD.order_id, OLD.status USING ERRCODE = 'check_violation';
  END IF;
  IF OLD.status = 'recall-failed' AND NEW.status NOT IN ('recall-failed', 'cancelled') THEN
    RAISE EXCEPTION 'order %/% is recall-failed and can only be resolved as cancelled, not %', OLD.tenant_id,
      OLD.order_id, NEW.status USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;

-- The bulk retry's selection: one tenant's held orders by status and time.
CREATE INDEX fulfilments_needing_attention ON fulfilments (tenant_id, status, (COALESCE(failed_at, updated_at)))
  WHERE status IN ('failed', 'recall-failed');

DO $$
BEGIN
  IF (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'fulfilments') <> current_user THEN
    RAISE EXCEPTION 'run 006_orders_needing_attention.sql as the owner of public.fulfilments: its function runs with the owner''s rights';
  END IF;
END $$;

-- Counts and the oldest time per status, over every tenant; no tenant id, order id or reason leaves it.
CREATE FUNCTION orders_needing_attention() RETURNS TABLE (status text, orders bigint, oldest timestamptz)
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM set_config('app.attention_counts', 'count', true);
  RETURN QUERY
    SELECT f.status, count(*), min(COALESCE(f.failed_at, f.updated_at))
    FROM public.fulfilments f
    WHERE f.status IN ('failed', 'recall-failed')
    GROUP BY f.status;
  PERFORM set_config('app.attention_counts', '', true);
END $$;

-- The owner reads other tenants' held rows only inside that function (the setting is 'count' only while it runs).
CREATE POLICY attention_counts ON fulfilments FOR SELECT TO CURRENT_USER
  USING (current_setting('app.attention_counts', true) = 'count' AND status IN ('failed', 'recall-failed'));

REVOKE ALL ON FUNCTION orders_needing_attention() FROM PUBLIC;
