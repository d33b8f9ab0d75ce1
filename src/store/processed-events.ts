/**
 * The dedupe ledger. A claim is the first statement of every effect's transaction: the primary key on
 * (consumer, event_id) makes a concurrent redelivery lose here, before it can touch anything.
 *
 * Retention: rows must outlive Kafka retention plus the longest redelivery window (DLQ redrive, replays);
 * see README "Dedupe ledger retention". pruneProcessedEvents deletes only rows older than that.
 */
import { inTenantTransaction, type Db, type Tx } from './db.js';
import { PermanentError } from '../errors.js';

/** Thrown when an event id is already claimed by another tenant: ids are global, so one tenant cannot reuse another's. */
export class EventIdCollisionError extends PermanentError {}

/** Claims `key` for `consumer` inside `tx`. Returns false when it was already claimed (a duplicate). */
export async function claim(tx: Tx, consumer: string, tenantId: string, key: string): Promise<boolean> {
  const inserted = await tx.query(
    `INSERT INTO processed_events (consumer, event_id, tenant_id) VALUES ($1, $2, $3)
     ON CONFLICT (consumer, event_id) DO NOTHING`,
    [consumer, key, tenantId],
  );
  if (inserted.rowCount === 1) return true;
  // Row-level security hides other tenants' claims: a conflict we cannot see is another tenant's id.
  const mine = await tx.query('SELECT 1 FROM processed_events WHERE consumer = $1 AND event_id = $2', [consumer, key]);
  if (mine.rowCount === 0) {
    throw new EventIdCollisionError(`event id ${JSON.stringify(key)} was already processed for another tenant`);
  }
  return false;
}

/**
 * Deletes ledger rows older than `retentionDays` for one tenant. Call only with a retention longer than
 * Kafka retention plus the redelivery window, or redelivered events would apply twice.
 */
export async function pruneProcessedEvents(db: Db, tenantId: string, retentionDays: number): Promise<number> {
  return inTenantTransaction(db, tenantId, async (tx) => {
    const res = await tx.query(
      'DELETE FROM processed_events WHERE processed_at < now() - make_interval(days => $1)',
      [retentionDays],
    );
    return res.rowCount ?? 0;
  });
}
