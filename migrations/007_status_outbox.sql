-- Fulfilment status events out, through a transactional outbox (docs/status-events.md).
--
-- Every status change the store commits writes one row here, in the same transaction as the change: published if and
-- only if committed. A relay publishes unsent rows to Kafka in id order and marks them sent; sent rows are pruned on
-- a schedule. Rows are tenant-scoped like every other table (the store's transactions write them under app.tenant_id);
-- the relay and the pruning are cross-tenant, so, as for the dedupe ledger (004), they go through narrow SECURITY
-- DEFINER functions, never a bypass:
--   * status_relay_try_lead(topic): the relay's leadership, a session-level advisory lock per topic (one relay of a
--     topic publishes at a time, whatever the number of workers; the others stand by);
--   * status_outbox_unsent(topic, batch) and status_outbox_mark_sent(topic, ids): refuse a session that does not hold
--     that lock (SQLSTATE 55P03), so a relay that lost its lead can neither read nor mark rows;
--   * status_outbox_lag(topic): the age of the oldest unsent row, for the lag metric;
--   * prune_status_outbox(retention, batch): deletes sent rows only, oldest first, one bounded batch per call.
-- Policies open the table to its owner only inside those functions (the setting app.status_outbox), like 004's.
--
-- Per-order commit order: every change of an order first locks its fulfilments row (SELECT … FOR UPDATE), and the
-- outbox row is inserted after that lock, so the identity values of one order's rows follow its commit order; the
-- relay publishes in id order. Across orders the ids may interleave with commit order, which nothing relies on.

-- The order's correlation id (its placement's, or the first event's), for changes no input event carries (shipped,
-- failed, reopened); rows written before this migration have none, and their events correlate on their cause.
ALTER TABLE fulfilments ADD COLUMN correlation_id text;

CREATE TABLE status_outbox (
  id             bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- the topic the row is published to (STATUS_TOPIC of the worker that committed it); the relay of that topic sends it
  topic          text        NOT NULL,
  tenant_id      text        NOT NULL,
  order_id       text        NOT NULL,
  -- deterministic (UUIDv5 of tenant, type and the change's claim key): the same change always has the same id
  event_id       uuid        NOT NULL UNIQUE,
  event_type     text        NOT NULL,
  -- the record's value exactly as published, every time it is (json keeps the text as written)
  payload        json        NOT NULL,
  -- the record's headers: the trace context of the transaction that committed the change, and its correlation id
  traceparent    text,
  correlation_id text        NOT NULL,
  -- the committing transaction's time (the payload's occurredAt)
  created_at     timestamptz NOT NULL DEFAULT now(),
  sent_at        timestamptz
);
-- the relay's next batch (and the lag's oldest row) walks this index
CREATE INDEX status_outbox_unsent ON status_outbox (topic, id) WHERE sent_at IS NULL;
-- pruning walks this one
CREATE INDEX status_outbox_sent_at ON status_outbox (sent_at) WHERE sent_at IS NOT NULL;
-- `fulfilment status tail`: one order's or one tenant's events in commit order
CREATE INDEX status_outbox_order ON status_outbox (tenant_id, order_id, id);

ALTER TABLE status_outbox ENABLE ROW LEVEL SECURITY;
ALTER TABLE status_outbox FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_scope ON status_outbox
  USING (tenant_id = current_setting('app.tenant_id', true))
  WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
-- The owner, inside the functions below only (they set app.status_outbox for their statement and reset it).
CREATE POLICY status_outbox_relay_read ON status_outbox FOR SELECT TO CURRENT_USER
  USING (current_setting('app.status_outbox', true) IN ('relay', 'prune'));
CREATE POLICY status_outbox_relay_mark ON status_outbox FOR UPDATE TO CURRENT_USER
  USING (current_setting('app.status_outbox', true) = 'relay')
  WITH CHECK (current_setting('app.status_outbox', true) = 'relay');
CREATE POLICY status_outbox_prune ON status_outbox FOR DELETE TO CURRENT_USER
  USING (current_setting('app.status_outbox', true) = 'prune' AND sent_at IS NOT NULL);

-- A committed row wakes the relay of its topic (LISTEN fulfilment_status_outbox); it also polls, so a lost
-- notification only delays a row by STATUS_RELAY_POLL_MS.
CREATE FUNCTION status_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('fulfilment_status_outbox', NEW.topic);
  RETURN NULL;
END $$;
CREATE TRIGGER status_outbox_notify AFTER INSERT ON status_outbox FOR EACH ROW EXECUTE FUNCTION status_outbox_notify();

-- The relay's lock of a topic: two-key advisory lock (7411, hashtext(topic)), held by one session.
CREATE FUNCTION status_relay_try_lead(relay_topic text) RETURNS boolean
  LANGUAGE sql VOLATILE SET search_path = pg_catalog, pg_temp
