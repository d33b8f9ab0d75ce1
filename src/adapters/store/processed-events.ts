/**
 * The dedupe ledger. A claim is the first statement of every effect's transaction: the primary key on
 * (consumer, tenant_id, event_id) makes a concurrent redelivery lose here, before it can touch anything.
 * Keys are scoped by tenant (migration 002): one tenant's ids can never suppress or collide with another's.
 *
 * Retention: rows must outlive Kafka retention plus the longest redelivery window (DLQ redrives, redeliveries);
 * see docs/how-it-works.md "Decisions worth knowing". pruneProcessedEvents deletes only rows older than that.
 */
import { inTenantTransaction, type Db, type Tx } from './db.js';

/** Claims `key` for `consumer` inside `tx`. Returns false when it was already claimed (a duplicate). */
export async function claim(tx: Tx, consumer: string, tenantId: string, key: string): Promise<boolean> {
  const inserted = await tx.query(
    `INSERT INTO processed_events (consumer, event_id, tenant_id) VALUES ($1, $2, $3)
     ON CONFLICT (consumer, tenant_id, event_id) DO NOTHING`,
    [consumer, key, tenantId],
  );
  return inserted.rowCount === 1;
}

/** True when `key` was claimed for `consumer` already; claims nothing. */
export async function isClaimed(tx: Tx, consumer: string, tenantId: string, key: string): Promise<boolean> {
  const found = await tx.query(
    'SELECT 1 FROM processed_events WHERE consumer = $1 AND tenant_id = $2 AND event_id = $3',
    [consumer, tenantId, key],
  );
  return (found.rowCount ?? 0) > 0;
}

/**
 * Deletes ledger rows older than `retentionDays` for one tenant. Call only with a retention longer than
 * Kafka retention plus the redelivery window, or redelivered events would apply twice.
 */
export async function pruneProcessedEvents(db: Db, tenantId: string, retentionDays: number): Promise<number> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query('DELETE FROM processed_events WHERE processed_at < now() - make_interval(days => $1)', [
      retentionDays,
    ]);
    return res.rowCount ?? 0;
  });
}
