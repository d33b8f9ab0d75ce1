/**
 * Retention of the status outbox across tenants: prune_status_outbox (migration 007_status_outbox.sql), a SECURITY
 * DEFINER function that deletes at most one batch of rows sent before the retention and never an unsent row. See
 * src/adapters/store/retention.ts; the outbox itself is src/adapters/status-events/outbox.ts.
 */
import type { Db } from './db.js';
import { pruneBatch, type PrunedBatch } from './retention.js';

/** Deletes one batch of rows sent more than `retentionDays` ago, every tenant's; never an unsent row. */
export function pruneStatusOutboxBatch(db: Db, retentionDays: number, batchSize: number): Promise<PrunedBatch> {
  return pruneBatch(db, 'prune_status_outbox', retentionDays, batchSize);
}
