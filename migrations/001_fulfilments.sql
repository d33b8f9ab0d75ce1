-- Fulfilment records and the dedupe ledger that guards them. Both are tenant-scoped by row-level security:
-- every transaction of the service first sets app.tenant_id, and FORCE makes the policy bind the table owner too.

CREATE TABLE fulfilments (
  tenant_id                  text        NOT NULL,
  order_id                   text        NOT NULL,
  order_version              integer     NOT NULL CHECK (order_version >= 1),
  status                     text        NOT NULL CHECK (status IN ('pending', 'shipped', 'cancelled', 'failed')),
  customer_id                text,
  lines                      jsonb,
  shipping_address           jsonb,
  -- null while the row is only the tombstone of a cancellation that arrived before its placement
  placed_at                  timestamptz,
  cancelled_at               timestamptz,
  cancelled_before_placement boolean     NOT NULL DEFAULT false,
  -- set when a cancellation arrived after shipment: recorded, nothing reversed
  cancel_refused_at          timestamptz,
  shipment_id                text,
  failure_reason             text,
  last_event_id              text        NOT NULL,
  created_at                 timestamptz NOT NULL DEFAULT now(),
  updated_at                 timestamptz NOT NULL DEFAULT now(),
  shipped_at                 timestamptz,
  PRIMARY KEY (tenant_id, order_id),
  CHECK ((status = 'shipped') = (shipped_at IS NOT NULL))
);

CREATE TABLE processed_events (
  consumer     text        NOT NULL,
  event_id     text        NOT NULL,
  tenant_id    text        NOT NULL,
  processed_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer, event_id)
);
-- retention pruning walks this index
CREATE INDEX processed_events_processed_at ON processed_events (processed_at);

-- Last line of defence for "a cancelled order never ships": no code path may move cancelled → shipped.
CREATE FUNCTION fulfilments_guard() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF OLD.status = 'cancelled' AND NEW.status = 'shipped' THEN
    RAISE EXCEPTION 'order %/% is cancelled and can never ship', OLD.tenant_id, OLD.order_id
      USING ERRCODE = 'check_violation';
  END IF;
  IF NEW.order_version < OLD.order_version THEN
    RAISE EXCEPTION 'order %/% cannot go back from version % to %', OLD.tenant_id, OLD.order_id,
      OLD.order_version, NEW.order_version USING ERRCODE = 'check_violation';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER fulfilments_guard BEFORE UPDATE ON fulfilments FOR EACH ROW EXECUTE FUNCTION fulfilments_guard();

ALTER TABLE fulfilments ENABLE ROW LEVEL SECURITY;
ALTER TABLE fulfilments FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON fulfilments
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));

ALTER TABLE processed_events ENABLE ROW LEVEL SECURITY;
ALTER TABLE processed_events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON processed_events
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
