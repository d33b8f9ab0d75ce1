-- A wake-up's lease stays bounded, and an order whose run is gone is set aside rather than released for ever
-- (docs/how-it-works.md, "When the warehouse is down").
--
-- 009 computed a release's lease as lease_seconds * 2 ^ (releases - 1) and capped it only afterwards, with `releases`
-- unbounded: an order released every 15 minutes for about ten days (a run terminated by hand, a build with no
-- workers) raised `value out of range: overflow` inside release_waiting_orders(), which then failed every resumer
-- round of its task queue, for every order. Here:
--
-- * wake_lease_seconds(lease_seconds, releases): the lease after `releases` releases; the exponent is bounded before
--   it is used, and the lease is at most 15 minutes — or lease_seconds itself when that is longer (a WAKE_LEASE_SECONDS
--   above 900 is honoured, never silently cut).
-- * `releases` stops counting once the lease reached its cap: it only ever says how far the doubling has gone.
-- * `run_gone_at`: the resumer found no run to wake (WorkflowNotFound: terminated or deleted by hand). Such an order is
--   not released again until one of its runs waits again (waited_at moves past the mark) or it leaves `pending`; it is
--   counted by orders_waiting_summary() (`run_gone`), the metric fulfilment_orders_waiting_run_gone and the alert
--   FulfilmentWaitingOrderRunGone, and repaired by `fulfilment order retry`, which starts a run from the store.

ALTER TABLE fulfilments ADD COLUMN run_gone_at timestamptz;

CREATE OR REPLACE FUNCTION fulfilments_end_wait() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status <> 'pending' THEN
    NEW.waiting_since := NULL;
    NEW.waited_at := NULL;
    NEW.waiting_reason := NULL;
    NEW.released_at := NULL;
    NEW.waiting_task_queue := NULL;
    NEW.releases := 0;
    NEW.waiting_for := NULL;
    NEW.run_gone_at := NULL;
  END IF;
  RETURN NEW;
END $$;

-- The lease of a release that follows `releases` releases since the order's last wait: lease_seconds, doubled per
-- release after the first, at most greatest(lease_seconds, 900). The exponent is bounded first (2^16 · 3600 s is far
-- past any cap), so no count of releases can overflow it.
CREATE FUNCTION wake_lease_seconds(lease_seconds integer, releases integer) RETURNS double precision
  LANGUAGE sql
  IMMUTABLE
  SET search_path = pg_catalog, pg_temp
AS $$
  SELECT least(lease_seconds * 2 ^ least(greatest(releases - 1, 0), 16), greatest(lease_seconds, 900))::double precision
$$;

CREATE OR REPLACE FUNCTION release_waiting_orders(
  max integer,
  only_tenant text DEFAULT NULL,
  despite_pause boolean DEFAULT false,
  only_task_queue text DEFAULT NULL,
  lease_seconds integer DEFAULT 60,
  only_waiting_for text DEFAULT NULL)
  RETURNS TABLE (tenant_id text, order_id text, waiting_since timestamptz, waited_at timestamptz, released_at timestamptz)
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF max IS NULL OR max < 1 OR max > 10000 THEN
    RAISE EXCEPTION 'release_waiting_orders: max must be 1 to 10000, not %', max USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF lease_seconds IS NULL OR lease_seconds < 1 OR lease_seconds > 3600 THEN
    RAISE EXCEPTION 'release_waiting_orders: lease_seconds must be 1 to 3600, not %', lease_seconds
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM set_config('app.shipment_waits', 'release', true);
  RETURN QUERY
    WITH picked AS (
      SELECT f.tenant_id, f.order_id
      FROM public.fulfilments f
      WHERE f.waiting_since IS NOT NULL AND f.status = 'pending'
        AND (f.released_at IS NULL OR f.released_at < f.waited_at
             OR f.released_at < now() - make_interval(secs => public.wake_lease_seconds(lease_seconds, f.releases)))
        AND (f.run_gone_at IS NULL OR f.run_gone_at < f.waited_at)
        AND (only_tenant IS NULL OR f.tenant_id = only_tenant)
        AND (only_task_queue IS NULL OR f.waiting_task_queue = only_task_queue)
        AND (only_waiting_for IS NULL OR f.waiting_for IS NULL OR f.waiting_for = only_waiting_for)
        AND NOT EXISTS (
          SELECT 1 FROM public.shipping_pauses p
          WHERE p.resumed_at IS NULL AND (p.tenant_id IS NULL OR p.tenant_id = f.tenant_id)
            AND NOT (despite_pause AND p.tenant_id IS NOT DISTINCT FROM only_tenant))
      ORDER BY f.waiting_since, f.tenant_id, f.order_id
      LIMIT max
      FOR UPDATE SKIP LOCKED
    )
    UPDATE public.fulfilments f
    SET released_at = clock_timestamp(),
        releases = CASE
          WHEN f.released_at IS NULL OR f.released_at < f.waited_at THEN 1
          WHEN public.wake_lease_seconds(lease_seconds, f.releases) >= greatest(lease_seconds, 900) THEN f.releases
          ELSE f.releases + 1
        END
    FROM picked
    WHERE f.tenant_id = picked.tenant_id AND f.order_id = picked.order_id
    RETURNING f.tenant_id, f.order_id, f.waiting_since, f.waited_at, f.released_at;
  PERFORM set_config('app.shipment_waits', '', true);
END $$;

-- The resumer found no run to wake for an order it released (its release's mark `released`): the order is set aside
-- (not released again) until a run of it waits again or it leaves `pending`. True when it was marked.
CREATE FUNCTION mark_waiting_order_run_gone(tenant text, "order" text, released timestamptz)
  RETURNS boolean
  LANGUAGE plpgsql
  VOLATILE
  SECURITY DEFINER
  SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  n integer;
BEGIN
  PERFORM set_config('app.shipment_waits', 'release', true);
  UPDATE public.fulfilments f
  SET run_gone_at = clock_timestamp()
  WHERE f.tenant_id = tenant AND f.order_id = "order" AND f.released_at = released AND f.waiting_since IS NOT NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('app.shipment_waits', '', true);
  RETURN n > 0;
END $$;

-- As 008's, and how many of the waiting orders were set aside because their run is gone.
DROP FUNCTION orders_waiting_summary();
CREATE FUNCTION orders_waiting_summary() RETURNS TABLE (orders bigint, oldest timestamptz, paused bigint, run_gone bigint)
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
             WHERE p.resumed_at IS NULL AND (p.tenant_id IS NULL OR p.tenant_id = f.tenant_id))),
           count(*) FILTER (WHERE f.run_gone_at IS NOT NULL AND f.run_gone_at >= f.waited_at)
    FROM public.fulfilments f
    WHERE f.waiting_since IS NOT NULL AND f.status = 'pending';
  PERFORM set_config('app.shipment_waits', '', true);
END $$;

REVOKE ALL ON FUNCTION orders_waiting_summary() FROM PUBLIC;
REVOKE ALL ON FUNCTION mark_waiting_order_run_gone(text, text, timestamptz) FROM PUBLIC;
REVOKE ALL ON FUNCTION wake_lease_seconds(integer, integer) FROM PUBLIC;
