-- Operator retries of an order held as failed (`fulfilment order retry`, the workflow's retryShipment update):
-- the retry moves failed → pending, clears failure_reason and records how often, why and when. Existing rows start
-- at 0 retries; nothing else changes, so every row and claim written before this migration keeps its meaning.
ALTER TABLE fulfilments
  ADD COLUMN retry_count       integer     NOT NULL DEFAULT 0 CHECK (retry_count >= 0),
  ADD COLUMN last_retry_reason text,
  ADD COLUMN last_retried_at   timestamptz;

-- The guard of 001, plus: an order goes back to pending only from failed (a retry), never from shipped or cancelled.
CREATE OR REPLACE FUNCTION fulfilments_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status = 'cancelled' AND NEW.status = 'shipped' THEN
    RAISE EXCEPTION 'order %/% is cancelled and can never ship', OLD.tenant_id, OLD.order_id
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
  RETURN NEW;
END $$;
