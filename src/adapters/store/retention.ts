/**
 * Retention across tenants, through one narrow door per table. Row-level security keeps every session to one tenant's
 * rows, so the service cannot list tenants or reach their rows itself: it calls a SECURITY DEFINER function of the
 * migrations — prune_processed_events (004, the dedupe ledger), prune_status_outbox (007, sent status events) — that
 * deletes at most one batch of the oldest rows older than the retention, and refuses a retention below its own floor
 * whatever the caller asks.
 */
import type { Db } from './db.js';
import { sqlState } from './sql-errors.js';

/** The retention functions of the migrations. */
export type PruneFunction = 'prune_processed_events' | 'prune_status_outbox';

export interface PrunedBatch {
  /** Rows the call deleted (at most the batch size). */
  deleted: number;
  /** The call's cutoff: it deleted rows older than this instant (the database's clock). */
  cutoff: Date;
}

/** Deletes one batch of rows older than `retentionDays` through `fn`, every tenant's; one short transaction. */
export async function pruneBatch(
  db: Db,
  fn: PruneFunction,
  retentionDays: number,
  batchSize: number,
): Promise<PrunedBatch> {
  // One statement: now() is the same instant in the function and in the cutoff reported.
  const res = await db.query<{ deleted: string; cutoff: Date }>(
    `SELECT ${fn}(make_interval(days => $1), $2) AS deleted, now() - make_interval(days => $1) AS cutoff`,
    [retentionDays, batchSize],
  );
  const row = res.rows[0];
  if (!row) throw new Error(`${fn} returned no row`);
  return { deleted: Number(row.deleted), cutoff: row.cutoff };
}

/** True when PostgreSQL refused the call's arguments (a retention below the floor, a bad batch size): no retry helps. */
export function isPruneRefusal(err: unknown): boolean {
  return sqlState(err) === '22023';
}
