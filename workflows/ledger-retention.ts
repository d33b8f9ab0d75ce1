/**
 * The dedupe ledger's retention run: started by the Temporal Schedule that the worker keeps in step with its
 * configuration (src/ledger-retention-schedule.ts), every LEDGER_PRUNE_INTERVAL, overlap SKIP. One activity does
 * the work in batches; the result says what was deleted.
 *
 * Rule a reader must not break: no I/O, clocks or randomness (this file is replayed). The run is one activity call.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { LedgerRetentionActivities } from '../activities/ledger-retention.js';
import { LEDGER_PRUNE_ACTIVITY } from '../src/retry-policies.js';

export interface PruneLedgerInput {
  /** Rows older than this many days are deleted, every tenant's. */
  retentionDays: number;
  /** Rows per call of prune_processed_events. */
  batchSize: number;
}

export interface PruneLedgerResult {
  /** Rows deleted by this run. */
  deleted: number;
  /** ISO 8601: rows processed before this instant are gone (the last batch's cutoff, the database's clock). */
  cutoff: string;
  /** Calls of prune_processed_events, the last one finding less than a full batch. */
  batches: number;
}

const retention = proxyActivities<LedgerRetentionActivities>(LEDGER_PRUNE_ACTIVITY);

/** Deletes dedupe-ledger rows older than `input.retentionDays` across every tenant, and reports what it deleted. */
export async function pruneLedger(input: PruneLedgerInput): Promise<PruneLedgerResult> {
  return retention.pruneDedupeLedger(input);
}
