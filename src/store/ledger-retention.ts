/**
 * Retention of the dedupe ledger across tenants. Row-level security keeps every session to one tenant's rows, so
 * the service cannot list tenants or reach their rows itself: it calls prune_processed_events (migration
 * 004_ledger_retention.sql), a SECURITY DEFINER function that deletes at most one batch of the oldest rows older than
 * the retention, and refuses a retention below its floor whatever the caller asks.
 */
import type { Db } from './db.js';
import { sqlState } from './sql-errors.js';

export interface PrunedBatch {
  /** Rows the call deleted (at most the batch size). */
  deleted: number;
  /** The call's cutoff: it deleted rows processed before this instant (the database's clock). */
  cutoff: Date;
}

/** Deletes one batch of ledger rows older than `retentionDays`, every tenant's; one short transaction. */
export async function pruneLedgerBatch(db: Db, retentionDays: number, batchSize: number): Promise<PrunedBatch> {
  // One statement: now() is the same instant in the function and in the cutoff reported.
  const res = await db.query<{ deleted: string; cutoff: Date }>(
    'SELECT prune_processed_events(make_interval(days => $1), $2) AS deleted, now() - make_interval(days => $1) AS cutoff',
    [retentionDays, batchSize],
  );
  const row = res.rows[0];
  if (!row) throw new Error('prune_processed_events returned no row');
  return { deleted: Number(row.deleted), cutoff: row.cutoff };
}

/** True when PostgreSQL refused the call's arguments (a retention below the floor, a bad batch size): no retry helps. */
export function isPruneRefusal(err: unknown): boolean {
  return sqlState(err) === '22023';
}
