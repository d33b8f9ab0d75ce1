-- The dedupe ledger is scoped by tenant: an event id is unique within its tenant only, so two tenants may use the
-- same id and neither can suppress, pre-claim or collide with the other's events. Existing rows keep their keys;
-- only the primary key widens, so every claim made before this migration still dedupes its redeliveries.
ALTER TABLE processed_events DROP CONSTRAINT processed_events_pkey;
ALTER TABLE processed_events ADD PRIMARY KEY (consumer, tenant_id, event_id);
