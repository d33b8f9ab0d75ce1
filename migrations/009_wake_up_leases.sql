-- A wake-up lasts until it lands (docs/how-it-works.md, "When the warehouse is down").
--
-- 008 marked an order released before its resumer signalled it, and never released it again until it waited again:
-- a wake-up lost between the mark and the signal (a worker killed mid-round, Temporal unreachable) left the order
-- waiting until its deadline. Here a release is a lease:
--
-- * An order released and since neither waiting again nor out of `pending` is released again once its lease ran out:
--   `lease_seconds` (60 by default) after its first release, doubling with each release after that, at most 15
--   minutes — so a run that cannot act on its wake-ups (a build with no workers) is not signalled every minute.
--   `releases` counts the releases since the order's last wait.
-- * unrelease_waiting_order(): a resumer whose signal failed hands the order straight back, for the next round.
-- * `waiting_for`: what the order's last wait was for, 'outage' (the warehouse down for everyone) or 'pause' (an
--   operator's pause); `fulfilment shipping resume --rate` wakes only the pause's orders (only_waiting_for 'pause'),
--   and leaves one that waits again for an outage to the workers' resumers. NULL for waits recorded before this.
-- * release_waiting_orders() also returns `released_at` (the lease's mark, which unrelease names) and takes its
--   earlier four arguments in the same places, so a worker of the previous build calls the new function unchanged.

ALTER TABLE fulfilments
  ADD COLUMN releases    integer NOT NULL DEFAULT 0,
  ADD COLUMN waiting_for text CHECK (waiting_for IN ('outage', 'pause'));

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
  END IF;
  RETURN NEW;
END $$;

DROP FUNCTION release_waiting_orders(integer, text, boolean, text);

CREATE FUNCTION release_waiting_orders(
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
             OR f.released_at < now() - make_interval(secs => least(lease_seconds * 2 ^ greatest(f.releases - 1, 0), 900)))
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
        releases = CASE WHEN f.released_at IS NULL OR f.released_at < f.waited_at THEN 1 ELSE f.releases + 1 END
    FROM picked
    WHERE f.tenant_id = picked.tenant_id AND f.order_id = picked.order_id
    RETURNING f.tenant_id, f.order_id, f.waiting_since, f.waited_at, f.released_at;
  PERFORM set_config('app.shipment_waits', '', true);
END $$;

-- Hands back an order whose wake-up could not be sent: released no more (if no one released it again meanwhile), so
-- the next round picks it. True when it was handed back.
CREATE FUNCTION unrelease_waiting_order(tenant text, "order" text, released timestamptz)
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
  SET released_at = NULL, releases = greatest(f.releases - 1, 0)
  WHERE f.tenant_id = tenant AND f.order_id = "order" AND f.released_at = released AND f.waiting_since IS NOT NULL;
  GET DIAGNOSTICS n = ROW_COUNT;
  PERFORM set_config('app.shipment_waits', '', true);
  RETURN n > 0;
END $$;

REVOKE ALL ON FUNCTION release_waiting_orders(integer, text, boolean, text, integer, text) FROM PUBLIC;
REVOKE ALL ON FUNCTION unrelease_waiting_order(text, text, timestamptz) FROM PUBLIC;
