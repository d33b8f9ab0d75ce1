-- Orders that wait for the warehouse, and planned pauses of shipping.
--
-- A warehouse that is down for everyone is not an order's failure: the order's shipment waits, without spending its
-- attempts, and resumes when the warehouse answers again (docs/how-it-works.md, "When the warehouse is down").
--
-- * `waiting_since`: when the order began to wait in its current spell (kept across its repeated waits); NULL while it
--   does not wait. `waited_at`: the last time one of its attempts found the warehouse down (or shipping paused).
--   `waiting_reason`: what it waits for. `released_at`: when a resumer last woke it; an order released after its last
--   wait is being tried, one that waited again since is waiting again. `waiting_task_queue`: the task queue of the
--   worker whose attempt waited: a resumer wakes only its own workers' orders, whose warehouse it judges.
-- * Leaving `pending` ends the wait (a trigger clears the columns), whatever moved the order.
-- * orders_waiting_summary(): how many orders of every tenant wait and since when — counts only, like 006's.
-- * release_waiting_orders(max[, tenant, despite_pause, task_queue]): the oldest waiting orders (not released since
--   their last wait, not of a paused tenant unless told, of one task queue when told), marked released and returned, SKIP LOCKED, so that several workers'
--   resumers (and `fulfilment shipping resume --rate`) never wake the same order twice.
-- * shipping_pauses: an operator's planned pause of shipping, for every tenant (tenant_id NULL) or one; who, when, why,
--   and who ended it. Operational rows of no tenant's data: no row-level security.

ALTER TABLE fulfilments
  ADD COLUMN waiting_since  timestamptz,
  ADD COLUMN waited_at      timestamptz,
  ADD COLUMN waiting_reason text,
  ADD COLUMN released_at    timestamptz,
  ADD COLUMN waiting_task_queue text;

CREATE FUNCTION fulfilments_end_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status <> 'pending' THEN
    NEW.waiting_since := NULL;
    NEW.waited_at := NULL;
    NEW.waiting_reason := NULL;
    NEW.released_at := NULL;
    NEW.waiting_task_queue := NULL;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER fulfilments_end_wait BEFORE UPDATE ON fulfilments
  FOR EACH ROW WHEN (NEW.status IS DISTINCT FROM OLD.status) EXECUTE FUNCTION fulfilments_end_wait();

-- The resumer's selection: waiting orders, oldest first.
CREATE INDEX fulfilments_waiting ON fulfilments (waiting_since) WHERE waiting_since IS NOT NULL;

CREATE TABLE shipping_pauses (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- NULL: every tenant
  tenant_id      text,
  paused_at      timestamptz NOT NULL DEFAULT now(),
  paused_by      text        NOT NULL CHECK (length(paused_by) BETWEEN 1 AND 200),
  reason         text        NOT NULL CHECK (length(reason) BETWEEN 1 AND 500),
  -- `shipping resume --rate` under way: shipments go out again, but only that command wakes the orders the pause
  -- held (paced), not the workers' resumers; then resumed_at ends the pause
  releasing_at   timestamptz,
  resumed_at     timestamptz,
  resumed_by     text        CHECK (length(resumed_by) BETWEEN 1 AND 200),
  resume_reason  text        CHECK (length(resume_reason) BETWEEN 1 AND 500),
  CHECK ((resumed_at IS NULL) = (resumed_by IS NULL))
);

-- At most one pause in force per scope (all, or one tenant).
CREATE UNIQUE INDEX shipping_pauses_in_force ON shipping_pauses (COALESCE(tenant_id, '')) WHERE resumed_at IS NULL;

DO $$
BEGIN
  IF (SELECT tableowner FROM pg_tables WHERE schemaname = 'public' AND tablename = 'fulfilments') <> current_user THEN
    RAISE EXCEPTION 'run 008_shipment_waits.sql as the owner of public.fulfilments: its functions run with the owner''s rights';
  END IF;
END $$;

-- The owner reads and marks other tenants' waiting rows only inside the two functions below.
CREATE POLICY shipment_waits_read ON fulfilments FOR SELECT TO CURRENT_USER
  USING (current_setting('app.shipment_waits', true) IN ('count', 'release') AND waiting_since IS NOT NULL);
CREATE POLICY shipment_waits_release ON fulfilments FOR UPDATE TO CURRENT_USER
  USING (current_setting('app.shipment_waits', true) = 'release' AND waiting_since IS NOT NULL);

-- How many orders wait, the oldest wait, and how many of them a pause holds; no tenant id, order id or reason leaves it.
CREATE FUNCTION orders_waiting_summary() RETURNS TABLE (orders bigint, oldest timestamptz, paused bigint)
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  PERFORM set_config('app.shipment_waits', 'count', true);
  RETURN QUERY
    SELECT count(*),
           min(f.waiting_since),
           count(*) FILTER (WHERE EXISTS (
             SELECT 1 FROM public.shipping_pauses p
             WHERE p.resumed_at IS NULL AND (p.tenant_id IS NULL OR p.tenant_id = f.tenant_id)))
    FROM public.fulfilments f
    WHERE f.waiting_since IS NOT NULL AND f.status = 'pending';
  PERFORM set_config('app.shipment_waits', '', true);
END $$;

-- Wakes at most `max` of the oldest waiting orders that no resumer woke since their last wait and no pause holds; of
-- one tenant only with `only_tenant`; with `despite_pause`, the pause of exactly that scope (the tenant's, or with no
-- tenant the one for every tenant) does not hold them — `fulfilment shipping resume --rate` wakes that pause's
-- orders, paced, before it ends the pause; any other pause still holds its orders.
CREATE FUNCTION release_waiting_orders(max integer, only_tenant text DEFAULT NULL, despite_pause boolean DEFAULT false, only_task_queue text DEFAULT NULL)
  RETURNS TABLE (tenant_id text, order_id text, waiting_since timestamptz, waited_at timestamptz)
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF max IS NULL OR max < 1 OR max > 10000 THEN
    RAISE EXCEPTION 'release_waiting_orders: max must be 1 to 10000, not %', max USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM set_config('app.shipment_waits', 'release', true);
  RETURN QUERY
    WITH picked AS (
      SELECT f.tenant_id, f.order_id
      FROM public.fulfilments f
      WHERE f.waiting_since IS NOT NULL AND f.status = 'pending'
        AND (f.released_at IS NULL OR f.released_at < f.waited_at)
        AND (only_tenant IS NULL OR f.tenant_id = only_tenant)
        AND (only_task_queue IS NULL OR f.waiting_task_queue = only_task_queue)
        AND NOT EXISTS (
          SELECT 1 FROM public.shipping_pauses p
          WHERE p.resumed_at IS NULL AND (p.tenant_id IS NULL OR p.tenant_id = f.tenant_id)
            AND NOT (despite_pause AND p.tenant_id IS NOT DISTINCT FROM only_tenant))
      ORDER BY f.waiting_since, f.tenant_id, f.order_id
      LIMIT max
      FOR UPDATE SKIP LOCKED
    )
    UPDATE public.fulfilments f SET released_at = now()
    FROM picked
    WHERE f.tenant_id = picked.tenant_id AND f.order_id = picked.order_id
    RETURNING f.tenant_id, f.order_id, f.waiting_since, f.waited_at;
  PERFORM set_config('app.shipment_waits', '', true);
END $$;

REVOKE ALL ON FUNCTION orders_waiting_summary() FROM PUBLIC;
REVOKE ALL ON FUNCTION release_waiting_orders(integer, text, boolean, text) FROM PUBLIC;