AS $$ SELECT pg_try_advisory_lock(7411, hashtext(relay_topic)) $$;

CREATE FUNCTION status_relay_leads(relay_topic text) RETURNS boolean
  LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp
AS $$
  SELECT EXISTS (
    SELECT 1 FROM pg_locks
    WHERE locktype = 'advisory' AND granted AND pid = pg_backend_pid()
      AND classid = 7411::oid AND objid = hashtext(relay_topic)::oid AND objsubid = 2
  )
$$;

CREATE FUNCTION status_outbox_unsent(relay_topic text, batch integer)
  RETURNS TABLE (id bigint, tenant_id text, order_id text, event_id uuid, event_type text, payload text,
                 traceparent text, correlation_id text, created_at timestamptz)
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
BEGIN
  IF NOT public.status_relay_leads(relay_topic) THEN
    RAISE EXCEPTION 'this session does not lead the status relay of topic %', relay_topic USING ERRCODE = 'lock_not_available';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 10000 THEN
    RAISE EXCEPTION 'batch must be 1–10000 rows, not %', coalesce(batch::text, 'null') USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM set_config('app.status_outbox', 'relay', true);
  RETURN QUERY
    SELECT o.id, o.tenant_id, o.order_id, o.event_id, o.event_type, o.payload::text, o.traceparent, o.correlation_id, o.created_at
    FROM public.status_outbox o
    WHERE o.topic = relay_topic AND o.sent_at IS NULL
    ORDER BY o.id
    LIMIT batch;
  PERFORM set_config('app.status_outbox', '', true);
END $$;

CREATE FUNCTION status_outbox_mark_sent(relay_topic text, sent_ids bigint[]) RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  marked bigint;
BEGIN
  IF NOT public.status_relay_leads(relay_topic) THEN
    RAISE EXCEPTION 'this session does not lead the status relay of topic %', relay_topic USING ERRCODE = 'lock_not_available';
  END IF;
  PERFORM set_config('app.status_outbox', 'relay', true);
  UPDATE public.status_outbox o SET sent_at = now()
  WHERE o.topic = relay_topic AND o.id = ANY (sent_ids) AND o.sent_at IS NULL;
  GET DIAGNOSTICS marked = ROW_COUNT;
  PERFORM set_config('app.status_outbox', '', true);
  RETURN marked;
END $$;

-- Seconds since the oldest unsent row of the topic was committed (the first in id order), by the database's clock;
-- 0 when none waits. Any session may ask: it reveals a number, no row.
CREATE FUNCTION status_outbox_lag(relay_topic text) RETURNS double precision
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  oldest timestamptz;
BEGIN
  PERFORM set_config('app.status_outbox', 'relay', true);
  SELECT o.created_at INTO oldest FROM public.status_outbox o
  WHERE o.topic = relay_topic AND o.sent_at IS NULL ORDER BY o.id LIMIT 1;
  PERFORM set_config('app.status_outbox', '', true);
  RETURN coalesce(greatest(extract(epoch FROM now() - oldest), 0), 0);
END $$;

CREATE FUNCTION prune_status_outbox(retention interval, batch integer) RETURNS bigint
  LANGUAGE plpgsql VOLATILE SECURITY DEFINER SET search_path = pg_catalog, pg_temp
AS $$
DECLARE
  deleted bigint;
BEGIN
  IF retention IS NULL OR retention < interval '1 hour' THEN
    RAISE EXCEPTION 'refusing to prune the status outbox with a retention of %: at least 1 hour', coalesce(retention::text, 'null')
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF batch IS NULL OR batch < 1 OR batch > 10000 THEN
    RAISE EXCEPTION 'batch must be 1–10000 rows, not %', coalesce(batch::text, 'null') USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM set_config('app.status_outbox', 'prune', true);
  WITH doomed AS (
    SELECT o.id FROM public.status_outbox o
    WHERE o.sent_at IS NOT NULL AND o.sent_at < now() - retention
    ORDER BY o.sent_at
    LIMIT batch
  )
  DELETE FROM public.status_outbox o USING doomed d WHERE o.id = d.id;
  GET DIAGNOSTICS deleted = ROW_COUNT;
  PERFORM set_config('app.status_outbox', '', true);
  RETURN deleted;
END $$;

COMMENT ON FUNCTION prune_status_outbox(interval, integer) IS
  'Deletes at most batch sent status-outbox rows sent longer than retention ago, across tenants; never an unsent row. Returns the rows deleted.';

REVOKE ALL ON FUNCTION status_relay_try_lead(text), status_relay_leads(text), status_outbox_unsent(text, integer),
  status_outbox_mark_sent(text, bigint[]), status_outbox_lag(text), prune_status_outbox(interval, integer) FROM PUBLIC;
-- EXECUTE for the runtime role: src/store/grants.ts (RUNTIME_PRIVILEGES) grants it after every provisioning run.
