/**
 * Retention of the dedupe ledger across tenants: prune_processed_events (migration 004_ledger_retention.sql), a
 * SECURITY DEFINER function that deletes at most one batch of the oldest rows older than the retention, and refuses a
 * retention below its floor (21 days) whatever the caller asks. See src/adapters/store/retention.ts.
 */
import type { Db } from './db.js';
import { pruneBatch, type PrunedBatch } from './retention.js';

export { isPruneRefusal, type PrunedBatch } from './retention.js';

/** Deletes one batch of ledger rows older than `retentionDays`, every tenant's; one short transaction. */
export function pruneLedgerBatch(db: Db, retentionDays: number, batchSize: number): Promise<PrunedBatch> {
  return pruneBatch(db, 'prune_processed_events', retentionDays, batchSize);
}
